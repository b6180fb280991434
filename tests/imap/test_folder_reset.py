"""The open folder deleted and re-created by another client (issue 39 §2): the first read of
an old ID says the ID is stale (UIDVALIDITY changed), not that the connection was lost.
Real Dovecot; the other client is a second imapclient connection of the same user."""

from __future__ import annotations

import pytest

from mailtriage.backends.mailbox_contract import MailQuery, StaleMessageId
from tests.imap.conftest import make_mail


def test_a_read_after_the_open_folder_was_recreated_says_stale_id(mailbox, dovecot, dovecot_user, seed):
    with dovecot.client(dovecot_user) as client:
        client.create_folder("Reports")
    seed("Reports", make_mail(1))
    old = mailbox.list(MailQuery(folder="Reports")).messages[0]
    mailbox.get(old.id)  # the folder is open on our connection
    with dovecot.client(dovecot_user) as other:
        other.delete_folder("Reports")
        other.create_folder("Reports")
        other.append("Reports", make_mail(2))
    with pytest.raises(StaleMessageId) as err:
        mailbox.get(old.id)
    assert "UIDVALIDITY" in str(err.value)
    # And the folder reads on: the new message, under its new ID.
    assert [m.message_id for m in mailbox.list(MailQuery(folder="Reports")).messages] == ["<m2@example.net>"]


def test_a_bulk_write_after_the_open_folder_was_recreated_says_stale_id(mailbox, dovecot, dovecot_user, seed):
    from mailtriage.backends.mailbox_contract import PartialFailure

    with dovecot.client(dovecot_user) as client:
        client.create_folder("Reports")
    seed("Reports", make_mail(1))
    seed("Reports", make_mail(2))
    old = [m.id for m in mailbox.list(MailQuery(folder="Reports")).messages]
    with dovecot.client(dovecot_user) as other:
        other.delete_folder("Reports")
        other.create_folder("Reports")
    with pytest.raises(PartialFailure) as err:
        mailbox.move(old, "Archive")
    assert sorted(err.value.failed) == sorted(old) and err.value.done == [] and sorted(err.value.gone) == sorted(old)
    assert all("stale message id" in why and "UIDVALIDITY" in why for why in err.value.failed.values()), err.value.failed
