"""Bulk writes: flags, labels, move/archive/trash, permanent deletion, partial failure."""

from __future__ import annotations

import pytest

from mailtriage.backends.errors import NotSupported
from mailtriage.backends.imap.ids import MessageRef
from mailtriage.backends.mailbox_contract import ForeignMessageId, InvalidQuery, MailQuery, PartialFailure
from mailtriage.core.trace import TRACE
from tests.imap.conftest import make_mail


def ids_in(mailbox, folder):
    return [m.id for m in mailbox.list(MailQuery(folder=folder)).messages]


def message_ids_in(mailbox, folder):
    return sorted(m.message_id for m in mailbox.list(MailQuery(folder=folder)).messages)


@pytest.fixture
def three(mailbox, seed):
    for n in range(3):
        seed("INBOX", make_mail(n))
    return ids_in(mailbox, "INBOX")


def test_set_flags(mailbox, three):
    mailbox.set_flags(three[:2], read=True, flagged=True)
    headers = mailbox.list(MailQuery(folder="INBOX")).messages
    assert [(h.read, h.flagged) for h in headers] == [(True, True), (True, True), (False, False)]
    mailbox.set_flags(three[:1], flagged=False)
    assert not mailbox.list(MailQuery(folder="INBOX")).messages[0].flagged
    with pytest.raises(InvalidQuery):
        mailbox.set_flags(three)


def test_reads_never_change_seen(mailbox, three):
    mailbox.get(three[0])
    mailbox.thread(three[1])
    mailbox.list(MailQuery(folder="INBOX", text="Hello"))
    assert mailbox.list(MailQuery(folder="INBOX", unread=True)).total == 3


def test_bulk_size_and_foreign_ids_are_refused_before_any_write(mailbox, three):
    with pytest.raises(InvalidQuery):
        mailbox.set_flags([], read=True)
    with pytest.raises(InvalidQuery):
        mailbox.set_flags(three * 34, read=True)  # 102 IDs
    foreign = str(MessageRef("other-account", "INBOX", 1, 1))
    with pytest.raises(ForeignMessageId):
        mailbox.set_flags([three[0], foreign], read=True)
    assert mailbox.list(MailQuery(folder="INBOX", unread=True)).total == 3


def test_labels_as_keywords(mailbox, three, tmp_path, monkeypatch):
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path))
    labels = mailbox.list_labels()
    assert labels.supported and not labels.folder_backed and labels.labels == ()
    created = mailbox.create_label("cve-pending")
    assert created.id == "cve-pending"
    assert [label.id for label in mailbox.list_labels().labels] == ["cve-pending"]
    mailbox.set_labels(three[:2], add=["cve-pending", "embargo"], remove=[])
    assert [h.labels for h in mailbox.list(MailQuery(folder="INBOX")).messages][:2] == [
        ("cve-pending", "embargo"), ("cve-pending", "embargo")]
    assert {label.id for label in mailbox.list_labels().labels} == {"cve-pending", "embargo"}
    assert mailbox.list(MailQuery(label="embargo")).total == 2
    mailbox.rename_label("embargo", "embargoed")
    assert mailbox.list(MailQuery(label="embargoed")).total == 2
    assert mailbox.list(MailQuery(label="embargo")).total == 0
    mailbox.delete_label("cve-pending")
    assert all("cve-pending" not in h.labels for h in mailbox.list(MailQuery(folder="INBOX")).messages)
    with pytest.raises(InvalidQuery):
        mailbox.create_label("has space")
    with pytest.raises(NotSupported):
        mailbox.recolor_label("embargoed", "red")


def test_move_archive_trash_and_delete_permanently(mailbox, three, seed):
    seed("Trash", make_mail(9), flags=(b"\\Deleted",))  # marked by another client: must survive
    mailbox.move(three[:1], "Archive")
    mailbox.archive(three[1:2])
    assert message_ids_in(mailbox, "Archive") == ["<m1@example.net>", "<m2@example.net>"]
    mailbox.trash(three[2:])
    assert message_ids_in(mailbox, "INBOX") == []
    trashed = [m.id for m in mailbox.list(MailQuery(folder="Trash")).messages if m.message_id == "<m0@example.net>"]
    with pytest.raises(NotSupported):
        mailbox.delete_permanently(ids_in(mailbox, "Archive"))  # Trash only
    sent = []
    unsubscribe = TRACE.subscribe(lambda line: sent.append(line.text) if line.direction == ">" else None)
    try:
        mailbox.delete_permanently(trashed)
    finally:
        unsubscribe()
    assert message_ids_in(mailbox, "Trash") == ["<m9@example.net>"]
    assert [t for t in sent if "EXPUNGE" in t] and all(" UID EXPUNGE " in t for t in sent if "EXPUNGE" in t)


def test_a_partial_failure_names_what_failed(dovecot, dovecot_user, mailbox, three):
    stale = str(MessageRef(mailbox.account_id, "INBOX", 12345, 1))  # wrong UIDVALIDITY
    gone = str(MessageRef(mailbox.account_id, "Gone", 1, 1))
    with pytest.raises(PartialFailure) as err:
        mailbox.set_flags([three[0], stale, gone], read=True)
    assert set(err.value.failed) == {stale, gone} and err.value.done == [three[0]]
    assert "UIDVALIDITY" in err.value.failed[stale]
    assert mailbox.list(MailQuery(folder="INBOX", unread=False)).total == 1


def test_delete_permanently_refused_without_uidplus(minimal_mailbox, dovecot_minimal, minimal_user):
    from dataclasses import replace

    from mailtriage.backends.imap.adapter import ImapMailbox

    dovecot_minimal.append(minimal_user, "Deleted Items", make_mail(1))
    acct = replace(minimal_mailbox.account, folder_roles={"trash": "Deleted Items"})
    mb = ImapMailbox(acct)
    try:
        trashed = [m.id for m in mb.list(MailQuery(folder="Deleted Items")).messages]
        with pytest.raises(NotSupported) as err:
            mb.delete_permanently(trashed)
        assert "UIDPLUS" in str(err.value)
        with pytest.raises(NotSupported):
            mb.move(trashed, "INBOX")  # neither MOVE nor UIDPLUS
        assert mb.list(MailQuery(folder="Deleted Items")).total == 1
    finally:
        mb.close()


@pytest.fixture(scope="module")
def gmail_like():
    from tests.servers.dovecot import DovecotServer

    server = DovecotServer(capability="+X-GM-EXT-1").start()
    try:
        yield server
    finally:
        server.stop()


def test_gmail_labels_are_folder_backed_even_on_a_password_account(gmail_like, memory_keyring):
    from mailtriage.backends.imap.account import password_key
    from mailtriage.backends.imap.adapter import ImapMailbox
    from mailtriage.core.secrets import set_secret
    from tests.imap.conftest import account_for

    user = gmail_like.add_user()
    gmail_like.append(user, "Projects/Alpha", make_mail(1))
    acct = account_for(gmail_like, user)  # kind imap, a password: still Gmail's labels
    set_secret(password_key(acct.id), user.password)
    mb = ImapMailbox(acct)
    try:
        labels = mb.list_labels()
        assert labels.supported and labels.folder_backed
        assert {label.id for label in labels.labels} == {"Projects/Alpha"}  # the parent is \\Noselect
        assert all(label.id not in ("INBOX", "Drafts", "Sent", "Trash", "Junk", "Archive") for label in labels.labels)
    finally:
        mb.close()


def test_a_label_source_on_a_folder_backed_account_lists_the_labels_folder(gmail_like, memory_keyring):
    """Gmail's labels are folders (X-GM-EXT-1): a {label} source reads that folder, not keywords."""
    from mailtriage.backends.imap.account import password_key
    from mailtriage.backends.imap.adapter import ImapMailbox
    from mailtriage.core.secrets import set_secret
    from tests.imap.conftest import account_for

    user = gmail_like.add_user()
    gmail_like.append(user, "Projects/Alpha", make_mail(1))
    gmail_like.append(user, "Projects/Alpha", make_mail(2))
    gmail_like.append(user, "INBOX", make_mail(3))
    acct = account_for(gmail_like, user)
    set_secret(password_key(acct.id), user.password)
    mb = ImapMailbox(acct)
    try:
        page = mb.list(MailQuery(label="Projects/Alpha"))
        assert page.total == 2
        assert sorted(m.message_id for m in page.messages) == ["<m1@example.net>", "<m2@example.net>"]
    finally:
        mb.close()


def test_a_flag_write_is_one_uid_store_for_the_set_and_no_read_back(mailbox, seed):
    """Issue 35: the listed page of messages flagged in one round trip. The STORE's own answer (each
    message's flags after it) is the check that the change was kept; no FETCH FLAGS follows,
    one UID STORE names the whole set, and the flags are on the server."""
    for n in range(60):
        seed("INBOX", make_mail(n))
    ids = ids_in(mailbox, "INBOX")
    assert len(ids) > 10
    sent: list[str] = []
    stop = TRACE.subscribe(lambda line: sent.append(line.text) if line.direction == ">" else None)
    try:
        mailbox.set_flags(ids, flagged=True)
    finally:
        stop()
    commands = [" ".join(text.split()[1:3]).upper() for text in sent]
    assert commands.count("UID STORE") == 1, sent
    assert "UID FETCH" not in commands, sent
    assert all(h.flagged for h in mailbox.list(MailQuery(folder="INBOX")).messages)
