"""The main screen: sources and lists on the left, threads over the reading pane, tracker on the right.

The screen owns the work of its panes. Panes post intents (open this thread, reply,
inspect that backend); the controller of that area (``tui/controllers/``) handles the
intent, runs the backend call in a worker on this screen and feeds the result back to
the pane. Below 100 columns the sidebar folds away and unfolds while it has the focus (1, 2);
the zoom key (Ctrl+w) gives the focused pane the whole screen (issue 35).
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Header, Static
from textual.worker import Worker, WorkerState

from mailtriage.tui import bindings
from mailtriage.tui.controllers.accounts import AccountsController
from mailtriage.tui.controllers.alerts import AlertsController
from mailtriage.tui.controllers.batch import BatchController
from mailtriage.tui.controllers.compose import ComposeController
from mailtriage.tui.controllers.keys import KeysController
from mailtriage.tui.controllers.listing import ListingController
from mailtriage.tui.controllers.overview import OverviewController
from mailtriage.tui.controllers.proposals import ProposalsController
from mailtriage.tui.controllers.reading import ReadingController
from mailtriage.tui.controllers.search import SearchController
from mailtriage.tui.controllers.tracker import TrackerController
from mailtriage.tui.footer import KeyFooter
from mailtriage.tui.panes.folders import FolderList, FoldersPane
from mailtriage.tui.panes.reader import ReaderPane, ThreadView
from mailtriage.tui.panes.sources import SourceList, SourcesPane
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.panes.threads import ThreadPane
from mailtriage.tui.panes.tracker import TrackerList, TrackerPane
from mailtriage.tui.sanitize import inert

NARROW_WIDTH = 100

#: Esc cancels these (request kind, worker group); their answers are then ignored.
CANCELLABLE = (("threads", "threads"), ("reader", "reader"), ("reply", "reply"), ("search", "search-server"))


class MainScreen(ListingController, ReadingController, ComposeController, ProposalsController, TrackerController,
                 AccountsController, AlertsController, BatchController, SearchController, OverviewController,
                 KeysController, bindings.KeyContext, inherit_bindings=False):
    BINDINGS = bindings.MAIN
    key_context = "MainScreen"
    #: Focus goes to the thread list as soon as the panes are composed: with the default
    #: (the first focusable widget) focus moved twice at start-up, and each move restyles
    #: the panes (:focus-within) and recomposes the footer's keys before the first paint.
    AUTO_FOCUS = "ThreadList"
    #: The tracker starts folded (it has no focus): set before the panes mount, a class the
    #: first focus or resize would add restyles every pane before the first paint.
    DEFAULT_CLASSES = "-tracker-folded"

    def compose(self) -> ComposeResult:
        self.set_class(self.app.size.width < NARROW_WIDTH, "-narrow")  # before the panes exist (see above)
        yield Header(icon="✉")
        yield Static(id="banner", classes="warning-banner")
        with Horizontal(id="body"):
            with Vertical(id="sidebar"):
                yield SourcesPane(id="sources-pane")
                yield FoldersPane(id="folders-pane")
            with Vertical(id="center"):
                yield ThreadPane(id="thread-pane")
                yield ReaderPane(id="reader-pane")
            yield TrackerPane(id="tracker-pane")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.set_class(self.app.size.width < NARROW_WIDTH, "-narrow")
        thread_list = self.query_one(ThreadList)
        thread_list.date_column = self.shell.date_column
        thread_list.focus()
        self.shell.main_screen_ready()
        self.show_head_start()  # before the answers that came earlier: those are newer
        self.panes_mounted()

    def on_unmount(self) -> None:
        self.stop_alerts()

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
        self.set_class(event.size.width < NARROW_WIDTH, "-narrow")
        self._fold_panes()

    # -- the tracker pane below 100 columns ------------------------------------
    # Beside the threads it would leave the subjects two characters: narrow, it takes the
    # body while it has the focus and folds away (still open) when another pane gets it.
    def _tracker_has_focus(self) -> bool:
        focused = self.focused
        return focused is not None and self.query_one(TrackerPane) in focused.ancestors_with_self

    def _fold_tracker(self, folded: bool) -> None:
        self.set_class(folded, "-tracker-folded")

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._fold_panes()

    # -- below 100 columns: the sidebar unfolds while it has the focus (issue 35) --------
    def _focus_within(self, selector: str) -> bool:
        focused = self.focused
        return focused is not None and self.query_one(selector) in focused.ancestors_with_self

    def _fold_panes(self) -> None:
        """Fold what the focus left: the tracker, the sidebar (narrow), and give the reader
        the room while it is read (narrow)."""
        # Wide, these classes style nothing (app.tcss: only with -narrow): kept right, but no
        # restyle of every widget on each focus move (~20-50 ms of Enter -> body, issue 35);
        # the -narrow a resize sets restyles with them.
        narrow = self.has_class("-narrow")
        self.set_class(not self._tracker_has_focus(), "-tracker-folded", update=narrow)
        self.set_class(self._focus_within("#sidebar"), "-sidebar-open", update=narrow)
        self.set_class(self._focus_within("#reader-pane"), "-reading", update=narrow)

    # -- zoom: the focused pane takes the whole screen --------------------------------
    def action_zoom(self) -> None:
        """The focused pane takes the screen; again (or Esc from a pane without an Esc key) gives it back."""
        if self.maximized is not None:
            self.minimize()
            return
        focused = self.focused
        pane = next((node for node in focused.ancestors_with_self if node.has_class("pane")), None) \
            if focused is not None else None
        if pane is None:
            self.notify("Nothing to zoom: no pane has the focus.", markup=False, timeout=3)
            return
        self.maximized = pane  # a pane is a container: Screen.maximize would refuse it

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker of this screen raised: the app's error list has it. A thread read that
        ended lets the alerts poll start if it waited for it."""
        self.reader_done(event.worker)
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.shell.report_error(f"Unexpected error in {event.worker.name or 'a background task'}",
                                    event.worker.error)

    # -- banner ------------------------------------------------------------
    def show_banner(self, text: Text | None, *, error: bool = False) -> None:
        banner = self.query_one("#banner", Static)
        banner.update(text or "")
        banner.set_class(bool(text), "-visible")
        banner.set_class(error, "-error")

    def clear_run_aborted(self) -> None:
        """The mandatory backend is back (``R``): the "run aborted" banner goes; the
        security-CC warning, when there is one, stays."""
        cc = self.session.cc
        if cc is not None and cc.warnings:
            self.show_banner(Text.assemble(("⚠ ", "bold"), inert(" ".join(cc.warnings))), error=cc.blocked)
        else:
            self.show_banner(None)

    # -- focus -------------------------------------------------------------
    PANE_FOCUS = {
        "sources": SourceList,
        "folders": FolderList,
        "threads": ThreadList,
        "reader": ThreadView,
        "tracker": TrackerList,
    }

    def action_focus_pane(self, name: str) -> None:
        self._fold_tracker(name != "tracker")
        if name == "tracker":
            self.set_class(True, "-tracker")
            self.load_tracker_once()
        if name in ("sources", "folders"):
            self.set_class(True, "-sidebar-open")  # before the focus: a hidden pane takes none
        widget = self.query_one(self.PANE_FOCUS[name])
        self.call_after_refresh(widget.focus)

    def toggle_tracker(self) -> None:
        # Folded away (narrow): t brings it back rather than closing what cannot be seen.
        show = not self.has_class("-tracker") or (self.has_class("-narrow") and self.has_class("-tracker-folded"))
        self.set_class(show, "-tracker")
        self._fold_tracker(not show)
        if show:
            self.load_tracker_once()
            self.call_after_refresh(self.query_one(TrackerList).focus)
        elif self._tracker_has_focus():
            self.query_one(ThreadList).focus()

    # -- the whole screen ------------------------------------------------------
    def action_cancel_work(self) -> None:
        """Esc: drop the pending listing / thread / proposal (their answers are ignored)."""
        self.cancel_work(tuple(work for work, _group in CANCELLABLE))

    def cancel_work(self, works: tuple[str, ...]) -> None:
        """Drop the pending work named in ``works`` (see :data:`CANCELLABLE`) and say so."""
        cancelled = []
        for work, group in CANCELLABLE:
            if work in works and any(w.group == group and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
                                     for w in self.workers):
                self.workers.cancel_group(self, group)
                self.new_request(work)
                cancelled.append(work)
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
        self.row_status = {}  # overview marks: asked for again once the rows are listed
        self.query_one(ThreadList).set_statuses(self.row_status)
        self.load_threads(self.current_list)
        if self.reader.thread is not None and self.open_summary is not None:
            self.open_thread(self.open_summary)
        if self.has_class("-tracker"):
            self.load_tracker()

    def action_queue(self) -> None:
        """Q: the team's triage queue (issue 37)."""
        from mailtriage.tui.screens.queue import QueueScreen  # why: lazy, only when first opened (start-up)

        def back(wrote: bool | None) -> None:  # a claim or release pulled and wrote the tracker
            if wrote and self.tracker.loaded:
                self.load_tracker()

        self.app.push_screen(QueueScreen(), back)

    def on_sources_pane_inspect_backend(self, message: SourcesPane.InspectBackend) -> None:
        from mailtriage.tui.screens.console import ConsoleScreen  # lazy: only when first opened (start-up)

        ConsoleScreen.open(self.app, message.backend)
