"""Batches of tagged messages: one proposal lists every message, the write goes through the
adapter's bulk calls (at most MAX_BULK IDs each) and a partial failure is reported message by
message. Against the real Dovecot through ImapMailbox."""

import pytest

from mailtriage.backends.mailbox_contract import MAX_BULK, MailQuery
from mailtriage.backends.imap.ids import decode_message_id
from mailtriage.application.flows.organize import outcome_lines, propose_organize, resolve_toggle
from mailtriage.application.flows.proposals import Blocked, BlockedBy
from tests.imap.conftest import make_mail


def listing(mailbox, folder="INBOX", size=500):
    return list(mailbox.list(MailQuery(folder=folder, page_size=size)).messages)


def fill(dovecot, user, count: int, folder: str = "INBOX") -> None:
    with dovecot.client(user) as client:
        if folder != "INBOX" and not client.folder_exists(folder):
            client.create_folder(folder)
        for n in range(count):
            client.append(folder, make_mail(n, subject=f"Report {n:03d}"))


def test_a_batch_over_max_bulk_flags_every_message_in_bulk_calls(mailbox, dovecot, dovecot_user):
    fill(dovecot, dovecot_user, MAX_BULK * 2 + 50)
    headers = listing(mailbox)
    proposal = propose_organize(mailbox, headers, "toggle_flag", access="draft")
    values = {f.label: f.value for f in proposal.writes[0].fields}
    assert values["Change"] == "flag (add \\Flagged)"
    assert values["Batches"] == f"3 calls of at most {MAX_BULK} messages"
    lines = values["Messages"].split("\n")
    assert len(lines) == 250 and lines[0].endswith("— in INBOX — now unread")
    assert proposal.title == f"Flag: 250 messages in account {mailbox.account_id}"
    assert not any(h.flagged for h in listing(mailbox))  # building wrote nothing
    report = proposal.apply(confirmed=True)
    assert report.ok, report.describe()
    assert all(h.flagged for h in listing(mailbox))
    assert sorted(proposal.facts["outcome"]["done"]) == sorted(h.id for h in headers)
    assert proposal.facts["outcome"]["failed"] == {}


def test_a_mixed_set_is_marked_read_unless_every_message_is_read(mailbox, dovecot, dovecot_user):
    fill(dovecot, dovecot_user, 3)
    headers = listing(mailbox)
    assert resolve_toggle("toggle_read", headers) == "read"
    mailbox.set_flags([headers[0].id], read=True)
    mixed = listing(mailbox)
    assert resolve_toggle("toggle_read", mixed) == "read"
    assert propose_organize(mailbox, mixed, "toggle_read", access="draft").apply(confirmed=True).ok
    every = listing(mailbox)
    assert all(h.read for h in every)
    assert resolve_toggle("toggle_read", every) == "unread"
    assert resolve_toggle("toggle_flag", every) == "flag"


def test_a_message_expunged_by_another_client_is_reported_and_the_rest_is_written(mailbox, dovecot, dovecot_user):
    fill(dovecot, dovecot_user, 3)
    headers = listing(mailbox)
    proposal = propose_organize(mailbox, headers, "flag", access="draft")
    gone = headers[1]
    with dovecot.client(dovecot_user) as other:  # between tag and confirm
        other.select_folder("INBOX")
        other.delete_messages([decode_message_id(gone.id, mailbox.account_id).uid])
        other.expunge()
    report = proposal.apply(confirmed=True)
    assert not report.ok
    assert "PartialFailure" in report.failed[1] and "1 of 3" in report.failed[1]
    outcome = proposal.facts["outcome"]
    assert list(outcome["failed"]) == [gone.id]
    assert "moved or deleted by another client" in outcome["failed"][gone.id]
    assert sorted(outcome["done"]) == sorted([headers[0].id, headers[2].id])
    assert all(h.flagged for h in listing(mailbox))
    lines = outcome_lines(proposal)
    assert lines[0] == "done: 2 of 3 messages"
    assert lines[1].startswith("FAILED: Report 001 — from Reporter <reporter@example.net>: no longer in 'INBOX'")


def test_a_move_to_a_folder_names_it_and_moves_the_batch(mailbox, dovecot, dovecot_user):
    fill(dovecot, dovecot_user, 2)
    with dovecot.client(dovecot_user) as client:
        client.create_folder("Lists")
    headers = listing(mailbox)
    proposal = propose_organize(mailbox, headers, "move", access="draft", folders=mailbox.list_folders(),
                                folder_id="Lists")
    values = {f.label: f.value for f in proposal.writes[0].fields}
    assert values["Change"] == "move to the folder Lists" and values["To folder"] == "Lists"
    assert proposal.apply(confirmed=True).ok
    assert listing(mailbox) == []
    assert sorted(h.subject for h in listing(mailbox, "Lists")) == ["Report 000", "Report 001"]
    same = propose_organize(mailbox, listing(mailbox, "Lists"), "move", access="draft",
                            folders=mailbox.list_folders(), folder_id="Lists")
    assert same.blocked == Blocked(BlockedBy.FOLDER, "every message is in Lists already")
    with pytest.raises(ValueError, match="names the folder"):
        propose_organize(mailbox, headers, "move", access="draft")


def test_a_batch_item_list_is_one_line_per_message(mailbox, dovecot, dovecot_user):
    dovecot.append(dovecot_user, "INBOX", make_mail(1, subject="=?utf-8?q?two=0Alines?="))
    dovecot.append(dovecot_user, "INBOX", make_mail(2, subject="plain"))
    proposal = propose_organize(mailbox, listing(mailbox), "flag", access="draft")
    lines = {f.label: f.value for f in proposal.writes[0].fields}["Messages"].split("\n")
    assert len(lines) == 2
    assert any("two\\x0alines" in line for line in lines)

