"""Small RFC 5322 messages for the OAuth backends' tests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

BASE = datetime(2026, 2, 2, 9, 0, tzinfo=timezone.utc)


def make_mail(n: int = 0, *, subject: str | None = None, sender: str = "Reporter <reporter@example.net>",
              to: str = "security@example.org", cc: str | None = None, message_id: str | None = "auto", references: str | None = None,
              in_reply_to: str | None = None, date: datetime | None = None, body: str = "Hello\n",
              extra: str = "", attachment: tuple[str, bytes] | None = None) -> bytes:
    date = date or (BASE + timedelta(minutes=n))
    lines = [f"From: {sender}", f"To: {to}", *([f"Cc: {cc}"] if cc else []), f"Subject: {subject if subject is not None else f'Message {n}'}",
             f"Date: {date.strftime('%a, %d %b %Y %H:%M:%S +0000')}"]
    if message_id == "auto":
        message_id = f"<m{n}@example.net>"
    if message_id:
        lines.append(f"Message-ID: {message_id}")
    if references:
        lines.append(f"References: {references}")
    if in_reply_to:
        lines.append(f"In-Reply-To: {in_reply_to}")
    if extra:
        lines.extend(extra.strip("\n").split("\n"))
    lines.append("MIME-Version: 1.0")
    if attachment is None:
        lines += ["Content-Type: text/plain; charset=utf-8", "", body]
    else:
        import base64

        name, data = attachment
        lines += ['Content-Type: multipart/mixed; boundary="b1"', "", "--b1",
                  "Content-Type: text/plain; charset=utf-8", "", body, "--b1",
                  f'Content-Type: application/octet-stream; name="{name}"',
                  f'Content-Disposition: attachment; filename="{name}"', "Content-Transfer-Encoding: base64", "",
                  base64.b64encode(data).decode(), "--b1--", ""]
    return "\r\n".join(lines).encode("utf-8")
