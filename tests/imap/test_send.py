"""Personal sending over a real aiosmtpd (STARTTLS and implicit TLS), guarded by Principle 10."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mailtriage.backends.errors import NotSupported, SignInNeeded, Unavailable
from mailtriage.backends.imap.account import SmtpSettings, password_key, smtp_password_key
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.mailbox_contract import Compose, MailQuery, OutgoingAttachment
from mailtriage.backends.imap.smtp import SendNotConfirmed
from mailtriage.backends.send_policy import SendRefused
from mailtriage.backends.send_ledger import SendLedger
from mailtriage.core.secrets import set_secret
from mailtriage.core.trace import TRACE
from tests.imap.conftest import account_for, make_mail
from tests.servers.smtp import SmtpServer

MX = "mx.example.org"
PASS = f"Authentication-Results: {MX}; dmarc=pass header.from=example.net"


@pytest.fixture
def smtp(dovecot):
    server = SmtpServer(dovecot.cert, mode="starttls").start()  # the same CA as the IMAP server
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def smtp_tls(dovecot):
    server = SmtpServer(dovecot.cert, mode="tls").start()
    try:
        yield server
    finally:
        server.stop()


def sender_account(dovecot, user, smtp_server, security="starttls", **overrides):
    acct = account_for(dovecot, user, access="send", address=f"{user.name}@example.org", authserv_id=MX,
                       smtp=SmtpSettings("127.0.0.1", smtp_server.port, security, user.name), send_cap=5)
    return replace(acct, **overrides)


@pytest.fixture
def sender(dovecot, dovecot_user, memory_keyring, smtp, tmp_path):
    set_secret(password_key(f"acct-{dovecot_user.name}"), dovecot_user.password)
    smtp.add_user(dovecot_user.name, "smtp-secret")
    set_secret(smtp_password_key(f"acct-{dovecot_user.name}"), "smtp-secret")
    mb = ImapMailbox(sender_account(dovecot, dovecot_user, smtp))
    mb.ledger = SendLedger(tmp_path / "ledger.json")
    try:
        yield mb
    finally:
        mb.close()


def inbox_id(mailbox, message_id):
    return next(m.id for m in mailbox.list(MailQuery(folder="INBOX")).messages if m.message_id == message_id)


def test_a_confirmed_reply_is_sent_threaded_copied_and_answered(sender, smtp, seed):
    seed("INBOX", make_mail(1, subject="Re: [SECURITY] XSS", message_id="<r1@reporter.net>",
                            references="<root@reporter.net>", cc="Team <team@example.org>", extra=PASS))
    source = inbox_id(sender, "<r1@reporter.net>")
    lines = []
    unsubscribe = TRACE.subscribe(lines.append)
    try:
        message_id = sender.send(Compose("reply", body="Thanks, confirmed.\n", source_id=source),
                                 confirmed=True, ledger=sender.ledger)
    finally:
        unsubscribe()
    assert len(smtp.log.messages) == 1
    mail = smtp.log.messages[0]
    assert mail.rcpt_tos == ["reporter@example.net"] and mail.login == sender.account.smtp.username
    parsed = mail.message
    assert parsed["Subject"] == "Re: [SECURITY] XSS" and parsed["In-Reply-To"] == "<r1@reporter.net>"
    assert parsed["References"] == "<root@reporter.net> <r1@reporter.net>" and parsed["Message-ID"] == message_id
    assert [m.message_id for m in sender.list(MailQuery(folder="Sent")).messages] == [message_id]
    assert sender.list(MailQuery(folder="INBOX")).messages[0].answered
    assert sender.ledger.count(sender.account_id) == 1
    smtp_lines = [line.text for line in lines if line.channel.startswith("smtp:")]
    assert any(t.startswith("STARTTLS") for t in smtp_lines) and any("AUTH" in t for t in smtp_lines)
    assert not any("smtp-secret" in t for t in smtp_lines)


def test_reply_all_copies_the_other_recipients_but_not_us(sender, smtp, seed, dovecot_user):
    own = f"{dovecot_user.name}@example.org"
    seed("INBOX", make_mail(1, message_id="<r1@reporter.net>", to=f"{own}, security@example.org",
                            cc="Team <team@example.org>", extra=PASS))
    sender.send(Compose("reply_all", body="ack\n", source_id=inbox_id(sender, "<r1@reporter.net>")),
                confirmed=True, ledger=sender.ledger)
    mail = smtp.log.messages[0]
    assert sorted(mail.rcpt_tos) == ["reporter@example.net", "security@example.org", "team@example.org"]


@pytest.mark.parametrize("header,reason,rule", [
    ("Auto-Submitted: auto-replied", "automated-sender", "auto-submitted"),
    ("Precedence: list", "automated-sender", "precedence"),
    ("Return-Path: <>", "automated-sender", "null-sender"),
    (f"Authentication-Results: {MX}; dmarc=fail header.from=example.net", "unauthenticated-sender", "dmarc"),
    ("Authentication-Results: elsewhere.example; dmarc=pass header.from=example.net", "unauthenticated-sender", "dmarc"),
    # issue 20 §5: the shared guard, so personal sending refuses a pass for another domain too
    (f"Authentication-Results: {MX}; dmarc=pass header.from=evil.example", "unauthenticated-sender",
     "dmarc-alignment"),
])
def test_principle_10_refuses_before_smtp_is_contacted(sender, smtp, seed, header, reason, rule):
    seed("INBOX", make_mail(1, message_id="<r1@reporter.net>", extra=header))
    with pytest.raises(SendRefused) as err:
        sender.send(Compose("reply", body="x", source_id=inbox_id(sender, "<r1@reporter.net>")),
                    confirmed=True, ledger=sender.ledger)
    assert (err.value.refusal.reason, err.value.refusal.rule) == (reason, rule)
    assert smtp.log.connections == 0


def test_send_needs_confirmation_and_send_access(sender, smtp, seed):
    compose = Compose("new", to=("someone@example.net",), subject="hello", body="x")
    with pytest.raises(SendNotConfirmed):
        sender.send(compose, confirmed=False, ledger=sender.ledger)
    drafter = ImapMailbox(replace(sender.account, access="draft"))
    try:
        with pytest.raises(NotSupported) as err:
            drafter.send(compose, confirmed=True, ledger=sender.ledger)
        assert "access" in str(err.value)
    finally:
        drafter.close()
    assert smtp.log.connections == 0


def test_send_cap(sender, smtp):
    capped = ImapMailbox(replace(sender.account, send_cap=1))
    try:
        compose = Compose("new", to=("someone@example.net",), subject="one", body="x")
        capped.send(compose, confirmed=True, ledger=sender.ledger)
        with pytest.raises(SendRefused) as err:
            capped.send(compose, confirmed=True, ledger=sender.ledger)
        assert err.value.refusal.reason == "send-cap-reached"
    finally:
        capped.close()
    assert len(smtp.log.messages) == 1


def test_forward_with_attachments_over_implicit_tls(dovecot, dovecot_user, memory_keyring, smtp_tls, seed, tmp_path):
    set_secret(password_key(f"acct-{dovecot_user.name}"), dovecot_user.password)
    smtp_tls.add_user(dovecot_user.name, dovecot_user.password)  # no smtp: key: the IMAP password is used
    mb = ImapMailbox(sender_account(dovecot, dovecot_user, smtp_tls, security="tls"))
    try:
        seed("INBOX", make_mail(1, subject="Crash report", message_id="<r1@reporter.net>",
                                extra="Auto-Submitted: auto-generated"))
        source = inbox_id(mb, "<r1@reporter.net>")
        # A forward goes to a colleague, not back to the (automated) sender: allowed.
        mb.send(Compose("forward", to=("colleague@example.org",), body="FYI\n", source_id=source,
                        attachments=(OutgoingAttachment("poc.bin", "application/octet-stream", b"\x00\x01"),)),
                confirmed=True, ledger=SendLedger(tmp_path / "l.json"))
    finally:
        mb.close()
    parsed = smtp_tls.log.messages[0].message
    assert parsed["Subject"] == "Fwd: Crash report"
    parts = [p.get_content_type() for p in parsed.iter_attachments()]
    assert parts == ["message/rfc822", "application/octet-stream"]


def test_verify_logs_in_to_imap_and_smtp(sender, smtp, dovecot_user):
    result = sender.verify()
    assert result["smtp"] and "IMAP4REV1" in result["capabilities"] and not sender.conn.is_open
    assert smtp.log.auth_attempts == [(dovecot_user.name, True)] and smtp.log.messages == []


def test_smtp_errors_are_translated(sender, smtp, memory_keyring):
    set_secret(smtp_password_key(sender.account_id), "wrong")
    with pytest.raises(SignInNeeded):
        sender.verify()
    smtp.stop()
    set_secret(smtp_password_key(sender.account_id), "smtp-secret")
    with pytest.raises(Unavailable) as err:
        sender.verify()
    assert not isinstance(err.value, SignInNeeded)


def test_a_forward_draft_threads_with_the_forwarded_message(sender, smtp, seed):
    seed("INBOX", make_mail(1, subject="Re: Report", message_id="<f1@reporter.net>",
                            references="<root@reporter.net>"))
    draft_id = sender.save_draft(Compose("forward", to=("colleague@example.org",), body="FYI\n",
                                         source_id=inbox_id(sender, "<f1@reporter.net>")))
    draft = sender.get(draft_id)
    assert draft.content.in_reply_to == "<f1@reporter.net>"
    assert draft.content.references == ("<root@reporter.net>", "<f1@reporter.net>")
    assert smtp.log.connections == 0


def test_personal_drafts_are_saved_not_sent(sender, smtp, seed):
    seed("INBOX", make_mail(1, subject="Question", message_id="<q@reporter.net>"))
    draft_id = sender.save_draft(Compose("reply", body="Draft answer\n", source_id=inbox_id(sender, "<q@reporter.net>")))
    draft = sender.get(draft_id)
    assert draft.header.draft and draft.header.folder_id == "Drafts"
    assert draft.content.subject == "Re: Question" and draft.content.in_reply_to == "<q@reporter.net>"
    assert smtp.log.connections == 0
    reader = ImapMailbox(replace(sender.account, access="read"))
    try:
        with pytest.raises(NotSupported):
            reader.save_draft(Compose("new", to=("a@example.net",), body="x"))
    finally:
        reader.close()
