"""Split conversations on Microsoft Graph (issue 34). Exchange starts a new conversation
(``conversationId``) when a reply's conversation topic (the subject without RE:/FW:)
changes; the emulator does so too. Rows and reads that share a root Message-ID merge into
one thread, as on Gmail (tests/oauth/test_gmail_split.py). A row counts the messages its
``read_thread`` reads: the whole conversation across folders, drafts left out."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.microsoft.source import GraphSource
from mailtriage.backends.search import SearchRequest
from tests.oauth.mail import BASE, make_mail

ROOT = "<m1@example.net>"
RETITLED = "Re: Heap overflow in parser (CVE-2026-0001 assigned)"


def at(minutes):
    return (BASE + timedelta(minutes=minutes)).timestamp()


@pytest.fixture
def source(graph_account):
    src = GraphSource("graph", {"list": "security@example.org"}, account=graph_account)
    yield src
    src.close()


@pytest.fixture
def retitled(microsoft_emulator):
    """A report, a reply, a reply retitled "(CVE-2026-0001 assigned)" and an answer to that."""
    e = microsoft_emulator
    e.add_message(make_mail(1, subject="Heap overflow in parser"), received=at(1))
    e.add_message(make_mail(2, subject="Re: Heap overflow in parser", in_reply_to=ROOT, references=ROOT),
                  received=at(2))
    e.add_message(make_mail(3, subject=RETITLED, in_reply_to="<m2@example.net>", references=f"{ROOT} <m2@example.net>"),
                  received=at(3))
    e.add_message(make_mail(4, subject=RETITLED, in_reply_to="<m3@example.net>",
                            references=f"{ROOT} <m2@example.net> <m3@example.net>"), received=at(4))
    return e


def _conversations(emulator) -> list[str]:
    by_time = sorted(emulator.messages.values(), key=lambda m: m.received)
    return list(dict.fromkeys(m.conversation_id for m in by_time if not m.is_draft))


def test_the_emulator_splits_a_retitled_reply_as_exchange_does(retitled):
    first, second = _conversations(retitled)
    assert [m.conversation_id for m in sorted(retitled.messages.values(), key=lambda m: m.received)] == \
        [first, first, second, second]


def test_the_listing_shows_one_row_for_a_split_conversation(retitled, source):
    rows = source.list_recent_threads(None, BASE)
    assert len(rows) == 1
    (row,) = rows
    assert row.root_message_id == ROOT and row.message_count == 4 and row.subject == "Heap overflow in parser"
    assert row.thread_id.value == _conversations(retitled)[0]


def test_read_thread_of_either_half_reads_the_whole_conversation(retitled, source):
    wanted = [f"<m{n}@example.net>" for n in (1, 2, 3, 4)]
    for value in _conversations(retitled):
        fresh = GraphSource("graph", {"list": "security@example.org"}, account=source.account)
        try:  # a fresh source: nothing learnt from a listing helps the read
            read = fresh.read_thread(ThreadId("graph", value))
        finally:
            fresh.close()
        assert [m.message_id for m in read.messages] == wanted
        assert read.thread_id.root == ROOT


def test_search_rows_of_both_halves_name_one_thread(retitled, source):
    page = source.search(SearchRequest("overflow"))
    assert len(page.items) == 4
    assert {item.thread_id.value for item in page.items} == {_conversations(retitled)[0]}


def test_threads_that_only_share_a_subject_stay_apart(microsoft_emulator, source):
    e = microsoft_emulator
    e.add_message(make_mail(1, subject="Security issue"), received=at(1))
    e.add_message(make_mail(2, subject="Re: Security issue", in_reply_to=ROOT, references=ROOT), received=at(2))
    e.add_message(make_mail(3, subject="Security issue"), received=at(3))  # another reporter, another root
    rows = source.list_recent_threads(None, BASE)
    assert sorted(row.root_message_id for row in rows) == [ROOT, "<m3@example.net>"]
    first = next(r for r in rows if r.root_message_id == ROOT)
    read = source.read_thread(first.thread_id)
    assert [m.message_id for m in read.messages] == [ROOT, "<m2@example.net>"]


def test_a_row_counts_what_its_read_reads_across_folders(microsoft_emulator, source):
    """Our answer sits in Sent Items: the row counts it, as read_thread reads it (and as a
    Gmail row counts its whole thread)."""
    e = microsoft_emulator
    e.add_message(make_mail(1, subject="Heap overflow in parser"), received=at(1))
    e.add_message(make_mail(2, subject="Re: Heap overflow in parser", sender="Me <me@example.org>",
                            in_reply_to=ROOT, references=ROOT), folder="sentitems", received=at(2))
    e.add_message(make_mail(3, subject="Re: Heap overflow in parser", in_reply_to="<m2@example.net>",
                            references=f"{ROOT} <m2@example.net>"), received=at(3))
    (row,) = source.list_recent_threads(None, BASE)
    read = source.read_thread(row.thread_id)
    assert row.message_count == len(read.messages) == 3
