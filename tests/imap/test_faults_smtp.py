"""Fault suite (issue 38): the SMTP connection reset mid-command by a loopback proxy. A send
whose DATA never went through reports failure and records nothing in the send ledger; the
rerun sends it once. Real aiosmtpd (plain, so the proxy sees the exchange), real Dovecot."""

from __future__ import annotations

import pytest

from mailtriage.backends.errors import MailError
from mailtriage.backends.imap.account import SmtpSettings, password_key, smtp_password_key
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.mailbox_contract import Compose
from mailtriage.backends.send_ledger import SendLedger
from mailtriage.core.secrets import set_secret
from tests.imap.conftest import make_mail
from tests.imap.test_send import PASS, inbox_id, sender_account
from tests.servers.faultproxy import FaultProxy
from tests.servers.smtp import SmtpServer


@pytest.fixture
def plain_smtp(dovecot):
    server = SmtpServer(dovecot.cert, mode="plain").start()
    proxy = FaultProxy(server.port)
    server.proxy = proxy
    try:
        yield server
    finally:
        proxy.close()
        server.stop()


@pytest.fixture
def proxied_sender(dovecot, dovecot_user, memory_keyring, plain_smtp, tmp_path):
    set_secret(password_key(f"acct-{dovecot_user.name}"), dovecot_user.password)
    plain_smtp.add_user(dovecot_user.name, "smtp-secret")
    set_secret(smtp_password_key(f"acct-{dovecot_user.name}"), "smtp-secret")
    account = sender_account(dovecot, dovecot_user, plain_smtp,
                             smtp=SmtpSettings("127.0.0.1", plain_smtp.proxy.port, "plain", dovecot_user.name))
    mb = ImapMailbox(account)
    mb.ledger = SendLedger(tmp_path / "ledger.json")
    try:
        yield mb
    finally:
        mb.close()


def test_smtp_reset_at_data_reports_failure_and_the_rerun_sends_once(proxied_sender, plain_smtp, seed):
    seed("INBOX", make_mail(1, subject="[SECURITY] XSS", message_id="<r1@reporter.net>", extra=PASS))
    compose = Compose("reply", body="Thanks, confirmed.\n", source_id=inbox_id(proxied_sender, "<r1@reporter.net>"))
    plain_smtp.proxy.cut_when_server_sends(b"354")  # the go-ahead for the message text never arrives
    with pytest.raises(MailError) as err:
        proxied_sender.send(compose, confirmed=True, ledger=proxied_sender.ledger)
    assert plain_smtp.proxy.cuts == 1
    assert "smtp-secret" not in str(err.value)
    assert plain_smtp.log.messages == []  # nothing was delivered...
    assert proxied_sender.ledger.count(proxied_sender.account.id) == 0  # ...and nothing is counted as sent

    message_id = proxied_sender.send(compose, confirmed=True, ledger=proxied_sender.ledger)
    assert len(plain_smtp.log.messages) == 1  # the rerun: once
    assert plain_smtp.parsed()["Message-ID"] == message_id
    assert proxied_sender.ledger.count(proxied_sender.account.id) == 1


def test_smtp_reset_after_the_server_accepted_the_message_is_not_reported_as_unsent(proxied_sender, plain_smtp, seed):
    """The server took the mail, the client never heard its 250: the error must not say
    nothing was sent, and the send is counted against the cap (it did leave)."""
    seed("INBOX", make_mail(1, subject="[SECURITY] XSS", message_id="<r1@reporter.net>", extra=PASS))
    compose = Compose("reply", body="Thanks, confirmed.\n", source_id=inbox_id(proxied_sender, "<r1@reporter.net>"))
    plain_smtp.proxy.cut_when_server_sends(b"Message accepted")
    with pytest.raises(MailError) as err:
        proxied_sender.send(compose, confirmed=True, ledger=proxied_sender.ledger)
    assert plain_smtp.proxy.cuts == 1 and len(plain_smtp.log.messages) == 1  # delivered
    assert "may have been sent" in str(err.value)
    assert proxied_sender.ledger.count(proxied_sender.account.id) == 1
