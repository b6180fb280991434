"""Gmail trash and bulk writes under throttling and timeouts (issue 34, item 4).

A 429 past the backoff deadline, or a timeout, part-way through a batch must say exactly
which messages changed on the server: a :class:`PartialFailure` with ``done`` and
``failed`` (the shape application/flows/organize.py reads), never one failure for the batch. A
timed-out write may have happened: the labels are read back to tell."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailtriage.backends.errors import Unavailable
from mailtriage.backends.gmail.adapter import GmailMailbox
from mailtriage.backends.gmail.api import Backoff, GmailApi
from mailtriage.backends.mailbox_contract import PartialFailure
from tests.archives.fakehttp import Reply
from tests.oauth.fixtures import google_account, save_google_sign_in
from tests.oauth.mail import BASE, make_mail

QUICK = Backoff(base=0.05, cap=0.2, deadline=1.0)
THROTTLED = Reply.json({"error": {"code": 429, "message": "User-rate limit exceeded.", "status": "RESOURCE_EXHAUSTED",
                                  "errors": [{"message": "User-rate limit exceeded.", "domain": "usageLimits",
                                              "reason": "rateLimitExceeded"}]}}, 429)


@pytest.fixture
def account(google_emulator, memory_keyring):
    # A short timeout, so that a stalled answer is a timeout; the stall is far longer.
    acc = google_account(google_emulator, access="draft", organize=True, timeout=1)
    save_google_sign_in(google_emulator, acc)
    return acc


@pytest.fixture
def mailbox(account):
    mb = GmailMailbox(account, api=GmailApi(account, backoff=QUICK))
    yield mb
    mb.close()


@pytest.fixture
def four(google_emulator):
    return [google_emulator.add_message(make_mail(n), date=(BASE + timedelta(minutes=n)).timestamp())
            for n in range(4)]


def test_trash_throttled_part_way_reports_what_changed(google_emulator, mailbox, four):
    google_emulator.server.fail(f"/messages/{four[2]}/trash", THROTTLED, times=None)
    ids = [mailbox.mid(g) for g in four]
    with pytest.raises(PartialFailure) as caught:
        mailbox.trash(ids)
    assert caught.value.done == ids[:2] and set(caught.value.failed) == set(ids[2:])
    assert "429" in caught.value.failed[ids[2]] and "not attempted" in caught.value.failed[ids[3]]
    assert ["TRASH" in google_emulator.messages[g].labels for g in four] == [True, True, False, False]


def test_a_trash_that_timed_out_after_it_happened_counts_as_done(google_emulator, mailbox, four):
    google_emulator.stall_after[f"/messages/{four[2]}/trash"] = 3.0
    ids = [mailbox.mid(g) for g in four]
    with pytest.raises(PartialFailure) as caught:
        mailbox.trash(ids)
    assert caught.value.done == ids[:3]  # the third was trashed; only its answer was lost
    assert list(caught.value.failed) == [ids[3]] and "not attempted" in caught.value.failed[ids[3]]


def test_trash_throttled_before_anything_changed_is_the_error_as_it_is(google_emulator, mailbox, four):
    google_emulator.server.fail("/trash", THROTTLED, times=None)
    with pytest.raises(Unavailable) as caught:
        mailbox.trash([mailbox.mid(g) for g in four])
    assert "429" in str(caught.value)
    assert not any("TRASH" in m.labels for m in google_emulator.messages.values())


def test_a_batch_modify_that_timed_out_after_it_happened_is_done(google_emulator, mailbox, four):
    google_emulator.stall_after["/messages/batchModify"] = 3.0
    mailbox.archive([mailbox.mid(g) for g in four])  # no error: every message is archived
    assert not any("INBOX" in google_emulator.messages[g].labels for g in four)


def test_a_batch_modify_refused_by_a_429_changed_nothing_and_says_so(google_emulator, mailbox, four):
    google_emulator.server.fail("/messages/batchModify", THROTTLED, times=None)
    with pytest.raises(Unavailable) as caught:
        mailbox.archive([mailbox.mid(g) for g in four])
    assert "429" in str(caught.value)
    assert all("INBOX" in google_emulator.messages[g].labels for g in four)


def test_the_organize_flow_reports_two_of_four_trashed(google_emulator, mailbox, four):
    # The case: the organize flow marked the whole batch failed while 2 of 4 had changed.
    from mailtriage.backends.mailbox_contract import MailQuery
    from mailtriage.application.flows.organize import propose_organize

    headers = mailbox.list(MailQuery(folder="INBOX", page_size=10)).messages  # newest first
    google_emulator.server.fail(f"/messages/{mailbox.gid(headers[2].id)}/trash", THROTTLED, times=None)
    proposal = propose_organize(mailbox, headers, "trash", access="draft", folders=mailbox.list_folders())
    report = proposal.apply(confirmed=True)
    outcome = proposal.facts["outcome"]
    assert report.failed is not None and outcome["done"] == [h.id for h in headers[:2]]
    assert set(outcome["failed"]) == {h.id for h in headers[2:]} and outcome["lines"][0] == "done: 2 of 4 messages"
