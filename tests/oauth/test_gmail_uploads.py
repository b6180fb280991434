"""Drafts and sends with attachments go to Gmail's media-upload endpoint (issue 34, item 1).

Gmail's plain endpoints (JSON with a base64url ``raw``) refuse a request body over a small
limit ("Request payload size exceeds the limit"); the ``/upload`` endpoints take the raw RFC 822
bytes up to 35 MB, ``uploadType=multipart`` in one request or ``uploadType=resumable`` in a
session. The emulator enforces both, so a PoC or pcap of a few MB must take the upload path."""

from __future__ import annotations

from datetime import timedelta
from email import policy
from email.parser import BytesParser

import pytest

from mailtriage.backends.contract import OutgoingAttachment
from mailtriage.backends.errors import BackendFailure
from mailtriage.backends.gmail.adapter import GmailMailbox, b64encode
from mailtriage.backends.gmail.api import USER
from mailtriage.backends.mailbox_contract import Compose
from mailtriage.backends.send_ledger import SendLedger
from tests.oauth.fixtures import google_account, save_google_sign_in
from tests.oauth.mail import BASE, make_mail

MB = 1024 * 1024
TRUSTED = "Authentication-Results: mx.example.org; dmarc=pass header.from=example.net"


def _payload(size: int) -> bytes:
    return (bytes(range(256)) * (size // 256 + 1))[:size]


def _attached(emulator, gmail_id: str) -> bytes:
    parsed = BytesParser(policy=policy.default).parsebytes(emulator.messages[gmail_id].raw)
    (part,) = list(parsed.iter_attachments())
    return part.get_payload(decode=True)


@pytest.fixture
def sender(google_emulator, memory_keyring):
    # A generous timeout: 35 MB cross loopback on a shared, loaded machine.
    account = google_account(google_emulator, access="send", authserv_id="mx.example.org", timeout=120)
    save_google_sign_in(google_emulator, account)
    mailbox = GmailMailbox(account)
    yield mailbox
    mailbox.close()


@pytest.mark.parametrize("size", [pytest.param(int(4.9 * MB), id="4.9MB"),
                                  pytest.param(25 * MB, id="25MB", marks=pytest.mark.slow)])  # 34 MB through MIME
def test_an_attachment_of_some_mb_goes_through_draft_and_send(google_emulator, sender, tmp_path, size):
    root = google_emulator.add_message(make_mail(1, subject="Heap overflow", extra=TRUSTED),
                                       date=(BASE + timedelta(minutes=1)).timestamp())
    data = _payload(size)
    compose = Compose("reply", body="The PoC is attached.", source_id=sender.mid(root),
                      attachments=(OutgoingAttachment("poc.pcap", "application/vnd.tcpdump.pcap", data),))
    draft = sender.save_draft(compose)
    stored = google_emulator.messages[sender.gid(draft)]
    assert "DRAFT" in stored.labels and stored.thread_id == google_emulator.messages[root].thread_id
    assert _attached(google_emulator, stored.id) == data
    sent = sender.send(compose, confirmed=True, ledger=SendLedger(tmp_path / "ledger.json"))
    stored = google_emulator.messages[sender.gid(sent)]
    assert "SENT" in stored.labels and stored.thread_id == google_emulator.messages[root].thread_id
    assert _attached(google_emulator, stored.id) == data
    posts = [r for r in google_emulator.server.requests if r.method in ("POST", "PUT")]
    assert posts and all(r.path.startswith("/upload/") for r in posts)  # never the plain JSON endpoint
    assert {r.param("uploadType") for r in posts} == {"resumable"}  # a few MB: a resumable session


def test_a_small_message_is_one_multipart_upload(google_emulator, sender, tmp_path):
    root = google_emulator.add_message(make_mail(1, subject="Report", extra=TRUSTED),
                                       date=(BASE + timedelta(minutes=1)).timestamp())
    compose = Compose("reply", body="Thanks", source_id=sender.mid(root),
                      attachments=(OutgoingAttachment("log.txt", "text/plain", b"trace\n" * 1000),))
    draft = sender.save_draft(compose)
    assert _attached(google_emulator, sender.gid(draft)) == b"trace\n" * 1000
    (post,) = [r for r in google_emulator.server.requests if r.method == "POST"]
    assert post.path == "/upload/gmail/v1/users/me/drafts" and post.param("uploadType") == "multipart"
    assert post.headers["content-type"].startswith("multipart/related; boundary=")


def test_the_plain_endpoint_refuses_a_large_body_as_gmail_does(google_emulator, sender):
    raw = make_mail(1, attachment=("poc.bin", _payload(2 * MB)))
    with pytest.raises(BackendFailure) as caught:
        sender.api.post(f"{USER}/drafts", {"message": {"raw": b64encode(raw)}}, "drafts.create")
    assert "400" in str(caught.value) and "Request payload size exceeds the limit" in str(caught.value)
    assert not google_emulator.drafts


def test_over_35_mb_is_refused_before_any_upload_with_the_limit_named(google_emulator, sender):
    root = google_emulator.add_message(make_mail(1, subject="Report", extra=TRUSTED),
                                       date=(BASE + timedelta(minutes=1)).timestamp())
    compose = Compose("reply", body="too big", source_id=sender.mid(root),
                      attachments=(OutgoingAttachment("dump.bin", "application/octet-stream", _payload(27 * MB)),))
    with pytest.raises(BackendFailure) as caught:
        sender.save_draft(compose)
    assert "35 MB" in str(caught.value)
    assert not [r for r in google_emulator.server.requests if r.method in ("POST", "PUT")]
    assert not google_emulator.drafts


def test_the_upload_endpoint_refuses_over_35_mb(google_emulator, sender):
    # The emulator's own limit, reached past the client's check (as another client would).
    raw = make_mail(1, attachment=("dump.bin", _payload(27 * MB)))
    response = sender.api.http.request(
        "POST", "/upload/gmail/v1/users/me/drafts", params={"uploadType": "resumable"},
        headers={"Authorization": f"Bearer {sender.api.signin.access_token()}", "Content-Type": "application/json",
                 "X-Upload-Content-Type": "message/rfc822", "X-Upload-Content-Length": str(len(raw))},
        content=b"{}")
    assert response.status_code == 413 and not google_emulator.drafts
