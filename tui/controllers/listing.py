"""The listing: the sources check and the listing of a mailing list into the thread pane.

A listing first asks every backend whether it is there (the sources pane shows the
matrix), then lists the window: a backend that can list the newest threads fast
(declared by the session) paints a first page at once, then the whole window.

A component of the main screen (issue 36 §2: a hidden widget, tui/controllers/component.py).
It owns the list shown (:attr:`Listing.current_list`), the last sources check (the backend
console shows it) and an outage's state (``listing_out_of_reach``: Enter is then the retry R
would be). Its workers run on it and post their answers to it: the listing as the screen's
"threads" work (a folder's listing supersedes it, Esc cancels it), a sources check again as
"check". It takes its own ``SourcesChecked``, ``ThreadsLoaded`` and ``ThreadsFailed``, and
``SessionOpened``, which the app posts to it (one queue with the first listing's answers:
they come in the order they were posted, as when all of them went to the screen). Start-up's
first listing starts here (the app calls :meth:`Listing.start_first_listing`; the first screen
:meth:`Listing.show_head_start`). It takes a list chosen (``TAKES``) and is told of a
thread read (the relist after an outage); the handler of ``ThreadList.Opened``
(Reading's) calls :meth:`Listing.retry_on_enter` before the read. A folder's listing that failed
(tui/controllers/accounts.py) is shown through :meth:`Listing.failed`.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rich.text import Text
from textual.worker import get_current_worker

from mailtriage.tui.controllers.component import Component
from mailtriage.tui.errors import error_line, is_connection_problem
from mailtriage.tui.first_paint import KEEP_AFTER
from mailtriage.tui.head_start import ForkedHeadStart, ListingPart, adopt_records
from mailtriage.tui.messages import SessionOpened, SourceRow, SourcesChecked, ThreadLoaded, ThreadsFailed, ThreadsLoaded
from mailtriage.tui.panes.folders import FoldersPane
from mailtriage.tui.rows import rows_for
from mailtriage.tui.sanitize import inert

if TYPE_CHECKING:
    from mailtriage.application import CcResolution
    from mailtriage.tui.controllers.base import ControllerBase


@runtime_checkable
class SourcesView(Protocol):
    """A screen that shows the sources check (the backend console): every new check is
    handed to each such screen on the stack. A protocol the console meets, not a base class
    (a Protocol's metaclass does not mix with a Screen's)."""

    def show_sources(self, matrix: list[SourceRow], resolutions: dict, cc: CcResolution | None) -> None: ...


class Listing(Component):
    """The sources check and the listing of a mailing list into the thread pane, start-up's first one included."""

    def __init__(self, screen: ControllerBase) -> None:
        # screen: the service and app, its "threads" requests (a folder's listing supersedes a
        # list's, Esc cancels it), the panes, the components told of a listing.
        super().__init__(screen, id="listing")
        #: The mailing list in the thread list (None: a personal account's folder, or none yet).
        self.current_list: str | None = None
        #: The last sources check (the backend console shows it when opened).
        self.last_matrix: list[SourceRow] | None = None
        self.last_resolutions: dict = {}
        self.mandatory_problem: str | None = None
        #: The list's last listing failed for a backend out of reach (its rows, if any, stale):
        #: an Enter on a row is then the retry R would be (:meth:`retry_on_enter`).
        self.listing_out_of_reach = False
        self._relist_after_read = False

    # -- the session opened ---------------------------------------------------------
    def start_first_listing(self) -> None:
        """Called for the app's session worker, on the UI thread, as soon as the project is open
        (a cold start's child lists already: before it opens)."""
        screen = self._screen
        head = screen.shell.head_start
        child = screen.shell.take_listing_child()  # a cold start's: it lists the first list already
        if head is not None and self.current_list is not None and self.current_list != head.list_name:
            # Another list was chosen on the head start's screen: that one is listed. (None:
            # the head start is not shown yet, when the project opened before the panes.)
            if child is not None:
                child.abandon()
            self._start(self._check_and_list, screen.new_request("threads"), self.current_list, group="threads")
            return
        shown = screen.shell.first_page_shown() if child is not None else None  # a cold start's, on the first frame
        painted = head is not None and (head.listing is not None or shown is not None)
        self.listing_out_of_reach = False
        self._start(self._check_and_list, screen.new_request("threads"), None, first=True, cached_first=not painted,
                    child=child, shown=shown, group="threads")

    def show_head_start(self) -> None:
        """Before the first frame (the panes are mounted): what the app read before it
        started, the project's title, lists and first rows (see ``MailTriageApp.prepare_first_screen``)."""
        head = self._screen.shell.head_start
        if head is None:
            return
        self._show_project(head.title, head.lists, head.since, head.cc)
        if head.listing is not None:
            self._screen.threads.show_rows(rows_for(head.listing.value), head.listing.resolution, head.list_name,
                                           partial=head.stale, cached=head.stale)
        elif head.listing_follows:  # a cold start: the child's first page, when it is here already
            self.show_first_page(self._screen.shell.first_page_for_first_frame())

    def show_first_page(self, page: ListingPart | None) -> None:
        """A cold start's first page as start-up's child listed it (tui/first_screen.py: on the first
        frame, or as soon as it comes)."""
        head = self._screen.shell.head_start
        if page is not None and head is not None:
            self._screen.threads.show_rows(rows_for(page.listing()), page.resolution, head.list_name,
                                           partial=not page.whole)

    def on_session_opened(self, message: SessionOpened) -> None:
        """The project is open (the app posts it here)."""
        message.stop()
        screen = self._screen
        if screen.defer(self.on_session_opened, message):
            return
        if screen.shell.head_start is None:  # else it showed the project already (and a list chosen since stays)
            session = screen.session
            self._show_project(session.title, session.lists(), session.since(), session.cc)
        screen.project_opened()  # the keys typed meanwhile that need it (r, i)

    def _show_project(self, title: str, lists, since, cc) -> None:
        """The project's title, lists, window and security CC (again when the session opens
        after the head start showed them: nothing changes then)."""
        screen = self._screen
        screen.shell.title = f"mailtriage · {inert(title)}"
        screen.folders.show_lists(lists, since.strftime("%Y-%m-%d"))
        screen.sources.show_cc(cc)
        self.current_list = lists[0].list_name if lists else None
        if screen.threads.shown_list is None or screen.threads.shown_list != self.current_list:
            screen.threads.show_loading(self.current_list)
        if cc is not None and cc.warnings:
            screen.banner.show_cc(cc)

    # -- listing ---------------------------------------------------------------------
    def on_folders_pane_list_chosen(self, message: FoldersPane.ListChosen) -> None:
        """A list chosen in the lists pane: listed, the thread list focused."""
        screen, list_name = self._screen, message.list_name
        if screen.reader.account_id is not None:  # an account's message, under a project list now
            screen.reader_leaves_source()
        self.load_threads(list_name)
        screen.threads.thread_list.focus()

    #: The requests this component takes, each with its handler (the screen hands them on).
    TAKES = {FoldersPane.ListChosen: on_folders_pane_list_chosen}

    def load_threads(self, list_name: str | None) -> None:
        screen = self._screen
        other_list = list_name != screen.threads.shown_list
        self.current_list = list_name
        # The list replaces a folder in the thread list: search, C and the refresh after a
        # write act on what is shown, never on the account left behind (issue 30 §1).
        screen.accounts.left_folder()
        screen.alerts.forget_news()
        screen.threads.show_loading(list_name)
        self.listing_out_of_reach = self._relist_after_read = False
        # No cached rows while a mandatory backend is known to be down: the run is refused.
        self._start(self._check_and_list, screen.new_request("threads"), list_name,
                    cached_first=other_list and not self.mandatory_problem, group="threads")

    def _check_and_list(self, request: int, list_name: str | None, first: bool = False,
                        cached_first: bool = False, child: ForkedHeadStart | None = None,
                        shown: ListingPart | None = None) -> None:
        """``first``: start-up's listing (of the first list). ``cached_first``: paint the
        summary cache's rows, if any, before the server is asked (start-up, unless the
        first frame showed rows already; another list than the one on screen). ``child``:
        start-up's child that lists the first list already (tui/head_start.py); ``shown``: its
        first page, which the first frame showed (the listing goes on from it)."""
        try:
            self._check_and_list_now(request, list_name, first, cached_first, child, shown)
        finally:
            if child is not None:
                child.finish()  # after its whole window: it writes the summary cache; else it lists no more

    def _check_and_list_now(self, request: int, list_name: str | None, first: bool, cached_first: bool,
                            child: ForkedHeadStart | None, shown: ListingPart | None = None) -> None:
        worker = get_current_worker()
        screen = self._screen
        session = screen.session
        if first:
            # Start-up reads the security list only; without one the read is skipped. (The head
            # start's lists: a cold start's listing starts while the project still opens here.)
            head = screen.shell.head_start
            lists = head.lists if head is not None else session.lists()
            list_name = lists[0].list_name if lists else None
        # Start-up's child lists already: a first page it has sent is shown before this
        # process's sources check (which the child's own listing passed already). Waited for
        # only while the project still opens here (the check cannot run before): a server that
        # does not answer would make the check wait its timeout after the child's.
        part = shown
        while (child is not None and part is None and not child.ready(0.05) and not session.is_open
               and not worker.is_cancelled):
            pass
        if child is not None and (part is not None or child.ready(0)):
            part = part or self._post_from_child(worker, request, list_name, child)
            if part is None:
                child = None  # it failed: this process lists (its read ahead is received as it comes)
        if worker.is_cancelled:  # the app ends (its child with it), or another list was chosen
            return
        if list_name is not None and cached_first and part is None and child is None:
            self._paint_cached(request, list_name)
        matrix, resolutions, problem = session.check_sources()
        self.post_message(SourcesChecked(matrix, resolutions, str(problem) if problem else None))
        if worker.is_cancelled:
            return
        if problem:
            # The contract: a mandatory backend that is unavailable stops the run.
            self.post_message(ThreadsFailed(request, "Run stopped", problem))
            return
        if list_name is None:
            self.post_message(_no_list(request, session))
            return
        first_page = screen.shell.first_page
        try:
            while child is not None and (part is None or not part.whole):  # the page, then the whole window
                came = self._post_from_child(worker, request, list_name, child)
                if came is None:  # failed (or cancelled): the rest is listed here
                    break
                part = came
            if part is not None and part is shown and part.whole and not worker.is_cancelled:
                # The first frame showed the whole window: answered as a whole listing is, now that the
                # project is open (the new-report poll starts then, the next start's frame is kept).
                self.post_message(ThreadsLoaded(request, list_name, rows_for(part.listing()), part.resolution))
            if (part is not None and part.whole) or worker.is_cancelled:
                return
            if part is None and session.listing_can_be_limited():
                # The newest threads first, painted at once; then the whole window.
                first = session.list_threads(list_name, limit=first_page)
                screen.shell.drop_read_ahead()  # its rows are this process's: so are the reads of them
                if worker.is_cancelled:
                    return
                if len(first.value) < first_page:
                    self.post_message(ThreadsLoaded(request, list_name, rows_for(first.value), first.resolution))
                    return
                self.post_message(ThreadsLoaded(request, list_name, rows_for(first.value), first.resolution,
                                                partial=True))
            result = session.list_threads(list_name)
            screen.shell.drop_read_ahead()
        except Exception as exc:  # turned into the pane's error state and a notification
            self.post_message(ThreadsFailed(request, "Listing threads failed", exc,
                                            screen.resolve("list_recent_threads")))
            return
        if worker.is_cancelled:
            return
        self.post_message(ThreadsLoaded(request, list_name, rows_for(result.value), result.resolution))

    def _post_from_child(self, worker, request: int, list_name: str | None,
                         child: ForkedHeadStart) -> ListingPart | None:
        """The next part of the first listing as start-up's child reads it (the first page or
        the whole window), posted with the operations and protocol lines the child recorded
        (for the console); None when none came (this process lists, and reports what failed)."""
        part = child.next_listing(cancelled=lambda: worker.is_cancelled)
        if part is None and child.stalled_after is not None and not worker.is_cancelled:
            self._screen.shell.notify(f"Start-up's helper process stalled (no listing in {child.stalled_after:g} s): "
                                      "it was ended; listing here", severity="warning", markup=False)
        if part is None or worker.is_cancelled:
            return None
        adopt_records(part.operations, part.trace)
        self.post_message(ThreadsLoaded(request, list_name, rows_for(part.listing()), part.resolution,
                                        partial=not part.whole))
        return part

    def _paint_cached(self, request: int, list_name: str) -> None:
        """The rows the summary cache holds, painted before the server is asked (the sources
        check connects; the listing then reconciles). No cache, no rows: nothing happens."""
        try:
            # Local archives are not read twice: the listing below is as fast.
            offline = self._screen.session.offline_threads(list_name, limit=self._screen.shell.first_page, local=False)
        except Exception as exc:  # a cache is a head start, never a failure: the listing goes on
            self._screen.shell.notify(f"summary cache not read: {error_line(exc)}", severity="warning", markup=False)
            return
        if offline is not None and offline[0].value:
            self.post_message(ThreadsLoaded(request, list_name, rows_for(offline[0].value),
                                            offline[0].resolution, partial=True, cached=True))

    def on_sources_checked(self, message: SourcesChecked) -> None:
        """A sources check: the sources pane, the banner, every ``SourcesView``."""
        message.stop()
        screen = self._screen
        if screen.defer(self.on_sources_checked, message):
            return
        self.last_matrix = message.matrix
        self.last_resolutions = message.resolutions
        screen.sources.show_matrix(message.matrix, _accounts(screen.session.settings))
        previous, self.mandatory_problem = self.mandatory_problem, message.mandatory_problem
        if message.mandatory_problem:
            screen.banner.show(Text.assemble(("⛔ ", "bold"), inert(message.mandatory_problem)), error=True)
        elif previous:
            screen.banner.show_cc(screen.session.cc)  # the backend recovered: the "run aborted" banner goes
        for shown in screen.app.screen_stack:
            if isinstance(shown, SourcesView):
                shown.show_sources(message.matrix, message.resolutions, screen.session.cc)

    def on_threads_loaded(self, message: ThreadsLoaded) -> None:
        message.stop()
        self.loaded(message)

    def loaded(self, message: ThreadsLoaded) -> None:
        """A listing's rows: into the thread pane with the alerts' news."""
        screen = self._screen
        if screen.defer(self.loaded, message):
            return
        if not screen.is_current("threads", message.request):
            return
        alerts, shell = screen.alerts, screen.shell
        rows = alerts.with_news(message.rows, message.list_name)
        screen.threads.show_rows(alerts.mark(rows), message.resolution, message.list_name,
                                 partial=message.partial, cached=message.cached)
        if len(rows) or not message.partial:  # keys held since the kept frame act on these rows
            screen.call_later(shell.start_listing_answered)
        if not message.partial:
            self.listing_out_of_reach = False
            alerts.forget_news(message.request)  # in the rows now; later news goes to them directly
            shell.drop_read_ahead()  # later reads are this process's own, with what came since
        # Once per session, after the whole window is painted: the poll's baseline (a second
        # listing on mail sources of its own) competes neither with the first paint nor with
        # the whole window's walk (two cores: it made a cold dense listing ~0.5 s slower).
        if not message.partial:
            screen.call_after_refresh(alerts.start)
            screen.set_timer(KEEP_AFTER, shell.keep_first_frame)  # the next start paints this at once

    def on_threads_failed(self, message: ThreadsFailed) -> None:
        message.stop()
        self.failed(message)

    def failed(self, message: ThreadsFailed) -> None:
        """A listing failed (a list's here, a folder's from the accounts): the thread pane says
        so, the error list has it."""
        screen = self._screen
        screen.shell.drop_read_ahead()  # what a later Enter shows is read then, with what came since
        if not screen.accept_failure(self.failed, message):
            return
        screen.threads.show_failure(screen.failure_text(message),
                                    retry_hint=not isinstance(message.error, LookupError))
        screen.call_later(screen.shell.start_listing_answered)  # keys held for its rows act on the failure
        self.listing_out_of_reach = is_connection_problem(message.error)
        screen.report_failure(message)
        screen.call_after_refresh(screen.alerts.start)

    def retry_on_enter(self) -> None:
        """Enter on a row while the list's listing failed for a backend out of reach (its rows
        stale: the start-up's listing, with the server down): the key is the retry R would be,
        never a refusal that asks for R once the backend is back (issue 33). The outage's
        answer is forgotten before the read asks for the backend (MainScreen's one handler of
        ``ThreadList.Opened`` calls this, then reading's ``open_row``): the read
        checks it again and reads the thread if it is back (else it says why, and R). Once the
        thread came, the list is listed again."""
        if self.listing_out_of_reach:
            self._screen.session.forget_availability()
            self._relist_after_read = True

    def thread_read(self, message: ThreadLoaded) -> None:
        """A thread read after a listing that failed for a backend out of reach (routed by the
        screen; a read's message only, not a read ahead shown): the backend is back, so the list
        on screen (stale) is listed again, as R would."""
        if not self._relist_after_read or message.account_id is not None:
            return
        self._relist_after_read = False
        if self.listing_out_of_reach and self._screen.accounts.open_folder_key is None:
            self.load_threads(self.current_list)

    def recheck(self) -> None:
        """A backend went away (ControllerBase.report_failure): every source is checked again."""
        self._start(self._recheck, group="check")

    def _recheck(self) -> None:
        matrix, resolutions, problem = self._screen.session.check_sources()
        self.post_message(SourcesChecked(matrix, resolutions, str(problem) if problem else None))


def _no_list(request: int, session) -> ThreadsFailed:
    """The CLI's configuration warning (issue 30 §7): the list read is skipped, never the
    whole folder read as if it were the list (a list chosen in the lists pane is read)."""
    missing = session.unconfigured_list(None)
    warning = missing.warning if missing is not None else "no list to read: the list read is skipped"
    return ThreadsFailed(request, "No list to read", LookupError(warning), None)


def _accounts(settings) -> dict:
    try:
        return settings.accounts()
    except Exception:  # a broken accounts table is reported at start-up, not here
        return {}
