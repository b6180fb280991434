"""Start-up's head start: what the first frame shows, read before the app draws anything.

The app's first frame shows the project (title, lists, window, security CC) and the first
rows that can be read without asking any server: a local archive's newest threads, or the
listing backend's summary cache (stale rows; the first listing then asks the server). With
them at hand when the main screen mounts, start-up costs one frame, not one per answer.

:func:`read_head_start` reads it in this process. :class:`ForkedHeadStart` reads it in a
child process forked before Textual is imported, so on a machine with two cores the
project opens while the parent imports Textual (about a fifth of the demo's cold start,
benchmarks/bench_startup.py); the parent opens its own session once the first frame is
drawn. Nothing here imports Textual, and the head start never waits on the network.

A cold start (no summary cache yet) has no rows to show. When the listing backend allows it
(``Service.listing_can_start_early``), the child then goes on, after its head start, to list
the first list from the server, as the app's own first listing would: the first page, then the
whole window, each sent to the parent (:meth:`ForkedHeadStart.next_listing`), with the
operations and protocol lines it recorded. It starts about half a second before the parent
could (the parent is still importing Textual), on the second core, so the first page is there
when the app is and a dense window's walk is done sooner. What it listed is written to the
summary cache before it ends, for the parent's later listings and the new-report poll. When it
fails, the parent lists itself, which reports why.

The child also reads ahead the thread of the first row, under the first frame's cursor (issue
33: the first key is Enter on the newest report): after a warm head start (rows from the summary
cache, or from a local archive such as the demo's) in a frame of its own (:class:`ThreadRead`),
on a cold start after the first page, in a frame of its own too (the page does not wait for it;
this process receives it on a thread of its own as it comes, before or after its own opening);
only where every backend signs in without tokens (``Service.reading_can_start_early``: no token
is refreshed by two processes at once). An Enter on that row then shows it without waiting for the parent's own
opening, sign-in and sources check. It serves that row once, only when it fits the row on screen
(its messages, its last activity), and only until the parent lists (or fails to) itself or
start-up's listing is whole: later reads are the parent's, with what came since.

The pipe carries frames: eight bytes of length, then a pickle.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from mailtriage.core.collector import collector_paused
from mailtriage.core.settings import load_settings
from mailtriage.tui.head_start_frames import HeadStart, ListingPart, ThreadRead, adopt_records, taken_records
from mailtriage.tui.head_start_sign_in import STARTUP_CALLER as SIGN_IN_CALLER, SignIn

if TYPE_CHECKING:
    from mailtriage.application import Service

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
#: How long the parent waits for each part of the child's listing before it ends the child,
#: says it stalled and lists itself (a safety net: a server that stops answering fails the
#: child's call sooner; a whole window of a large folder read cold takes seconds, not minutes).
LISTING_TIMEOUT = 60.0
#: How long the parent waits, after the whole window, for the child to write the summary cache
#: and end (the poll's baseline, which follows, reads that cache).
END_WAIT = 5.0
#: How long the app's quit waits to reap a child it killed.
REAP_WAIT = 1.0
#: The pipe's buffer (Linux; the default is 64 KiB): the child's first page and its protocol
#: lines fit, so it goes on to the whole window without waiting for the app to read them.
PIPE_SIZE = 1 << 20
_FRAME_LENGTH = struct.Struct("!Q")
#: Who the child's operations are recorded as (the backend console's "by" column).
STARTUP_CALLER = SIGN_IN_CALLER
#: How long an Enter on the first row waits for the child's read ahead before reading itself.
READ_AHEAD_WAIT = 5.0


def read_head_start(session: Service, limit: int = FIRST_PAGE,
                    opened: Callable[[], None] | None = None) -> HeadStart | None:
    """Open ``session`` and read the head start; None when the project cannot be opened
    (the app's own opening then reports why). ``opened`` is called once it is open, before
    the rows are read (the child starts its sign-in there)."""
    try:
        session.open()
    except Exception:  # reported by the app's opening, which runs it again
        return None
    if opened is not None:
        opened()
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
        self._closed = False
        self.listed = False  #: the whole window came: the child writes its summary cache and ends
        self.ended = threading.Event()  #: the child ended and was reaped (its summary cache written)
        #: Seconds waited in vain for a part of its listing (it stalled and was ended), else None.
        self.stalled_after: float | None = None
        self.read_ahead_for: Any = None  #: the thread the child reads ahead, until taken or dropped
        self._read_ahead: ThreadRead | None = None
        self._read_lock = threading.Lock()
        self.read_settled = threading.Event()  #: the read ahead came, or will not
        self._pending: ListingPart | None = None  # a part received while waiting for the read ahead
        #: Held while a frame is read: a cold start's read ahead has a thread of its own (:meth:`next_listing`).
        self._pipe = threading.Lock()
        #: Called (on the receiving thread) when a read ahead is kept (a cold start's: tui/first_screen.py).
        self.read_arrived: Callable[[], object] | None = None

    @classmethod
    def start(cls, project_dir: Path, *, demo: bool) -> ForkedHeadStart | None:
        """Fork the child that reads the head start; None where fork is not available.
        Call it before anything starts a thread (fork copies only the calling thread)."""
        if os.name != "posix":
            return None
        read_end, write_end = os.pipe()
        try:
            import fcntl  # POSIX only (and this is): the pipe's size, where the system lets it be set

            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        except (ImportError, AttributeError, OSError):  # not Linux, or over the system's limit
            pass
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
        """Whether the child has answered (or ended, its pipe closed here) within ``timeout`` seconds."""
        return self._closed or self._pending is not None or bool(select.select([self.fd], [], [], timeout)[0])

    def cancel(self) -> None:
        """End the child (and what it started) if it still runs, and reap it: the app ends
        before its answer, or no longer wants it. Its pipe is left to whoever reads it."""
        with self._ended:
            if not self._reaped:
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass  # already gone
                # Reaped at once (SIGKILL cannot be caught), but not waited for long: a child
                # stuck in the kernel (a hung network mount) must not hold the app's quit.
                self._reaped = _reap(self.pid, REAP_WAIT)
        self.ended.set()

    def result(self, timeout: float = CHILD_TIMEOUT) -> HeadStart | None:
        """The child's head start, or None (it failed, found no project, was cancelled, or took
        longer than ``timeout``: the app then opens the project as it would without one).
        When the head start says a listing follows, the child goes on (:meth:`next_listing`);
        else it is ended here."""
        head = self._receive(time.monotonic() + timeout)
        if not isinstance(head, HeadStart):
            self.abandon()
            return None
        adopt_records(head.operations, head.trace)
        self.read_ahead_for = head.read_follows
        if head.read_follows is None and not head.listing_follows:  # (a cold start's follows its first page)
            self.read_settled.set()
            self._end(time.monotonic() + timeout)
        return head

    def receive_read_ahead(self, timeout: float = LISTING_TIMEOUT) -> None:
        """A warm start (a read follows the head start): take the read ahead (an app worker), reap the child."""
        try:
            frame = self._receive(time.monotonic() + timeout)
            if isinstance(frame, ThreadRead):
                self._keep_read(frame)
        finally:
            self.read_settled.set()
            self._end(time.monotonic() + END_WAIT)

    def _keep_read(self, read: ThreadRead) -> None:
        """The read ahead came: kept for :meth:`take_read_ahead`, unless dropped meanwhile."""
        with self._read_lock:
            if kept := self.read_ahead_for is not None and read.thread_id == self.read_ahead_for:
                self._read_ahead = read
        self.read_settled.set()
        if kept and self.read_arrived is not None:
            self.read_arrived()

    def receive_read_ahead_while(self, waiting: Callable[[], bool]) -> None:
        """A cold start, after a first page whose read ahead follows: wait, while ``waiting()``, for
        the thread that receives it (:meth:`next_listing` starts it) to have it, or to know none comes."""
        while not self.read_settled.wait(0.05) and waiting():
            pass

    def _receive_read_ahead_frame(self) -> None:
        """A cold start's read ahead, received on a thread of its own as soon as it comes (the frame after
        the first page): offered to an Enter whenever it comes, before or after this process's opening,
        until the listing is whole. The next part, should it come instead, is kept for :meth:`next_listing`."""
        with self._pipe:
            frame = None if self._closed else self._receive(time.monotonic() + LISTING_TIMEOUT)
            if isinstance(frame, ThreadRead):
                self._keep_read(frame)
            else:  # the child's next part (or its end: next_listing finds that out again)
                self._pending = frame if isinstance(frame, ListingPart) else None
        self.read_settled.set()

    def take_read_ahead(self, row: Any, timeout: float = READ_AHEAD_WAIT) -> Any:
        """The Dispatch of ``read_thread`` the child read ahead for ``row`` (the ThreadSummary on
        screen), once; else None (another thread, failed, dropped, later than ``timeout``, or it
        does not fit the row: a reply listed since): the caller reads it itself. Looked at once:
        a read that does not fit is dropped."""
        if self.read_ahead_for is None or row.thread_id != self.read_ahead_for:
            return None
        self.read_settled.wait(timeout)
        with self._read_lock:
            read, self._read_ahead = self._read_ahead, None
            if read is not None and read.thread_id == row.thread_id:
                self.read_ahead_for = None
            else:
                self._read_ahead, read = read, None
        if read is None:
            return None
        adopt_records(read.operations, read.trace)  # the child's read happened, served or not
        return read.dispatch if read.fits(row) else None

    def drop_read_ahead(self) -> None:
        """A thread read ahead is no longer served: start-up's listing is whole, this process
        listed (or failed to list) itself, or another project opened."""
        with self._read_lock:
            self.read_ahead_for = None
            self._read_ahead = None
        self.read_settled.set()  # a take that waits lets go: nothing is served now

    def next_listing(self, timeout: float | None = None,
                     cancelled: Callable[[], bool] = lambda: False) -> ListingPart | None:
        """The next part of the child's listing, or None: the child failed (this process then
        lists itself and reports why), took longer than ``timeout`` (default LISTING_TIMEOUT:
        then :attr:`stalled_after` says how long it was waited for), or ``cancelled()`` became
        true meanwhile; the child is ended then. After the whole window the child writes its
        summary cache and ends: :meth:`finish` waits for that."""
        timeout = LISTING_TIMEOUT if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while not self._pipe.acquire(timeout=0.25):  # the read ahead's thread reads the frame before
            if cancelled() or time.monotonic() >= deadline:
                self._gave_up(timeout, deadline, cancelled)
                return None
        try:
            part: object = self._pending if self._pending is not None else self._receive(deadline, cancelled)
            self._pending = None
            while isinstance(part, ThreadRead):  # the first page's read ahead, after it
                self._keep_read(part)
                part = self._receive(deadline, cancelled)
        finally:
            self._pipe.release()
        if not isinstance(part, ListingPart):
            self._gave_up(timeout, deadline, cancelled)
            return None
        self.listed = self.listed or part.whole
        if part.read_follows is not None:  # in the next frame, received by a thread of its own as it comes
            with self._read_lock:
                self.read_ahead_for, self._read_ahead = part.read_follows, None
            threading.Thread(target=self._receive_read_ahead_frame, name="start-up read ahead", daemon=True).start()
        else:
            self.read_settled.set()  # none comes
        return part

    def _gave_up(self, timeout: float, deadline: float, cancelled: Callable[[], bool]) -> None:
        """No part came (see :meth:`next_listing`): the child is ended."""
        if not cancelled() and not self._closed and time.monotonic() >= deadline:
            self.stalled_after = timeout
        self.abandon()

    def finish(self) -> None:
        """Done with the child: after the whole window, wait for it to write its summary cache
        and end (at most END_WAIT, then it is ended); otherwise end it now. Reaped either way."""
        if self.listed:
            self._end(time.monotonic() + END_WAIT)
        else:
            self.abandon()

    def abandon(self) -> None:
        """End the child now, whatever it still does, and reap it (no-op once ended)."""
        self.read_settled.set()
        self.cancel()
        self._end(time.monotonic() + CHILD_TIMEOUT)

    def _receive(self, deadline: float, cancelled: Callable[[], bool] = lambda: False) -> object | None:
        """The next frame's object; None when the child ended, failed mid-write, or was late."""
        try:
            header = self._read(_FRAME_LENGTH.size, deadline, cancelled)
            if header is None:
                return None
            data = self._read(_FRAME_LENGTH.unpack(header)[0], deadline, cancelled)
            if data is None:
                return None
            with collector_paused():  # a listing's part: tens of thousands of tuples, no cycles
                # From our own child, over a pipe only it and we hold.
                return pickle.loads(data)
        except Exception:  # a child that died mid-write, or a closed pipe: start without it
            return None

    def _read(self, size: int, deadline: float, cancelled: Callable[[], bool]) -> bytes | None:
        data = bytearray()
        while len(data) < size:
            if self._closed or cancelled():
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            # In short waits, so that a cancelled listing lets go soon.
            if not select.select([self.fd], [], [], min(remaining, 0.25))[0]:
                continue
            chunk = os.read(self.fd, min(size - len(data), 1 << 20))
            if not chunk:
                return None
            data += chunk
        return bytes(data)

    def _end(self, deadline: float) -> None:
        """Wait (until ``deadline``) for the child to end, else kill it; then reap it."""
        with self._pipe:  # (not closed under the read ahead's thread: it holds the pipe until the child ends, or sends)
            if not self._closed:
                self._end_now(deadline)

    def _end_now(self, deadline: float) -> None:
        try:
            while time.monotonic() < deadline:
                if select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                    if not os.read(self.fd, 1 << 16):
                        break  # the child has closed its end: it is exiting
            else:
                self.cancel()
        finally:
            self._closed = True
            os.close(self.fd)
            with self._ended:
                if not self._reaped:
                    self._reaped = _reap(self.pid, None)
            self.ended.set()


def _reap(pid: int, wait: float | None) -> bool:
    """Reap the ended child ``pid`` (waiting at most ``wait`` seconds; None: as long as it
    takes); whether it is reaped (or was, elsewhere)."""
    deadline = None if wait is None else time.monotonic() + wait
    while True:
        try:
            done, _status = os.waitpid(pid, 0 if deadline is None else os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere
            return True
        if done or deadline is None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def _send(fd: int, value: object) -> None:
    with collector_paused():
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_FRAME_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _child(project_dir: Path, demo: bool, write_end: int) -> None:
    """Read the head start and write it to ``write_end``; list on when it had no rows (see the
    module); then exit at once."""
    try:
        os.setpgid(0, 0)  # a group of its own: killing it ends an archive scan's helpers too
        # A background group now: a password command that reads the terminal gets an error
        # at once instead of stopping this process (and the listing the app waits for).
        for stop in (signal.SIGTTIN, signal.SIGTTOU):
            signal.signal(stop, signal.SIG_IGN)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # the terminal is the parent's: nothing of the child reaches it
            os.dup2(devnull, fd)
        # Deferred: the child needs the session and the trace, the parent's first frame does not.
        from mailtriage.core.trace import OPLOG, TRACE, calling_as
        from mailtriage.application import Service

        for feed in (OPLOG, TRACE):
            feed.clear()  # what the parent recorded before the fork is the parent's
            feed.drop_listeners()  # the parent's (``--trace``'s writer): the parent is handed these records
        TRACE.enabled = True  # as the app's from its start (the console shows it)
        with calling_as(STARTUP_CALLER):  # the console's "by" column
            session = Service(project_dir, demo=demo, settings=load_settings())
            sign_in = SignIn(session)
            head = read_head_start(session, opened=sign_in.start)
            TRACE.log(STARTUP_CALLER, "!", "head start read")
            if head is not None:
                early = head.list_name is not None and _may_list_early(session)
                follows = head.listing is None and early
                # A warm start's rows (a summary cache, or a local archive read here): the first
                # one's thread is read ahead wherever no sign-in token could be refreshed twice.
                reads = head.listing is not None and _may_read_early(session)
                first = _first_row(head.listing.value) if reads else None
                operations, trace = taken_records()
                _send(write_end, replace(head, listing_follows=follows, read_follows=_id_of(first),
                                         operations=operations, trace=trace))
                sign_in.join()  # the connection is this thread's from here on
                TRACE.log(STARTUP_CALLER, "!", "signed in; reading on")
                if follows:
                    _list_first(session, head.list_name, write_end)
                elif first is not None:
                    _send(write_end, _read_ahead(session, first))
    except BaseException:  # the parent starts without a head start, or lists itself
        pass
    finally:
        os._exit(0)  # no cleanup of the parent's state (atexit handlers, buffered files)


def _may_list_early(session: Service) -> bool:
    try:
        return session.listing_can_start_early()
    except Exception:  # the parent's own listing finds out what is wrong
        return False


def _may_read_early(session: Service) -> bool:
    try:
        return session.reading_can_start_early()
    except Exception:  # the parent's own read finds out what is wrong
        return False


def _first_row(summaries: Any) -> Any:
    try:  # the first row (the first frame's cursor), or None
        return summaries[0] if len(summaries) and summaries[0].thread_id is not None else None
    except (TypeError, IndexError, AttributeError):  # a listing that is not a list of summaries
        return None


def _id_of(row: Any) -> Any:
    return None if row is None else row.thread_id


def _read_ahead(session: Service, row: Any) -> ThreadRead:
    """In the child: the thread of ``row`` (a ThreadSummary) read; its dispatch None when that
    failed (the parent's own read says why)."""
    try:
        dispatch = session.read_thread(row.thread_id)
        pickle.dumps(dispatch, protocol=pickle.HIGHEST_PROTOCOL)  # what cannot travel is not sent
        count = len(dispatch.value.messages)
    except Exception:
        taken_records()  # the parent's own read records its attempt
        return ThreadRead(row.thread_id, None)
    return ThreadRead(row.thread_id, dispatch, *taken_records(), message_count=count,
                      last_activity=row.last_activity)


def _list_first(session: Service, list_name: str, write_end: int) -> None:
    """The app's first listing (tui/controllers/listing.py), done here: the first page, then
    the whole window, each part sent as it is read. The summary cache is written before the
    child ends, which closes the pipe (it exits without the atexit write, and without a LOGOUT:
    the app waits for that end, not for a round trip). A failure sends nothing more: the
    parent lists itself. After a first page, its first row's thread is read ahead and sent in a
    frame of its own: the page does not wait for it (a big attachment takes seconds). A whole
    window in one part has no read ahead: the parent serves none once its listing is whole."""
    def part(listing: Any, whole: bool) -> ListingPart:
        with collector_paused():
            return ListingPart.of(listing, whole, *taken_records())

    try:
        if session.listing_can_be_limited():
            first = session.list_threads(list_name, limit=FIRST_PAGE)
            if len(first.value) < FIRST_PAGE:
                _send(write_end, part(first, True))
                return
            row = _first_row(first.value)
            _send(write_end, replace(part(first, False), read_follows=_id_of(row)))
            if row is not None:
                _send(write_end, _read_ahead(session, row))
        _send(write_end, part(session.list_threads(list_name), True))
    finally:
        from mailtriage.application import flush_listing_caches  # loaded by the listing by now

        flush_listing_caches()
