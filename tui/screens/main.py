"""The main screen: sources and lists on the left, threads over the reading pane, tracker on the right.

Some panes are areas that own their state and work (tui/panes/area.py: tracker, lists and
thread panes) and report the failures they let bubble to the screen. Alerts, banner,
unpublished-changes mark, batch, the reader's h, |, e and u, proposals, personal accounts, compose,
the listing (start-up's first one too), reading, the s jump and the search's hand-offs are
components the screen holds (tui/controllers/): no mixin is left. Each is a hidden widget
(tui/controllers/component.py) that runs its workers on itself and takes its own answers. What
crosses them is a Request (tui/messages.py): a pane's request bubbles here, a component posts
its news here, and one generic handler (:meth:`MainScreen.hand_on`) gives it to the component
that declared it in ``TAKES``. The screen handles itself only its own: the areas' failures
(the error list) and the backend console it pushes.
Below 100 columns the sidebar folds away and unfolds while it has the focus (1, 2);
the zoom key (Ctrl+w) gives the focused pane the whole screen (issue 35): tui/layout.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import Reactive
from textual.widgets import Header
from textual.worker import Worker, WorkerState

from mailtriage.tui import bindings, layout, typeahead
from mailtriage.tui.controllers.accounts import Accounts
from mailtriage.tui.controllers.alerts import Alerts
from mailtriage.tui.controllers.banner import Banner
from mailtriage.tui.controllers.batch import Batch
from mailtriage.tui.controllers.component import takers
from mailtriage.tui.controllers.compose import Compose
from mailtriage.tui.controllers.jump import Jump
from mailtriage.tui.controllers.keys import ReaderKeys
from mailtriage.tui.controllers.listing import Listing
from mailtriage.tui.controllers.proposals import Proposals
from mailtriage.tui.controllers.publish_mark import PublishMark
from mailtriage.tui.controllers.base import ControllerBase
from mailtriage.tui.controllers.reading import Reading
from mailtriage.tui.controllers.search import Search
from mailtriage.tui.controllers.thread_ahead import ThreadAhead
from mailtriage.tui.footer import KeyFooter
from mailtriage.tui.messages import AreaFailed, Request
from mailtriage.tui.panes.folders import FolderList, FoldersPane
from mailtriage.tui.panes.reader import ReaderPane, ThreadView
from mailtriage.tui.panes.sources import SourceList, SourcesPane
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.panes.threads import ThreadPane
from mailtriage.tui.panes.tracker import TrackerList, TrackerPane
from mailtriage.tui.pending import PendingWork

if TYPE_CHECKING:
    from textual.dom import DOMNode
    from textual.widget import Widget

#: Esc cancels this work of the screen (request kind, worker group), and a server search
#: on its way (the thread pane's); their answers are then ignored.
CANCELLABLE = (("threads", "threads"), ("reader", "reader"), ("reply", "reply"))
#: Worker groups that write (a quit while one runs asks first).
WRITE_GROUPS = ("apply",)


class MainScreen(ControllerBase, PendingWork, bindings.KeyContext, inherit_bindings=False):
    BINDINGS = bindings.MAIN
    key_context = "MainScreen"
    #: Focus goes to the thread list as soon as the panes are composed: with the default
    #: (the first focusable widget) focus moved twice at start-up, and each move restyles
    #: the panes (:focus-within) and recomposes the footer's keys before the first paint.
    AUTO_FOCUS = "ThreadList"
    #: The tracker starts folded (it has no focus): set before the panes mount, a class the
    #: first focus or resize would add restyles every pane before the first paint.
    DEFAULT_CLASSES = "-tracker-folded"
    #: Textual's Screen.focused repaints the whole screen when it changes: every line of every
    #: pane went through the compositor again on each Enter and q (~10 ms of the UI thread at
    #: 160x50, issue 33). What the focus changes repaints itself: the widgets its :focus rules
    #: restyle, the panes whose ``-active`` class changes, and the footer (its keys follow the focus).
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)
    #: The pane that holds the focus (class ``-active``: its border says so, app.tcss).
    _active_pane: DOMNode | None = None
    _shown = False  # shown once (on_event)

    def compose(self) -> ComposeResult:
        layout.set_width_classes(self, self.app.size.width)  # before the panes exist (see above)
        yield Header(icon="✉")
        yield Banner(id="banner", classes="warning-banner")
        with Horizontal(id="body"):
            with Vertical(id="sidebar"):
                yield SourcesPane(id="sources-pane")
                yield FoldersPane(id="folders-pane")
            with Vertical(id="center"):
                yield ThreadPane(id="thread-pane")
                yield ReaderPane(id="reader-pane")
            yield TrackerPane(id="tracker-pane")
        yield KeyFooter()
        yield from self.components

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        #: The sources check and the thread list's listing (hidden; its work is the screen's "threads" work).
        self.listing = Listing(self)
        #: The new-report poll and its news (hidden; the listing and the reader call it).
        self.alerts = Alerts(self)
        #: The unpublished-changes mark in the title (hidden; asked after a write or a tracker listing).
        self.publish_mark = PublishMark()
        #: The action keys on tagged rows (hidden; its work is the screen's "reply" work: Esc cancels it).
        self.batches = Batch(self)
        #: h, |, e and u on the thread read (hidden).
        self.reader_keys = ReaderKeys(self)
        #: A personal account's folder in the thread list, flag and move (hidden; its listing is
        #: the screen's "threads" work, its proposals the screen's "reply" work).
        self.accounts = Accounts(self)
        #: Enter on a row, the reader's q and Space, the read ahead and the case (hidden; its reads
        #: are the screen's "reader" work: Esc cancels them).
        self.reading = Reading(self, thread_ahead=ThreadAhead(self, lambda: self.session))
        #: r, A, F and C: the compose dialog, built ahead, and its proposal (hidden; "reply" work).
        self.composing = Compose(self, reading=self.reading)
        #: The proposal flows, the proposal dialog of every proposal and the writes (hidden).
        self.proposals = Proposals(self, compose=self.composing, after_compose=self.composing.after_write)
        #: s both ways between the list or reader and the tracker pane (hidden).
        self.jump = Jump(self)
        #: A search's scope, the reader's n / N through its matches (hidden).
        self.search = Search(self)
        #: The hidden widgets of the screen's work (composed after the panes), and the handler of
        #: each Request (a pane's request, a component's news) from their TAKES: :meth:`hand_on`.
        taking = (self.publish_mark, self.composing, self.proposals, self.reading, self.reading.thread_ahead,
                  self.reader_keys, self.listing, self.accounts, self.batches, self.jump,
                  self.search)
        self.components = (self.alerts, *taking)
        self._takers = takers(taking)

    def on_mount(self) -> None:
        layout.set_width_classes(self, self.app.size.width)
        thread_list = self.query_one(ThreadList)
        thread_list.date_column = self.shell.date_column
        thread_list.focus()
        self.shell.main_screen_ready()
        self.listing.show_head_start()  # before the answers that came earlier: those are newer
        self.panes_mounted()

    def on_unmount(self) -> None:
        self.alerts.stop()

    async def on_event(self, event: events.Event) -> None:
        """The first show restyles nothing: Textual restyles every widget of a screen it shows,
        and at the first show each was styled as it mounted, just before (~10 ms of the UI
        thread before the first key acts, issue 33; tests/tui/test_first_show_styles.py)."""
        if isinstance(event, events.ScreenResume) and not self._shown:
            self._shown = True
            event.refresh_styles = False
        await super().on_event(event)

    def at_start(self) -> bool:
        """Whether the screen shows only what a start shows: the list at its top with the
        cursor on its first thread, no search or tags, nothing read or being read (the next
        start's first paint keeps only such a frame: never a body)."""
        listing = self.query_one(ThreadList)
        reader = self.reader
        start_list = self.folders.start_list()
        return (start_list is not None and self.threads.shown_list == start_list and listing.cursor == 0 and listing.scroll_offset.y == 0 and not listing.filtered and not listing.tags
                and self.threads.search_label is None and not self.query("#thread-search.-visible")
                and reader.thread is None and str(reader.border_title) == "Reading pane" and self.focused is listing)

    def footer_drawn(self) -> bool:
        """Whether the footer's keys are laid out (they come a frame or more after the rows; a
        start screen kept before them would show an empty footer)."""
        return any(key.region for key in self.query("FooterKey"))

    def on_resize(self, event) -> None:
        layout.set_width_classes(self, event.size.width)
        layout.fold_panes(self)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        layout.fold_panes(self)

    def set_focus(self, widget: Widget | None, scroll_visible: bool = True, from_app_focus: bool = False) -> None:
        super().set_focus(widget, scroll_visible, from_app_focus)
        self._active_pane = layout.mark_active_pane(self, self._active_pane)  # its border

    def _fold_tracker(self, folded: bool) -> None:
        self.set_class(folded, "-tracker-folded")

    # -- zoom: the focused pane takes the whole screen --------------------------------
    def action_zoom(self) -> None:
        """The focused pane takes the screen; again (or Esc from a pane without an Esc key) gives it back."""
        if self.maximized is not None:
            self.minimize()
            return
        pane = layout.focused_pane(self)
        if pane is None:
            self.notify("Nothing to zoom: no pane has the focus.", markup=False, timeout=3)
            return
        self.maximized = pane  # a pane is a container: Screen.maximize would refuse it

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.worker_changed(event.worker)  # a component's come from it (tui/controllers/component.py)

    # -- focus -------------------------------------------------------------
    PANE_FOCUS = {"sources": SourceList, "folders": FolderList, "threads": ThreadList, "reader": ThreadView,
                  "tracker": TrackerList}

    def action_focus_pane(self, name: str) -> None:
        self._fold_tracker(name != "tracker")
        if name == "tracker":
            self.set_class(True, "-tracker")
            self.tracker.load_once()
        if name in ("sources", "folders"):
            self.set_class(True, "-sidebar-open")  # before the focus: a hidden pane takes none
        widget = self.query_one(self.PANE_FOCUS[name])
        self.call_after_refresh(widget.focus)

    def toggle_tracker(self) -> None:
        # Folded away (narrow): t brings it back rather than closing what cannot be seen.
        show = not self.has_class("-tracker") or layout.tracker_folded_away(self)
        self.set_class(show, "-tracker")
        self._fold_tracker(not show)
        if show:
            self.tracker.load_once()
            self.call_after_refresh(self.query_one(TrackerList).focus)
        elif layout.tracker_has_focus(self):
            self.query_one(ThreadList).focus()

    # -- the whole screen ------------------------------------------------------
    def action_cancel_work(self) -> None:
        """Esc: drop the pending listing / thread / proposal (their answers are ignored)."""
        self.cancel_work(tuple(work for work, _group in CANCELLABLE))

    def cancel_work(self, works: tuple[str, ...]) -> None:
        """Drop the pending work named in ``works`` (see :data:`CANCELLABLE`) and say so."""
        cancelled = []
        for request_kind, group in CANCELLABLE:
            if request_kind in works and any(w.group == group and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
                                     for w in self.workers):
                self.cancel_group(group)
                self.new_request(request_kind)
                cancelled.append(request_kind)
        if "search" in works and self.threads.cancel_search():
            cancelled.append("search")
        if "threads" in cancelled:
            self.threads.show_cancelled("loading cancelled — press R to load again")
        if "reader" in cancelled:
            self.reader.show_status("loading cancelled")
        elif "reply" in cancelled:
            self.reader.restore_status()
        if "search" in cancelled:
            self.threads.show_message("search cancelled — the list is unchanged")
        if cancelled:
            self.notify("cancelled: " + ", ".join(cancelled), markup=False)

    def refresh_all(self) -> None:
        """R: check the sources again, list again, read the open thread again, and the tracker."""
        self.session.forget_availability()
        self.session.forget_tracker()  # a fixed tracker descriptor is read again (issue 30 §6)
        self.threads.marks.forget(ask_again=False)  # the rows' marks: asked for again once listed
        self.reading.thread_ahead.forget()  # a thread read ahead is read again, not shown from before R
        self.listing.load_threads(self.listing.current_list)
        if self.reader.thread is not None and self.reading.open_summary is not None:
            self.reading.open_thread(self.reading.open_summary)
        if self.has_class("-tracker"):
            self.tracker.load()

    def action_queue(self) -> None:
        """Q: the team's triage queue (issue 37)."""
        from mailtriage.tui.screens.queue import QueueScreen  # why: lazy, only when first opened (start-up)

        def back(wrote: bool | None) -> None:  # a claim or release pulled and wrote the tracker
            if wrote and self.tracker.loaded:
                self.tracker.load()

        self.app.push_screen(QueueScreen(), back)

    def on_sources_pane_inspect_backend(self, message: SourcesPane.InspectBackend) -> None:
        from mailtriage.tui.screens.console import ConsoleScreen  # lazy: only when first opened (start-up)

        ConsoleScreen.open(self.app, message.backend)

    # -- what crosses the areas --------------------------------------------------------
    @on(Request)
    def hand_on(self, message: Request) -> None:
        """A pane's request or a component's news (every subclass: Textual dispatches a decorated
        handler by the message's classes): the one component that takes it acts now, in this
        call (Enter on a row: no second queue before the read starts), and the message stops."""
        message.stop()
        handler = self._takers.get(type(message))
        if handler is None:  # a Request no component lists in TAKES (tests/tui/test_component_messages.py)
            self.shell.report_error("A request nothing on the main screen takes", LookupError(message.handler_name))
            return
        if not typeahead.waits_on(self.app, message):
            handler(message)
            return
        running = {worker for worker in self.workers if not worker.is_finished}
        handler(message)  # keys typed after it wait for its dialog: pushed now, or built on a worker
        typeahead.request_handled(self.app, pushed=self.app.screen is not self, workers={
            worker for worker in self.workers if worker not in running and self.owns(worker) and not worker.is_finished})

    @on(AreaFailed)
    def report_area_failure(self, message: AreaFailed) -> None:
        """A pane's own work failed (the pane shows it; a superseded one stopped there)."""
        self.report_failure(message)

    def start_flow(self, name: str) -> None:
        """P, S (the app's keys): the publish review, the sync."""
        self.proposals.start_flow(name)

    def action_change_folder(self) -> None:
        """c: pick a list or folder of the lists pane by name and open it."""
        self.folders.choose_by_name()

    # -- what a quit would drop; unpublished tracker changes ----------------------------------
    def pending_work(self) -> list[str]:
        pending = []
        running = (WorkerState.PENDING, WorkerState.RUNNING)
        if any(w.group in WRITE_GROUPS and w.state in running for w in self.workers):
            pending.append("a confirmed write is still running")
        if self.publish_mark.pending:
            pending.append("local tracker changes are not published (P reviews them)")
        return pending
