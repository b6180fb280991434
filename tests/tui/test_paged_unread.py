"""``u`` (next unread) in a paged folder (issue 33): the unread rows may lie in pages not
fetched yet; ``u`` fetches onward until it finds one instead of saying "no unread"."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from mailtriage.backends.contract import Address, ThreadId, ThreadSummary
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.rows import PagedRows
from tests.tui.helpers import WAIT_BOUND, keep_notifications
from tests.tui.test_thread_list import ListHost

BASE = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)


def summary(i: int, unread: bool) -> ThreadSummary:
    return ThreadSummary(ThreadId("test", f"<{i}@x>"), f"Report number {i}", f"<{i}@x>",
                         Address(f"Reporter {i}", f"r{i}@example.org"), BASE - timedelta(minutes=i), 1,
                         unread=unread)


def paged(total: int, unread: set[int], calls: list[int]) -> PagedRows:
    def loader(offset, limit):
        calls.append(offset)
        return [summary(i, i in unread) for i in range(offset, offset + limit)]

    return PagedRows(total, loader, page_size=200)


async def wait_for(app, pilot, condition) -> None:
    deadline = time.monotonic() + WAIT_BOUND  # a condition, with the shared bound (pages load in a worker)
    while True:
        await app.workers.wait_for_complete()
        await pilot.pause()
        if condition():
            return
        if time.monotonic() > deadline:
            raise AssertionError("the condition never held")


async def test_next_unread_fetches_the_pages_not_loaded_yet():
    calls: list[int] = []
    app = keep_notifications(ListHost(paged(1000, {650, 655}, calls)))
    async with app.run_test(size=(100, 30)) as pilot:
        tl = app.query_one(ThreadList)
        await wait_for(app, pilot, lambda: calls == [0])
        await pilot.press("u")
        await wait_for(app, pilot, lambda: tl.cursor == 650)
        assert not any("no unread" in n.message for n in app._notifications)
        assert 800 not in calls  # stopped at the page that holds it
        await pilot.press("u")
        await wait_for(app, pilot, lambda: tl.cursor == 655)


async def test_next_unread_says_none_only_after_every_page_was_looked_at():
    calls: list[int] = []
    app = keep_notifications(ListHost(paged(1000, set(), calls)))
    async with app.run_test(size=(100, 30)) as pilot:
        tl = app.query_one(ThreadList)
        await wait_for(app, pilot, lambda: calls == [0])
        await pilot.press("u")
        await wait_for(app, pilot, lambda: any("no unread" in n.message for n in app._notifications))
        assert sorted(set(calls)) == [0, 200, 400, 600, 800] and tl.cursor == 0
