"""The canonical corpus every mail backend is checked against, and what it must yield.

Plain RFC 5322 messages (bytes), so any backend can be loaded with them: write
an mbox, APPEND to an IMAP server, import into an archive emulator. Each
:class:`CorpusMessage` also carries its parsed facts so a harness that feeds a
JSON API (HyperKitty, Pony Mail) need not parse the bytes itself.

Threads (all on the list ``security@example.org``):

* ``<t1-root@reporter.example>``: a report, a team reply, and a nested reply.
* ``<t2-root@reporter.example>``: a report and a reply whose parent
  ``<t2-lost@example.org>`` is not in the corpus (References start at the root).
* ``<t3-utf8@example.jp>``: non-ASCII subject and sender (RFC 2047, UTF-8 body).
* ``<t4-html@reporter.example>``: an HTML-only report.
* ``<t5-old@reporter.example>``: a thread whose last message is older than
  :data:`RECENT_SINCE`, so ``since`` filtering is observable.
* a message without a Message-ID (its own thread, synthetic kind, where the
  backend keeps such messages at all; see ``Harness.keeps_messages_without_id``).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

LIST = "security@example.org"
BASE = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
RECENT_SINCE = BASE - timedelta(days=14)
LONG_AGO = BASE - timedelta(days=3650)
FUTURE = BASE + timedelta(days=3650)


@dataclass(frozen=True)
class CorpusMessage:
    message_id: str | None
    sender_name: str
    sender_email: str
    subject: str
    date: datetime
    body: str
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()
    html: bool = False
    raw: bytes = b""


def _encoded(text: str) -> str:
    if text.isascii():
        return text
    return "=?utf-8?b?" + base64.b64encode(text.encode()).decode() + "?="


def _render(m: CorpusMessage) -> bytes:
    lines = [
        f"From: {_encoded(m.sender_name)} <{m.sender_email}>",
        f"To: {LIST}",
        f"Subject: {_encoded(m.subject)}",
        f"Date: {format_datetime(m.date)}",
    ]
    if m.message_id:
        lines.append(f"Message-ID: {m.message_id}")
    if m.in_reply_to:
        lines.append(f"In-Reply-To: {m.in_reply_to}")
    if m.references:
        lines.append("References: " + "\n ".join(m.references))
    lines += ["MIME-Version: 1.0", f"List-Id: <{LIST.replace('@', '.')}>"]
    if m.html:
        lines += ["Content-Type: text/html; charset=utf-8", "Content-Transfer-Encoding: 8bit"]
    else:
        lines += ["Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: 8bit"]
    return ("\n".join(lines) + "\n\n" + m.body).encode("utf-8")


def _message(**fields) -> CorpusMessage:
    draft = CorpusMessage(**fields)
    return CorpusMessage(**{**fields, "raw": _render(draft)})


def _at(days: float) -> datetime:
    return BASE + timedelta(days=days)


T1, T2, T3, T4, T5 = ("<t1-root@reporter.example>", "<t2-root@reporter.example>", "<t3-utf8@example.jp>",
                      "<t4-html@reporter.example>", "<t5-old@reporter.example>")

CORPUS: tuple[CorpusMessage, ...] = (
    _message(message_id=T5, sender_name="Old Reporter", sender_email="old@reporter.example",
             subject="Stale report from last year", date=_at(-60), body="An old report.\n"),
    _message(message_id="<t5-reply@example.org>", sender_name="Team", sender_email="team@example.org",
             subject="Re: Stale report from last year", date=_at(-59), body="Fixed long ago.\n",
             in_reply_to=T5, references=(T5,)),
    _message(message_id=T1, sender_name="Alice Reporter", sender_email="alice@reporter.example",
             subject="Heap overflow in the frobnicator", date=_at(-3), body="Crash with a long header.\n"),
    _message(message_id="<t1-reply@example.org>", sender_name="Bob Triager", sender_email="bob@example.org",
             subject="Re: Heap overflow in the frobnicator", date=_at(-2), body="Thanks, confirmed.\n",
             in_reply_to=T1, references=(T1,)),
    _message(message_id=T2, sender_name="Carol", sender_email="carol@reporter.example",
             subject="Path traversal in uploads", date=_at(-2.5), body="../../etc/passwd\n"),
    _message(message_id=T3, sender_name="山田太郎", sender_email="yamada@example.jp",
             subject="脆弱性の報告 — Zürich", date=_at(-1.5), body="パーサーに脆弱性があります。\n"),
    _message(message_id="<t1-nested@reporter.example>", sender_name="Alice Reporter",
             sender_email="alice@reporter.example", subject="Re: Heap overflow in the frobnicator", date=_at(-1),
             body="Any CVE yet?\n", in_reply_to="<t1-reply@example.org>", references=(T1, "<t1-reply@example.org>")),
    _message(message_id="<t2-orphan@reporter.example>", sender_name="Carol", sender_email="carol@reporter.example",
             subject="Re: Path traversal in uploads", date=_at(-0.5), body="Ping?\n",
             in_reply_to="<t2-lost@example.org>", references=(T2, "<t2-lost@example.org>")),
    _message(message_id=T4, sender_name="Dave HTML", sender_email="dave@reporter.example",
             subject="HTML-only report", date=_at(-0.25),
             body='<html><body><p>See <b>this</b> <a href="https://example.net/x">proof</a>.</p>'
                  '<img src="https://tracker.invalid/pixel.png" alt="pixel"></body></html>\n', html=True),
    _message(message_id=None, sender_name="Anonymous", sender_email="anon@example.org",
             subject="Report without a Message-ID", date=_at(-0.1), body="No Message-ID header here.\n"),
)

# root Message-ID -> (subject, Message-IDs the thread must hold, oldest first)
EXPECTED_THREADS: dict[str, tuple[str, tuple[str, ...]]] = {
    T1: ("Heap overflow in the frobnicator", (T1, "<t1-reply@example.org>", "<t1-nested@reporter.example>")),
    T2: ("Path traversal in uploads", (T2, "<t2-orphan@reporter.example>")),
    T3: ("脆弱性の報告 — Zürich", (T3,)),
    T4: ("HTML-only report", (T4,)),
    T5: ("Stale report from last year", (T5, "<t5-reply@example.org>")),
}
# For an archive that files a reply to a missing parent as a thread of its own
# (Harness.joins_replies_to_missing_parents=False): T2 alone, and the orphan apart.
ORPHAN = "<t2-orphan@reporter.example>"
EXPECTED_THREADS_ORPHAN_APART: dict[str, tuple[str, tuple[str, ...]]] = {
    **EXPECTED_THREADS,
    T2: ("Path traversal in uploads", (T2,)),
    ORPHAN: ("Re: Path traversal in uploads", (ORPHAN,)),
}
RECENT_ROOTS = {T1, T2, T3, T4}
OLD_ROOTS = {T5}
NO_ID_SUBJECT = "Report without a Message-ID"
