"""Issue 33: the app showed 0, then 1 thread where ``mailtriage list`` showed 42.

On a real Dovecot, a folder holds the list's threads, more than a walk's window (500) of
newer mail that is not the list's, and on top one old-dated message (an old mail moved back
from Archive keeps its INTERNALDATE and gets the highest sequence number). The first page's
walk must not take that message for the window's end, and the app must not take a short
first page for the whole window.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mailtriage.core.settings import load_settings
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.application.service import Service
from tests.tui.helpers import make_app, settle, write_imap_project

LIST = "security@frob.example"
THREADS = 42
NEWER = 520  # more than a walk's window (recent.WINDOW) of newer mail that is not the list's
LIST_DAY = datetime(2026, 10, 1, 9, 0, tzinfo=timezone.utc)
OLD_DAY = datetime(2025, 6, 1, 9, 0, tzinfo=timezone.utc)  # before the project's window (2026-01-01)


def message(n: int, to: str, subject: str, when: datetime) -> bytes:
    return (f"From: Sender {n} <sender{n}@example.com>\r\n"
            f"To: {to}\r\n"
            f"Subject: {subject}\r\n"
            f"Date: {when.strftime('%a, %d %b %Y %H:%M:%S +0000')}\r\n"
            f"Message-ID: <{subject.replace(' ', '-')}@example.com>\r\n"
            "\r\n"
            "body\r\n").encode()


@pytest.fixture
def folder_with_a_moved_back_mail(tmp_path, user_config, dovecot, dovecot_user, memory_keyring, monkeypatch):
    monkeypatch.setenv("MAILTRIAGE_CACHE_DIR", str(tmp_path / "cold-cache"))  # no summary cache yet
    project = write_imap_project(tmp_path, user_config, dovecot, dovecot_user, access="draft", list_address=LIST)
    with dovecot.client(dovecot_user) as client:
        for n in range(THREADS):
            when = LIST_DAY + timedelta(minutes=n)
            client.append("INBOX", message(n, LIST, f"report {n}", when), msg_time=when)
        for n in range(NEWER):
            when = LIST_DAY + timedelta(days=1, minutes=n)
            client.append("INBOX", message(n, "someone@else.example", f"other {n}", when), msg_time=when)
        # Moved back from Archive: an old list mail, appended last, with its old arrival time.
        client.append("INBOX", message(0, LIST, "archived report", OLD_DAY), msg_time=OLD_DAY)
    return project


def test_the_first_page_walks_past_an_old_mail_moved_back(folder_with_a_moved_back_mail):
    session = Service(folder_with_a_moved_back_mail, demo=False, settings=load_settings())
    session.open()
    try:
        whole = session.list_threads(LIST).value
        first = session.list_threads(LIST, limit=200).value
    finally:
        session.close()
    assert len(whole) == THREADS  # what `mailtriage list` shows
    assert len(first) == THREADS  # the first page holds every thread of this short window


async def test_the_app_lists_every_thread_of_the_window(folder_with_a_moved_back_mail):
    app = make_app(folder_with_a_moved_back_mail)
    shown: list[int] = []
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        threads = app.screen.query_one(ThreadList)
        shown.append(len(threads.rows))
    assert shown == [THREADS]


def reply(n: int, parent: str, when: datetime) -> bytes:
    """A reply naming its parent in In-Reply-To only (no References), as some clients send."""
    return (f"From: Replier {n} <replier{n}@example.com>\r\n"
            f"To: {LIST}\r\n"
            f"Subject: Re: long thread\r\n"
            f"Date: {when.strftime('%a, %d %b %Y %H:%M:%S +0000')}\r\n"
            f"Message-ID: <reply-{n}@example.com>\r\n"
            f"In-Reply-To: <{parent}>\r\n"
            "\r\n"
            "body\r\n").encode()


CHAIN = 130  # replies: more than a first page of 2 threads walks in its first window (100 messages)


@pytest.fixture
def long_reply_chain(tmp_path, user_config, dovecot, dovecot_user, memory_keyring, monkeypatch):
    """An older thread, then one thread of a root and CHAIN replies, each naming only its
    parent: counted per message, the chain's newest window looks like a hundred threads."""
    monkeypatch.setenv("MAILTRIAGE_CACHE_DIR", str(tmp_path / "cold-cache"))
    project = write_imap_project(tmp_path, user_config, dovecot, dovecot_user, access="draft", list_address=LIST)
    with dovecot.client(dovecot_user) as client:
        client.append("INBOX", message(0, LIST, "older report", LIST_DAY), msg_time=LIST_DAY)
        root_day = LIST_DAY + timedelta(days=1)
        client.append("INBOX", message(1, LIST, "long thread", root_day), msg_time=root_day)
        parent = "long-thread@example.com"
        for n in range(CHAIN):
            when = root_day + timedelta(minutes=n + 1)
            client.append("INBOX", reply(n, parent, when), msg_time=when)
            parent = f"reply-{n}@example.com"
    return project


def test_a_first_page_counts_threads_as_the_listing_threads_them(long_reply_chain):
    session = Service(long_reply_chain, demo=False, settings=load_settings())
    session.open()
    try:
        first = session.list_threads(LIST, limit=2).value
    finally:
        session.close()
    assert len(first) == 2 and "older report" in [t.subject for t in first]


async def test_the_app_does_not_take_a_page_cut_short_for_the_whole_window(long_reply_chain):
    app = make_app(long_reply_chain)
    app.first_page = 2
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert len(app.screen.query_one(ThreadList).rows) == 2
