"""The thread pane: the virtualized list, its search box and a status line.

The status line says which backend served the listing and why the others were
skipped (the resolution result), or what went wrong and how to retry.

``/`` runs the search on the server in a worker of this pane (an area that owns its work,
tui/panes/area.py). What is searched is what the list shows, which the screen names
(:class:`SearchScope`): the mailing list (the backend that lists it searches, when it
declares ``server_search``) or a personal account's folder (its mailbox adapter, when it
declares ``server_search``). The results replace the list until Esc; the status line
names the backend that answered and how. A backend that declares no server search gets
the local filter of the rows already listed, and the status says so. The rows' triage
marks are this pane's too (:mod:`mailtriage.tui.panes.row_marks`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from mailtriage.core.lean_dataclass import lean_dataclass  # @dataclass(eq=False), none of its exec'd code
from mailtriage.core.inert import terminal_line, terminal_text
from mailtriage.tui import bindings
from mailtriage.tui.messages import Request, RowStatusLoaded, SearchFailed, SearchLoaded, SearchUnsupported
from mailtriage.tui.panes.area import Requests, drop_stale, failure_text, service
from mailtriage.tui.panes.row_marks import RowMarks
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.rows import FilteredRows, ThreadRows, index_of
from mailtriage.tui.search_rows import SearchRows

if TYPE_CHECKING:
    from mailtriage.application import ThreadId


SEARCH_PAGE = 50


@lean_dataclass
class SearchScope:
    """What the list shows, so what a search searches: an account's folder (account id,
    folder id, name), else the mailing list ``list_name``."""

    folder: tuple[str, str, str] | None
    list_name: str | None


class SearchBox(Input):
    """``/`` opens it; Enter searches on the server (:meth:`ThreadPane.search_on_server`); Escape closes it."""

    BINDINGS = bindings.SEARCH_BOX

    def action_close_search(self) -> None:
        self.post_message(ThreadPane.SearchClosed())


class ThreadPane(Vertical):
    @lean_dataclass
    class SearchClosed(Message):
        pass

    @lean_dataclass
    class SearchProgress(Message):
        done: int
        total: int

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ThreadPane.SearchProgress)

    @lean_dataclass
    class SearchDone(Message):
        base: ThreadRows
        query: str
        indexes: list[int] | None

    @lean_dataclass
    class SearchSubmitted(Request):
        """Enter in the search box: the search component names what is shown (:meth:`search_on_server`)."""

        query: str

    @lean_dataclass
    class SearchState(Request):
        """Search results are (or are no longer) what the list shows."""

        active: bool

    def __init__(self, **kwargs) -> None:
        super().__init__(classes="pane", **kwargs)
        self.border_title = "Threads"
        self.base_rows: ThreadRows | None = None
        self.resolution_text = ""
        self._list_name: str | None = None
        self._rows_list: str | None = None
        #: Per list or folder left for another: the thread the cursor was on. Coming back puts
        #: the cursor on it again while it is listed (issue 35: mutt and aerc keep the place).
        self._left_on: dict[str | None, object] = {}
        self.partial = False
        self.cached = False  # the rows on screen came from the summary cache (the server is being asked)
        # The listing failed while rows stay on screen (stale): the status keeps saying so
        # (a cursor move re-renders the status) until the next listing arrives.
        self.failure: str | None = None
        #: The search on screen: (query, what answered) — None when the list is not a search.
        self.search_label: tuple[str, str] | None = None
        self.requests = Requests()
        self.marks = RowMarks(self)

    def compose(self) -> ComposeResult:
        # The search box and its progress bar are mounted on the first search: four widgets
        # fewer to style and lay out before the first frame.
        yield ThreadList(id="thread-list")
        yield Static(id="threads-status", classes="pane-status")

    def on_mount(self) -> None:
        # The position follows the cursor in the rows' own screen update (a watcher runs as the
        # cursor is set); Highlighted is handled a message later, after the rows' frame: two
        # updates per key. Its handler asks again and show_message finds it said.
        self.watch(self.thread_list, "cursor", self._cursor_moved, init=False)

    def _cursor_moved(self) -> None:
        self._update_status()

    def _search_box(self) -> SearchBox:
        """The search box, mounted (with its progress bar) the first time it is asked for."""
        for box in self.query(SearchBox):
            return box
        # Lazy: the progress bar's module (and its clock and ETA) only with the first search.
        from textual.widgets import ProgressBar

        box = SearchBox(placeholder="search on the server (subject, sender, body); Enter to search, Esc to close",
                        id="thread-search")
        self.mount(box, ProgressBar(id="search-progress", show_eta=False), before="#threads-status")
        return box

    def _progress_bar(self):
        self._search_box()
        return self.query_one("#search-progress")

    @property
    def thread_list(self) -> ThreadList:
        return self.query_one(ThreadList)

    # -- states ------------------------------------------------------------
    def show_message(self, text: str | Text, *, error: bool = False) -> None:
        status = self.query_one("#threads-status", Static)
        text = text if isinstance(text, Text) else Text(text)
        if status.content == text and status.has_class("-error") == error:
            return  # said already (a cursor move says it, then its Highlighted asks again)
        # One line whatever it says (.pane-status: height 1, width 1fr): painted again, never a
        # layout of the whole screen (issue 39: one at each key, some 2-7 ms of the UI thread).
        status.update(text, layout=False)
        status.set_class(error, "-error")

    def show_loading(self, list_name: str | None) -> None:
        self._list_name = list_name
        self.failure = None
        self.border_title = Text(f"Threads · {list_name}" if list_name else "Threads")
        self.show_message(f"loading threads of {list_name or '(no list)'} … (Esc cancels)")

    @property
    def shown_list(self) -> str | None:
        """The list whose rows are on screen (None before any)."""
        return self._rows_list if self.base_rows is not None else None

    def show_rows(self, rows: ThreadRows, resolution, list_name: str | None, *, partial: bool = False,
                  cached: bool = False) -> None:
        """Show a listing. A listing of the list already shown (the full one after the
        newest threads, or a reload) keeps the cursor on its thread and the scroll position."""
        # The list whose rows are on screen (show_loading already names the one on its way).
        same_list = self.base_rows is not None and list_name == self._rows_list
        if self.base_rows is not None and not same_list and self.thread_list.current is not None:
            self._left_on[self._rows_list] = self.thread_list.current.thread_id
        follows_partial = self.partial and same_list
        self._list_name = self._rows_list = list_name
        self.base_rows = rows
        self.partial = partial or cached
        self.cached = cached
        self.failure = None
        self.resolution_text = resolution.summary() if resolution is not None else ""
        self.border_title = Text(f"Threads · {list_name}" if list_name else "Threads")
        self.thread_list.remove_class("-stale")
        if follows_partial and self.thread_list.filtered:
            # Keep the user's search on screen; it covers the first rows only until run again.
            self._update_status()
            return
        if not same_list:
            self.thread_list.clear_tags()  # tags, sort and tree belong to one folder or list
            self.thread_list.reset_arrangement()
        else:
            self.thread_list.tags.refresh(rows)
        if same_list and not self.thread_list.filtered:
            self.thread_list.replace_rows(rows)
        else:
            if self.search_label is not None or self.thread_list.filtered:
                self.search_label = None  # another list: the search was of the one before
                self.post_message(self.SearchState(False))
            self.thread_list.set_rows(rows, keep_cursor=follows_partial)
        self._return_to_thread(list_name, rows, partial or cached)
        self._update_status()

    def return_to(self, list_name: str | None, thread_id: ThreadId) -> None:
        """The cursor on ``thread_id`` once ``list_name`` is listed again (as on a list left for another)."""
        self._left_on[list_name] = thread_id

    def _return_to_thread(self, list_name: str | None, rows: ThreadRows, partial: bool) -> None:
        """Back on a list or folder left for another: the cursor on the thread it was on, once
        a listing holds it (a first page may not: the whole window is waited for)."""
        thread_id = self._left_on.get(list_name)
        if thread_id is None or self.thread_list.filtered:
            return
        index = index_of(rows, thread_id)
        if index is not None:
            self.thread_list.cursor = index
        if index is not None or not partial:
            del self._left_on[list_name]

    def update_rows(self, rows: ThreadRows) -> None:
        """The shown list with news applied (no reload): the user's place is kept. A search
        on screen stays as it is; clearing it shows the updated rows."""
        self.base_rows = rows
        if not self.thread_list.filtered:
            self.thread_list.replace_rows(rows)
        self._update_status()

    def show_cancelled(self, text: str) -> None:
        """The listing was cancelled (Esc): rows on screen stay, stale, and the status says
        so until the next listing (not "asking the server", which it no longer does)."""
        self.cached = False
        self.thread_list.set_class(self.base_rows is not None, "-stale")
        self.failure = text
        self.show_message(text)

    def show_failure(self, text: str, *, retry_hint: bool = True) -> None:
        # Rows already shown stay (marked stale) so the pane never goes blank or freezes.
        self.thread_list.set_class(self.base_rows is not None, "-stale")
        hint = "press R to retry — " if retry_hint else ""
        self.failure = f"⚠ {hint}{text}"
        self.show_message(self.failure, error=True)

    def _update_status(self, index: int | None = None) -> None:
        tl = self.thread_list
        if self.failure is not None and not tl.filtered and self.search_label is None:
            self.show_message(self.failure, error=True)  # a search's status says its own
            return
        total = len(tl.rows)
        position = f"{(tl.cursor + 1) if total else 0}/{total}"
        unit = self.base_rows.unit if self.base_rows is not None else "thread"  # a folder lists messages
        what = f"{total} {unit}{'s' if total != 1 else ''}"
        if self.cached:
            what += " from the cache, asking the server …"
        elif self.partial:
            what = f"newest {total} {unit}s, loading the rest …"
        if tl.filtered and self.search_label is not None:
            self.show_message(self._search_status(position, total))
            return
        if tl.filtered:
            query = tl.listed_rows.query if isinstance(tl.listed_rows, FilteredRows) else ""
            what += f" matching {query!r} of {len(self.base_rows or [])}"
        parts = [position, *self._status_words(tl), what]
        if tl.new_above:
            parts.insert(1, f"↑ {tl.new_above} new above (g)")
        if tl.tags and tl.tag_prefix_waits:
            parts.append(f"; waits: the next action acts on the {len(tl.tags):,} tagged "
                         f"row{'s' if len(tl.tags) != 1 else ''} (Esc drops it)")
        elif tl.tags:
            parts.append(f"{len(tl.tags):,} tagged")
        arranged = tl.arrangement_text()
        if arranged:
            parts.append(arranged)
        if self.resolution_text:
            parts.append(f"via {self.resolution_text}")
        self.show_message(" · ".join(parts))

    @staticmethod
    def _status_words(tl: ThreadList) -> list[str]:
        """The cursor row's triage overview in words (filed as SEC-0003, draft pending, replied)."""
        current = tl.current
        status = tl.statuses.get(current.thread_id) if current is not None else None
        return status.words if status is not None else []

    def on_thread_list_highlighted(self, message: ThreadList.Highlighted) -> None:
        self._update_status()
        self.marks.cursor_moved()

    def on_row_status_loaded(self, message: RowStatusLoaded) -> None:
        message.stop()
        self.marks.loaded(message)

    def on_thread_list_tags_changed(self, message: ThreadList.TagsChanged) -> None:
        self._update_status()

    def on_thread_list_arrangement_changed(self, message: ThreadList.ArrangementChanged) -> None:
        message.stop()
        self._update_status()

    # -- search ------------------------------------------------------------
    def on_thread_list_search_requested(self, message: ThreadList.SearchRequested) -> None:
        message.stop()
        box = self._search_box()
        box.add_class("-visible")
        box.focus()

    def on_thread_list_search_cleared(self, message: ThreadList.SearchCleared) -> None:
        message.stop()
        self.search_label = None
        self.post_message(self.SearchState(False))
        if self.base_rows is not None:
            self.thread_list.set_rows(self.base_rows)
            self._update_status()

    def on_thread_pane_search_closed(self, message: SearchClosed) -> None:
        message.stop()
        self.workers.cancel_group(self, "search")
        self._hide_search()

    def _hide_search(self) -> None:
        for widget in self.query("#thread-search, #search-progress"):
            widget.remove_class("-visible")
        self.thread_list.focus()

    @on(Input.Submitted, "#thread-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        query = event.value.strip()
        if self.base_rows is None:
            return
        if not query:
            self.search_label = None
            self.post_message(self.SearchState(False))
            self.thread_list.set_rows(self.base_rows)
            self._hide_search()
            self._update_status()
            return
        self.post_message(self.SearchSubmitted(query))

    # -- server search ---------------------------------------------------------------------
    def search_on_server(self, query: str, scope: SearchScope) -> None:
        folder = scope.folder
        where = f"{folder[0]} · {folder[2]}" if folder else (scope.list_name or "(no list)")
        self.show_searching(query, where)
        self._server_search(self.requests.new("search"), query, scope)

    def cancel_search(self) -> bool:
        """Esc: a server search on its way is dropped (its answer ignored); False when none was."""
        if not any(w.node is self and w.group == "search-server" and not w.is_finished for w in self.workers):
            return False
        self.workers.cancel_group(self, "search-server")
        self.requests.new("search")
        return True

    @work(thread=True, exclusive=True, group="search-server", exit_on_error=False)
    def _server_search(self, request: int, query: str, scope: SearchScope) -> None:
        worker = get_current_worker()
        session = service(self)
        try:
            if scope.folder is not None:
                account_id, folder_id, _name = scope.folder
                if not session.can_search_account(account_id):
                    self.post_message(SearchUnsupported(request, query, f"{account_id} declares no server search"))
                    return

                def load(page: int):
                    return session.search_account(account_id, folder_id, query, page=page, page_size=SEARCH_PAGE)
            else:
                account_id = None
                if not session.can_search_sources():
                    self.post_message(SearchUnsupported(request, query,
                                                        "the listing backend declares no server search"))
                    return

                def load(page: int):
                    return session.search_sources(query, scope.list_name, page=page, page_size=SEARCH_PAGE)
            first = load(0).page
        except Exception as exc:  # the pane's error state and the error list say why
            self.post_message(SearchFailed(request, f"Searching for {query!r} failed", exc))
            return
        if worker.is_cancelled:
            return
        rows = SearchRows(first, lambda page: load(page).page, account_id)
        self.post_message(SearchLoaded(request, query, rows, first.backend, first.method, first.failed, first.notes,
                                       total_known=first.total is not None or not first.more))

    def on_search_loaded(self, message: SearchLoaded) -> None:
        message.stop()
        if not self.requests.is_current("search", message.request):
            return
        self.show_search_results(message.rows, message.query, message.backend, message.method,
                                 failed=message.failed, notes=message.notes, complete=message.total_known)
        for folder, why in message.failed:  # server text: inert
            self.notify(terminal_text(f"{folder}: {why}"), title="Not searched", severity="warning", markup=False)

    def on_search_unsupported(self, message: SearchUnsupported) -> None:
        message.stop()
        if self.requests.is_current("search", message.request):
            self.local_filter(message.query, message.why)

    def on_search_failed(self, message: SearchFailed) -> None:
        if not drop_stale(self.requests, message):
            self.show_search_failure(failure_text(message))

    def show_searching(self, query: str, where: str) -> None:
        self._hide_search()
        self.show_message(f"searching {where} for {query!r} on the server … (Esc cancels)")

    def show_search_results(self, rows: ThreadRows, query: str, backend: str, method: str, *,
                            failed: tuple[tuple[str, str], ...] = (), notes: tuple[str, ...] = (),
                            complete: bool = True) -> None:
        """Results replace the list until Esc; the status line names who answered and how."""
        extra = []
        if failed:
            extra.append(f"⚠ not searched: {', '.join(folder for folder, _ in failed)}")
        if not complete:
            extra.append("more results exist: refine the query")
        extra += list(notes)
        # Folder names, notes and the backend's words come from the server: one inert line.
        answered = terminal_line(f"{backend} ({method})" + "".join(f" · {e}" for e in extra))
        self.search_label = (terminal_line(query), answered)
        self.thread_list.set_rows(rows, filtered=True)
        self.post_message(self.SearchState(True))
        self._update_status()

    def show_search_failure(self, text: str) -> None:
        self.show_message(f"⚠ search failed: {text} — the list is unchanged", error=True)

    def local_filter(self, query: str, why: str) -> None:
        """The backend cannot search on the server: filter the rows already listed."""
        if self.base_rows is None:
            return
        self.search_label = None
        self.notify(f"{why}: filtering the listed threads instead", title="Search", markup=False)
        self._filter_locally(query)

    def _search_status(self, position: str, total: int) -> str:
        query, answered = self.search_label or ("", "")
        rows = self.thread_list.rows
        counted = not isinstance(rows, SearchRows) or rows.total_known
        count = f"{total}" if counted else f"{rows.loaded_pages() * rows.page_size}+"
        matches = f"{count} match{'es' if total != 1 or not counted else ''} for {query!r}"
        return f"{position} · {matches} · n/N next/previous · Esc clears · via {answered}"

    def _filter_locally(self, query: str) -> None:
        bar = self._progress_bar()
        bar.update(total=max(len(self.base_rows), 1), progress=0)
        bar.add_class("-visible")
        self._search(self.base_rows, query)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _search(self, base: ThreadRows, query: str) -> None:
        worker = get_current_worker()
        indexes = base.matches(query, lambda: worker.is_cancelled,
                               lambda done, total: self.post_message(self.SearchProgress(done, total)))
        if not worker.is_cancelled:
            self.post_message(self.SearchDone(base, query, indexes))

    def on_thread_pane_search_progress(self, message: SearchProgress) -> None:
        message.stop()
        self._progress_bar().update(total=max(message.total, 1), progress=message.done)

    def on_thread_pane_search_done(self, message: SearchDone) -> None:
        message.stop()
        if message.base is not self.base_rows or message.indexes is None:
            return
        self.thread_list.set_rows(FilteredRows(message.base, message.indexes, message.query), filtered=True)
        self.post_message(self.SearchState(True))
        self._hide_search()
        self._update_status()
