"""Fault suite (issue 38): an HTTP upload on our write path reset part-way. A Gmail draft with
an attachment goes to the media-upload endpoint in one multipart POST; the loopback fault proxy
(tests/servers/faultproxy.py) in front of the Gmail emulator resets the connection a third of the
way into its body. The call fails clearly, the emulator holds no draft, and the rerun stores one
draft with the whole attachment. (The emulators' HTTP server, tests/archives/fakehttp.py, now
acts on no request whose body ends before its Content-Length, as a real server: before, it
stored a draft from the first third of the body, a second draft beside the rerun's.)"""

from __future__ import annotations

from datetime import timedelta
from email import policy
from email.parser import BytesParser

import pytest

from mailtriage.backends.contract import OutgoingAttachment
from mailtriage.backends.errors import MailError
from mailtriage.backends.gmail.adapter import GmailMailbox
from mailtriage.backends.mailbox_contract import Compose
from tests.oauth.fixtures import google_account, google_emulator, save_google_sign_in  # noqa: F401
from tests.oauth.mail import BASE, make_mail
from tests.servers.faultproxy import FaultProxy

TRUSTED = "Authentication-Results: mx.example.org; dmarc=pass header.from=example.net"
DATA = (bytes(range(256)) * 4096)[:900_000]  # under the multipart limit: one POST


@pytest.fixture
def proxied_sender(google_emulator, memory_keyring):  # noqa: F811
    proxy = FaultProxy(int(google_emulator.base_url.rsplit(":", 1)[1]))
    account = google_account(google_emulator, access="draft", authserv_id="mx.example.org",
                             api_base=f"http://127.0.0.1:{proxy.port}")
    save_google_sign_in(google_emulator, account)
    mailbox = GmailMailbox(account)
    try:
        yield mailbox, proxy
    finally:
        mailbox.close()
        proxy.close()


def test_a_reset_part_way_through_a_draft_upload_stores_nothing_and_the_rerun_stores_it_once(
        google_emulator, proxied_sender):  # noqa: F811
    sender, proxy = proxied_sender
    root = google_emulator.add_message(make_mail(1, subject="Heap overflow", extra=TRUSTED),
                                       date=(BASE + timedelta(minutes=1)).timestamp())
    compose = Compose("reply", body="The PoC is attached.", source_id=sender.mid(root),
                      attachments=(OutgoingAttachment("poc.bin", "application/octet-stream", DATA),))
    proxy.cut_when_client_sends(b"uploadType=multipart", after=len(DATA) // 3)
    with pytest.raises(MailError) as err:
        sender.save_draft(compose)
    assert proxy.cuts == 1
    assert "Gmail drafts.create" in str(err.value) and "disconnected" in str(err.value), str(err.value)
    assert not any(token in str(err.value) for token in google_emulator.secrets_issued)
    assert google_emulator.drafts == {}  # nothing half-stored

    draft = sender.save_draft(compose)  # the rerun
    assert len(google_emulator.drafts) == 1
    stored = google_emulator.messages[sender.gid(draft)]
    (part,) = list(BytesParser(policy=policy.default).parsebytes(stored.raw).iter_attachments())
    assert part.get_payload(decode=True) == DATA  # the whole attachment, nothing lost
