"""The thread pane: the virtualized list, its search box and a status line.

The status line says which backend served the listing and why the others were
skipped (the resolution result), or what went wrong and how to retry.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, ProgressBar, Static
from textual.worker import get_current_worker

from mailtriage.tui import bindings
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.rows import FilteredRows, ThreadRows


class SearchBox(Input):
    """``/`` opens it; Enter filters the list; Escape closes it."""

    BINDINGS = bindings.SEARCH_BOX

    def action_close_search(self) -> None:
        self.post_message(ThreadPane.SearchClosed())


class ThreadPane(Vertical):
    @dataclass(eq=False)
    class SearchClosed(Message):
        pass

    @dataclass(eq=False)
    class SearchProgress(Message):
        done: int
        total: int

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ThreadPane.SearchProgress)

    @dataclass(eq=False)
    class SearchDone(Message):
        base: ThreadRows
        query: str
        indexes: list[int] | None

    def __init__(self, **kwargs) -> None:
        super().__init__(classes="pane", **kwargs)
        self.border_title = "Threads"
        self.base_rows: ThreadRows | None = None
        self.resolution_text = ""
        self._list_name: str | None = None
        self._rows_list: str | None = None
        self.partial = False

    def compose(self) -> ComposeResult:
        yield ThreadList(id="thread-list")
        yield SearchBox(placeholder="search subject or sender, Enter to filter, Esc to close", id="thread-search")
        yield ProgressBar(id="search-progress", show_eta=False)
        yield Static(id="threads-status", classes="pane-status")

    @property
    def thread_list(self) -> ThreadList:
        return self.query_one(ThreadList)

    # -- states ------------------------------------------------------------
    def show_message(self, text: str | Text, *, error: bool = False) -> None:
        status = self.query_one("#threads-status", Static)
        status.update(text if isinstance(text, Text) else Text(text))
        status.set_class(error, "-error")

    def show_loading(self, list_name: str | None) -> None:
        self._list_name = list_name
        self.border_title = Text(f"Threads · {list_name}" if list_name else "Threads")
        self.show_message(f"loading threads of {list_name or '(no list)'} … (Esc cancels)")

    def show_rows(self, rows: ThreadRows, resolution, list_name: str | None, *, partial: bool = False) -> None:
        """Show a listing. A listing of the list already shown (the full one after the
        newest threads, or a reload) keeps the cursor on its thread and the scroll position."""
        # The list whose rows are on screen (show_loading already names the one on its way).
        same_list = self.base_rows is not None and list_name == self._rows_list
        follows_partial = self.partial and same_list
        self._list_name = self._rows_list = list_name
        self.base_rows = rows
        self.partial = partial
        self.resolution_text = resolution.summary() if resolution is not None else ""
        self.border_title = Text(f"Threads · {list_name}" if list_name else "Threads")
        self.thread_list.remove_class("-stale")
        if follows_partial and self.thread_list.filtered:
            # Keep the user's search on screen; it covers the first rows only until run again.
            self._update_status()
            return
        if same_list and not self.thread_list.filtered:
            self.thread_list.replace_rows(rows)
        else:
            self.thread_list.set_rows(rows, keep_cursor=follows_partial)
        self._update_status()

    def update_rows(self, rows: ThreadRows) -> None:
        """The shown list with news applied (no reload): the user's place is kept. A search
        on screen stays as it is; clearing it shows the updated rows."""
        self.base_rows = rows
        if not self.thread_list.filtered:
            self.thread_list.replace_rows(rows)
        self._update_status()

    def show_failure(self, text: str, *, retry_hint: bool = True) -> None:
        # Rows already shown stay (marked stale) so the pane never goes blank or freezes.
        self.thread_list.set_class(self.base_rows is not None, "-stale")
        hint = "press R to retry — " if retry_hint else ""
        self.show_message(f"⚠ {hint}{text}", error=True)

    def _update_status(self, index: int | None = None) -> None:
        tl = self.thread_list
        total = len(tl.rows)
        position = f"{(tl.cursor + 1) if total else 0}/{total}"
        what = f"{total} thread{'s' if total != 1 else ''}"
        if self.partial:
            what = f"newest {total} threads, loading the rest …"
        if tl.filtered:
            query = tl.rows.query if isinstance(tl.rows, FilteredRows) else ""
            what += f" matching {query!r} of {len(self.base_rows or [])}"
        parts = [position, *self._status_words(tl), what]
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

    # -- search ------------------------------------------------------------
    def on_thread_list_search_requested(self, message: ThreadList.SearchRequested) -> None:
        message.stop()
        box = self.query_one(SearchBox)
        box.add_class("-visible")
        box.focus()

    def on_thread_list_search_cleared(self, message: ThreadList.SearchCleared) -> None:
        message.stop()
        if self.base_rows is not None:
            self.thread_list.set_rows(self.base_rows)
            self._update_status()

    def on_thread_pane_search_closed(self, message: SearchClosed) -> None:
        message.stop()
        self.workers.cancel_group(self, "search")
        self._hide_search()

    def _hide_search(self) -> None:
        self.query_one(SearchBox).remove_class("-visible")
        self.query_one("#search-progress").remove_class("-visible")
        self.thread_list.focus()

    @on(Input.Submitted, "#thread-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        query = event.value.strip()
        if self.base_rows is None:
            return
        if not query:
            self.thread_list.set_rows(self.base_rows)
            self._hide_search()
            self._update_status()
            return
        bar = self.query_one("#search-progress", ProgressBar)
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
        self.query_one("#search-progress", ProgressBar).update(total=max(message.total, 1), progress=message.done)

    def on_thread_pane_search_done(self, message: SearchDone) -> None:
        message.stop()
        if message.base is not self.base_rows or message.indexes is None:
            return
        self.thread_list.set_rows(FilteredRows(message.base, message.indexes, message.query), filtered=True)
        self._hide_search()
        self._update_status()
