"""Attachment bytes through the Gmail and Graph mail sources (issue 14 §1), against the
local Google and Microsoft emulators: a read thread's attachment is fetched by its
message's ``backend_ref`` and saved under a safe name."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest

from mailtriage.application import AttachmentSet
from mailtriage.backends.contract import ThreadId
from mailtriage.backends.errors import BackendFailure
from mailtriage.backends.gmail.source import GmailSource
from mailtriage.backends.microsoft.source import GraphSource
from tests.oauth.mail import BASE, make_mail

POC = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4
HOSTILE = "../../evil\u202egpj.sh"


def _saves(source, thread, tmp_path):
    attachments = AttachmentSet(thread, source.attachment, source.name)
    assert [i.filename for i in attachments.items] == [HOSTILE]
    item = attachments.items[0]
    assert attachments.data(item) == POC
    proposal = attachments.propose_save(tmp_path)
    report = proposal.apply(confirmed=True)
    (saved,) = [value for _s, value in report.written]
    assert saved.saved.path.parent == tmp_path and saved.saved.path.name == "evilgpj.sh"
    assert saved.saved.path.read_bytes() == POC and saved.saved.sha256 == hashlib.sha256(POC).hexdigest()
    with pytest.raises(BackendFailure):
        source.attachment(item.message_ref, 5)


def test_gmail_source_gives_attachment_bytes(google_emulator, gmail_account, tmp_path):
    google_emulator.add_message(make_mail(1, subject="PoC", attachment=(HOSTILE, POC)),
                                date=(BASE + timedelta(minutes=1)).timestamp())
    thread_id = next(iter(google_emulator.messages.values())).thread_id
    source = GmailSource("gmail", {"list": "security@example.org"}, account=gmail_account)
    try:
        assert source.features.attachment_bytes
        thread = source.read_thread(ThreadId("gmail", thread_id))
        _saves(source, thread, tmp_path)
    finally:
        source.close()


def test_graph_source_gives_attachment_bytes(microsoft_emulator, graph_account, tmp_path):
    root = microsoft_emulator.add_message(make_mail(1, subject="PoC", attachment=(HOSTILE, POC)), folder="inbox",
                                          received=(BASE + timedelta(minutes=1)).timestamp())
    conversation = microsoft_emulator.messages[root].conversation_id
    source = GraphSource("m365", {"list": "security@example.org"}, account=graph_account)
    try:
        assert source.features.attachment_bytes
        thread = source.read_thread(ThreadId("graph", conversation))
        _saves(source, thread, tmp_path)
    finally:
        source.close()
