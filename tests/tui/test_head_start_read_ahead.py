"""Start-up's child reads the first row's thread ahead (tui/head_start.py, issue 33).

The first key of a triager is Enter on the newest report. Start-up's child, connected while
the app still imports Textual, reads the thread of the first row: an Enter on that row shows it
without waiting for the app's own project opening, sign-in and sources check. It serves that
row once, and only until start-up's listing is whole (later reads are the app's own). A real
Dovecot behind the loopback proxy of test_imap_network.py.
"""

from __future__ import annotations

import os
import time

import pytest

from mailtriage.core.trace import OPLOG
from mailtriage.tui import head_start
from mailtriage.tui.head_start import STARTUP_CALLER, ForkedHeadStart
from mailtriage.tui.panes.reader import ReaderPane
from mailtriage.tui.panes.thread_list import ThreadList
from tests.servers.fixtures import *  # noqa: F401,F403
from tests.tui.helpers import make_app, settle
from tests.tui.test_head_start_listing import gone, listed_here
from tests.tui.test_imap_drafts import imap_project  # noqa: F401 (fixture)
from tests.tui.test_imap_network import proxied_project, threads_status, wait_until  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the head start forks")


def finished(pid: int, timeout: float = 10.0) -> bool:
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
    assert child.take_read_ahead(object()) is None  # another thread: read by the app itself
    OPLOG.clear()
    dispatch = child.take_read_ahead(newest.thread_id)
    assert dispatch.value.subject == newest.subject and dispatch.resolution.chosen == "imap"
    assert reads_by() == [STARTUP_CALLER]  # what the child recorded, for the console
    assert child.take_read_ahead(newest.thread_id) is None  # once


def test_a_cold_childs_first_page_carries_the_first_rows_thread(proxied_project, monkeypatch):
    monkeypatch.setattr(head_start, "FIRST_PAGE", 1)
    project, _proxy = proxied_project
    child = ForkedHeadStart.start(project, demo=False)
    assert child.result().listing_follows
    page = child.next_listing()
    first = page.listing()[0]
    assert child.read_settled.is_set()
    assert child.take_read_ahead(first.thread_id).value.subject == first.subject == "Second report"
    child.drop_read_ahead()
    child.next_listing()
    child.finish()


async def test_an_enter_on_the_first_row_does_not_wait_for_the_apps_own_sign_in(proxied_project):
    project, proxy = proxied_project
    newest = listed_here(project)[0]
    child = ForkedHeadStart.start(project, demo=False)
    app = make_app(project)
    assert child.ready(10)
    app.prepare_first_screen(child)
    assert finished(child.pid)  # the child has done all it does (its read ahead is in the pipe)
    proxy.hold()  # from now on the server answers nobody: the app's own sign-in waits
    OPLOG.clear()
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.press("enter")
            await wait_until(pilot, lambda: shown_subject(app) == newest.subject)
            assert reads_by() == [STARTUP_CALLER]
            proxy.release()  # the app's own sign-in goes on (and its quit need not end it)
            await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(app))
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
    assert child.ready(10)  # its head start is there before the first frame (not late, on a busy machine)
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
