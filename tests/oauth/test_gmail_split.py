"""Split conversations (issue 34, item 3). Gmail starts a new thread when a reply's subject
changes or a thread already holds 100 messages ("Managing threads" of the Gmail API guide);
the emulator does so too. Rows and reads that share a root Message-ID merge into one thread:
the listing shows one row, and ``read_thread`` of either Gmail thread reads them all."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.gmail.source import GmailSource
from mailtriage.backends.search import SearchRequest
from tests.oauth.mail import BASE, make_mail

ROOT = "<m1@example.net>"


def at(minutes):
    return (BASE + timedelta(minutes=minutes)).timestamp()


@pytest.fixture
def source(gmail_account):
    src = GmailSource("gmail", {"list": "security@example.org"}, account=gmail_account)
    yield src
    src.close()


@pytest.fixture
def retitled(google_emulator):
    """A report, a reply, a reply retitled "(CVE-2026-0001 assigned)" and an answer to that."""
    e = google_emulator
    e.add_message(make_mail(1, subject="Heap overflow in parser"), date=at(1))
    e.add_message(make_mail(2, subject="Re: Heap overflow in parser", in_reply_to=ROOT, references=ROOT), date=at(2))
    e.add_message(make_mail(3, subject="Re: Heap overflow in parser (CVE-2026-0001 assigned)",
                            in_reply_to="<m2@example.net>", references=f"{ROOT} <m2@example.net>"), date=at(3))
    e.add_message(make_mail(4, subject="Re: Heap overflow in parser (CVE-2026-0001 assigned)",
                            in_reply_to="<m3@example.net>", references=f"{ROOT} <m2@example.net> <m3@example.net>"),
                  date=at(4))
    return e


def _gmail_threads(emulator) -> list[str]:
    by_time = sorted(emulator.messages.values(), key=lambda m: m.internal_date)
    return list(dict.fromkeys(m.thread_id for m in by_time))


def test_the_emulator_splits_a_retitled_reply_as_gmail_does(retitled):
    first, second = _gmail_threads(retitled)
    assert [m.thread_id for m in sorted(retitled.messages.values(), key=lambda m: m.internal_date)] == \
        [first, first, second, second]


def test_the_listing_shows_one_row_for_a_split_conversation(retitled, source):
    rows = source.list_recent_threads(None, BASE)
    assert len(rows) == 1
    (row,) = rows
    assert row.root_message_id == ROOT and row.message_count == 4 and row.subject == "Heap overflow in parser"
    assert row.thread_id.value == _gmail_threads(retitled)[0]


def test_read_thread_of_either_half_reads_the_whole_conversation(retitled, source):
    wanted = [f"<m{n}@example.net>" for n in (1, 2, 3, 4)]
    for value in _gmail_threads(retitled):
        read = source.read_thread(ThreadId("gmail", value))
        assert [m.message_id for m in read.messages] == wanted
        assert read.thread_id.root == ROOT


def test_search_rows_of_both_halves_name_one_thread(retitled, source):
    page = source.search(SearchRequest("overflow"))
    assert len(page.items) == 4
    assert {item.thread_id for item in page.items} == {ThreadId("gmail", _gmail_threads(retitled)[0])}


def test_a_thread_over_100_messages_is_split_and_merged_again(google_emulator, source):
    e = google_emulator
    e.add_message(make_mail(1, subject="Fuzzing campaign"), date=at(1))
    for n in range(2, 106):
        e.add_message(make_mail(n, subject="Re: Fuzzing campaign", in_reply_to=f"<m{n - 1}@example.net>",
                                references=f"{ROOT} <m{n - 1}@example.net>"), date=at(n))
    threads = _gmail_threads(e)
    assert len(threads) == 2 and sum(m.thread_id == threads[0] for m in e.messages.values()) == 100
    (row,) = source.list_recent_threads(None, BASE)
    assert row.message_count == 105 and row.root_message_id == ROOT
    read = source.read_thread(ThreadId("gmail", threads[1]))
    assert [m.message_id for m in read.messages] == [f"<m{n}@example.net>" for n in range(1, 106)]


def test_threads_that_only_share_a_subject_stay_apart(google_emulator, source):
    e = google_emulator
    first = e.add_message(make_mail(1, subject="Security issue"), date=at(1))
    e.add_message(make_mail(2, subject="Re: Security issue", in_reply_to=ROOT, references=ROOT), date=at(2))
    e.add_message(make_mail(3, subject="Security issue"), date=at(3))  # another reporter, another root
    rows = source.list_recent_threads(None, BASE)
    assert sorted(row.root_message_id for row in rows) == [ROOT, "<m3@example.net>"]
    read = source.read_thread(ThreadId("gmail", e.messages[first].thread_id))
    assert [m.message_id for m in read.messages] == [ROOT, "<m2@example.net>"]
