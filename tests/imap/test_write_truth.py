"""Writes are reported only when they happened (issue 18 §5), on a real Dovecot with ACLs.

Dovecot answers STORE with OK and drops the change in a folder it grants read-only
(``[READ-ONLY]``, ACL ``lr``) or for a flag outside PERMANENTFLAGS (``lrs``: only \\Seen
is kept), and STORE or MOVE on a UID another client removed answers OK too. The adapter
must refuse up front or verify, and report what did not happen.
"""

from __future__ import annotations

import pytest

from mailtriage.backends.errors import MailError, NotSupported
from mailtriage.backends.imap import protocol
from mailtriage.backends.imap.account import password_key
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.mailbox_contract import MailQuery, PartialFailure
from mailtriage.core.secrets import set_secret
from tests.imap.conftest import account_for, make_mail


@pytest.fixture
def acl_user(dovecot_acl):
    return dovecot_acl.add_user()


@pytest.fixture
def acl_mailbox(dovecot_acl, acl_user, memory_keyring):
    acct = account_for(dovecot_acl, acl_user)
    set_secret(password_key(acct.id), acl_user.password)
    mb = ImapMailbox(acct)
    try:
        yield mb
    finally:
        mb.close()


def flags_on_server(server, user, folder) -> list[tuple]:
    """What the server really keeps, through a separate read-only session."""
    with server.client(user) as client:
        client.select_folder(folder, readonly=True)
        data = protocol.fetch(client, "1:*", ["UID", "FLAGS"])
        return sorted((item.get(b"UID", key), tuple(sorted(f for f in item[b"FLAGS"] if f != b"\\Recent" and not f.startswith(b"$Has"))))
                      for key, item in data.items())


def shared(server, user, mb, rights: str, n: int = 2) -> list[str]:
    for i in range(n):
        server.append(user, "Shared", make_mail(i))
    server.set_rights(user, "Shared", rights)
    return [m.id for m in mb.list(MailQuery(folder="Shared")).messages]


def test_flags_in_a_read_only_folder_are_refused_not_reported_done(dovecot_acl, acl_user, acl_mailbox):
    ids = shared(dovecot_acl, acl_user, acl_mailbox, "lr")
    before = flags_on_server(dovecot_acl, acl_user, "Shared")
    with pytest.raises(PartialFailure) as err:
        acl_mailbox.set_flags(ids, read=True)
    assert set(err.value.failed) == set(ids) and err.value.done == []
    assert "read-only" in next(iter(err.value.failed.values()))
    with pytest.raises(MailError, match="read-only"):
        acl_mailbox.mark_folder_read("Shared")
    assert flags_on_server(dovecot_acl, acl_user, "Shared") == before


def test_flags_outside_permanentflags_are_refused(dovecot_acl, acl_user, acl_mailbox, tmp_path, monkeypatch):
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path))
    ids = shared(dovecot_acl, acl_user, acl_mailbox, "lrs")  # \Seen only
    with pytest.raises(PartialFailure) as err:
        acl_mailbox.set_flags(ids, flagged=True)
    assert err.value.done == [] and "Flagged" in next(iter(err.value.failed.values()))
    with pytest.raises(PartialFailure) as err:
        acl_mailbox.set_labels(ids, add=["embargo"], remove=[])
    assert err.value.done == []
    assert all(flags == () for _uid, flags in flags_on_server(dovecot_acl, acl_user, "Shared"))
    acl_mailbox.set_flags(ids, read=True)  # \Seen is kept: this one happens, and says so
    assert all(flags == (b"\\Seen",) for _uid, flags in flags_on_server(dovecot_acl, acl_user, "Shared"))


def test_labels_are_refused_when_list_labels_says_unsupported(dovecot_acl, acl_user, acl_mailbox, tmp_path,
                                                             monkeypatch):
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path))
    dovecot_acl.append(acl_user, "INBOX", make_mail(1))
    dovecot_acl.set_rights(acl_user, "INBOX", "lrsti")  # no "w": keywords are not kept
    assert acl_mailbox.list_labels().supported is False
    ids = [m.id for m in acl_mailbox.list(MailQuery(folder="INBOX")).messages]
    with pytest.raises(NotSupported):
        acl_mailbox.set_labels(ids, add=["embargo"], remove=[])
    assert flags_on_server(dovecot_acl, acl_user, "INBOX")[0][1] == ()


def _vanish(server, user, message_id: str) -> None:
    """Another client deletes one message (UID EXPUNGE from its own session)."""
    with server.client(user) as client:
        client.select_folder("INBOX")
        (uid,) = client.search(["HEADER", "Message-ID", message_id])
        client.add_flags([uid], [b"\\Deleted"])
        client.uid_expunge([uid])


@pytest.mark.parametrize("write", ["set_flags", "trash", "archive", "move"])
def test_writes_to_vanished_messages_are_reported_stale(dovecot, dovecot_user, mailbox, seed, write):
    for n in range(3):
        seed("INBOX", make_mail(n))
    ids = [m.id for m in mailbox.list(MailQuery(folder="INBOX")).messages]
    by_mid = {m.message_id: m.id for m in mailbox.list(MailQuery(folder="INBOX")).messages}
    gone = by_mid["<m1@example.net>"]
    _vanish(dovecot, dovecot_user, "<m1@example.net>")
    call = {"set_flags": lambda: mailbox.set_flags(ids, read=True), "trash": lambda: mailbox.trash(ids),
            "archive": lambda: mailbox.archive(ids), "move": lambda: mailbox.move(ids, "Junk")}[write]
    with pytest.raises(PartialFailure) as err:
        call()
    assert list(err.value.failed) == [gone]
    assert "no longer" in err.value.failed[gone]
    assert sorted(err.value.done) == sorted(i for i in ids if i != gone)


# -- labels: the list agrees with create, rename and delete; names are checked up front ----------

@pytest.fixture
def labelled(mailbox, seed, tmp_path, monkeypatch):
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path))
    for n in range(2):
        seed("INBOX", make_mail(n))
    return [m.id for m in mailbox.list(MailQuery(folder="INBOX")).messages]


def names(mailbox) -> list[str]:
    return sorted(label.id for label in mailbox.list_labels().labels)


def test_the_label_list_follows_rename_and_delete(mailbox, labelled):
    mailbox.set_labels(labelled, add=["embargo", "triage"], remove=[])
    assert names(mailbox) == ["embargo", "triage"]
    mailbox.rename_label("embargo", "embargoed")
    assert names(mailbox) == ["embargoed", "triage"]  # INBOX's FLAGS still say "embargo"
    mailbox.delete_label("triage")
    assert names(mailbox) == ["embargoed"]
    # Listing by an unknown label makes Dovecot define the keyword: it is still no label.
    assert mailbox.list(MailQuery(label="phantom")).total == 0
    assert names(mailbox) == ["embargoed"]


@pytest.mark.parametrize("name", ["a b", "prüfung", "$Forwarded", "\\Seen", "$HasAttachment", "", "x)"])
def test_label_names_the_server_would_refuse_are_invalid_queries(mailbox, labelled, name):
    from mailtriage.backends.mailbox_contract import InvalidQuery

    with pytest.raises(InvalidQuery):
        mailbox.create_label(name)
    with pytest.raises(InvalidQuery):
        mailbox.set_labels(labelled, add=[name], remove=[])
    with pytest.raises(InvalidQuery):
        mailbox.list(MailQuery(label=name))


def test_a_forwarded_message_is_listed_and_fetched_as_bytes(mailbox, seed):
    forwarded = (b"From: Rita <rita@reporter.example>\r\nTo: sec@example.org\r\nSubject: Original report\r\n"
                 b"Message-ID: <orig@reporter.example>\r\n\r\nThe parser overflows.\r\n")
    raw = (b"From: Fwd <fwd@example.org>\r\nTo: me@example.org\r\nSubject: Fwd: Original report\r\n"
           b"Message-ID: <fwd@example.org>\r\nMIME-Version: 1.0\r\n"
           b"Content-Type: multipart/mixed; boundary=b1\r\n\r\n--b1\r\nContent-Type: text/plain\r\n\r\nSee below.\r\n"
           b"--b1\r\nContent-Type: message/rfc822\r\n\r\n" + forwarded + b"\r\n--b1--\r\n")
    seed("INBOX", raw)
    (header,) = mailbox.list(MailQuery(folder="INBOX")).messages
    message = mailbox.get(header.id)
    (attachment,) = [a for a in message.attachments if a.content_type == "message/rfc822"]
    assert attachment.filename == "Original report.eml"
    data = mailbox.attachment(header.id, attachment.index)
    assert b"Subject: Original report" in data and b"The parser overflows." in data
