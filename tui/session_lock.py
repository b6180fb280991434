"""The backend lock of the app's Session (one call into the backends at a time), with a gate for the head start."""

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
