"""Text attachments saved over IMAP (issue 33): a PoC script sent as a text part in 7bit or
quoted-printable comes back with CRLF line ends from IMAP (the wire's), which breaks its shebang
(``#!/bin/sh\\r``). Such a part is saved with LF line ends, as the same message gives from an
mbox or a .eml file; a base64 part is saved byte for byte (its line ends are the sender's)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.imap.source import ImapSource
from mailtriage.backends.mbox import MboxSource
from tests.mbox.mboxes import write_eml_folder, write_mbox

LIST = "security@example.org"
SCRIPT = b"#!/bin/sh\necho owned\n"
PYTHON = b"#!/usr/bin/env python3\nprint('caf\xc3\xa9 = x')\n"
BATCH = b"@echo off\r\necho owned\r\n"  # a Windows script: its CRLF is the sender's own


def report() -> bytes:
    """A report as a Unix mail client writes it (LF), three text attachments."""
    return b"""From: Reporter <reporter@example.net>
To: security@example.org
Subject: PoC attached
Date: Sat, 10 Jan 2026 09:00:00 +0000
Message-ID: <textpoc@example.net>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b"

--b
Content-Type: text/plain; charset=utf-8

Run the attached PoC.
--b
Content-Type: text/x-sh; charset=us-ascii; name="poc.sh"
Content-Disposition: attachment; filename="poc.sh"
Content-Transfer-Encoding: 7bit

#!/bin/sh
echo owned

--b
Content-Type: text/x-python; charset=utf-8; name="poc.py"
Content-Disposition: attachment; filename="poc.py"
Content-Transfer-Encoding: quoted-printable

#!/usr/bin/env python3
print('caf=C3=A9 =3D x')

--b
Content-Type: text/plain; charset=us-ascii; name="poc.bat"
Content-Disposition: attachment; filename="poc.bat"
Content-Transfer-Encoding: base64

QGVjaG8gb2ZmDQplY2hvIG93bmVkDQo=
--b--
"""


@pytest.fixture
def seeded(dovecot, dovecot_user):
    dovecot.append(dovecot_user, "INBOX", report().replace(b"\n", b"\r\n"))  # IMAP stores CRLF
    return dovecot_user


def saved(source, message) -> dict[str, bytes]:
    return {a.filename: source.attachment(message.backend_ref, i) for i, a in enumerate(message.attachments)}


def test_imap_text_attachments_are_saved_as_the_sender_wrote_them(account, seeded, cache):
    source = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=account)
    try:
        (message,) = source.read_thread(ThreadId("msgid", "<textpoc@example.net>")).messages
        assert saved(source, message) == {"poc.sh": SCRIPT, "poc.py": PYTHON, "poc.bat": BATCH}
        assert {a.filename: a.size for a in message.attachments} == {"poc.sh": len(SCRIPT), "poc.py": len(PYTHON),
                                                                      "poc.bat": len(BATCH)}
    finally:
        source.close()


@pytest.mark.parametrize("eol", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("kind", ["mbox", "eml"])
def test_files_give_the_same_bytes(tmp_path, cache, kind, eol):
    raw = report().replace(b"\n", eol)
    path = write_mbox(tmp_path / "a.mbox", [raw]) if kind == "mbox" else write_eml_folder(tmp_path / "eml", [raw])
    source = MboxSource("archive", {"path": str(path)})
    (thread,) = source.list_recent_threads(None, datetime(2000, 1, 1, tzinfo=timezone.utc))
    (message,) = source.read_thread(thread.thread_id).messages
    assert saved(source, message) == {"poc.sh": SCRIPT, "poc.py": PYTHON, "poc.bat": BATCH}
