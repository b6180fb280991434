"""Bulk moves when another client changes the folder meanwhile (issue 39 §2), on a real
Dovecot; the other client is a second imapclient connection of the same user."""

from __future__ import annotations

import pytest

from mailtriage.backends.imap.ids import decode_message_id
from mailtriage.backends.mailbox_contract import MAX_BULK, MailQuery, PartialFailure
from tests.imap.conftest import make_mail


def listing(mailbox, folder="INBOX"):
    return list(mailbox.list(MailQuery(folder=folder, page_size=500)).messages)


def fill(dovecot, user, count: int) -> None:
    with dovecot.client(user) as client:
        for n in range(count):
            client.append("INBOX", make_mail(n, subject=f"Report {n:03d}"))


def test_a_message_expunged_by_another_client_fails_alone_and_the_rest_is_moved(mailbox, dovecot, dovecot_user):
    fill(dovecot, dovecot_user, MAX_BULK)
    headers = listing(mailbox)  # the folder stays selected: our session still holds every message
    gone = headers[37]
    with dovecot.client(dovecot_user) as other:
        other.select_folder("INBOX")
        other.delete_messages([decode_message_id(gone.id, mailbox.account_id).uid])
        other.expunge()
    with pytest.raises(PartialFailure) as err:
        mailbox.move([h.id for h in headers], "Archive")
    assert list(err.value.failed) == [gone.id] and err.value.gone == [gone.id]
    assert "moved or deleted by another client" in err.value.failed[gone.id]
    assert sorted(err.value.done) == sorted(h.id for h in headers if h.id != gone.id)
    assert listing(mailbox) == []
    assert len(listing(mailbox, "Archive")) == MAX_BULK - 1


def _expunge_when(dovecot, user, mailbox, header, needle: str):
    """Another client expunges ``header``'s message just before our ``needle`` command goes out
    (a trace listener runs as the line is sent: the race made exact, nothing replaced)."""
    from mailtriage.core.trace import TRACE

    uid = decode_message_id(header.id, mailbox.account_id).uid
    done = []

    def listener(line):
        if not done and line.direction == ">" and needle in line.text:
            done.append(1)
            with dovecot.client(user) as other:
                other.select_folder("INBOX")
                other.delete_messages([uid])
                other.expunge()

    return TRACE.subscribe(listener), done


def test_a_message_expunged_just_before_the_move_fails_alone(mailbox, dovecot, dovecot_user):
    fill(dovecot, dovecot_user, MAX_BULK)
    headers = listing(mailbox)
    gone = headers[60]
    unsubscribe, done = _expunge_when(dovecot, dovecot_user, mailbox, gone, "MOVE")
    try:
        with pytest.raises(PartialFailure) as err:
            mailbox.move([h.id for h in headers], "Archive")
    finally:
        unsubscribe()
    assert done
    assert list(err.value.failed) == [gone.id] and err.value.gone == [gone.id]
    assert "moved or deleted by another client" in err.value.failed[gone.id]
    assert sorted(err.value.done) == sorted(h.id for h in headers if h.id != gone.id)
    assert listing(mailbox) == []
    assert len(listing(mailbox, "Archive")) == MAX_BULK - 1


@pytest.fixture
def proxied_mailbox(dovecot, dovecot_user, memory_keyring):
    """A mailbox whose connection goes through a proxy that can cut it (tests.servers.faultproxy)."""
    from mailtriage.backends.imap.account import password_key
    from mailtriage.backends.imap.adapter import ImapMailbox
    from mailtriage.core.secrets import set_secret
    from tests.imap.conftest import account_for
    from tests.servers.faultproxy import FaultProxy

    proxy = FaultProxy(dovecot.port)
    acct = account_for(dovecot, dovecot_user, port=proxy.port)
    set_secret(password_key(acct.id), dovecot_user.password)
    mb = ImapMailbox(acct)
    try:
        yield mb, proxy
    finally:
        mb.close()
        proxy.close()


def test_moves_the_server_completed_before_the_connection_dropped_are_reported_done(
        proxied_mailbox, dovecot, dovecot_user):
    mailbox, proxy = proxied_mailbox
    fill(dovecot, dovecot_user, 5)
    dovecot.append(dovecot_user, "INBOX", make_mail(99, message_id=None, subject="No ID"))
    headers = listing(mailbox)
    no_id = next(h for h in headers if h.subject == "No ID")
    proxy.cut_when_server_sends(b"[COPYUID")  # the server moved them; we never hear its answer
    with pytest.raises(PartialFailure) as err:
        mailbox.move([h.id for h in headers], "Archive")
    assert proxy.cuts == 1
    # The five with a Message-ID are found in Archive: moved. The one without cannot be told.
    assert sorted(err.value.done) == sorted(h.id for h in headers if h.id != no_id.id)
    assert list(err.value.failed) == [no_id.id] and err.value.gone == []  # it may be in Archive: kept
    assert "may have been moved to 'Archive'" in err.value.failed[no_id.id]
    assert listing(mailbox) == [] and len(listing(mailbox, "Archive")) == 6


def test_all_moved_before_the_drop_is_a_success(proxied_mailbox, dovecot, dovecot_user):
    mailbox, proxy = proxied_mailbox
    fill(dovecot, dovecot_user, 4)
    headers = listing(mailbox)
    proxy.cut_when_server_sends(b"[COPYUID")
    mailbox.move([h.id for h in headers], "Archive")  # no PartialFailure: every one was moved
    assert proxy.cuts == 1
    assert listing(mailbox) == [] and len(listing(mailbox, "Archive")) == 4
