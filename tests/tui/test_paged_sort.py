"""Sorting a paged folder (issue 33): ``o`` sorts every row of the folder, not only the pages
fetched so far; the pages not loaded yet are fetched in the background, then sorted in."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from mailtriage.backends.contract import Address, ThreadId, ThreadSummary
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.rows import PagedRows
from tests.tui.test_paged_unread import wait_for
from tests.tui.test_thread_list import ListHost

BASE = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)
NEWEST = 900  # an old-placed row that is the newest (mail moved back from an archive)


def summary(i: int) -> ThreadSummary:
    when = BASE + timedelta(days=1) if i == NEWEST else BASE - timedelta(minutes=i)
    return ThreadSummary(ThreadId("test", f"<{i}@x>"), f"Report number {i}", f"<{i}@x>",
                         Address(f"Reporter {i}", f"r{i}@example.org"), when, 1)


async def test_sort_orders_the_whole_paged_folder():
    calls: list[int] = []

    def loader(offset, limit):
        calls.append(offset)
        return [summary(i) for i in range(offset, offset + limit)]

    app = ListHost(PagedRows(1000, loader, page_size=200))
    async with app.run_test(size=(100, 30)) as pilot:
        tl = app.query_one(ThreadList)
        await wait_for(app, pilot, lambda: calls == [0])
        await pilot.press("o")  # sort by date, newest first
        await wait_for(app, pilot, lambda: tl.rows.peek(0) is not None
                       and tl.rows.peek(0).subject == f"Report number {NEWEST}")
        assert sorted(set(calls)) == [0, 200, 400, 600, 800]
        assert [tl.rows.peek(i).subject for i in (1, 2)] == ["Report number 0", "Report number 1"]
        assert "loaded" not in tl.rows.describe()  # every row is in the order
