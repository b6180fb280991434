"""The demo's personal account: a small local Maildir (``Personal/`` in the demo workspace).

Embedded, explicit and labelled demo data, like the archive: the triager's own mailbox,
with a few folders and messages, so compose, reply, move, flags and tagging can be tried
on a personal account without a server. It is an ordinary ``kind = "maildir"`` account
(``backends/maildir_account.py``) with ``access = "draft"``: a reply or a new message is
saved to ``Personal/.Drafts``, and nothing is ever sent (a Maildir has no outgoing server).

:func:`write_personal_maildir` writes it; the dates are fixed (November 2026) and each
file's modification time is its arrival, so the folder lists in the same order every run.
Everybody is fictional; addresses are ``example.org`` / ``example.com`` / ``.example``.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from email.utils import format_datetime
from pathlib import Path

from mailtriage.core.lean_dataclass import frozen_dataclass

#: The account as the demo's user settings name it (``[accounts.demo]``).
ACCOUNT_ID = "demo"
ADDRESS = "triager@example.org"
MAILDIR = "Personal"
#: Maildir++ sub-folders of the account (INBOX is the root itself).
FOLDERS = ("Drafts", "Sent", "Archive", "Trash")


@frozen_dataclass
class PersonalMail:
    folder: str  # "INBOX" or one of FOLDERS
    key: str  # the file's unique name, fixed so the demo is the same every run
    sender: str
    to: str
    subject: str
    date: str  # "YYYY-MM-DD HH:MM" UTC
    body: str
    flags: str = ""  # Maildir info letters: S seen, F flagged, R replied
    message_id: str = ""
    in_reply_to: str = ""
    extra: tuple[tuple[str, str], ...] = ()
    attachment: tuple[str, str, str] | None = None  # (filename, content type, text)


MAILS: tuple[PersonalMail, ...] = (
    PersonalMail(
        "INBOX", "1764236400.demo01.mailtriage-demo", "Dana Whitfield <dana.whitfield@example.org>", ADDRESS,
        "Security rota for December", "2026-11-27 09:40",
        "Hi,\n\nHere is the rota for December. You are on the list from the 7th to the 13th;\n"
        "Ngozi swaps with Martin in the week of the 21st. Shout if that does not work.\n\nDana\n",
        message_id="<rota-december.4411@example.org>",
        attachment=("rota-december.txt", "text/plain",
                    "Week  Triager\n2026-11-30  Priya Raman\n2026-12-07  (you)\n"
                    "2026-12-14  Dana Whitfield\n2026-12-21  Ngozi Okafor\n")),
    PersonalMail(
        "INBOX", "1764150300.demo02.mailtriage-demo", "Martin Kowalczyk <martin.kowalczyk@example.org>", ADDRESS,
        "Key signing at the summit?", "2026-11-26 09:45",
        "Hi,\n\nAre you coming to the summit in January? A few of us want to do a key signing\n"
        "after the security track. Bring your fingerprint on paper.\n\nMartin\n",
        flags="F", message_id="<keysigning.2026@example.org>"),
    PersonalMail(
        "INBOX", "1764064800.demo03.mailtriage-demo", "Frobnicator CI <ci@builds.frobnicator.example>", ADDRESS,
        "[frobnicator] Nightly build failed on main (3.5.0-SNAPSHOT)", "2026-11-25 10:00",
        "The nightly build of main failed in module frob-cli:\n\n"
        "  ExportCommandTest.testTempFileMode  FAILED\n\n"
        "This message is from the demo: the build server does not exist.\n",
        flags="S", message_id="<nightly-20261125@builds.frobnicator.example>",
        extra=(("List-Id", "<builds.frobnicator.example>"),
               ("List-Unsubscribe", "<https://builds.frobnicator.example/unsubscribe?u=demo>"))),
    PersonalMail(
        "INBOX", "1763978400.demo04.mailtriage-demo", "Priya Raman <priya.raman@example.org>", ADDRESS,
        "Welcome to the security team", "2026-11-24 10:00",
        "Welcome aboard!\n\nThe private list is security@frobnicator.apache.org; every reply to a\n"
        "reporter goes through it (mailtriage keeps the list in CC for you). Our tracker is\n"
        "the local-files one in the project repository.\n\nPriya\n",
        flags="S", message_id="<welcome.0042@example.org>"),
    PersonalMail(
        "Archive", "1762855200.demo05.mailtriage-demo", "Ngozi Okafor <ngozi.okafor@example.org>", ADDRESS,
        "Notes from the October release retrospective", "2026-11-11 10:00",
        "Notes are on the wiki. Main points: announce CVEs the same day as the release,\n"
        "and ask reporters about credit before the advisory goes out.\n\nNgozi\n",
        flags="S", message_id="<retro-october@example.org>"),
    PersonalMail(
        "Sent", "1764153000.demo06.mailtriage-demo", f"Demo Triager <{ADDRESS}>",
        "Martin Kowalczyk <martin.kowalczyk@example.org>", "Re: Key signing at the summit?", "2026-11-26 10:30",
        "Hi Martin,\n\nYes, I will be there. I will bring my fingerprint.\n\n> Are you coming to the summit?\n",
        flags="S", message_id="<re-keysigning.7@example.org>", in_reply_to="<keysigning.2026@example.org>"),
)


def message_bytes(mail: PersonalMail) -> bytes:
    """The message as a file of the Maildir (CRLF-free, as local delivery writes it)."""
    when = datetime.strptime(mail.date, "%Y-%m-%d %H:%M").replace(tzinfo=timezone.utc)
    lines = [f"From: {mail.sender}", f"To: {mail.to}", f"Subject: {mail.subject}",
             f"Date: {format_datetime(when)}", f"Message-ID: {mail.message_id}"]
    if mail.in_reply_to:
        lines += [f"In-Reply-To: {mail.in_reply_to}", f"References: {mail.in_reply_to}"]
    lines += [f"{name}: {value}" for name, value in mail.extra]
    lines.append("X-Mailtriage-Demo: demo data, not real mail")
    lines.append("MIME-Version: 1.0")
    if mail.attachment is None:
        lines += ["Content-Type: text/plain; charset=utf-8", "", mail.body]
    else:
        name, content_type, text = mail.attachment
        boundary = f"demo-{mail.key.split('.')[1]}"
        lines += [f'Content-Type: multipart/mixed; boundary="{boundary}"', "",
                  f"--{boundary}", "Content-Type: text/plain; charset=utf-8", "", mail.body,
                  f"--{boundary}", f'Content-Type: {content_type}; charset=utf-8',
                  f'Content-Disposition: attachment; filename="{name}"', "", text,
                  f"--{boundary}--", ""]
    return "\n".join(lines).encode("utf-8")


def write_personal_maildir(root: Path) -> None:
    """The demo's personal Maildir at ``root`` (Maildir++: INBOX at the root, ``.Sent`` …)."""
    folders = {"INBOX": root, **{name: root / f".{name}" for name in FOLDERS}}
    for path in folders.values():
        for sub in ("cur", "new", "tmp"):
            (path / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
    for mail in MAILS:
        file = folders[mail.folder] / "cur" / f"{mail.key}:2,{mail.flags}"
        file.write_bytes(message_bytes(mail))
        os.chmod(file, 0o600)
        when = datetime.strptime(mail.date, "%Y-%m-%d %H:%M").replace(tzinfo=timezone.utc).timestamp()
        os.utime(file, (when, when))


def demo_account(workspace: Path) -> dict[str, str]:
    """The ``[accounts.demo]`` table of the demo's user settings, for ``workspace``."""
    return {"kind": "maildir", "path": str(workspace / MAILDIR), "address": ADDRESS, "access": "draft",
            "description": "demo account: a local Maildir in the demo workspace; nothing is ever sent"}
