"""Message IDs: account + folder + UIDVALIDITY + UID, foreign and stale IDs refused."""

from __future__ import annotations

import pytest

from mailtriage.backends.imap.ids import MessageRef, decode_message_id, parse_message_id
from mailtriage.backends.mailbox_contract import ForeignMessageId, MailQuery, StaleMessageId
from tests.imap.conftest import make_mail


def test_ids_round_trip_any_folder_name():
    for folder in ["INBOX", "Lists/security", "Entwürfe", "a:b/c d", "日本語"]:
        ref = MessageRef("work", folder, 1795995346, 42)
        assert parse_message_id(str(ref)) == ref
        assert str(ref).count(":") == 4


def test_an_id_of_another_account_is_refused():
    ref = MessageRef("home", "INBOX", 7, 1)
    with pytest.raises(ForeignMessageId) as err:
        decode_message_id(str(ref), "work")
    assert "home" in str(err.value) and "work" in str(err.value)
    assert decode_message_id(str(ref), "home") == ref


@pytest.mark.parametrize("bad", ["", "work", "work:imap:SU5CT1g:7", "work:gmail:SU5CT1g:7:1",
                                 "work:imap:SU5CT1g:0:1", "work:imap:SU5CT1g:7:-1", "work:imap:!!:7:1",
                                 "work:imap::7:1", "work:imap:SU5CT1g:07:1"])
def test_malformed_ids_are_refused(bad):
    with pytest.raises(ForeignMessageId):
        decode_message_id(bad, "work")


def test_mailbox_refuses_foreign_ids_before_any_io(mailbox):
    foreign = str(MessageRef("someone-else", "INBOX", 1, 1))
    with pytest.raises(ForeignMessageId):
        mailbox.open_ref(foreign)
    assert not mailbox.conn.is_open  # refused before connecting


def test_uidvalidity_reset_makes_old_ids_stale(dovecot, dovecot_user, mailbox, seed):
    seed("Reports", make_mail(1))
    page = mailbox.list(MailQuery(folder="Reports"))
    old_id = page.messages[0].id
    mailbox.open_ref(old_id)  # valid now
    # Recreate the folder: the server gives it a new UIDVALIDITY, and UID 1 is a different mail.
    with dovecot.client(dovecot_user) as admin:
        admin.delete_folder("Reports")
        admin.create_folder("Reports")
    seed("Reports", make_mail(2))
    mailbox.conn.close()
    with pytest.raises(StaleMessageId) as err:
        mailbox.open_ref(old_id)
    assert "UIDVALIDITY" in str(err.value)
    fresh = mailbox.list(MailQuery(folder="Reports")).messages[0]
    assert fresh.message_id == "<m2@example.net>" and fresh.id != old_id
