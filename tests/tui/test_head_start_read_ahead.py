"""Start-up's child reads the first row's thread ahead (tui/head_start.py, issue 33).

The first key of a triager is Enter on the newest report. Start-up's child, connected while
the app still imports Textual, reads the thread of the first row: an Enter on that row shows it
without waiting for the app's own project opening, sign-in and sources check. It serves that
row once, only when it has the row's messages, and only until this process lists (or fails to)
itself or start-up's listing is whole (later reads are the app's own). A real Dovecot behind
the loopback proxy of test_imap_network.py (tests/servers/faultproxy.py where a read must stall).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from datetime import timedelta

import pytest

from mailtriage.core.trace import OPLOG, TRACE
from mailtriage.tui import first_screen, head_start
from mailtriage.tui.head_start import STARTUP_CALLER, ForkedHeadStart
from mailtriage.tui.panes.reader import ReaderPane
from mailtriage.tui.panes.thread_list import ThreadList
from tests.servers.faultproxy import FaultProxy
from tests.tui.helpers import WAIT_BOUND, account_through, make_app, settle
from tests.tui.test_head_start_listing import gone, listed_here
from tests.tui.test_imap_drafts import LIST, REPORT, WHEN, imap_project  # noqa: F401 (fixture)
from tests.tui.test_imap_network import (proxied_project, reader_status, threads_status,  # noqa: F401 (fixture)
                                        wait_until)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the head start forks")


def finished(pid: int, timeout: float = WAIT_BOUND) -> bool:
    """Whether the child ``pid`` has exited (reaped or not) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:  # reaped already
            return True
        time.sleep(0.02)
    return False


def reads_by() -> list[str]:
    return [r.caller for r in OPLOG.items() if r.op == "read_thread"]


def shown_subject(app) -> str | None:
    thread = app.screen.query_one(ReaderPane).thread
    return None if thread is None else thread.subject


def test_a_warm_child_reads_the_first_rows_thread_once(proxied_project):
    project, _proxy = proxied_project
    newest = listed_here(project)[0]  # fills the summary cache: a warm start
    child = ForkedHeadStart.start(project, demo=False)
    head = child.result()
    assert head.stale and head.read_follows == head.listing.value[0].thread_id == newest.thread_id
    child.receive_read_ahead()
    assert gone(child.pid) and child.ended.is_set()  # it ended once it had sent the read
    assert child.take_read_ahead(listed_here(project)[1]) is None  # another thread: read by the app itself
    OPLOG.clear()
    dispatch = child.take_read_ahead(newest)
    assert dispatch.value.subject == newest.subject and dispatch.resolution.chosen == "imap"
    assert reads_by() == [STARTUP_CALLER]  # what the child recorded, for the console
    assert child.take_read_ahead(newest) is None  # once


def test_a_warm_childs_sign_in_runs_beside_its_head_start_and_the_read_finds_it_done(proxied_project):
    """Issue 33: at 100k messages the child's sign-in and SELECT came after its summary cache's
    load, on the critical path. Now they start on a thread as soon as the project is open."""
    project, _proxy = proxied_project
    newest = listed_here(project)[0]  # fills the summary cache: a warm start
    TRACE.clear()
    child = ForkedHeadStart.start(project, demo=False)
    head = child.result()
    child.receive_read_ahead()
    assert child.take_read_ahead(newest) is not None
    steps = [(line.channel, line.direction, line.text) for line in TRACE.items()]
    notes = [text for channel, _d, text in steps if channel == STARTUP_CALLER]
    # The child's own steps, in order: the sign-in is under way before the head start is read.
    assert notes == ["signing in ahead of the read, beside the head start", "head start read",
                     "signed in; reading on"], steps
    imap = [(i, d, text) for i, (channel, d, text) in enumerate(steps) if channel.startswith("imap:")]
    reading_on = steps.index((STARTUP_CALLER, "!", "signed in; reading on"))
    connects = [i for i, d, text in imap if d == "!" and text.startswith("connect ")]
    selects = [i for i, d, text in imap if d == ">" and " SELECT " in f" {text} " and "INBOX" in text]
    assert len(connects) == 1 and connects[0] < reading_on, steps  # one sign-in, done before the read
    assert selects and all(i < reading_on for i in selects), steps  # the read selects nothing again
    read = [text for i, d, text in imap if i > reading_on and d == ">"]
    assert any("FETCH" in text for text in read) and not any("LOGIN" in text for text in read), read
    assert head.read_follows == newest.thread_id
    # The read's sign-in selects nothing the read does not read (no probe of Drafts).
    selected = [text.split(" ", 2)[2] for _i, d, text in imap if d == ">" and text.split(" ")[1:2] == ["SELECT"]]
    assert selected == ['"INBOX"'], selected


def test_a_cold_childs_first_page_carries_the_first_rows_thread(proxied_project, monkeypatch):
    monkeypatch.setattr(head_start, "FIRST_PAGE", 1)
    project, _proxy = proxied_project
    child = ForkedHeadStart.start(project, demo=False)
    assert child.result().listing_follows
    page = child.next_listing()
    first = page.listing()[0]
    assert page.read_follows == first.thread_id  # in a frame of its own, after the page
    assert child.next_listing().whole  # the listing's next call takes the read on its way
    assert child.read_settled.is_set()
    assert child.take_read_ahead(first).value.subject == first.subject == "Second report"
    child.finish()


def started_with_server_held(proxied_project):
    """An app prepared with a child that has done all it does (its read ahead is in the pipe),
    then the server held: the app's own sign-in and listing (which would make later reads its
    own) wait. Returns the app, the child, the proxy and the newest listed thread."""
    project, proxy = proxied_project
    newest = listed_here(project)[0]
    child = ForkedHeadStart.start(project, demo=False)
    app = make_app(project)
    assert child.ready(WAIT_BOUND)
    app.prepare_first_screen(child)
    assert finished(child.pid)
    proxy.hold()
    OPLOG.clear()
    return app, child, proxy, newest


async def test_an_enter_on_the_first_row_does_not_wait_for_the_apps_own_sign_in(proxied_project):
    app, _child, proxy, newest = started_with_server_held(proxied_project)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.press("enter")
            await wait_until(pilot, lambda: shown_subject(app) == newest.subject)
            assert reads_by() == [STARTUP_CALLER]
            proxy.release()  # the app's own sign-in goes on (and its quit need not end it)
            await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(app))
    finally:
        proxy.release()


async def test_an_enter_on_the_first_row_shows_the_read_ahead_in_the_keys_own_frame(proxied_project):
    """Issue 33 (first key acts): the child's read ahead, here before the main screen takes keys,
    is handed to the reader with the first rows. The Enter then shows it while the key is handled:
    no "Loading" frame, no read worker between the key and the body (at start-up, at load, that
    hop cost a frame and a thread's turn)."""
    app, child, proxy, newest = started_with_server_held(proxied_project)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            # Start-up's read ahead taken from the child (its worker posts it on as it ends).
            await wait_until(pilot, lambda: child.ended.is_set()
                             and not [w for w in app.workers if w.group == "read-ahead"])
            await pilot.pause()
            first_row = app.screen.query_one(ThreadList).current
            # What Reading.open_thread shows in the key's frame (tui/controllers/thread_ahead.py).
            assert app.screen.reading.thread_ahead.holds(first_row)
            await pilot.press("enter")
            assert shown_subject(app) == newest.subject
            assert not app.screen.reading.thread_ahead.holds(first_row)  # served once
            assert reads_by() == [STARTUP_CALLER]
            proxy.release()
    finally:
        proxy.release()


async def test_an_enter_held_on_the_kept_frame_shows_the_thread_in_the_apps_first_layout(proxied_project):
    """Issue 33 (first key acts): an Enter typed on the kept frame is held until the main screen
    is up; released, it opens the first row before Textual lays out the app's first live frame,
    so that frame shows the thread. Posted, the key and its Opened message went through the
    widgets' queues while Textual laid out and painted the list's own frame first: the body came
    a frame later (~0.09 s of the UI thread, benchmarks/trace_startup.py)."""
    from textual import events

    app, child, proxy, newest = started_with_server_held(proxied_project)
    child.receive_read_ahead()  # here before the main screen takes keys, as at a warm start
    assert app._held_keys == []
    app._held_keys.append(events.Key("enter", "\r"))  # as StartupKeys.on_event holds a key typed now
    at_layouts: list[str | None] = []  # the reader's thread at each of the main screen's layouts

    def watch_layouts(_message) -> None:  # run_test's message hook: every message the app processes
        main = app.main if app.is_running else None
        if main is not None and not at_layouts:
            at_layouts.append("subscribed")
            main.screen_layout_refresh_signal.subscribe(app, lambda _s: at_layouts.append(shown_subject(app)),
                                                        immediate=True)

    try:
        async with app.run_test(size=(140, 40), message_hook=watch_layouts) as pilot:
            await wait_until(pilot, lambda: shown_subject(app) == newest.subject)
            assert at_layouts[1] == newest.subject, at_layouts  # the first layout
            assert reads_by() == [STARTUP_CALLER]
            proxy.release()
    finally:
        proxy.release()


async def test_once_the_listing_is_whole_the_app_reads_the_first_row_itself(proxied_project):
    project, _proxy = proxied_project
    newest = listed_here(project)[0]
    app = make_app(project)
    app.prepare_first_screen(ForkedHeadStart.start(project, demo=False))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(app))
        await settle(pilot)
        OPLOG.clear()
        await pilot.press("enter")
        await wait_until(pilot, lambda: shown_subject(app) == newest.subject)
        assert reads_by() == ["you"]  # a reply that came since start-up would be there


async def test_a_cold_starts_first_page_does_not_wait_for_the_apps_own_project_opening(proxied_project,
                                                                                      monkeypatch):
    monkeypatch.setattr(head_start, "FIRST_PAGE", 1)
    project, _proxy = proxied_project
    app = make_app(project)
    app.first_page = 1
    child = ForkedHeadStart.start(project, demo=False)
    assert child.ready(WAIT_BOUND)  # its head start is there before the first frame (not late, on a busy machine)
    app.prepare_first_screen(child)
    assert app.head_start.listing_follows
    opening = app.session._lock.lock  # the backend lock the app's opening takes
    opening.acquire()  # a call in progress: the opening waits for it
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await wait_until(pilot, lambda: len(app.screen.query_one(ThreadList).rows) == 1)  # the first page
            assert not app.session.is_open
            await pilot.press("enter")  # and the first row reads as the child read it
            await wait_until(pilot, lambda: shown_subject(app) == "Second report")
            opening.release()
            opening = None
            await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(app))
    finally:
        if opening is not None:
            opening.release()


def cold_started_with_server_held(proxied_project, monkeypatch):
    """A cold start's app prepared with a child that has done all it does (a first page of one
    thread, its read ahead, the whole window: all in the pipe before the app's first frame), then
    the server held: the app's own opening and sources check wait."""
    monkeypatch.setattr(head_start, "FIRST_PAGE", 1)
    project, proxy = proxied_project
    child = ForkedHeadStart.start(project, demo=False)
    app = make_app(project)
    app.first_page = 1
    assert child.ready(WAIT_BOUND)
    app.prepare_first_screen(child)
    assert app.head_start.listing is None and app.head_start.listing_follows
    assert finished(child.pid)
    proxy.hold()
    OPLOG.clear()
    return app, proxy


def rows_at_each_layout(app) -> tuple[list, object]:
    """The thread list's row count at each of the main screen's layouts, and run_test's message hook
    that records them."""
    at_layouts: list = []

    def watch_layouts(_message) -> None:  # every message the app processes
        main = app.main if app.is_running else None
        if main is not None and not at_layouts:
            at_layouts.append("subscribed")
            main.screen_layout_refresh_signal.subscribe(
                app, lambda _s: at_layouts.append(len(main.query_one(ThreadList).rows)), immediate=True)

    return at_layouts, watch_layouts


async def test_a_cold_starts_first_page_that_came_before_the_first_frame_is_in_it(proxied_project, monkeypatch):
    """Issue 33, cold: the child's first page, here when the main screen mounts, is in its first
    layout (as a warm start's rows are). Taken by the listing's worker, it came in a frame of its
    own after an empty one (~0.1 s more to the newest subject on a 100k folder)."""
    app, proxy = cold_started_with_server_held(proxied_project, monkeypatch)
    at_layouts, hook = rows_at_each_layout(app)
    try:
        async with app.run_test(size=(140, 40), message_hook=hook) as pilot:
            await wait_until(pilot, lambda: len(at_layouts) > 1)
            assert at_layouts[1] == 1, at_layouts  # the first layout shows the page
            proxy.release()
            await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(app))
    finally:
        proxy.release()


async def test_a_cold_starts_first_frame_does_not_wait_for_a_first_page_on_its_way(proxied_project, monkeypatch):
    """The UI never waits on I/O: a first page not yet in the pipe when the main screen mounts is not
    waited for there (the UI thread waited up to 0.1 s in a select() on the child's pipe). The first
    frame shows no rows; the event loop takes the page when it comes, and the app's own opening starts
    after the frame that shows it (OPENING_WAITS_FOR_PAGE, how long the opening waits for it on a
    timer, made longer than any wait here)."""
    monkeypatch.setattr(head_start, "FIRST_PAGE", 1)
    monkeypatch.setattr(first_screen, "OPENING_WAITS_FOR_PAGE", WAIT_BOUND)
    project, proxy = proxied_project
    proxy.hold()  # the child's sign-in, and so its first page, wait for the server (its head start does not)
    try:
        child = ForkedHeadStart.start(project, demo=False)
        app = make_app(project)
        app.first_page = 1
        assert child.ready(WAIT_BOUND)
        app.prepare_first_screen(child)
        assert app.head_start.listing_follows
        at_layouts, hook = rows_at_each_layout(app)
        async with app.run_test(size=(140, 40), message_hook=hook) as pilot:
            await wait_until(pilot, lambda: len(at_layouts) > 1)
            assert at_layouts[1] == 0, at_layouts  # the first frame, drawn while the page cannot have come
            assert not child.ready(0) and app._listing_child_taken is False  # watched, not taken by a listing
            proxy.release()
            await wait_until(pilot, lambda: len(app.screen.query_one(ThreadList).rows) == 1)
            assert app.first_page_shown() is not None  # the event loop's: the listing goes on from it
            await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(app))
    finally:
        proxy.release()


def test_a_cold_childs_read_ahead_is_received_as_it_comes_whatever_the_listing_does(proxied_project, monkeypatch):
    """After the first page nothing in this process asks for the read ahead (the listing is in its
    sources check, after this process's opening): it is received as it comes all the same, and
    offered (``read_arrived``), so that an Enter finds it whether it came before the opening or
    after. Only the listing's own next call received it once the project was open."""
    monkeypatch.setattr(head_start, "FIRST_PAGE", 1)
    project, _proxy = proxied_project
    child = ForkedHeadStart.start(project, demo=False)
    arrived = threading.Event()
    child.read_arrived = arrived.set
    try:
        assert child.result().listing_follows
        page = child.next_listing()
        assert page is not None and page.read_follows is not None
        assert arrived.wait(WAIT_BOUND)
        assert child.take_read_ahead(page.listing()[0], timeout=0).value.subject == "Second report"
        assert child.next_listing().whole
    finally:
        child.finish()


async def test_a_cold_starts_read_ahead_is_shown_in_the_enters_own_frame(proxied_project, monkeypatch):
    """Issue 33, cold: the read ahead that follows the child's first page is handed to the reader
    with the page, as a warm start's is: the Enter typed on the first frame shows it while the key
    is handled (no "Loading" frame, no read worker's turn between the key and the body)."""
    app, proxy = cold_started_with_server_held(proxied_project, monkeypatch)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await wait_until(pilot, lambda: len(app.screen.query_one(ThreadList).rows) == 1)
            first_row = app.screen.query_one(ThreadList).current
            await wait_until(pilot, lambda: app.screen.reading.thread_ahead.holds(first_row))  # (its own thread's)
            await pilot.press("enter")
            assert shown_subject(app) == "Second report"
            assert reads_by() == [STARTUP_CALLER]
            proxy.release()
    finally:
        proxy.release()


def reply_to(row) -> bytes:
    return (f"From: Ana <ana@example.com>\r\nTo: {LIST}\r\nSubject: Re: {row.subject}\r\n"
            "Date: Thu, 01 Oct 2026 11:00:00 +0000\r\nMessage-ID: <reply-late@example.com>\r\n"
            f"In-Reply-To: {row.thread_id.value}\r\nReferences: {row.thread_id.value}\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\nMore details.\r\n").encode()


def shown_count(app) -> int | None:
    thread = app.screen.query_one(ReaderPane).thread
    return None if thread is None else len(thread.messages)


def row_of(app, thread_id):
    return next((r for r in app.screen.query_one(ThreadList).rows.items if getattr(r, "thread_id", None) == thread_id),
                None)


def test_a_read_ahead_that_lacks_a_message_of_the_row_on_screen_is_not_served(proxied_project, dovecot,
                                                                             dovecot_user):
    project, _proxy = proxied_project
    newest = listed_here(project)[0]
    child = ForkedHeadStart.start(project, demo=False)
    assert child.result().read_follows == newest.thread_id
    child.receive_read_ahead()  # one message
    dovecot.append(dovecot_user, "INBOX", reply_to(newest), when=WHEN + timedelta(hours=2))
    listed_since = listed_here(project)[0]
    assert listed_since.thread_id == newest.thread_id and listed_since.message_count == 2
    assert child.take_read_ahead(listed_since) is None  # the caller reads it, with the reply
    assert child.take_read_ahead(newest) is None  # and it is not kept for a later look


def test_a_read_ahead_whose_row_was_active_since_is_not_served(proxied_project):
    project, _proxy = proxied_project
    newest = listed_here(project)[0]
    child = ForkedHeadStart.start(project, demo=False)
    assert child.result().read_follows == newest.thread_id
    child.receive_read_ahead()
    assert child.take_read_ahead(replace(newest, last_activity=newest.last_activity + timedelta(minutes=1))) is None


async def test_a_row_this_process_listed_is_read_by_this_process(proxied_project, dovecot, dovecot_user):
    # Issue 33 review: the child read the thread (1 message) before a reply came; the app's own
    # first page lists the row with 2; an Enter while its whole window is still being listed
    # showed the child's 1-message copy.
    project, proxy = proxied_project
    newest = listed_here(project)[0]  # a warm start
    child = ForkedHeadStart.start(project, demo=False)
    app = make_app(project)
    app.first_page = 1
    assert child.ready(WAIT_BOUND)
    app.prepare_first_screen(child)
    assert finished(child.pid)  # its read ahead is in the pipe
    dovecot.append(dovecot_user, "INBOX", reply_to(newest), when=WHEN + timedelta(hours=2))
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await wait_until(pilot, lambda: (row_of(app, newest.thread_id) or newest).message_count == 2)
            proxy.hold()  # the rest of the window (where it is still being listed) and any read wait
            await pilot.press("enter")
            await pilot.pause()
            proxy.release()
            await wait_until(pilot, lambda: shown_count(app) is not None)
            assert shown_count(app) == 2
    finally:
        proxy.release()


async def test_after_a_failed_startup_listing_enter_reads_and_relists_once_the_backend_is_back(
        proxied_project, dovecot, dovecot_user):
    # Issue 33 item 4: the start-up listing failed (the mandatory backend down); the backend came
    # back; Enter on the first row (shown from the cache) asked for R ("press R to reconnect":
    # the outage was still believed), though R was exactly what the Enter should have done.
    project, proxy = proxied_project
    newest = listed_here(project)[0]  # a warm start: the first frame shows it from the cache
    child = ForkedHeadStart.start(project, demo=False)
    app = make_app(project)
    assert child.ready(WAIT_BOUND)
    app.prepare_first_screen(child)
    assert finished(child.pid)
    proxy.go_down()  # the mandatory backend: the app's sources check stops the run
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await wait_until(pilot, lambda: app.screen.listing.mandatory_problem is not None
                             and "press R to retry" in threads_status(app))
            await settle(pilot)  # the failure's own recheck of the sources is done (still down)
            dovecot.append(dovecot_user, "INBOX", reply_to(newest), when=WHEN + timedelta(hours=2))
            proxy.come_back()
            await pilot.press("enter")  # on the first row, shown from the cache
            await wait_until(pilot, lambda: shown_count(app) is not None or "R to reconnect" in reader_status(app))
            # Read by the app itself, with the reply: never the copy read ahead before the failure.
            assert shown_count(app) == 2, reader_status(app)
            # And the list is listed again: the failure and the "run aborted" banner go.
            await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(app))
            assert app.screen.listing.mandatory_problem is None
    finally:
        proxy.come_back()


async def test_a_reopened_session_reads_the_first_row_itself(proxied_project):
    project, proxy = proxied_project
    newest = listed_here(project)[0]
    child = ForkedHeadStart.start(project, demo=False)
    app = make_app(project)
    assert child.ready(WAIT_BOUND)
    app.prepare_first_screen(child)
    assert finished(child.pid)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: app.session.is_open)
        app.reopen()  # as the first-run screen's retry does (and its ``d``, with the demo)
        OPLOG.clear()
        await pilot.press("enter")
        await wait_until(pilot, lambda: shown_subject(app) == newest.subject)
        assert reads_by() == ["you"]


MARK = b"frob-newest-body-7f3a"


@pytest.fixture
def stalling_project(imap_project, user_config, dovecot, dovecot_user):
    """The IMAP project through tests/servers/faultproxy.py; three threads, the newest with ``MARK`` in its body."""
    dovecot.append(dovecot_user, "INBOX", REPORT.replace(b"overflow-1@", b"second@")
                   .replace(b"Heap overflow in the frob parser", b"Second report"), when=WHEN)
    newest = (REPORT.replace(b"overflow-1@", b"newest@").replace(b"Heap overflow in the frob parser", b"Newest report")
              + b"\r\n" + MARK + b"\r\n")
    dovecot.append(dovecot_user, "INBOX", newest, when=WHEN + timedelta(hours=1))
    proxy = FaultProxy(dovecot.port)
    with account_through(proxy, user_config, dovecot):
        yield imap_project, proxy


def test_a_cold_childs_first_page_does_not_wait_for_the_read_of_its_first_row(stalling_project, monkeypatch):
    monkeypatch.setattr(head_start, "FIRST_PAGE", 1)
    project, proxy = stalling_project
    proxy.stall_when_server_sends(MARK)  # the first row's body never reaches the child
    child = ForkedHeadStart.start(project, demo=False)
    try:
        assert child.result().listing_follows
        page = child.next_listing(timeout=WAIT_BOUND)
        assert page is not None and [row.subject for row in page.listing()] == ["Newest report"]
        assert page.read_follows == page.listing()[0].thread_id
        deadline = time.monotonic() + WAIT_BOUND
        while proxy.stalls == 0 and time.monotonic() < deadline:  # the read ahead, after the page, stalls
            time.sleep(0.02)
        assert proxy.stalls == 1 and not child.read_settled.is_set()
    finally:
        child.abandon()



def hold_the_opening(app, monkeypatch) -> threading.Event:
    """The app's own project opening held until the event returned is set (it calls through
    then), as a loaded machine holds it."""
    let_go = threading.Event()
    real_open = app.session.open

    def held_open() -> None:
        assert let_go.wait(WAIT_BOUND), "the test never let the opening go"
        real_open()
    monkeypatch.setattr(app.session, "open", held_open)
    return let_go


async def r_on_the_read_ahead(pilot, app, newest) -> None:
    """Enter on the first row (start-up's read ahead shown), then r, both before the project is open."""
    await pilot.press("enter")
    await wait_until(pilot, lambda: shown_subject(app) == newest.subject)
    await pilot.press("r")
    for _ in range(3):  # what r does at once done (settle would wait for the held opening)
        await pilot._wait_for_screen()
        await pilot.pause()
    assert not app.session.is_open


async def test_an_r_typed_on_the_read_ahead_before_the_project_is_open_is_not_lost(proxied_project, monkeypatch):
    """Keys typed early are never lost: Enter on the first row shows start-up's read ahead while
    the app's own project opening is under way, and the r typed on that body opens the reply
    once the project is open. It was dropped: compose_on returned while the session was not open."""
    from mailtriage.tui.dialogs.compose import ComposeDialog

    app, _child, proxy, newest = started_with_server_held(proxied_project)
    proxy.release()
    let_go = hold_the_opening(app, monkeypatch)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await r_on_the_read_ahead(pilot, app, newest)
            let_go.set()
            await wait_until(pilot, lambda: isinstance(app.screen, ComposeDialog))
    finally:
        let_go.set()


async def test_a_key_kept_for_the_opening_is_dropped_with_a_notice_when_the_opening_fails(proxied_project,
                                                                                       monkeypatch):
    """r typed before the project is open is kept until it opens (ControllerBase.when_open). When
    that opening fails, it was kept on: after the project was fixed and opened again (the
    first-run screen's R), the reply opened by itself, on a thread of a session that no longer
    existed. Now it is dropped when the opening fails, and a notification says so."""
    from mailtriage.tui.dialogs.compose import ComposeDialog
    from mailtriage.tui.screens.first_run import FirstRunScreen

    app, _child, proxy, newest = started_with_server_held(proxied_project)
    proxy.release()
    project_md = app.session.project_dir / "project.md"
    kept_text = project_md.read_text(encoding="utf-8")
    let_go = hold_the_opening(app, monkeypatch)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await r_on_the_read_ahead(pilot, app, newest)
            project_md.unlink()  # the opening fails
            let_go.set()
            await wait_until(pilot, lambda: isinstance(app.screen, FirstRunScreen))
            notices = [n.message for n in app._notifications]
            assert any("not done" in m and "did not open" in m for m in notices), notices
            project_md.write_text(kept_text, encoding="utf-8")
            await pilot.press("R")  # the first-run screen's retry: the project opens
            await wait_until(pilot, lambda: app.session.is_open and not isinstance(app.screen, FirstRunScreen))
            await settle(pilot)
            assert not isinstance(app.screen, ComposeDialog)
    finally:
        let_go.set()
