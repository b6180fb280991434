"""Start-up's head start: what the first frame shows, read before the app draws anything.

The app's first frame shows the project (title, lists, window, security CC) and the first
rows that can be read without asking any server: a local archive's newest threads, or the
listing backend's summary cache (stale rows; the first listing then asks the server). With
them at hand when the main screen mounts, start-up costs one frame, not one per answer.

:func:`read_head_start` reads it in this process. :class:`ForkedHeadStart` reads it in a
child process forked before Textual is imported, so on a machine with two cores the
project opens while the parent imports Textual (about a fifth of the demo's cold start,
benchmarks/bench_startup.py); the parent opens its own session once the first frame is
drawn. Nothing here imports Textual, and nothing here may wait on the network.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mailtriage.core.settings import load_settings

if TYPE_CHECKING:
    from mailtriage.tui.session import Session

#: Threads asked for first (the first page a backend that can list the newest ones fast returns).
FIRST_PAGE = 200
#: How long the parent waits for the child before it draws its first frame without the head
#: start (the child is usually done by then: it opens the project while the parent imports
#: Textual). A later answer is shown when it comes, in a second frame.
FIRST_FRAME_WAIT = 0.2
#: How long a late child may take in all before the parent opens the project itself. It does
#: what the parent would do in its place (open the project, scan an archive the first time),
#: so the parent waits for it rather than doing the same work beside it.
CHILD_TIMEOUT = 20.0


@dataclass(frozen=True)
class HeadStart:
    """The open project's facts for the first frame and, when they could be read without a
    server, the first list's newest threads (``stale``: from the summary cache)."""

    title: str
    lists: list[Any]  # ListEntry
    since: datetime
    cc: Any  # CcResolution
    list_name: str | None
    listing: Any = None  # the registry's Dispatch, or None
    stale: bool = False


def read_head_start(session: Session, limit: int = FIRST_PAGE) -> HeadStart | None:
    """Open ``session`` and read the head start; None when the project cannot be opened
    (the app's own opening then reports why)."""
    try:
        session.open()
    except Exception:  # reported by the app's opening, which runs it again
        return None
    lists = session.lists()
    list_name = lists[0].list_name if lists else None
    offline = None
    if list_name is not None:
        try:
            offline = session.offline_threads(list_name, limit=limit)
        except Exception:  # the first listing, which follows at once, reports it
            offline = None
    listing, stale = offline if offline is not None else (None, False)
    return HeadStart(session.title, lists, session.since(), session.cc, list_name, listing, stale)


class ForkedHeadStart:
    """The head start read by a child process while this one goes on starting (POSIX)."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd
        self._ended = threading.Lock()  # held while the child is being reaped: no kill after that
        self._reaped = False

    @classmethod
    def start(cls, project_dir: Path, *, demo: bool) -> ForkedHeadStart | None:
        """Fork the child that reads the head start; None where fork is not available.
        Call it before anything starts a thread (fork copies only the calling thread)."""
        if os.name != "posix":
            return None
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_end)
            _child(project_dir, demo, write_end)
        os.close(write_end)
        try:  # here too, so that a cancel() before the child runs finds its group
            os.setpgid(pid, pid)
        except OSError:  # the child got there first
            pass
        return cls(pid, read_end)

    def ready(self, timeout: float) -> bool:
        """Whether the child has answered (or ended) within ``timeout`` seconds."""
        return bool(select.select([self.fd], [], [], timeout)[0])

    def cancel(self) -> None:
        """End the child (and what it started) if it still runs: the app ends before its answer."""
        with self._ended:
            if not self._reaped:
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass  # already gone; result() reaps it

    def result(self, timeout: float = CHILD_TIMEOUT) -> HeadStart | None:
        """The child's head start, or None (it failed, found no project, was cancelled, or took
        longer than ``timeout``: the app then opens the project as it would without one)."""
        data = b""
        deadline = time.monotonic() + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([self.fd], [], [], remaining)[0]:
                    self.cancel()
                    return None
                chunk = os.read(self.fd, 1 << 20)
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(self.fd)
            with self._ended:
                os.waitpid(self.pid, 0)
                self._reaped = True
        if not data:
            return None
        try:
            # From our own child, over a pipe only it and we hold.
            head = pickle.loads(data)
        except Exception:  # a child that died mid-write: start without it
            return None
        return head if isinstance(head, HeadStart) else None


def _child(project_dir: Path, demo: bool, write_end: int) -> None:
    """Read the head start and write it, pickled, to ``write_end``; then exit at once."""
    try:
        os.setpgid(0, 0)  # a group of its own: killing it ends an archive scan's helpers too
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # the terminal is the parent's: nothing of the child reaches it
            os.dup2(devnull, fd)
        # Deferred: the child needs the session, the parent's first frame does not.
        from mailtriage.tui.session import Session

        session = Session(project_dir, demo=demo, settings=load_settings())
        head = read_head_start(session)
        if head is not None:
            data = pickle.dumps(head, protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view):]
    except BaseException:  # the parent starts without a head start
        pass
    finally:
        os._exit(0)  # no cleanup of the parent's state (atexit handlers, buffered files)
