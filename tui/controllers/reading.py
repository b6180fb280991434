"""Reading: a thread (or a personal account's message) into the reading pane, and the MAS case
the thread belongs to.

A component of the main screen (issue 36 §2), a hidden widget that runs its workers on
itself and takes their answers. It owns what is read: the row the open thread came from
(:attr:`Reading.open_summary`, R reads it again), the account message in the reader and the
ones kept read (compose reads both: ``ReadingView``), the account message and the project
thread (``ThreadAhead``) read ahead. Its workers are of the screen's groups: a read is
"reader" work (Esc cancels it, a later read supersedes it, the alerts' poll waits for it).
Their answers come here and stop here (``ThreadLoaded``: the listing is told first). It takes
the panes' requests about reading (``TAKES``; the screen hands them on): Enter (after the
listing's retry), the reader's q / Esc, Space at the end, the list's highlight.
"""

from __future__ import annotations

import os
import sys
import time
from functools import partial
from typing import TYPE_CHECKING, Callable

from rich.text import Text
from textual.worker import get_current_worker

from mailtriage.application import Thread, ThreadId
from mailtriage.tui.controllers.component import Component
from mailtriage.tui.errors import error_line, is_connection_problem
from mailtriage.tui.mailbox_rows import MAILBOX_KIND, MailboxRow
from mailtriage.tui.messages import CaseLoaded, DraftBuiltAhead, MessageReadAhead, ReaderFailed, ThreadLoaded
from mailtriage.tui.panes.reader import ThreadView, prepare_texts
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.sanitize import inert, inert_text

if TYPE_CHECKING:
    from textual.timer import Timer

    from mailtriage.application import ThreadSummary
    from mailtriage.tui.controllers.base import ControllerBase
    from mailtriage.tui.controllers.thread_ahead import ThreadAhead

#: Messages of personal accounts kept read (the row under the cursor, the ones opened): a
#: message ID names its folder, UIDVALIDITY and UID, so what it holds never changes.
READ_AHEAD_KEPT = 8
#: Seconds the cursor rests on a row before it is read ahead (not the first row of a folder).
READ_AHEAD_REST = 0.08
#: Seconds after the first row of the process is painted before the dialogs are made ready
#: (tui/dialogs/ahead.py). 0: at once (0.3 s after, on a habit user's Enter and r: reply11). None: never, a test hook.
DIALOGS_AHEAD_AFTER: float | None = 0.0
#: Seconds from Enter during which a step of the dialogs ahead waits, unless the thread is on the
#: screen sooner: the hidden compose dialog's mount (~10 ms) or the dialogs' stylesheet came
#: between Enter and its body's frame, or before the frame was written (tmux traces, issue 35).
OPEN_HOLD = 0.15


class Reading(Component):
    """Enter on a row, the reader's q and Space, the read ahead and the case (hidden)."""

    def __init__(self, screen: ControllerBase, thread_ahead: ThreadAhead) -> None:
        super().__init__(screen, id="reading")
        #: The row the open thread came from (R reads it again).
        self.open_summary: ThreadSummary | None = None
        #: The personal account's message in the reading pane (None: a project thread or
        #: nothing): r, A and F in the reader answer it (compose reads it, ``ReadingView``).
        self.open_mailbox_row: MailboxRow | None = None
        #: (account id, message ID) -> the message as the reader shows it, read ahead or read
        #: (newest last; READ_AHEAD_KEPT of them).
        self.kept_messages: dict[tuple[str, str], Thread] = {}
        self._ahead_running: tuple[str, str] | None = None
        self._ahead_wanted: MailboxRow | None = None
        self._ahead_rows: object = None
        #: Enter on a row whose read-ahead is on its way: (request, key) shown when it comes.
        self._ahead_open: tuple[int, tuple[str, str]] | None = None
        self._ahead_timer: Timer | None = None
        self._dialogs_ahead = False
        #: When Enter opened a thread not yet on the screen (None: none), the steps it holds and
        #: the timer that lets them go OPEN_HOLD after it at the latest.
        self._opening: float | None = None
        self._held: list[Callable[[], object]] = []
        self._hold_timer: Timer | None = None
        #: The project thread under the cursor, read before Enter asks (issue 33).
        self.thread_ahead = thread_ahead

    # -- intents from the panes ------------------------------------------------------
    def on_thread_list_opened(self, message: ThreadList.Opened) -> None:
        """Enter on a row: the listing's retry first (an outage's answer is forgotten before the
        read asks for the backend), then the read (tests/tui/test_screen_routes.py holds the order)."""
        self._screen.listing.retry_on_enter()
        self.open_row(message.summary)

    def on_thread_list_highlighted(self, _message: ThreadList.Highlighted) -> None:
        self.highlighted()  # the read ahead (the thread pane's status took the message first)

    def on_thread_view_back_requested(self, _message: ThreadView.BackRequested) -> None:
        self.back()

    def on_thread_view_next_row_requested(self, _message: ThreadView.NextRowRequested) -> None:
        self.next_row()

    def open_row(self, summary: ThreadSummary) -> None:
        """Enter on a row (``ThreadList.Opened``, after the listing's retry)."""
        # Enter goes into the message (issue 35): the reader's keys (q back, Space, e) act at once.
        self._screen.query_one(ThreadView).focus()
        self._opening = time.monotonic()
        if isinstance(summary, MailboxRow) and summary.header is not None:
            self.open_mailbox_message(summary)  # a personal account's message
            return
        self.open_thread(summary)

    def after_open(self, step: Callable[[], object]) -> None:
        """``step`` now, or once the thread Enter opened is on the screen (OPEN_HOLD at most)."""
        left = OPEN_HOLD - (time.monotonic() - self._opening) if self._opening is not None else 0.0
        if left <= 0:
            step()
            return
        self._held.append(step)
        if self._hold_timer is None:
            self._hold_timer = self._screen.set_timer(left, self.opened)

    def opened(self) -> None:
        """The thread Enter opened is on the screen (or OPEN_HOLD passed): the held steps run."""
        self._opening = None
        if self._hold_timer is not None:
            self._hold_timer.stop()
            self._hold_timer = None
        held, self._held = self._held, []
        for step in held:
            step()

    def back(self) -> None:
        """q / Esc in the reader: back to the list; a thread still loading is cancelled (its
        status line says "Esc cancels"), and so is a reply being prepared: its compose dialog
        never opens afterwards (issue 35)."""
        screen = self._screen
        self.opened()
        screen.cancel_work(("reader", "reply"))
        screen.composing.drop_reply_on_its_way()
        self._ahead_open = None  # a read-ahead still on its way is not shown then
        self.thread_ahead.drop_waiting()
        screen.query_one(ThreadList).focus()

    def next_row(self) -> None:
        """Space at the end of the open thread: the next row of the list, read (mutt's pager)."""
        listing = self._screen.query_one(ThreadList)
        if listing.cursor + 1 >= len(listing.rows):
            self._screen.notify("End of the last message of the list.", markup=False, timeout=3)
            return
        listing.cursor += 1
        listing.action_open()

    # -- reading ------------------------------------------------------------------------
    def open_thread(self, summary: ThreadSummary) -> None:
        screen = self._screen
        screen.alerts.forget_mark(summary)
        self.open_summary = summary
        self.open_mailbox_row = None
        request = screen.new_request("reader")
        self.thread_ahead.drop_waiting()  # an earlier Enter's wait: its read must not cancel this one
        kept = self.thread_ahead.take(summary)
        if kept is not None:  # read ahead while the cursor rested (issue 33): shown in this frame
            self._show_ahead(request, kept)
            return
        screen.reader.show_loading(summary.subject)
        if not self.thread_ahead.wait_for(summary, request, self._show_ahead,
                                          lambda r: self._read_if_current(r, summary)):
            self._start(self._read, request, summary.thread_id, summary, group="reader")

    def _read_if_current(self, request: int, summary: ThreadSummary) -> None:
        """A read ahead that failed under an Enter: read it, unless the reader moved on since
        (an exclusive read of it would cancel the newer one's)."""
        if self._screen.is_current("reader", request):
            self._start(self._read, request, summary.thread_id, summary, group="reader")

    def _show_ahead(self, request: int, result) -> None:
        """A thread read ahead (a read's Dispatch), shown as the read of ``request`` would be."""
        if self._screen.is_current("reader", request):
            self.thread_loaded(ThreadLoaded(request, result.value, result.resolution))

    def open_thread_id(self, thread_id) -> None:
        """Read a thread that is not a row of the list (``s`` from a tracker issue)."""
        self.open_summary = None
        self.thread_ahead.drop_waiting()
        self._screen.reader.show_loading(str(thread_id))
        self._start(self._read, self._screen.new_request("reader"), thread_id, group="reader")

    def _read(self, request: int, thread_id, row: ThreadSummary | None = None) -> None:
        worker = get_current_worker()
        screen = self._screen
        try:
            # An Enter on the first row at start-up: start-up's child read it ahead (tui/head_start.py).
            result = None if row is None else screen.shell.read_ahead(row)
            if result is None:
                result = screen.session.read_thread(thread_id)
        except Exception as exc:
            self.post_message(ReaderFailed(request, "Reading the thread failed", exc,
                                             screen.resolve("read_thread")))
            return
        if not worker.is_cancelled:
            self.post_message(ThreadLoaded(request, result.value, result.resolution))

    def on_thread_loaded(self, message: ThreadLoaded) -> None:
        """A read of this component's came: the listing's look first (a relist after an outage,
        tests/tui/test_screen_routes.py), then the reader."""
        message.stop()
        self._screen.listing.thread_read(message)
        self.thread_loaded(message)

    def thread_loaded(self, message: ThreadLoaded) -> None:
        """A read shown (a read ahead shown on Enter comes here directly, the listing not told)."""
        screen = self._screen
        if not screen.is_current("reader", message.request):
            return
        if message.account_id is not None:  # a personal account's message: r and Enter again need no read
            self._keep_read((message.account_id, message.thread.thread_id.value), message.thread)
        screen.reader.show_thread(message.thread, message.resolution, message.account_id)
        screen.frame_at_idle()  # the body's frame as soon as it is ready, not at the next 60 Hz tick
        # The workers start once the body is on the terminal: started before the frame, they took
        # the UI thread's turns (the GIL) while it was painted and written (issue 35). The hidden
        # dialog of the reply built ahead waits for it too (compose holds DraftBuiltAhead: after_open).
        screen.reader.when_painted(partial(self._after_shown, message.request, message.thread))
        self._offer_unlock(message.thread)

    def _after_shown(self, request: int, thread: Thread) -> None:
        self.opened()
        screen = self._screen
        if not screen.is_current("reader", request) or screen.reader.thread is not thread:
            return  # another thread was opened meanwhile: its own call comes
        screen.composing.build_reply_ahead()  # what r shows, built while the message is read (issue 35)
        self._start(self._load_case, request, thread, group="case")

    # -- OpenPGP: a key that needs its passphrase -------------------------------------------
    def _offer_unlock(self, thread) -> None:
        """A message stayed encrypted because its key needs a passphrase: offer to unlock it."""
        screen = self._screen
        # Mail without OpenPGP (every account message) cannot need one: no OpenPGP code loads
        # on the UI thread right after the body is shown, where it delayed the next key (issue 35).
        if all(m.crypto is None for m in thread.messages) or not screen.session.pgp_needs_passphrase(thread):
            return

        def decided(value: str | None) -> None:
            if value is None:
                return
            if screen.session.pgp_loopback():
                self._start(self._unlock_loopback, thread, value, group="pgp-unlock", exclusive=False)
                return
            # The agent's pinentry may be a terminal one: hand it the terminal, as for $EDITOR.
            tty = os.ttyname(sys.__stdin__.fileno()) if sys.__stdin__ and sys.__stdin__.isatty() else None
            with screen.app.suspend():
                problem = screen.session.pgp_unlock(thread, tty=tty)
            self._after_unlock(problem)

        # lazy: dialogs are not on the first screen (tests/tui/test_startup_imports.py)
        from mailtriage.tui.dialogs.passphrase import PassphraseDialog

        screen.app.push_screen(PassphraseDialog(screen.session.pgp_loopback(), cursor_blink=screen.shell.cursor_blink),
                               decided)

    def _unlock_loopback(self, thread, passphrase: str) -> None:
        problem = self._screen.session.pgp_unlock(thread, passphrase=passphrase)
        self._screen.app.call_from_thread(self._after_unlock, problem)

    def _after_unlock(self, problem: str | None) -> None:
        if problem:
            self._screen.notify(inert(f"Not unlocked: {problem}"), severity="warning", markup=False)
            return
        if self.open_summary is not None:
            self.open_thread(self.open_summary)  # read again: the agent now has the passphrase

    def on_reader_failed(self, message: ReaderFailed) -> None:
        """A read failed: the reading pane says why, the error list has it."""
        message.stop()
        screen = self._screen
        if not screen.accept_failure(self.on_reader_failed, message):
            return
        reconnect = is_connection_problem(message.error)
        screen.reader.show_status(("⚠ press R to reconnect — " if reconnect else "⚠ ")
                                  + screen.failure_text(message), error=True)
        screen.report_failure(message)

    # -- a personal account's message ----------------------------------------------------
    def open_mailbox_message(self, summary: MailboxRow) -> None:
        """Read one message of a personal account; \\Seen is left as it is (BODY.PEEK)."""
        self.open_mailbox_row = summary  # r/A/F in the reading pane answer it
        self.thread_ahead.drop_waiting()
        if summary.header is None:
            return
        key = (summary.account_id, summary.header.id)
        request = self._screen.new_request("reader")
        kept = self.kept_messages.get(key)
        if kept is not None:  # read ahead (issue 35): shown in this frame, no server round trip
            self._show_read(request, kept, key[0])
            return
        self._screen.reader.show_loading(summary.subject)
        if self._ahead_running == key:  # on its way already: shown when it comes
            self._ahead_open = (request, key)
            return
        self._start(self._read_mailbox, request, *key, group="reader")

    def _read_mailbox(self, request: int, account_id: str, message_id: str) -> None:
        screen = self._screen
        try:
            message = screen.session.account_message(account_id, message_id)
        except Exception as exc:
            self.post_message(ReaderFailed(request, "Reading the message failed", exc))
            return
        thread = Thread(ThreadId(MAILBOX_KIND, message_id), message.header.subject, (message.content,),
                        notes=tuple(message.header.notes))
        if not get_current_worker().is_cancelled:
            self.post_message(ThreadLoaded(request, thread, None, account_id))

    def _show_read(self, request: int, thread: Thread, account_id: str | None) -> None:
        """Show ``thread`` now, as a ThreadLoaded of ``request`` would."""
        self.thread_loaded(ThreadLoaded(request, thread, None, account_id))

    def _keep_read(self, key: tuple[str, str], thread: Thread) -> None:
        self.kept_messages.pop(key, None)
        self.kept_messages[key] = thread
        while len(self.kept_messages) > READ_AHEAD_KEPT:
            del self.kept_messages[next(iter(self.kept_messages))]

    # -- read ahead: the message under the cursor of an account's folder (issue 35) ------
    def highlighted(self) -> None:
        """The list's cursor moved (``ThreadList.Highlighted``). The cursor
        rests on a personal account's message: read it before Enter asks. At once on a folder
        just opened (Enter may follow the first paint), else when the cursor has rested a moment
        (keys typed in a burst read nothing); one read at a time, none while rows are tagged (f on
        200 tagged rows waited for a read ahead of the row the cursor rested on)."""
        screen = self._screen
        if not self._dialogs_ahead:  # a list is shown: the dialogs get ready once it has painted
            self._dialogs_ahead = True
            if DIALOGS_AHEAD_AFTER is not None:
                screen.call_after_refresh(self._dialogs_ahead_soon)
        listing = screen.query_one(ThreadList)
        row = listing.current
        self.thread_ahead.highlighted(listing.rows, None if row is None or isinstance(row, MailboxRow) else row)
        if not isinstance(row, MailboxRow) or row.header is None or not screen.session.is_open:
            return
        self._ahead_wanted = row
        if self._ahead_timer is not None:
            self._ahead_timer.stop()
            self._ahead_timer = None
        if listing.tags:  # a batch in the making: its key comes next, and the connection is its (reply15)
            self._ahead_wanted = None
            return
        if self._ahead_rows is not listing.rows:
            self._ahead_rows = listing.rows
            self._read_ahead_next()
        else:
            self._ahead_timer = screen.set_timer(READ_AHEAD_REST, self._read_ahead_next)

    def _read_ahead_next(self) -> None:
        self._ahead_timer = None
        row = self._ahead_wanted
        if row is None or row.header is None or self._ahead_running is not None:
            return
        self._ahead_wanted = None
        key = (row.account_id, row.header.id)
        if key in self.kept_messages:
            return
        self._ahead_running = key
        self._start(self._read_ahead, key, group="read-ahead", exclusive=False)

    def _read_ahead(self, key: tuple[str, str]) -> None:
        screen = self._screen
        try:
            message = screen.session.account_message(*key)
            thread = Thread(ThreadId(MAILBOX_KIND, key[1]), message.header.subject, (message.content,),
                            notes=tuple(message.header.notes))
        except Exception:  # noqa: BLE001 - not asked for: Enter reads it again and says why
            screen.app.call_from_thread(self._read_ahead_failed, key)
            return
        try:
            prepare_texts(thread)  # what the reader shows, made here and not after Enter (issue 35)
        except Exception:  # noqa: BLE001 - made again when shown, where a failure is reported
            pass
        # r's reply to it is built here, after the read is handed over (compose's row_reply).
        build = screen.composing.row_reply(key[0], key[1], thread, self.post_message)
        self.post_message(MessageReadAhead(key[0], key[1], thread))
        if build is not None:
            build()  # its DraftBuiltAhead comes here after the read's message: compose takes it

    def on_draft_built_ahead(self, message: DraftBuiltAhead) -> None:
        self._screen.composing.on_draft_built_ahead(message)

    def _read_ahead_failed(self, key: tuple[str, str]) -> None:
        self._ahead_running = None
        if self._ahead_open is not None and self._ahead_open[1] == key:
            request, _ = self._ahead_open
            self._ahead_open = None
            if self._screen.is_current("reader", request):
                self._start(self._read_mailbox, request, *key, group="reader")
        self._read_ahead_next()

    def on_message_read_ahead(self, message: MessageReadAhead) -> None:
        """An account message read ahead came: kept, shown if Enter waits for it; r's reply to it,
        built on its worker, is compose's (issue 35: r typed as the body shows only shows it)."""
        message.stop()
        key = (message.account_id, message.message_id)
        self._ahead_running = None
        self._keep_read(key, message.thread)
        waiting, self._ahead_open = self._ahead_open, None
        if waiting is not None and waiting[1] == key and self._screen.is_current("reader", waiting[0]):
            self._show_read(waiting[0], message.thread, key[0])  # its reply built now too, not after its paint
        self._screen.composing.build_row_ahead(message.thread)
        self._read_ahead_next()

    # -- the dialogs ahead (issue 35): the first r or f of a process no longer loads them ----
    def _dialogs_ahead_soon(self) -> None:
        if DIALOGS_AHEAD_AFTER:
            self._screen.set_timer(DIALOGS_AHEAD_AFTER, self._dialogs_ahead_now)
        else:
            self._dialogs_ahead_now()

    # Each step waits for a thread Enter is opening (after_open): their imports held the GIL, their
    # mounts and restyles the UI thread, between the key and its body on the terminal.
    def _dialogs_ahead_now(self) -> None:
        self.after_open(partial(self._start, self._import_dialogs_ahead, group="dialogs-ahead", exclusive=False))

    def _import_dialogs_ahead(self) -> None:
        from mailtriage.tui.dialogs import ahead  # why: not on the first screen (test_startup_imports)

        ahead.import_dialogs()  # off the UI thread; then the UI thread's steps (the last: an empty compose dialog)
        screen = self._screen
        screen.app.call_from_thread(ahead.ready_in_turns, screen.shell, self.after_open, screen.call_after_refresh,
                                    screen.composing.keep_compose_ready)

    # -- MAS case of the thread being read ---------------------------------------------
    def _load_case(self, request: int, thread) -> None:
        # lazy: the modes record loads only when a thread is read
        from mailtriage.application import case_record, modes_database

        screen = self._screen
        try:
            record = case_record(modes_database(screen.shell.settings), thread)
        except Exception as exc:  # an unreadable record is said in the pane; the thread stays readable
            self.post_message(CaseLoaded(request, thread, error=error_line(exc)))
            return
        if record is not None:
            self.post_message(CaseLoaded(request, thread, record))

    def on_case_loaded(self, message: CaseLoaded) -> None:
        message.stop()
        screen = self._screen
        if not screen.is_current("reader", message.request) or screen.reader.thread is not message.thread:
            return
        # lazy: as in _load_case
        from mailtriage.tui.case import case_text

        if message.error:
            screen.reader.show_case(Text.assemble(("⚠ the modes record could not be read: ", "bold"),
                                                  inert_text(message.error)))
            return
        screen.reader.show_case(case_text(message.record))

    #: The requests this component takes, each with its handler (the screen hands them on).
    TAKES = {
        ThreadList.Opened: on_thread_list_opened,
        ThreadList.Highlighted: on_thread_list_highlighted,
        ThreadView.BackRequested: on_thread_view_back_requested,
        ThreadView.NextRowRequested: on_thread_view_next_row_requested,
    }
