"""``/`` searches on the server (issue 14 §4): results paged into the thread list, the status line
names the backend that answered, ``n``/``N`` move between matches in the list and, while a search
is shown, in the reading pane; ``ctrl+n`` is "poll now"; snapshots of the results list."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mailtriage.application import SearchPage, ThreadId, ThreadSummary
from mailtriage.backends.search import SearchRequest
from mailtriage.backends.contract import Address
from mailtriage.core.trace import OPLOG
from mailtriage.tui.bindings import APP, READER, THREAD_LIST
from mailtriage.tui.panes.reader import ReaderPane, ThreadView
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.search_rows import SearchRows
from tests.tui.helpers import (back_to_the_list, make_app, mail, mbox_project, reader_text, screen_text, settle,
                               write_imap_project)

NARROW = (80, 24)
WIDE = (160, 45)


def search_messages():
    return [
        mail("Heap overflow in the frob parser", "Ana Reporter <ana@example.com>",
             "Thu, 01 Oct 2026 09:00:00 +0000", "<overflow-1@example.com>", "A crafted file overflows.\n"),
        mail("Re: Heap overflow in the frob parser", "Priya Raman <priya@frob.example>",
             "Thu, 01 Oct 2026 11:30:00 +0000", "<overflow-2@frob.example>", "Looking into it.\n",
             in_reply_to="<overflow-1@example.com>"),
        mail("Question about 3.4 fixes", "Bob Builder <bob@example.net>",
             "Mon, 02 Nov 2026 14:00:00 +0100", "<question-1@example.net>", "Will 3.4 get the fix?\n"),
        mail("Stack overflow in the frob CLI", "Carl Finder <carl@example.org>",
             "Tue, 03 Nov 2026 08:00:00 +0000", "<overflow-3@example.org>", "Deep recursion.\n"),
        mail("Unrelated note", "Dee <dee@example.org>",
             "Wed, 04 Nov 2026 08:00:00 +0000", "<note-1@example.org>", "the word overflow is only here\n"),
    ]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", "config")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text('name = "Test Triager"\n', encoding="utf-8")
    mbox_project(tmp_path / "p", messages=search_messages())
    return tmp_path


async def search(pilot, text: str) -> None:
    await pilot.press("slash")
    for ch in text:
        await pilot.press(ch)
    await pilot.press("enter")
    await settle(pilot)


def subjects(thread_list: ThreadList) -> list[str]:
    return [thread_list.rows.peek(i).subject for i in range(len(thread_list.rows))]


def test_keys_poll_now_moved_to_ctrl_n_and_n_is_search():
    keys = {b.id: b.key for b in APP + THREAD_LIST + READER}
    assert keys["app.poll_now"] == "ctrl+n"
    assert keys["threads.next_match"] == "n" and keys["threads.previous_match"] == "N"
    assert keys["reader.next_match"] == "n" and keys["reader.previous_match"] == "N"
    ids = [b.id for b in READER]
    assert ids.index("reader.next_match") < ids.index("reader.next_message")  # n is a match while searching


async def slash_searches_on_the_server_and_n_moves_between_matches(app, pilot) -> None:
    ops = []
    stop = OPLOG.subscribe(lambda rec: ops.append((rec.backend, rec.op)))
    try:
        thread_list = app.screen.query_one(ThreadList)
        assert len(thread_list.rows) == 4  # threads of the list
        # n / N before any search: offered in the help, so they say why rather than nothing (issue 35).
        thread_list.cursor = 1
        for key in ("n", "N"):
            app.clear_notifications()
            await pilot.press(key)
            assert [n.message for n in app._notifications] == ["no search yet: / searches"], key
        assert thread_list.cursor == 1
        thread_list.cursor = 0
        await search(pilot, "overflow")
        # Every message with the word (body too), newest first; not the thread rows.
        assert subjects(thread_list) == ["Unrelated note", "Stack overflow in the frob CLI",
                                         "Re: Heap overflow in the frob parser", "Heap overflow in the frob parser"]
        assert ("mbox", "search") in ops
    finally:
        stop()
    text = screen_text(app)
    assert "4 matches for 'overflow'" in text and "via mbox" in text
    assert thread_list.has_focus and thread_list.cursor == 0
    await pilot.press("n")
    await pilot.press("n")
    assert thread_list.cursor == 2
    await pilot.press("N")
    assert thread_list.cursor == 1
    # In the reader, n / N open the next / previous match.
    await pilot.press("enter")
    await settle(pilot)
    assert "Stack overflow in the frob CLI" in reader_text(app)
    app.screen.query_one(ThreadView).focus()
    await pilot.press("n")
    await settle(pilot)
    assert thread_list.cursor == 2 and "Looking into it." in reader_text(app)
    assert app.screen.query_one(ThreadView).has_focus
    await pilot.press("N")
    await settle(pilot)
    assert thread_list.cursor == 1 and "Deep recursion." in reader_text(app)
    # Esc in the list ends the search: the threads are back, n in the reader is "next message".
    thread_list.focus()
    await pilot.press("escape")
    await settle(pilot)
    assert len(thread_list.rows) == 4 and "matches for" not in screen_text(app)
    assert not app.screen.query_one(ThreadView).search_active


async def a_search_without_matches_says_so_and_esc_restores_then_reader_n_is_the_next_message(app, pilot) -> None:
    # n in the reader once no search is shown, which the Esc of the search leaves.
    await search(pilot, "zzzz-nothing")
    thread_list = app.screen.query_one(ThreadList)
    assert len(thread_list.rows) == 0
    assert "0 matches for 'zzzz-nothing'" in screen_text(app)
    await pilot.press("n")
    assert [n.message for n in app._notifications][-1] == "the search matched nothing: / searches again, Esc clears it"
    await pilot.press("escape")
    await settle(pilot)
    assert len(thread_list.rows) == 4
    target = subjects(thread_list).index("Heap overflow in the frob parser")
    thread_list.cursor = target
    await pilot.press("enter")
    await settle(pilot)
    view = app.screen.query_one(ThreadView)
    view.focus()
    await pilot.press("n")
    await settle(pilot)
    assert thread_list.cursor == target  # not moved: n scrolled to the next message
    assert app.screen.query_one(ReaderPane).thread is not None


async def server_words_in_the_status_line_are_inert(app, pilot) -> None:
    await search(pilot, "overflow")
    pane = app.screen.threads
    pane.show_search_results(pane.thread_list.rows, "q\u202e", "imap", "IMAP \x1b[31mSEARCH",
                             failed=(("Lists/\x1b]0;evil\x07dev", "denied"),), notes=("a\u200bnote",))
    await pilot.pause()
    status = str(pane.query_one("#threads-status").render())
    assert "not searched: Lists/" in status
    assert not any(ch in status for ch in ("\x1b", "\x07", "\u202e", "\u200b"))


async def test_searches_on_the_mbox_project(workdir):
    """Three checks on one app (issue 36 §7: an app started and settled is most of such a test's
    CPU; they were three tests, one app each), each starting from the list of threads with the
    focus on it (``back_to_the_list`` asserts it between them); a failure's traceback names the
    check."""
    app = make_app(Path("p"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await slash_searches_on_the_server_and_n_moves_between_matches(app, pilot)
        await back_to_the_list(pilot)
        await a_search_without_matches_says_so_and_esc_restores_then_reader_n_is_the_next_message(app, pilot)
        await back_to_the_list(pilot)
        await server_words_in_the_status_line_are_inert(app, pilot)


# -- on a real Dovecot: the list's IMAP source, and a personal account's folder ------------------

LIST = "security@frob.example"


def report(n: int, subject: str, body: str) -> bytes:
    return (f"From: Reporter {n} <r{n}@example.com>\r\nTo: {LIST}\r\nSubject: {subject}\r\n"
            f"Date: Thu, 0{n} Oct 2026 09:00:00 +0000\r\nMessage-ID: <imap-{n}@example.com>\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + body).encode("utf-8")


@pytest.fixture
def imap_search_project(tmp_path, user_config, dovecot, dovecot_user, memory_keyring):
    project = write_imap_project(tmp_path, user_config, dovecot, dovecot_user, access="read", list_address=LIST)
    when = datetime(2026, 10, 1, 9, 0, tzinfo=timezone.utc)
    for n, (subject, body) in enumerate([("Heap overflow", "crafted file\r\n"), ("Unrelated", "nothing\r\n"),
                                         ("Größenüberlauf", "ein Überlauf im Parser\r\n")], start=1):
        dovecot.append(dovecot_user, "INBOX", report(n, subject, body), when=when + timedelta(hours=n))
    return project


async def test_slash_searches_on_dovecot_in_the_imap_list_then_in_an_account_folder(imap_search_project, dovecot,
                                                                                  dovecot_user):
    """Two tests, one app each, were one app (issue 36 §7): the list's search, ended by Esc, then
    the account folder's; the folder's message is there from the start (the list's search does
    not look at that folder)."""
    dovecot.append(dovecot_user, "Archive", report(4, "Heap overflow, archived", "old\r\n"))
    app = make_app(imap_search_project)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        # / on an IMAP list searches on Dovecot.
        await search(pilot, "Überlauf")
        thread_list = app.screen.query_one(ThreadList)
        assert subjects(thread_list) == ["Größenüberlauf"], "the list's search"
        text = screen_text(app)
        assert "1 match for 'Überlauf'" in text and "via imap (IMAP UID SEARCH" in text
        await pilot.press("enter")
        await settle(pilot)
        assert "ein Überlauf im Parser" in reader_text(app)
        await back_to_the_list(pilot)
        await pilot.press("escape")  # the search ends: the list's threads again
        await settle(pilot)
        assert len(thread_list.rows) == 3 and "match" not in screen_text(app)
        # / in an account folder searches that folder.
        app.screen.accounts.open_folder("work", "Archive", "Archive")
        await settle(pilot)
        app.screen.query_one(ThreadList).focus()
        await search(pilot, "overflow")
        thread_list = app.screen.query_one(ThreadList)
        assert subjects(thread_list) == ["Heap overflow, archived"], "the folder's search: that folder only, not INBOX"
        assert "via work (IMAP UID SEARCH" in screen_text(app)


def test_search_rows_grow_until_the_backend_counts_them():
    def summary(n: int) -> ThreadSummary:
        return ThreadSummary(ThreadId("msgid", f"<m{n}@x>"), f"hit {n}", f"<m{n}@x>", Address("", "a@x"),
                             datetime(2026, 10, 1, tzinfo=timezone.utc), 1)

    def page(number: int, count: int, total, more: bool) -> SearchPage:
        request = SearchRequest("hit", page=number, page_size=2)
        items = tuple(summary(number * 2 + i) for i in range(count))
        return SearchPage("imap", request, items, total, more)

    answers = {1: page(1, 2, 5, True), 2: page(2, 1, 5, False)}
    rows = SearchRows(page(0, 2, None, True), answers.__getitem__, None)
    assert len(rows) == 4 and not rows.total_known  # two known, a page of placeholders
    assert rows.peek(1).subject == "hit 1" and rows.peek(2) is None
    rows.fetch_page(1)
    assert len(rows) == 5 and rows.total_known and rows.peek(3).subject == "hit 3"


