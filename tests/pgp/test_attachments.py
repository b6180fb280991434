"""An attachment inside a whole-message encryption is listed and saved like a clear one.

Its bytes come from the decryption held in memory (never from the backend, which only has the
ciphertext, and never through a file of ours: no temporary file anywhere); the save goes through
the same confirmed proposal and the same private, atomic write (core/private_files.py) as a clear
attachment, and the JSON says the part came from the encrypted part.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from mailtriage import application
from mailtriage.application.errors import AttachmentError
from mailtriage.backends import mime, pgp
from mailtriage.backends.contract import Thread, ThreadId

from .conftest import pgp_mime_encrypted, pgp_mime_signed, plain
from .test_cli import cli, project

POC = b"#!/bin/sh\n# the reproducer: never anywhere but the chosen folder\nprintf 'A%.0s' $(seq 70000)\n" \
    + bytes(range(256))
TEXT = "Rita's finding: frob_parse overflows, see poc.sh."


def _inner_with_attachment() -> bytes:
    b = "inner-mixed"
    return (f'Content-Type: multipart/mixed; boundary="{b}"\r\n\r\n'
            f"--{b}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{TEXT}\r\n"
            f'--{b}\r\nContent-Type: application/x-sh; name="poc.sh"\r\n'
            f'Content-Disposition: attachment; filename="poc.sh"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
            ).encode() + base64.encodebytes(POC).replace(b"\n", b"\r\n") + f"--{b}--\r\n".encode()


def _files_holding(folder: Path, needle: bytes) -> list[Path]:
    found = []
    for path in folder.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
                found.append(path)
        except OSError:
            continue
    return found


def test_save_attachments_saves_a_decrypted_attachment_and_says_it_came_from_the_encrypted_part(tmp_path, homes):
    # Failed first on main: the attachment was listed as "cannot be saved yet" and the save asked
    # the mbox backend for an attachment the ciphertext does not have (exit 4, nothing written).
    raw = pgp_mime_encrypted(homes.encrypt(_inner_with_attachment(), "team", sign="reporter"))
    folder, env = project(tmp_path, homes, [raw])
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env["TMPDIR"] = str(scratch)
    target = tmp_path / "saved"
    target.mkdir(mode=0o700)
    done = cli(folder, env, "mail", "save-attachments", "msgid:<r1@example.net>", "--to", str(target), "--yes")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    [listed] = doc["attachments"]
    assert listed["real_name"] == "poc.sh" and listed["from_encrypted_part"] is True
    assert "cannot be saved" not in (listed["note"] or "")
    [saved] = doc["saved"]
    assert saved["from_encrypted_part"] is True
    path = Path(saved["path"])
    assert path.parent == target and path.read_bytes() == POC
    assert path.stat().st_mode & 0o777 == 0o600
    assert "encrypted part" in done.stderr  # the proposal says where the bytes come from
    # The decrypted bytes are nowhere else: not in TMPDIR, the data folder, the GnuPG home or the project.
    needle = b"the reproducer: never anywhere"
    for place in (scratch, tmp_path / "data", homes.user, folder):
        assert _files_holding(place, needle) == [], place
    assert _files_holding(target, needle) == [path]


def _opened(homes, raw: bytes) -> Thread:
    message = mime.parse_message(raw, backend_ref="test:1")
    thread = Thread(ThreadId("msgid", message.message_id), message.subject, (message,))
    return pgp.open_thread(thread, homes.session())


def test_a_decrypted_attachment_is_read_from_memory_not_from_the_backend(homes):
    raw = pgp_mime_encrypted(homes.encrypt(_inner_with_attachment(), "team"))
    thread = _opened(homes, raw)
    asked = []

    def backend_attachment(ref: str, index: int) -> bytes:  # what a backend has: the raw (encrypted) mail
        asked.append((ref, index))
        return mime.attachment_bytes(raw, index)

    attachments = application.AttachmentSet(thread, backend_attachment, "test")
    [item] = attachments.items
    assert item.from_encrypted_part and item.to_json()["from_encrypted_part"] is True
    assert attachments.data(item) == POC
    view = attachments.view(item)
    assert view.total == len(POC) and not view.is_text
    assert asked == []


def test_a_decrypted_attachment_is_never_handed_to_the_attachment_command(homes, tmp_path, monkeypatch):
    # The command gets a file in a temporary folder: a decrypted attachment would land on disk there.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    thread = _opened(homes, pgp_mime_encrypted(homes.encrypt(_inner_with_attachment(), "team")))
    attachments = application.AttachmentSet(thread, lambda ref, index: b"", "test")
    [item] = attachments.items
    with pytest.raises(AttachmentError, match="encrypted part"):
        application.run_command(["true"], item, attachments.data(item))
    assert _files_holding(tmp_path, b"the reproducer") == []


def test_a_clear_attachment_of_a_clear_mail_still_comes_from_the_backend(homes):
    raw = plain("see attached").replace(b"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: "
                                        b"8bit\r\n\r\nsee attached", _inner_with_attachment())
    message = mime.parse_message(raw, backend_ref="test:1")
    thread = Thread(ThreadId("msgid", message.message_id), message.subject, (message,))
    attachments = application.AttachmentSet(thread, lambda ref, index: mime.attachment_bytes(raw, index), "test")
    [item] = attachments.items
    assert not item.from_encrypted_part and item.to_json()["from_encrypted_part"] is False
    assert attachments.data(item) == POC
    assert os.fspath(item.safe_name) == "poc.sh"


def test_an_attachment_under_a_signature_or_a_second_encryption_inside_the_report_is_saved_whole(homes):
    inner = _inner_with_attachment()
    signed = pgp_mime_signed(inner, homes.detach_sign(inner, "reporter"))
    twice = pgp_mime_encrypted(homes.encrypt(inner, "team"))
    for entity in (signed[signed.index(b"Content-Type: multipart/signed"):],
                   twice[twice.index(b"Content-Type: multipart/encrypted"):]):
        thread = _opened(homes, pgp_mime_encrypted(homes.encrypt(entity, "team")))
        attachments = application.AttachmentSet(thread, lambda ref, index: b"not the attachment", "test")
        assert [(i.filename, i.from_encrypted_part) for i in attachments.items] == [("poc.sh", True)]
        assert attachments.data(attachments.items[0]) == POC
