"""New-report alerts in the app: the poll worker's loop and the unread marks on rows.

The poll itself is :mod:`mailtriage.application.flows.alerts` (silent baseline, cursor saved only
on ``acknowledge``). Here: :func:`poll_forever` runs it on a worker thread with its own
mail sources (an IMAP IDLE connection serves nothing else), wakes early for "poll now",
and hands news to the UI through a callback that posts a message; :class:`MarkedRows`
paints the new threads' rows with the unread mark without copying the listing.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

import mailtriage.application as application
from mailtriage.application import ThreadSummary
from mailtriage.core.collector import QuietTrim
from mailtriage.core.trace import calling_as
from mailtriage.tui.rows import SameRows, ThreadRows

if TYPE_CHECKING:
    from mailtriage.application import NewReportPoller, PollOutcome
    from mailtriage.application.flows.alerts import Outage


#: Seconds of one IMAP IDLE wait in the app: the longest a quit or "poll now" waits for it.
IDLE_SLICE_SECONDS = 2.0


class AlertLoop:
    """The poll loop of one session: ``run`` on a worker thread, ``poll_now``/``stop`` from the UI."""

    def __init__(self, make_poller: Callable[[], NewReportPoller | None], interval: float,
                 list_name: str | None, *, after: AlertLoop | None = None) -> None:
        # The poller (the flows' module and mail sources of its own) is built by ``run`` on
        # the worker thread: built on the UI thread it cost start-up 0.15-0.35 s of the
        # main loop before the first rows were painted (benchmarks/bench_startup.py).
        self._make_poller = make_poller
        self.poller: NewReportPoller | None = None
        self.list_name = list_name
        self.interval = interval
        self.stopped = threading.Event()
        #: Set once ``run`` has returned: its last poll is over and what was acknowledged is written.
        self.finished = threading.Event()
        # The loop this one replaces (the session reopened): its last write comes before our first poll.
        self._after = after
        self._wake = threading.Event()
        self._asked = threading.Event()  # poll_now: the next poll's end is reported (on_checked)
        self._running = False  # run began (stop before it: nothing to write, finished at once)
        self._state = threading.Lock()
        self.quiet_trim = QuietTrim()

    def poll_now(self) -> None:
        """Poll at once; ``run``'s ``on_checked`` then says what that poll found."""
        self._asked.set()
        self._wake.set()

    def stop(self) -> None:
        with self._state:
            self.stopped.set()
            self._wake.set()
            if not self._running:  # its worker never ran (cancelled before it started): nothing to write
                self.finished.set()

    def run(self, on_news: Callable[[PollOutcome], None], on_error: Callable[[Exception], None],
            on_recovered: Callable[[Outage], None] | None = None,
            on_checked: Callable[[bool, Exception | None], None] | None = None) -> None:
        """Poll until stopped. Blocks: call from a worker thread. Closes the poller's sources.
        Its operations are the poller's in the backend console's log. Through an outage it
        keeps polling (a server that comes back is used again, see ``run_poll_loop``).

        When it ends, what was acknowledged and not written yet (the app acknowledges news in
        memory when it announces it and writes it off the UI thread) is written, once: after
        the last poll returned, so no poll in flight races it. A loop built ``after`` another
        (the session reopened) polls only once that one has ended and written: else its first
        poll, reading the cursor before that write, would announce the same threads again.

        A poll asked for by ``poll_now`` ends in ``on_checked(found news, its error or None)``
        (after ``on_news``): Ctrl+n says "nothing new" rather than nothing (issue 35)."""
        with self._state:
            if self.stopped.is_set():
                return
            self._running = True
        try:
            self._run(on_news, on_error, on_recovered, on_checked)
        finally:
            self._after = None
            self.finished.set()

    def _run(self, on_news: Callable[[PollOutcome], None], on_error: Callable[[Exception], None],
             on_recovered: Callable[[Outage], None] | None,
             on_checked: Callable[[bool, Exception | None], None] | None) -> None:
        after = self._after
        while after is not None and not after.finished.wait(0.2):
            if self.stopped.is_set():
                return
        if self.poller is None:
            try:
                self.poller = self._make_poller()
            except Exception as exc:  # reported like a failed poll; the app goes on without alerts
                on_error(exc)
                return
            if self.poller is None:
                return
        news: list[PollOutcome] = []
        errors: list[Exception] = []

        def noted(outcome: PollOutcome) -> None:
            news.append(outcome)
            on_news(outcome)

        def failed(error: Exception) -> None:
            errors.append(error)
            on_error(error)

        try:
            with calling_as("poller"):
                while not self.stopped.is_set():
                    self._wake.clear()
                    asked = self._asked.is_set()
                    self._asked.clear()
                    started = time.monotonic()
                    news.clear()
                    errors.clear()
                    application.run_poll_loop(self.poller, noted, stop=self.stopped, interval=self.interval,
                                              on_error=failed, max_polls=1, on_recovered=on_recovered)
                    if asked and on_checked is not None and not self.stopped.is_set():
                        on_checked(bool(news), errors[-1] if errors else None)
                    took = time.monotonic() - started
                    self.quiet_trim.polled(bool(news))  # a storm over: the heap it freed goes back
                    if self.stopped.is_set():
                        break
                    # IDLE where the backend offers it; woken early by poll_now() or stop(). IDLE
                    # cannot be interrupted mid-slice, so short slices keep quitting and "poll
                    # now" prompt (one IDLE/DONE round trip per slice).
                    pause = self.poller.pause_seconds(self.interval)  # shorter during an outage
                    if self.poller.wait(pause, self._wake, slice_seconds=IDLE_SLICE_SECONDS) \
                            and not self._wake.is_set():
                        # New mail announced by the server: wait out the gap (flows.alerts
                        # MIN_POLL_GAP_SECONDS, POLL_GAP_FACTOR); poll_now skips it.
                        gap = (max(application.MIN_POLL_GAP_SECONDS, application.POLL_GAP_FACTOR * took)
                               - (time.monotonic() - started))
                        if gap > 0:
                            self._wake.wait(gap)
        finally:
            try:
                self.poller.save()  # the acknowledged cursor, once the loop is done with it
            except Exception:  # unwritable (a full disk): reported again at the next start, as before a write
                pass
            try:
                self.poller.sources.close()
            except Exception:  # closing must never fail the worker
                pass


class MarkedRows(SameRows):
    """A row source whose rows with the given thread IDs carry the unread mark; everything
    else is its base's (row i is the base's row i, so tui.rows.plain_rows looks through it)."""

    def __init__(self, base: ThreadRows, marked: set[str], made: dict | None = None) -> None:
        self.base = base
        self.marked = marked
        #: Each marked row as painted (base row's id -> (base row, marked row)), handed from
        #: the marks of the list before: the same row is the same object from poll to poll, so
        #: the list's painted-row cache keeps it (issue 39: a new copy at each peek painted
        #: every news row on screen again at every poll). The caller bounds it.
        self.made: dict[int, tuple[ThreadSummary, ThreadSummary]] = made if made is not None else {}

    def __len__(self) -> int:
        return len(self.base)

    @property
    def page_size(self) -> int:
        return self.base.page_size

    @property
    def unit(self) -> str:
        return self.base.unit

    def missing_pages(self, start: int, stop: int) -> list[int]:
        return self.base.missing_pages(start, stop)

    def fetch_page(self, page: int) -> None:
        self.base.fetch_page(page)

    def release(self, pages: list[int]) -> None:
        self.base.release(pages)

    def matches(self, query: str, cancelled: Callable[[], bool],
                progress: Callable[[int, int], None]) -> list[int] | None:
        return self.base.matches(query, cancelled, progress)

    def peek(self, index: int) -> ThreadSummary | None:
        row = self.base.peek(index)
        if row is not None and not row.unread and str(row.thread_id) in self.marked:
            made = self.made.get(id(row))
            if made is not None and made[0] is row:
                return made[1]
            marked = replace(row, unread=True)
            self.made[id(row)] = (row, marked)
            return marked
        return row
