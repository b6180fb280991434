"""Attachments over IMAP (issue 14 §1), against the real Dovecot: the source reads a
thread's part bytes by the message's reference, and ``mailtriage mail save-attachments``
saves them under safe names after confirmation, printing JSON of what it wrote."""

from __future__ import annotations

import hashlib
import io
import json
import sys
from email.message import EmailMessage

import pytest

from mailtriage.application import Thread
from mailtriage.application.accounts import Mailboxes
from mailtriage.application.attachments import for_mailbox as attachments_for_mailbox
from mailtriage.backends.contract import ThreadId
from mailtriage.backends.mailbox_contract import MailQuery
from mailtriage.backends.imap.account import password_key
from mailtriage.backends.imap.source import ImapSource
from mailtriage.cli.main import main
from mailtriage.core.secrets import set_secret
from mailtriage.core.settings import load_settings
from tests.imap.conftest import write_imap_project, write_work_account

LIST = "security@example.org"
BINARY = bytes(range(256)) * 8
SCRIPT = b"#!/bin/sh\necho owned\n"


def report_with_attachments() -> bytes:
    msg = EmailMessage()
    msg["From"] = "Reporter <reporter@example.net>"
    msg["To"] = LIST
    msg["Subject"] = "PoC attached"
    msg["Date"] = "Sat, 10 Jan 2026 09:00:00 +0000"
    msg["Message-ID"] = "<poc@example.net>"
    msg.set_content("Run the attached PoC.\n")
    msg.add_attachment(SCRIPT, maintype="application", subtype="x-sh", filename="../../.bashrc")
    msg.add_attachment(BINARY, maintype="application", subtype="octet-stream", filename="crash\u202etxt.bin")
    return msg.as_bytes().replace(b"\n", b"\r\n")


@pytest.fixture
def seeded(dovecot, dovecot_user):
    dovecot.append(dovecot_user, "INBOX", report_with_attachments())
    return dovecot_user


def test_the_imap_source_gives_attachment_bytes(account, seeded):
    source = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=account)
    try:
        assert source.features.attachment_bytes
        thread = source.read_thread(ThreadId("msgid", "<poc@example.net>"))
        (message,) = thread.messages
        assert [a.filename for a in message.attachments] == ["../../.bashrc", "crash\u202etxt.bin"]
        assert source.attachment(message.backend_ref, 0) == SCRIPT
        assert source.attachment(message.backend_ref, 1) == BINARY
    finally:
        source.close()


@pytest.fixture
def imap_project(tmp_path, monkeypatch, dovecot, seeded, memory_keyring):
    config_dir = write_work_account(tmp_path / "config", dovecot, seeded)
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config_dir))
    set_secret(password_key("work"), seeded.password)
    return write_imap_project(tmp_path / "project", LIST)


def run(capsys, monkeypatch, *args, stdin="n\n"):
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_save_attachments_writes_safe_names_and_prints_what_it_wrote(imap_project, tmp_path, capsys, monkeypatch):
    target = tmp_path / "saved"
    target.mkdir()
    code, out, err = run(capsys, monkeypatch, "--project", str(imap_project), "mail", "save-attachments",
                         "msgid:<poc@example.net>", "--to", str(target), "--yes")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["backend"] == "imap" and doc["written"] is True
    saved = doc["saved"]
    assert [s["real_name"] for s in saved] == ["../../.bashrc", "crash\u202etxt.bin"]
    assert "\\u202e" in out and "\u202e" not in out  # the real name is inert in the JSON
    assert [s["saved_as"] for s in saved] == ["bashrc", "crashtxt.bin"]
    assert sorted(p.name for p in target.iterdir()) == ["bashrc", "crashtxt.bin"]
    assert (target / "bashrc").read_bytes() == SCRIPT
    assert saved[1]["sha256"] == hashlib.sha256(BINARY).hexdigest() and saved[1]["size"] == len(BINARY)
    assert saved[1]["path"] == str(target / "crashtxt.bin")
    assert "Real name" in err and "Saved as" in err and "\u202e" not in err  # the proposal, inert

    # Again: nothing is replaced, the new files are numbered.
    code, out, err = run(capsys, monkeypatch, "--project", str(imap_project), "mail", "save-attachments",
                         "msgid:<poc@example.net>", "--to", str(target), "--name", "1.2", "--yes")
    assert code == 0, err
    assert [s["saved_as"] for s in json.loads(out)["saved"]] == ["crashtxt (1).bin"]
    assert (target / "bashrc").read_bytes() == SCRIPT


def test_save_attachments_writes_nothing_unless_confirmed(imap_project, tmp_path, capsys, monkeypatch):
    target = tmp_path / "saved"
    target.mkdir()
    code, out, err = run(capsys, monkeypatch, "--project", str(imap_project), "mail", "save-attachments",
                         "msgid:<poc@example.net>", "--to", str(target))
    assert code == 0 and json.loads(out)["written"] is False and "not confirmed" in err
    assert list(target.iterdir()) == []
    code, out, err = run(capsys, monkeypatch, "--project", str(imap_project), "mail", "save-attachments",
                         "msgid:<poc@example.net>", "--to", str(target), stdin="y\n")
    assert code == 0 and len(json.loads(out)["saved"]) == 2


def test_save_attachments_usage_errors(imap_project, tmp_path, capsys, monkeypatch):
    code, out, err = run(capsys, monkeypatch, "--project", str(imap_project), "mail", "save-attachments",
                         "msgid:<poc@example.net>", "--to", str(tmp_path / "missing"), "--yes")
    assert code == 2 and "not an existing folder" in err
    code, out, err = run(capsys, monkeypatch, "--project", str(imap_project), "mail", "save-attachments",
                         "msgid:<poc@example.net>", "--to", str(tmp_path), "--name", "nope.txt", "--yes")
    assert code == 2 and "no attachment named" in err and "1.1 bashrc" in err


def test_a_personal_account_message_gives_its_attachments_through_the_mailbox(tmp_path, dovecot, seeded,
                                                                             memory_keyring):
    config = write_work_account(tmp_path / "config", dovecot, seeded)
    set_secret(password_key("work"), seeded.password)
    boxes = Mailboxes(load_settings(config / "config.toml"))
    try:
        (header,) = boxes.get("work").list(MailQuery(folder="INBOX")).messages
        message = boxes.message("work", header.id)
        thread = Thread(ThreadId("mailbox", header.id), header.subject, (message.content,))
        attachments = attachments_for_mailbox(boxes, "work", thread)
        assert [i.key for i in attachments.items] == ["1.1", "1.2"]
        assert attachments.data(attachments.items[1]) == BINARY
        assert attachments.view(attachments.items[0]).is_text and not attachments.view(attachments.items[1]).is_text
    finally:
        boxes.close()
