"""The app's first screen at start-up: the head start (tui/head_start.py) it shows, and when.

The command forks a child that reads the head start while this process imports Textual.
When the child has answered by the time the app is about to draw (it usually has), the first
frame shows the project and its first rows. When it is still reading (a large archive's first
scan), the first frame does not wait: the panes are drawn empty and the child's answer is
shown when it comes. Either way the project opens in this process only after that (calls made
meanwhile wait for it), so the child's work is never done twice beside it.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from textual import events, work
from textual.message import Message

from mailtriage.tui import first_paint, textual_private
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.head_start import (FIRST_FRAME_WAIT, FIRST_PAGE, READ_AHEAD_WAIT, ForkedHeadStart, HeadStart,
                                       ListingPart, adopt_records, read_head_start)

#: How long (from the main screen's mount) a cold start's own project opening waits for the child's
#: first page when the first frame was drawn without it (a timer: the UI thread does not wait); then
#: the listing takes the page as it comes. Started before the page came, the opening's imports held
#: the interpreter when it came: on screen 0.2-0.4 s after it was sent at a 50 ms round trip, against
#: ~0.03 s taken by the event loop before the opening (0.1 s here let the opening start first in every
#: such start: benchmarks/trace_startup.py, first12).
OPENING_WAITS_FOR_PAGE = 0.4

if TYPE_CHECKING:
    from mailtriage.core.settings import UserSettings
    from mailtriage.tui.screens.main import MainScreen
    from mailtriage.application import Service, ThreadSummary


class HeadStartArrived(Message):
    """A head start child that was late has answered (``head``: None when it read nothing;
    ``child``: the child when it goes on to list, see tui/head_start.py)."""

    def __init__(self, head: HeadStart | None, child: ForkedHeadStart | None = None) -> None:
        super().__init__()
        self.head = head
        self.child = child


class ReadAheadArrived(Message):
    """Start-up's read ahead of the first row came (after the main screen was up)."""


class FirstScreen:
    """The app's part in start-up (a mixin of MailTriageApp)."""

    session: Service
    settings: UserSettings
    settings_writable: bool
    main: MainScreen | None
    first_page = FIRST_PAGE
    #: The project's facts and first rows, read before the first frame, so that frame shows them.
    head_start: HeadStart | None = None
    #: A child still reading the head start after the first frame.
    _late_head_start: ForkedHeadStart | None = None
    #: The child that lists the first list after its head start (a cold start), until the
    #: first listing takes it (:meth:`take_listing_child`); ended when the app ends.
    _listing_child: ForkedHeadStart | None = None
    _listing_child_taken = False
    #: Its first page, when the main screen's first frame showed it (first_page_for_first_frame).
    _first_page: ListingPart | None = None
    _open_at_first_frame = False  # a cold start's opening waits for the main screen's first frame
    _page_watch: Callable[[], None] | None = None  # ends the event loop's watch for the first page
    _first_frame_passed = False
    #: The child that reads the first row's thread ahead (tui/head_start.py), until the app ends.
    _read_child: ForkedHeadStart | None = None
    #: Its read ahead, handed to the reader (:meth:`offer_read_ahead`) until it is withdrawn.
    _offered: object = None
    #: The project whose start screen is kept for the next start's first paint
    #: (tui/first_paint.py): set by run_app on a real terminal, None elsewhere (tests).
    first_paint_project: tuple[Path, bool] | None = None
    #: How often the keep waited for the footer's keys (at most FOOTER_WAITS times).
    _footer_waits = 0
    release_keys: Callable[[], None]  # StartupKeys' (tui/startup_keys.py)
    start_listing_answered: Callable[[], None]  # StartupKeys'
    start_rows_awaited: bool  # StartupKeys'
    call_later: Callable[..., bool]  # the App's
    call_after_refresh: Callable[..., bool]  # the App's
    set_timer: Callable[..., Any]  # the App's
    _open_session: Callable[[], Any]  # MailTriageApp's (a worker)
    if TYPE_CHECKING:  # the App's, which this mixin is part of
        def post_message(self, message: Message) -> bool: ...

    def prepare_first_screen(self, forked: ForkedHeadStart | None = None) -> None:
        """Before ``run``: the head start, so the first frame shows the project and its first
        rows. From ``forked``'s child when there is one (this process's session then opens
        once the head start is shown); else read here, which opens this process's session.
        None when the project cannot be opened: the app's own opening then reports why, as it
        does without a head start."""
        if forked is None:
            self.head_start = read_head_start(self.session, self.first_page)
            return
        if forked.ready(FIRST_FRAME_WAIT):
            self.head_start = forked.result()  # None: no project, or it failed; the opening says why
            self._keep_child(self.head_start, forked)
        else:  # still reading: the first frame does not wait for it
            self._late_head_start = forked
        if self.head_start is not None or self._late_head_start is not None:
            self.session.open_later()

    def open_after_first_frame(self) -> bool:
        """From the app's mount: wait for a late head start, or open the project once the
        head start's rows are drawn. False when there are no rows to draw first (open it now)."""
        if self._late_head_start is not None:
            self._wait_for_head_start(self._late_head_start)
            return True
        self._take_read_ahead()
        if self.listing_child_waits() and not self._first_frame_passed:
            # A cold start's child lists: the main screen's first frame takes its first page if it has
            # come by then (first_page_for_first_frame), and the opening starts there.
            self._open_at_first_frame = True
            return True
        if self.head_start is not None and self.head_start.listing is not None:
            # The sources check and the first listing start once the frame with the rows is
            # drawn, not in competition with it. (Waiting for start-up's read ahead as well, at
            # most 1 s, showed no gain on a 100k-message folder and went: benchmarks/bench_read_newest.py.)
            self.call_after_refresh(self._open_session)
            return True
        # No rows to show yet (a cold cache): the project opens now, beside the first frame,
        # so the login and the first listing start as early as they can.
        return False

    @work(thread=True, exclusive=True, group="session", exit_on_error=False)
    def _wait_for_head_start(self, forked: ForkedHeadStart) -> None:
        try:
            head = forked.result()
        except Exception:  # noqa: BLE001 - whatever failed, the project must still open (here)
            head = None
        follows = head is not None and (head.listing_follows or head.read_follows is not None)
        self.post_message(HeadStartArrived(head, forked if follows else None))

    def on_head_start_arrived(self, message: HeadStartArrived) -> None:
        """The late child's answer: shown as a head start is, then the project opens here
        (which says why, when the child found none)."""
        self._late_head_start = None
        self.head_start = message.head
        if message.child is not None:
            self._keep_child(message.head, message.child)
            self._take_read_ahead()
        main = self.main
        if main is not None and main.panes_ready:
            # The keys held since the kept frame act on the rows shown next (not released onto
            # the empty list while this head start was late: StartupKeys.release_keys).
            self.call_later(self.release_keys)
        if self.head_start is not None and main is not None:
            if main.panes_ready:  # else the main screen shows it as its panes mount
                main.listing.show_head_start()
            if self.head_start.listing is not None:  # its rows are drawn first (as above)
                self.call_after_refresh(self._open_session)
                return
        self._open_session()

    def first_page_for_first_frame(self) -> ListingPart | None:
        """A cold start, as the main screen shows the head start (just before its first frame): the
        child's first page when it is in the pipe by now, for that frame, and this process's opening
        and first listing started after that frame (as after a warm start's rows; the listing goes on
        from the page). Else None at once: the UI thread does not wait on the child (it waited up to
        0.1 s here in every start against a server across a network, benchmarks/trace_startup.py). The
        event loop then watches the pipe, and the page shows in a frame of its own when it comes
        (:meth:`_watch_for_first_page`). Once."""
        self._first_frame_passed = True
        if not self._open_at_first_frame:
            return None  # (the opening started already, or a late head start's opens as it comes)
        self._open_at_first_frame = False
        child = self._listing_child
        if child is not None and not child.ready(0):
            self._watch_for_first_page(child)
            return None
        return self._take_first_page(child)

    def _take_first_page(self, child: ForkedHeadStart | None) -> ListingPart | None:
        """The child's first page, in the pipe now; this process's opening starts after the frame
        that shows it. None when the child failed (and was ended): this process lists, from now."""
        part = None if child is None else child.next_listing()
        if part is None:
            self._listing_child_taken = child is not None
            self._open_session()
            return None
        adopt_records(part.operations, part.trace)
        self._first_page = part
        self.call_after_refresh(self._open_session)  # (its imports and sign-in do not slow that frame)
        return part

    def _watch_for_first_page(self, child: ForkedHeadStart) -> None:
        """The first frame drawn without the first page: the event loop takes it when the pipe has it,
        and the main screen shows it then. The opening waits for it at most OPENING_WAITS_FOR_PAGE (a
        timer: the UI draws and takes keys meanwhile), then the listing takes the page as it comes."""
        loop = asyncio.get_running_loop()

        def came() -> None:
            self._stop_watching()
            part = self._take_first_page(child)
            main = self.main
            if part is not None and main is not None:
                main.listing.show_first_page(part)
                self.call_later(self.start_listing_answered)  # keys held for its rows act on them

        def not_yet() -> None:
            self._stop_watching()
            self._open_session()

        def stop() -> None:
            loop.remove_reader(child.fd)
            timer.stop()

        loop.add_reader(child.fd, came)
        timer = self.set_timer(OPENING_WAITS_FOR_PAGE, not_yet)
        self._page_watch = stop

    def _stop_watching(self) -> None:
        stop, self._page_watch = self._page_watch, None
        if stop is not None:
            stop()

    def first_page_shown(self) -> ListingPart | None:
        """The first page the first screen showed (:meth:`first_page_for_first_frame`: on the main
        screen's first frame, or as it came), for the first listing to go on from; else None."""
        return self._first_page

    def start_rows_pending(self) -> bool:
        """The main screen shows no rows yet and its first listing has not answered: the keys held
        since the kept frame wait for its rows (tui/startup_keys.py)."""
        main = self.main
        return (main is not None and self.start_rows_awaited and main.panes_ready
                and len(main.query_one(ThreadList).rows) == 0)

    def cancel_head_start(self) -> None:
        """The app ends: a child still reading is ended (with what it started)."""
        if self._late_head_start is not None:
            self._late_head_start.cancel()
        self._stop_watching()
        if self._listing_child is not None:
            self._listing_child.cancel()  # a listing worker that waits on it then lets go
        if self._read_child is not None:
            self._read_child.cancel()

    def _keep_child(self, head: HeadStart | None, forked: ForkedHeadStart) -> None:
        """The child goes on after its head start: it lists the first list (a cold start),
        or reads the first row's thread ahead (a warm one)."""
        if head is not None and head.listing_follows:
            self._listing_child = forked
            # Its read ahead comes after its first page, received by the listing: offered to the reader
            # as it comes, as a warm start's is (the Enter then shows it in its own frame, no "loading").
            forked.read_arrived = lambda: self.post_message(ReadAheadArrived())
        if head is not None and (head.listing_follows or head.read_follows is not None):
            self._read_child = forked

    def _take_read_ahead(self) -> None:
        """A warm start's child reads the first row's thread ahead: taken as soon as it comes."""
        child = self._read_child
        if child is not None and child is not self._listing_child:  # the listing takes a cold one's
            self._receive_read_ahead(child)

    @work(thread=True, group="read-ahead", exit_on_error=False)
    def _receive_read_ahead(self, child: ForkedHeadStart) -> None:
        child.receive_read_ahead()
        self.post_message(ReadAheadArrived())

    def on_read_ahead_arrived(self, _message: ReadAheadArrived) -> None:
        self.offer_read_ahead()

    def offer_read_ahead(self) -> None:
        """Start-up's read ahead (a warm start's, or a cold one's after its first page), once it is
        here and the first rows are on the main screen
        (its keys act from then on, tui/startup_keys.py): handed to the reader's read ahead
        (tui/controllers/thread_ahead.py) while nothing was opened yet, so that an Enter on the
        first row shows it while the key is handled, in that key's frame. Taken later, by the
        Enter's own read worker, it cost a "loading" frame and a thread's turn between the key
        and the body (issue 33: the first key that acts; benchmarks/trace_startup.py)."""
        child, main = self._read_child, self.main
        if (child is None or main is None or not main.panes_ready
                or not child.read_settled.is_set() or main.reading.open_summary is not None or main.reader.thread is not None):
            return
        row = main.query_one(ThreadList).current
        dispatch = None if row is None else child.take_read_ahead(row, timeout=0)
        if dispatch is not None:
            main.reading.thread_ahead.keep(row, dispatch)
            self._offered = dispatch

    def open_held_enter(self, key: events.Key) -> bool:
        """The first key held on the kept frame, released (tui/startup_keys.py): an Enter that
        opens the thread list's row (its binding, the user's key map included) opens it here, as
        ThreadList.action_open and the main screen's handler of its message would, and True.
        Posted, the key went through the widgets' message queues (the list, each pane up to the
        screen and back to the app) and its Opened message bubbled up again: meanwhile Textual
        laid out and painted the list's own first live frame, and the body came in the frame
        after it (~0.08 s of the UI thread, issue 33's first key that acts,
        benchmarks/trace_startup.py). Here the first live frame shows the body. False (the
        key is posted as typed): any other key, or an Enter bound otherwise."""
        main = self.main
        if key.key != "enter" or main is None or main.app.screen is not main or not main.panes_ready:
            return False
        listing = main.query_one(ThreadList)
        active = main.active_bindings.get("enter")
        if (main.focused is not listing or active is None or active.node is not listing
                or active.binding.action != "open" or not active.enabled or main.listing.listing_out_of_reach):
            return False  # (out of reach: the listing's retry on Enter, which the message's handler runs)
        row = listing.current
        if row is not None:
            main.hand_on(ThreadList.Opened(row, listing.cursor))
        return True

    def _withdraw_offer(self) -> None:
        """The read ahead handed to the reader is not shown any more (see drop_read_ahead)."""
        offered, self._offered = self._offered, None
        main = self.main
        if offered is not None and main is not None:
            main.reading.thread_ahead.drop(offered)

    def read_ahead(self, row: ThreadSummary):
        """The Dispatch of ``read_thread`` for the thread of ``row`` (on screen) as start-up's child
        read it ahead (an Enter on the first row), or None: the caller reads it itself."""
        child = self._read_child
        return None if child is None else child.take_read_ahead(row, READ_AHEAD_WAIT)

    def drop_read_ahead(self) -> None:
        """Later reads are this process's own (what came since): start-up's listing is whole, this
        process listed (or failed to) itself."""
        if self._read_child is not None:
            self._read_child.drop_read_ahead()
        self._withdraw_offer()

    def forget_start_up(self) -> None:
        """Another session opens (reopen, the demo): start-up's head start and read ahead are
        never shown or served in it."""
        self.head_start = None
        child, self._read_child = self._read_child, None
        if child is not None:
            child.drop_read_ahead()
        self._withdraw_offer()

    def wait_for_listing_child(self, timeout: float) -> None:
        """Until the child that listed the first list has ended (its summary cache written),
        at most ``timeout`` seconds; at once when there is none, or it listed nothing."""
        if self._listing_child is not None and self._listing_child.listed:
            self._listing_child.ended.wait(timeout)

    def listing_child_waits(self) -> bool:
        """A child lists the first list (a cold start) and no listing has taken it yet."""
        return self._listing_child is not None and not self._listing_child_taken

    def take_listing_child(self) -> ForkedHeadStart | None:
        """The child listing the first list, for the first listing to wait on (once)."""
        if self._listing_child_taken:
            return None
        self._listing_child_taken = True
        return self._listing_child

    # -- the next start's first paint ---------------------------------------------------------
    def keep_first_frame(self) -> None:
        """Once the first whole listing is drawn: keep this screen for the next start's first
        paint (tui/first_paint.py), if it still is the start screen (the main screen alone, the
        list at its top, nothing read, no notification on it). Once per run."""
        main = self.main
        if self.first_paint_project is None:
            return  # nothing to keep (not a terminal, kept already, or given up)
        # The keys laid out (footer_drawn) are not always in the frame (a full run at load 13-20
        # kept one whose last line was blank): the frame's own footer line decides.
        frame = textual_private.full_frame(main, self.console) if main is not None and main.footer_drawn() else ""
        if main is not None and not _shows_footer(frame):
            if self._footer_waits < first_paint.FOOTER_WAITS:
                self._footer_waits += 1  # a busy machine: the footer's keys come later
                self.set_timer(first_paint.KEEP_AFTER, self.keep_first_frame)
            else:  # never a screen without its keys: the next start draws as without one
                self.first_paint_project = None
            return
        target, self.first_paint_project = self.first_paint_project, None
        # Not when the settings file could not be read: what it says about caches is unknown.
        if (target is None or not self.settings_writable or main is None or self.screen is not main
                or textual_private.notifications_shown(self) or not main.at_start()):
            return
        self._keep_frame(target, frame, (self.size.width, self.size.height))  # as the first frame wrote it

    @work(thread=True, group="first-paint", exit_on_error=False)
    def _keep_frame(self, target: tuple[Path, bool], frame: str, size: tuple[int, int]) -> None:
        project_dir, demo = target
        try:
            first_paint.keep(project_dir, demo=demo, size=size, frame=frame, settings_path=self.settings.path,
                             settings_data=self.settings.data)
        except OSError:  # a cache that cannot be written is no cache: the next start draws as without it
            pass


def _shows_footer(frame: str) -> bool:
    """Whether ``frame``'s last line (the footer's) shows its keys (any letter or digit: a blank
    line, or the command key's bar alone, does not), its colours taken out."""
    return any(c.isalnum() for c in re.sub(first_paint.ALLOWED_SEQUENCE, "", frame.rsplit("\n", 1)[-1]))
