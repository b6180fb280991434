"""The backend lock of the application service (one call into the backends at a time), with a gate for the head start,
and how closing takes it from a call that waits on a server."""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator


class ServiceLock:
    """The service's backend lock, with a gate for the head start (tui/head_start.py): while
    the project opens after the first frame, a call that takes the lock (a key pressed on
    the head start's rows) waits for the opening instead of finding no project.

    A call the user waits on (reading the thread under the cursor) is *urgent*: while one
    waits for the lock, other calls wait for it to have had its turn, so a start-up's
    listing, which takes the lock once per part (sources check, first page, whole window),
    lets a thread read in between its parts rather than after all of them (issue 33: an
    Enter typed on the first frame). A call already holding the lock never waits for an
    urgent one (it may take the lock again, as an RLock)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._opened = threading.Event()
        self._opened.set()
        self._turns = threading.Condition()  # guards _urgent
        self._urgent = 0  # urgent calls waiting for the lock
        self._behind = 0  # other calls waiting for an urgent one to go first
        self._held = _Depth()  # this thread's depth of acquire() calls
        self._writes = 0  # confirmed writes applying or waiting to (Service.apply): a quit lets them finish
        self._counting = threading.Lock()

    def close_until_opened(self) -> None:
        self._opened.clear()

    def open_gate(self) -> None:
        self._opened.set()

    @property
    def urgent_waiting(self) -> int:
        return self._urgent

    @property
    def waiting_behind_urgent(self) -> int:
        """Calls waiting for the urgent calls to have had their turn (what a test waits on)."""
        return self._behind

    def acquire(self, blocking: bool = True, timeout: float = -1, *, urgent: bool = False) -> bool:
        self._opened.wait()
        depth = self._held.depth
        if urgent and depth == 0:
            with self._turns:
                self._urgent += 1
            try:
                taken = self.lock.acquire(blocking, timeout)
            finally:
                with self._turns:
                    self._urgent -= 1
                    self._turns.notify_all()
        else:
            if depth == 0 and blocking:
                with self._turns:  # an urgent call waiting goes first
                    self._behind += 1
                    try:
                        self._turns.wait_for(lambda: self._urgent == 0, None if timeout < 0 else timeout)
                    finally:
                        self._behind -= 1
            taken = self.lock.acquire(blocking, timeout)
        if taken:
            self._held.depth = depth + 1
        return taken

    def release(self) -> None:
        self._held.depth -= 1
        self.lock.release()

    @property
    def writes(self) -> int:
        return self._writes

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """``with lock.writing():`` around a confirmed write (counted for :func:`take_or_abort`)."""
        with self._counting:
            self._writes += 1
        try:
            yield
        finally:
            with self._counting:
                self._writes -= 1

    def urgently(self) -> "_Urgent":
        """``with lock.urgently():`` takes the lock as an urgent call."""
        return _Urgent(self)

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class _Depth(threading.local):
    depth = 0


class _Urgent:
    def __init__(self, lock: ServiceLock) -> None:
        self._lock = lock

    def __enter__(self) -> bool:
        return self._lock.acquire(urgent=True)

    def __exit__(self, *exc) -> None:
        self._lock.release()


#: How long quitting waits for a confirmed write in progress before it ends its connections,
#: and then for the call to let go (seconds).
CLOSE_WAIT = 1.0
ABORT_WAIT = 3.0


class Parts:
    """The connections of several parts (the sources, the tracker, the mailboxes; None: one
    not opened), ended together by :func:`take_or_abort`."""

    def __init__(self, *parts) -> None:
        self.parts = [part for part in parts if part is not None]

    def abort(self, opening_only: bool = False) -> None:
        for part in self.parts:
            part.abort(opening_only)


def take_or_abort(lock, connections, *, finish: bool = True) -> bool:
    """Take ``lock`` for closing. A call holding it (waiting on a server) has ``connections``
    ended under it (``abort()``) so it fails and lets go: at once, unless ``finish`` (a
    confirmed write may be in flight: it has CLOSE_WAIT to finish first, and only connections
    being opened, which have nothing to finish, are ended at once). False when it still holds
    the lock after ABORT_WAIT (a backend with nothing to end)."""
    if lock.acquire(blocking=False):
        return True
    if connections is not None:
        connections.abort(opening_only=finish)
    if finish:
        if lock.acquire(timeout=CLOSE_WAIT):
            return True
        if connections is not None:
            connections.abort()
    return lock.acquire(timeout=ABORT_WAIT)
