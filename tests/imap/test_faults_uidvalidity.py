"""Fault suite (issue 38): the folder is reset (new UIDVALIDITY) between a listing and a read
of one of its IDs, with the reading connection left open, or across a server restart. The
read refuses the old ID as stale, naming UIDVALIDITY, and never returns another message;
a fresh listing then reads fine. Real Dovecot; the reset through a second IMAP connection."""

from __future__ import annotations

import pytest

from mailtriage.backends.imap.account import password_key
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.mailbox_contract import MailQuery, StaleMessageId
from mailtriage.core.secrets import set_secret
from tests.imap.conftest import account_for, make_mail
from tests.servers.dovecot import DovecotServer


def reset_folder(server, user, folder: str) -> None:
    """Delete and recreate ``folder`` from another connection: the server gives it a new UIDVALIDITY."""
    with server.client(user) as admin:
        admin.delete_folder(folder)
        admin.create_folder(folder)


def assert_stale_then_fresh(mailbox, old_id: str) -> None:
    with pytest.raises(StaleMessageId) as err:
        mailbox.get(old_id)  # UID 1 exists again, but it is another mail
    assert "UIDVALIDITY" in str(err.value) and "Reports" in str(err.value)
    [fresh] = mailbox.list(MailQuery(folder="Reports")).messages
    assert fresh.id != old_id and fresh.message_id == "<m2@example.net>"
    assert mailbox.get(fresh.id).header.message_id == "<m2@example.net>"


def test_a_folder_reset_while_the_reading_connection_stays_open_makes_the_listed_id_stale(
        dovecot, dovecot_user, mailbox, seed):
    seed("Reports", make_mail(1))
    old_id = mailbox.list(MailQuery(folder="Reports")).messages[0].id
    assert mailbox.conn.is_open  # the listing's connection, still selected on Reports
    reset_folder(dovecot, dovecot_user, "Reports")
    seed("Reports", make_mail(2))
    assert_stale_then_fresh(mailbox, old_id)


@pytest.fixture
def own_dovecot():
    server = DovecotServer().start()  # our own: the session's server stays up for other tests
    try:
        yield server
    finally:
        server.stop()


def test_a_server_restart_with_a_folder_reset_between_listing_and_reading(own_dovecot, memory_keyring):
    server = own_dovecot
    user = server.add_user()
    account = account_for(server, user)
    set_secret(password_key(account.id), user.password)
    server.append(user, "Reports", make_mail(1))
    mailbox = ImapMailbox(account)
    try:
        old_id = mailbox.list(MailQuery(folder="Reports")).messages[0].id
        server.kill_master()  # the listing's connection dies with the server
        server.start()
        reset_folder(server, user, "Reports")
        server.append(user, "Reports", make_mail(2))
        assert_stale_then_fresh(mailbox, old_id)
    finally:
        mailbox.close()
