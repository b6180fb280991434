"""Replies, forwards and new mail (issue 14 §2, §5): personal accounts send after a confirmed
proposal through Principle 10 with a copy in Sent (real Dovecot + aiosmtpd), save a draft
with access = "draft" and are blocked with "read"; project drafts carry the configured name
in From:, the files attached, and no header naming our tool."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mailtriage.application.flows.compose import ComposeFlow
from mailtriage.backends.contract import DraftRequest, OutgoingAttachment
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.imap.source import ImapSource
from mailtriage.application.flows.proposals import BlockedBy
from mailtriage.backends.mailbox_contract import MailQuery
from mailtriage.backends.send_ledger import SendLedger
from mailtriage.core.settings import UserSettings
from mailtriage.application.flows.compose import FORWARD_ATTACHED, read_editor_text, editor_text
from mailtriage.application.flows.proposals import WriteKind
from tests.imap.conftest import make_mail
from tests.imap.test_send import PASS, inbox_id, sender, smtp  # noqa: F401 - the fixtures of the send tests
from tests.imap.test_source import LIST, report_thread  # noqa: F401 - the fixtures of the source tests

SETTINGS = UserSettings(path=None, data={"name": "Tess Triager", "signature": "Tess\nSecurity team"})


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path / "data"))  # the send ledger


def raw_headers(mailbox, folder):
    out = []
    for header in mailbox.list(MailQuery(folder=folder)).messages:
        out.append(dict((k.lower(), v) for k, v in mailbox.get(header.id).content.headers))
    return out


def test_a_confirmed_reply_is_sent_from_the_configured_name_and_copied_to_sent(sender, smtp, seed):  # noqa: F811
    seed("INBOX", make_mail(1, subject="XSS", message_id="<r1@reporter.net>", body="the proof\n", extra=PASS))
    source_id = inbox_id(sender, "<r1@reporter.net>")
    flow = ComposeFlow(sender, SETTINGS)
    form = flow.form("reply", sender.get(source_id).content)
    assert form.to == ("reporter@example.net",) and form.subject == "Re: XSS"
    assert "> the proof" in form.body and form.body.endswith("-- \nTess\nSecurity team\n")
    proposal = flow.propose(form, source_id=source_id)
    assert not proposal.blocked and [w.kind for w in proposal.writes] == [WriteKind.SEND]
    assert smtp.log.messages == []  # nothing leaves before the confirmation
    report = proposal.apply(confirmed=True)
    assert report.ok, report.describe()
    mail = smtp.log.messages[0].message
    assert mail["From"] == f"Tess Triager <{sender.account.from_address}>"
    assert not [k for k in mail.keys() if k.lower().startswith("x-mailtriage")]
    sent = sender.list(MailQuery(folder="Sent")).messages
    assert [m.message_id for m in sent] == [mail["Message-ID"]]


def test_principle_10_refuses_the_send_in_the_proposal_and_nothing_leaves(sender, smtp, seed):  # noqa: F811
    """Issue 30 §6: a refusal known before the confirmation is in the proposal, not after it."""
    seed("INBOX", make_mail(1, message_id="<r1@reporter.net>", extra="Auto-Submitted: auto-replied"))
    source_id = inbox_id(sender, "<r1@reporter.net>")
    flow = ComposeFlow(sender, SETTINGS)
    proposal = flow.propose(flow.form("reply", sender.get(source_id).content), source_id=source_id)
    assert proposal.blocked.reason is BlockedBy.SEND_POLICY and not proposal.writes
    assert proposal.blocked.text == ("the send policy (Principle 10) refuses this send (automated-sender, "
                                "auto-submitted): the message is automated (Auto-Submitted: auto-replied)")
    with pytest.raises(PermissionError):
        proposal.apply(confirmed=True)
    assert smtp.log.connections == 0 and sender.list(MailQuery(folder="Sent")).total == 0


def test_no_authserv_id_is_said_in_the_proposal_with_what_to_set(sender, smtp, seed):  # noqa: F811
    seed("INBOX", make_mail(1, message_id="<r1@reporter.net>", extra=PASS))
    source_id = inbox_id(sender, "<r1@reporter.net>")
    flow = ComposeFlow(replace_account(sender, authserv_id=None), SETTINGS)
    proposal = flow.propose(flow.form("reply", sender.get(source_id).content), source_id=source_id)
    assert "no trusted Authentication-Results issuer (authserv-id) is configured" in proposal.blocked.text
    assert f"set authserv_id in [accounts.{sender.account_id}]" in proposal.blocked.text
    # A forward answers no one: only the cap applies, so it may be sent.
    forward = replace(flow.form("forward", sender.get(source_id).content), to=("dev@example.net",))
    assert not flow.propose(forward, source_id=source_id).blocked
    assert smtp.log.connections == 0


def test_the_send_checks_again_when_the_cap_is_reached_after_the_proposal(sender, smtp, seed):  # noqa: F811
    seed("INBOX", make_mail(1, message_id="<r1@reporter.net>", extra=PASS))
    source_id = inbox_id(sender, "<r1@reporter.net>")
    flow = ComposeFlow(sender, SETTINGS)
    proposal = flow.propose(flow.form("reply", sender.get(source_id).content), source_id=source_id)
    assert not proposal.blocked
    ledger = SendLedger()
    for _ in range(sender.account.send_cap):
        ledger.record(sender.account_id)  # another process sent meanwhile
    report = proposal.apply(confirmed=True)
    assert not report.ok and "send cap reached" in report.failed[1]
    assert smtp.log.connections == 0


def replace_account(mailbox, **changes):
    """The same mailbox with account settings changed (the adapter reads them when it sends)."""
    mailbox.account = replace(mailbox.account, **changes)
    return mailbox


def test_forward_as_attachment_and_new_mail_with_a_file(sender, smtp, seed, tmp_path):  # noqa: F811
    seed("INBOX", make_mail(1, subject="PoC", message_id="<r1@reporter.net>", extra=PASS))
    source_id = inbox_id(sender, "<r1@reporter.net>")
    flow = ComposeFlow(sender, SETTINGS)
    form = flow.form("forward", sender.get(source_id).content, forward_as=FORWARD_ATTACHED)
    blocked = flow.propose(form, source_id=source_id)
    assert blocked.blocked and "no recipient" in blocked.blocked.text  # a forward's To is the user's to fill
    poc = tmp_path / "poc.py"
    poc.write_text("print('x')\n")
    edited = read_editor_text(editor_text(form).replace("To: \n", "To: dev@example.net\n")
                              .replace("Attach: \n", f"Attach: {poc}\n"), form)
    assert edited.to == ("dev@example.net",) and edited.attach == (str(poc),) and not edited.problems
    assert flow.propose(edited, source_id=source_id).apply(confirmed=True).ok
    mail = smtp.log.messages[0].message
    assert mail["Subject"] == "Fwd: PoC"
    parts = [p.get_content_type() for p in mail.iter_attachments()]
    assert parts == ["message/rfc822", "text/x-python"]
    new = flow.form("new")
    new = replace(new, to=("someone@example.net",), subject="hello")
    assert flow.propose(new).apply(confirmed=True).ok
    assert smtp.log.messages[1].message["Subject"] == "hello"


def test_draft_access_saves_a_draft_and_read_access_blocks(sender, smtp, seed):  # noqa: F811
    seed("INBOX", make_mail(1, subject="XSS", message_id="<r1@reporter.net>", extra=PASS))
    source_id = inbox_id(sender, "<r1@reporter.net>")
    drafter = ImapMailbox(replace(sender.account, access="draft"))
    reader = ImapMailbox(replace(sender.account, access="read"))
    try:
        flow = ComposeFlow(drafter, SETTINGS)
        proposal = flow.propose(flow.form("reply_all", drafter.get(source_id).content), source_id=source_id)
        assert [w.kind for w in proposal.writes] == [WriteKind.DRAFT]
        assert proposal.apply(confirmed=True).ok
        assert smtp.log.connections == 0
        drafts = raw_headers(drafter, "Drafts")
        assert len(drafts) == 1 and drafts[0]["from"] == f"Tess Triager <{sender.account.from_address}>"
        read_flow = ComposeFlow(reader, SETTINGS)
        blocked = read_flow.propose(read_flow.form("reply", reader.get(source_id).content), source_id=source_id)
        assert blocked.blocked and "access = 'read'" in blocked.blocked.text and not blocked.writes
    finally:
        drafter.close()
        reader.close()


def test_a_project_draft_names_the_sender_carries_files_and_no_tool_header(account, mailbox,
                                                                            report_thread):  # noqa: F811
    source = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=replace(account, address="tess@example.org"))
    try:
        request = DraftRequest(report_thread, "Thanks.\n", to=("reporter@example.net",), cc=(LIST,),
                               from_name="Tess Triager",
                               attachments=(OutgoingAttachment("notes.txt", "text/plain", b"n\n"),))
        draft = source.create_draft(request)
        [headers] = raw_headers(mailbox, "Drafts")
        assert headers["from"] == f"Tess Triager <{source.account.from_address}>"
        assert not [k for k in headers if k.startswith("x-mailtriage")]
        assert "mailtriage" not in headers["message-id"]
        # Our own draft is found again by the Message-ID we made: a retry, and the pending check.
        assert source.create_draft(request).draft_ref == draft.draft_ref
        assert [d.draft_ref for d in source.list_drafts(report_thread)] == [draft.draft_ref]
        stored = mailbox.list(MailQuery(folder="Drafts")).messages
        assert stored[0].has_attachments
    finally:
        source.close()
