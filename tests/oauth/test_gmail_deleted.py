"""A message deleted in Gmail between a listing and its read (issue 34, item 2).

Another client (the web UI, a filter) deletes a message after ``messages.list`` or
``threads.get`` named it; its ``messages.get`` is then Gmail's 404. That one message is
left out with a note; the search, the page and the thread read the rest."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.gmail.adapter import GmailMailbox
from mailtriage.backends.gmail.source import GmailSource
from mailtriage.backends.mailbox_contract import MailQuery
from mailtriage.backends.search import SearchRequest
from tests.oauth.mail import BASE, make_mail


def at(minutes):
    return (BASE + timedelta(minutes=minutes)).timestamp()


@pytest.fixture
def thread(google_emulator):
    """A report and two answers in one Gmail thread: (gmail ids, thread id)."""
    e = google_emulator
    ids = [e.add_message(make_mail(1, subject="Heap overflow"), date=at(1))]
    for n in (2, 3):
        ids.append(e.add_message(make_mail(n, subject="Re: Heap overflow", in_reply_to=f"<m{n - 1}@example.net>",
                                           references="<m1@example.net>"), date=at(n)))
    return ids, e.messages[ids[0]].thread_id


@pytest.fixture
def source(gmail_account):
    src = GmailSource("gmail", {"list": "security@example.org"}, account=gmail_account)
    yield src
    src.close()


def test_a_search_leaves_out_a_message_deleted_after_the_list(google_emulator, source, thread):
    ids, _thread_id = thread
    google_emulator.delete_after_listing(ids[1])
    page = source.search(SearchRequest("overflow"))
    assert sorted(item.subject for item in page.items) == ["Heap overflow", "Re: Heap overflow"]
    assert any("1 message" in note and "deleted" in note for note in page.notes)


def test_a_mailbox_page_leaves_out_a_message_deleted_after_the_list(google_emulator, gmail_account, thread):
    ids, _thread_id = thread
    google_emulator.delete_after_listing(ids[0])
    mailbox = GmailMailbox(gmail_account)
    try:
        page = mailbox.list(MailQuery(folder="INBOX", page_size=10))
    finally:
        mailbox.close()
    assert [m.message_id for m in page.messages] == ["<m3@example.net>", "<m2@example.net>"]
    assert any("1 message" in note and "deleted" in note for note in page.notes)


def test_read_thread_leaves_out_a_message_deleted_after_the_thread_listing(google_emulator, source, thread):
    ids, thread_id = thread
    google_emulator.delete_after_listing(ids[1])
    read = source.read_thread(ThreadId("gmail", thread_id))
    assert [m.message_id for m in read.messages] == ["<m1@example.net>", "<m3@example.net>"]
    assert any("1 message" in note and "deleted" in note for note in read.notes)


def test_a_thread_whose_every_message_went_is_still_an_error(google_emulator, source, thread):
    from mailtriage.backends.errors import BackendFailure

    ids, thread_id = thread
    google_emulator.delete_after_listing(*ids)
    with pytest.raises(BackendFailure):
        source.read_thread(ThreadId("gmail", thread_id))


def test_the_listing_leaves_out_a_thread_whose_unnamed_first_message_went(google_emulator, source, thread):
    # A first message without Message-ID is read raw (for its synthetic ID) after threads.get.
    gone = google_emulator.add_message(make_mail(9, subject="No id", message_id=None), date=at(9),
                                       thread_id="18f0000000000001")
    google_emulator.delete_after_listing(gone)
    rows = source.list_recent_threads(None, BASE)
    assert [row.root_message_id for row in rows] == ["<m1@example.net>"]
