"""The backend lock of the app's Session (one call into the backends at a time), with a gate for the head start,
and how closing takes it from a call that waits on a server."""

from __future__ import annotations

import threading


class SessionLock:
    """The session's backend lock, with a gate for the head start (tui/head_start.py): while
    the project opens after the first frame, a call that takes the lock (a key pressed on
    the head start's rows) waits for the opening instead of finding no project."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._opened = threading.Event()
        self._opened.set()

    def close_until_opened(self) -> None:
        self._opened.clear()

    def open_gate(self) -> None:
        self._opened.set()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self._opened.wait()
        return self.lock.acquire(blocking, timeout)

    def release(self) -> None:
        self.lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


#: How long quitting waits for a backend call in progress before it ends its connections,
#: and then for the call to let go (seconds).
CLOSE_WAIT = 1.0
ABORT_WAIT = 3.0


def take_or_abort(lock, connections) -> bool:
    """Take ``lock`` for closing; when a call still holds it after CLOSE_WAIT (it waits on a
    server), end ``connections`` under it (``abort()``) so it fails and lets go. False when it
    still holds the lock after ABORT_WAIT (a backend with nothing to end)."""
    if lock.acquire(timeout=CLOSE_WAIT):
        return True
    if connections is not None:
        connections.abort()
    return lock.acquire(timeout=ABORT_WAIT)
