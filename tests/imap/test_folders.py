"""Folders: roles, parentId, counts, create/rename/delete, role refusals, mark read, empty."""

from __future__ import annotations

import pytest

from mailtriage.backends.errors import NotSupported
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.mailbox_contract import InvalidQuery, MailQuery
from mailtriage.core.trace import TRACE
from tests.imap.conftest import make_mail


def by_id(mailbox):
    return {f.id: f for f in mailbox.list_folders()}


def test_special_use_roles_counts_and_parents(mailbox, seed):
    seed("INBOX", make_mail(1))
    seed("INBOX", make_mail(2), flags=(b"\\Seen",))
    seed("Lists/security", make_mail(3))
    folders = by_id(mailbox)
    assert {f.role for f in folders.values()} >= {"inbox", "drafts", "sent", "trash", "junk", "archive"}
    assert folders["Drafts"].role == "drafts" and folders["Lists/security"].role is None
    assert (folders["INBOX"].total, folders["INBOX"].unread) == (2, 1)
    assert folders["Lists/security"].parent_id == "Lists" and folders["Lists/security"].name == "security"
    assert folders["INBOX"].to_json()["parentId"] is None


def test_roles_from_names_and_overrides_without_special_use(minimal_mailbox):
    roles = {f.id: f.role for f in minimal_mailbox.list_folders()}
    assert roles["Sent Items"] == "sent" and roles["Deleted Items"] == "trash" and roles["Spam"] == "junk"
    assert roles["Drafts"] == "drafts"
    # An override wins over a guessed name.
    from dataclasses import replace

    acct = replace(minimal_mailbox.account, folder_roles={"drafts": "Spam"})
    mb = ImapMailbox(acct)
    try:
        roles = {f.id: f.role for f in mb.list_folders()}
    finally:
        mb.close()
    assert roles["Spam"] == "drafts" and roles["Drafts"] is None


def test_create_rename_delete(mailbox):
    parent = mailbox.create_folder("Projects")
    child = mailbox.create_folder("CVE-2026", parent_id=parent.id)
    assert child.id == "Projects/CVE-2026" and child.parent_id == "Projects" and child.total == 0
    renamed = mailbox.rename_folder(child.id, "CVE-2026-0001")
    assert renamed.id == "Projects/CVE-2026-0001"
    mailbox.delete_folder(renamed.id)
    assert "Projects/CVE-2026-0001" not in by_id(mailbox)
    with pytest.raises(InvalidQuery):
        mailbox.create_folder("a/b")


@pytest.mark.parametrize("folder", ["INBOX", "Drafts", "Sent", "Trash", "Junk", "Archive"])
def test_role_folders_cannot_be_renamed_or_deleted(mailbox, folder):
    with pytest.raises(NotSupported):
        mailbox.rename_folder(folder, "Other")
    with pytest.raises(NotSupported):
        mailbox.delete_folder(folder)
    assert folder in by_id(mailbox)


def test_mark_folder_read(mailbox, seed):
    for n in range(3):
        seed("INBOX", make_mail(n))
    mailbox.mark_folder_read("INBOX")
    assert by_id(mailbox)["INBOX"].unread == 0
    assert mailbox.list(MailQuery(folder="INBOX", unread=True)).total == 0


def test_empty_only_trash_or_junk_with_uid_expunge(dovecot, dovecot_user, mailbox, seed):
    seed("Trash", make_mail(1))
    seed("Trash", make_mail(2))
    seed("Trash/Old", make_mail(3))
    seed("INBOX", make_mail(4), flags=(b"\\Deleted",))  # marked by another client: must survive
    with pytest.raises(NotSupported):
        mailbox.empty_folder("INBOX")
    with pytest.raises(NotSupported):
        mailbox.empty_folder("Archive")
    sent = []
    unsubscribe = TRACE.subscribe(lambda line: sent.append(line.text) if line.direction == ">" else None)
    try:
        mailbox.empty_folder("Trash")
    finally:
        unsubscribe()
    folders = by_id(mailbox)
    assert folders["Trash"].total == 0 and folders["Trash/Old"].total == 1  # child folders untouched
    assert folders["INBOX"].total == 1
    expunges = [t for t in sent if "EXPUNGE" in t]
    assert expunges and all(" UID EXPUNGE " in t for t in expunges)


def test_empty_is_refused_without_uidplus(minimal_mailbox, dovecot_minimal, minimal_user):
    dovecot_minimal.append(minimal_user, "Deleted Items", make_mail(1))
    with pytest.raises(NotSupported):
        minimal_mailbox.empty_folder("Deleted Items")  # a guessed name is not a native role
    from dataclasses import replace

    acct = replace(minimal_mailbox.account, folder_roles={"trash": "Deleted Items"})
    mb = ImapMailbox(acct)
    try:
        with pytest.raises(NotSupported) as err:
            mb.empty_folder("Deleted Items")
        assert "UIDPLUS" in str(err.value)
        assert by_id(mb)["Deleted Items"].total == 1
    finally:
        mb.close()


def test_list_works_without_esearch_or_within(minimal_mailbox, dovecot_minimal, minimal_user):
    from datetime import datetime, timedelta, timezone

    now = datetime.now(timezone.utc)
    dovecot_minimal.append(minimal_user, "INBOX", make_mail(1, sender="a@example.net"), when=now - timedelta(days=5))
    dovecot_minimal.append(minimal_user, "INBOX", make_mail(2, sender="b@example.net"), when=now)
    assert not minimal_mailbox.conn.has("ESEARCH") and not minimal_mailbox.conn.has("WITHIN")
    page = minimal_mailbox.list(MailQuery(folder="INBOX", from_="b@"))
    assert [m.message_id for m in page.messages] == ["<m2@example.net>"] and page.total == 1
    page = minimal_mailbox.list(MailQuery(folder="INBOX", since=now - timedelta(days=1)))
    assert [m.message_id for m in page.messages] == ["<m2@example.net>"]
