"""The thread under the cursor of the project's list, read before Enter asks (issue 33).

Opening a thread once the app is live cost 0.84-1.27 s on a 100k-message Dovecot folder (aerc:
0.03-0.05 s): the read's round trips and Dovecot's open of the folder. When the cursor rests
on a row it moved to for :data:`REST` seconds, its thread is read on a worker and kept. Enter
on that same row (unchanged: same thread, same message count and activity) shows it in the
frame of the key, once, only within :data:`KEPT_FOR` seconds of the read's start (mail the
listing has not seen yet is the next read's to show), and never after ``R``. An Enter while
the read is on its way waits for it instead of reading the thread a second time behind it.
A read ahead that fails is forgotten: Enter reads and says why.

A part of the main screen's reading component (tui/controllers/reading.py), a component of
the screen itself (issue 36 §2): a hidden widget that owns its state and runs its reads on itself.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

from mailtriage.core.trace import calling_as
from mailtriage.tui.controllers.component import Component
from mailtriage.tui.panes.reader import prepare_texts

if TYPE_CHECKING:
    from textual.timer import Timer

    from mailtriage.application import ThreadSummary
    from mailtriage.application.service import Service
    from mailtriage.tui.controllers.base import ControllerBase

#: Seconds the cursor rests on a row before its thread is read ahead (keys typed in a burst read nothing).
REST = 0.3
#: Seconds from a read ahead's start during which Enter may show it; after that Enter reads again.
#: Short: mail the listing has not heard of yet (no poll since) is not in it (a review: 60 s let
#: a follow-up arrive unseen and the reply be drafted from the older thread).
KEPT_FOR = 15.0

#: What a read ahead hands over: the read's Dispatch (``value``, ``resolution``).
Shown = Callable[[int, object], None]


def _same(a: ThreadSummary, b: ThreadSummary) -> bool:
    """The same row as far as its thread's messages go (a new message changes count and activity)."""
    return (a.thread_id, a.message_count, a.last_activity) == (b.thread_id, b.message_count, b.last_activity)


class ThreadAhead(Component):
    """Reads ahead the thread of the row the cursor rests on, for the main screen (hidden)."""

    def __init__(self, screen: ControllerBase, session: Callable[[], Service], clock: Callable[[], float] = time.monotonic):
        super().__init__(screen, id="thread-ahead")
        self._session = session
        self._clock = clock
        self._timer: Timer | None = None
        self._wanted: ThreadSummary | None = None
        self._rows: object = None  # the listing the cursor moves in
        self._reading: ThreadSummary | None = None
        self._kept: tuple[ThreadSummary, object, float, Service] | None = None
        self._opened: ThreadSummary | None = None  # the row Enter last opened: not read ahead again
        #: An Enter on the row being read: (request, what shows it, what reads it instead on
        #: failure, the session it was asked in).
        self._waiting: tuple[int, Shown, Callable[[int], object], Service] | None = None

    def highlighted(self, rows: object, row: ThreadSummary | None) -> None:
        """The cursor of the listing ``rows`` is on ``row`` (None: a row that is no project
        thread). Once the cursor has moved to it and rests there, its thread is read. A new
        listing's first highlight reads nothing (start-up's child read the first row ahead,
        tui/head_start.py), nor does a row highlighted again (the row marks arriving)."""
        if rows is not self._rows:
            if self._timer is not None:  # the old listing's rest: nothing of it is read now
                self._timer.stop()
                self._timer = None
            self._rows, self._wanted = rows, row
            return
        if row is self._wanted:
            return
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._wanted = row
        if row is not None:
            self._timer = self.set_timer(REST, self._read_rested)

    def take(self, row: ThreadSummary):
        """The read of ``row``'s thread kept for Enter (served once), or None."""
        kept, self._kept = self._kept, None
        self._opened = row
        if kept is None or not _same(kept[0], row) or self._clock() - kept[2] > KEPT_FOR:
            return None
        if kept[3] is not self._session():
            return None  # read in a session since closed (another project, the demo)
        return kept[1]

    def keep(self, row: ThreadSummary, result) -> None:
        """A read of ``row``'s thread made before this screen could (start-up's child,
        tui/first_screen.py), kept for Enter as a read ahead of its own is: served once, in the
        frame of the key, within KEPT_FOR seconds from now."""
        self._kept = (row, result, self._clock(), self._session())

    def drop(self, result) -> None:
        """A read handed over by :meth:`keep` is not to be shown any more (start-up's, once this
        process listed, or failed to, itself: later reads are its own)."""
        if self._kept is not None and self._kept[1] is result:
            self._kept = None

    def forget(self) -> None:
        """``R``: a kept read is not shown (the thread is read again); one on its way is kept not."""
        self._kept = None
        self._opened = None

    def holds(self, row: ThreadSummary | None) -> bool:
        """Whether Enter on ``row`` would be shown from a read ahead now."""
        return row is not None and self._kept is not None and _same(self._kept[0], row)

    def reading(self, row: ThreadSummary | None) -> bool:
        """Whether ``row``'s thread is being read ahead now."""
        return row is not None and self._reading is not None and _same(self._reading, row)

    def wait_for(self, row: ThreadSummary, request: int, show: Shown, read: Callable[[int], object]) -> bool:
        """Enter on ``row``: True when its read ahead is on its way (``show`` gets it when it
        comes, or ``read`` is called to read it after all when it fails)."""
        if not self.reading(row):
            return False
        self._waiting = (request, show, read, self._session())
        return True

    def drop_waiting(self) -> None:
        """The reader was left (q, Esc) or opens something else: a read ahead on its way is
        kept, not shown, and its failure reads nothing."""
        self._waiting = None

    # -- the read --------------------------------------------------------------------------
    def _read_rested(self) -> None:
        self._timer = None
        row = self._wanted
        session = self._session()
        if row is None or self._reading is not None or not session.is_open:
            return
        if any(other is not None and _same(other, row) for other in (self._opened, self._kept and self._kept[0])):
            return  # open in the reader (the row marks arriving highlight it again), or kept
        self._reading = row
        self._start(self._read, row, session, self._clock(), group="thread-ahead", exclusive=False)

    def _read(self, row: ThreadSummary, session: Service, started: float) -> None:
        try:
            with calling_as("read ahead"):  # the console's op log says who asked
                result = session.read_thread(row.thread_id, urgent=False)
        except Exception:  # noqa: BLE001 - not asked for: Enter reads it again and says why
            result = None
        if result is not None:
            try:
                prepare_texts(result.value)  # what the reader shows, made here and not after Enter
            except Exception:  # noqa: BLE001 - made again when shown, where a failure is reported
                pass
        self.app.call_from_thread(self._done, row, result, session, started)

    def _done(self, row: ThreadSummary, result, session: Service, started: float) -> None:
        self._reading = None
        waiting, self._waiting = self._waiting, None
        if waiting is not None and waiting[3] is not session:
            waiting = None  # asked in a session since closed: nothing of that one is shown
        if result is not None:
            self._kept = (row, result, started, session)
        if waiting is not None:
            request, show, read, _ = waiting
            if result is None:
                read(request)
            else:
                self._kept = None  # served once
                show(request, result)
        if self._wanted is not None and self._wanted is not row and self._timer is None:
            self._read_rested()  # the cursor moved on and rested while this one was read (it checks again)
