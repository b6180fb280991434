"""A project whose thread carries hostile attachments, for the attachments dialog's tests."""

from __future__ import annotations

from pathlib import Path

from tests.tui.helpers import mail, mbox_project, standard_messages

POC_TEXT = "#!/bin/sh\n# \x1b]0;pwned\x07 title change\necho \x1b[2Jcleared\n" + "".join(
    f"line {n}: curl http://x.invalid/{n}\n" for n in range(40))
BINARY = bytes(range(256)) * 6
BIDI_NAME = "report\u202efdp.exe"


def attachments_message():
    msg = mail("PoC for the frob parser", "Ana Reporter <ana@example.com>", "Fri, 06 Nov 2026 10:00:00 +0000",
               "<poc-1@example.com>", "Two files attached: a script and a crash input.\n")
    msg.add_attachment(POC_TEXT.encode("utf-8"), maintype="text", subtype="x-shellscript", filename="../../poc.sh")
    msg.add_attachment(BINARY, maintype="application", subtype="octet-stream", filename=BIDI_NAME)
    return msg


def attachments_project(folder: Path) -> Path:
    """The standard threads plus, newest, a report with two attachments (first in the list)."""
    return mbox_project(folder, messages=[*standard_messages(), attachments_message()])
