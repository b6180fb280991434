"""Attachment bytes from the list archives (issue 14 §1): HyperKitty's download route and
Pony Mail's raw source, against the emulated servers on loopback."""

from __future__ import annotations

import base64

import pytest

from mailtriage.application import AttachmentSet
from mailtriage.backends.contract import ThreadId
from mailtriage.backends.errors import BackendFailure
from mailtriage.backends.identity import hyperkitty_hash
from tests.archives.conftest import LIST, PM_LIST_RAW
from tests.archives.ponymail_server import PMEmail, make_mid

PAYLOAD = b"<script>alert(1)</script>\n" + bytes(range(256))
CONF = "\u202etxt.exe"


def test_hyperkitty_gives_the_archived_attachment_bytes(hk_archive, hk_source, tmp_path):
    raw = (b"From: Alice <alice@reporter.example>\r\nTo: security@example.org\r\nSubject: PoC\r\n"
           b"Date: Sat, 10 Jan 2026 09:00:00 +0000\r\nMessage-ID: <hk-poc@reporter.example>\r\n"
           b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
           b"Content-Type: text/plain\r\n\r\nSee attached.\r\n--b\r\n"
           b"Content-Type: application/octet-stream; name=\"../../poc.bin\"\r\n"
           b"Content-Disposition: attachment; filename=\"../../poc.bin\"\r\nContent-Transfer-Encoding: base64\r\n\r\n"
           + base64.encodebytes(PAYLOAD).replace(b"\n", b"\r\n") + b"--b--\r\n")
    hk_archive.import_message(LIST, raw)
    source = hk_source()
    assert source.features.attachment_bytes
    thread = source.read_thread(ThreadId("hyperkitty", hyperkitty_hash("<hk-poc@reporter.example>")))
    (message,) = thread.messages
    assert [a.filename for a in message.attachments] == ["../../poc.bin"]
    assert source.attachment(message.backend_ref, 0) == PAYLOAD
    with pytest.raises(BackendFailure):
        source.attachment(message.backend_ref, 1)
    proposal = AttachmentSet(thread, source.attachment, source.name).propose_save(tmp_path)
    (saved,) = [v for _s, v in proposal.apply(confirmed=True).written]
    assert saved.saved.path == tmp_path / "poc.bin" and saved.saved.path.read_bytes() == PAYLOAD


def test_hyperkitty_downloads_from_its_own_route_only(hk_archive, hk_server, hk_source):
    source = hk_source()
    thread = source.read_thread(ThreadId("hyperkitty", hyperkitty_hash("<xss-root@reporter.example>")))
    root = thread.messages[0]
    assert [a.filename for a in root.attachments] == ["poc.html"]
    assert source.attachment(root.backend_ref, 0) == b"x" * 312
    downloads = [r for r in hk_server.requests if "/attachment/" in r.path]
    assert downloads and all(r.path.startswith(f"/list/{LIST}/message/") for r in downloads)


def test_pony_mail_gives_attachment_bytes_from_the_raw_source(pm_archive, pm_source, tmp_path):
    pm_archive.add(PMEmail(PM_LIST_RAW, "<pm-poc@reporter.example>", "Mallory <mallory@reporter.example>",
                           "PoC for the parser", 1_767_000_000, "see attached\n",
                           attachments=[{"content_type": "application/octet-stream", "size": len(PAYLOAD),
                                         "filename": CONF, "hash": "f00d", "data": PAYLOAD}]))
    source = pm_source()
    assert source.features.attachment_bytes
    thread = source.read_thread(ThreadId("ponymail", make_mid(PM_LIST_RAW, "<pm-poc@reporter.example>")))
    (message,) = thread.messages
    assert [a.filename for a in message.attachments] == [CONF]
    assert source.attachment(message.backend_ref, 0) == PAYLOAD
    with pytest.raises(BackendFailure):
        source.attachment(message.backend_ref, 3)
    proposal = AttachmentSet(thread, source.attachment, source.name).propose_save(tmp_path)
    (saved,) = [v for _s, v in proposal.apply(confirmed=True).written]
    assert saved.saved.path == tmp_path / "txt.exe" and saved.saved.path.read_bytes() == PAYLOAD
