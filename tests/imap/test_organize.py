"""flows.organize: flag and move proposals show what they write, and write only when applied.

Against the real Dovecot through ImapMailbox (the builder is UI-free).
"""

from dataclasses import replace

import pytest

from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.mailbox_contract import MailQuery
from mailtriage.application.flows.organize import propose_organize
from mailtriage.application.flows.proposals import WriteKind
from tests.imap.conftest import make_mail


def inbox(mailbox):
    return list(mailbox.list(MailQuery(folder="INBOX")).messages)


def test_flag_proposal_shows_the_messages_and_writes_only_when_applied(mailbox, dovecot, dovecot_user):
    dovecot.append(dovecot_user, "INBOX", make_mail(1, subject="Parser crash", sender="Ana <ana@example.com>"))
    headers = inbox(mailbox)
    proposal = propose_organize(mailbox, headers, "flag", access="draft", folders=mailbox.list_folders())
    write = proposal.writes[0]
    assert write.kind is WriteKind.FLAG
    assert write.backend == f"account {mailbox.account_id}"
    values = {f.label: f.value for f in write.fields}
    assert values["Change"] == "flag (add \\Flagged)"
    # The dialog names the change and where it lands, not the write's kind (issue 35 item 6).
    assert (write.heading, write.destination) == ("Flag", f"on the server of account {mailbox.account_id}")
    unread = propose_organize(mailbox, headers, "unread", access="draft").writes[0]
    assert unread.heading == "Mark unread"
    assert values["Message"] == "Parser crash — from Ana <ana@example.com> — in INBOX"
    assert values["  now"] == "unread"
    assert proposal.blocked is None
    assert not inbox(mailbox)[0].flagged  # building wrote nothing
    report = proposal.apply(confirmed=True)
    assert report.ok
    after = inbox(mailbox)[0]
    assert after.flagged and not after.read


def test_archive_proposal_names_the_folder_and_moves(mailbox, dovecot, dovecot_user):
    dovecot.append(dovecot_user, "INBOX", make_mail(2, subject="Old report"))
    proposal = propose_organize(mailbox, inbox(mailbox), "archive", access="send", folders=mailbox.list_folders())
    assert proposal.writes[0].kind is WriteKind.MOVE
    assert {f.label: f.value for f in proposal.writes[0].fields}["To folder"] == "Archive"
    assert proposal.apply(confirmed=True).ok
    assert inbox(mailbox) == []
    assert [h.subject for h in mailbox.list(MailQuery(folder="Archive")).messages] == ["Old report"]


def test_a_read_only_account_is_refused_before_anything_is_written(account, dovecot, dovecot_user):
    dovecot.append(dovecot_user, "INBOX", make_mail(3))
    reader = ImapMailbox(replace(account, access="read"))
    try:
        proposal = propose_organize(reader, inbox(reader), "trash", access=reader.account.access)
        assert "access = 'read'" in proposal.blocked.text
        with pytest.raises(PermissionError):
            proposal.apply(confirmed=True)
        assert len(inbox(reader)) == 1
    finally:
        reader.close()


def test_unknown_action_and_empty_selection_are_refused(mailbox):
    with pytest.raises(ValueError, match="unknown action"):
        propose_organize(mailbox, [], "delete", access="draft")
    with pytest.raises(ValueError, match="no message"):
        propose_organize(mailbox, [], "read", access="draft")
