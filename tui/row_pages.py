"""The thread list's page fetching: rows a paged source has not fetched yet paint as
placeholders, and their pages are fetched by one worker, nearest to the viewport first.

Mixed into :class:`~mailtriage.tui.panes.thread_list.ThreadList` (moved out of it whole, so
that module stays within its line limit), whose rows, scroll offset and messages it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work
from textual.geometry import Size
from textual.worker import get_current_worker

from mailtriage.core.inert import terminal_text
from mailtriage.tui.arrange import ArrangedRows, same_pages
from mailtriage.tui.errors import error_line
from mailtriage.tui.rows import ThreadRows

if TYPE_CHECKING:
    from textual.geometry import Offset, Region
    from textual.message import Message


class RowPages:
    """Fetches the pages of the rows on screen (and one screen either side); each page that
    arrives is sorted in (an arranged list) or painted."""

    rows: ThreadRows
    new_above: int

    if TYPE_CHECKING:  # the widget's (ThreadList, a ScrollView)
        virtual_size: Size
        scroll_offset: Offset
        scrollable_content_region: Region

        def post_message(self, message: Message) -> bool: ...

        def notify(self, message: str, *args: Any, **kwargs: Any) -> Any: ...

        def refresh(self, *args: Any, **kwargs: Any) -> Any: ...

        def replace_rows(self, rows: ThreadRows) -> None: ...

        def tags_arrived(self) -> None: ...

        def _announce(self) -> None: ...

        _cache: Any

        PageLoaded: Any
        ArrangementChanged: Any

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)  # type: ignore[misc]  # the ScrollView's, after this mixin
        if self.new_above > int(new):  # new rows land on top: those scrolled to are seen
            self.new_above = int(new)
            self._announce()
        self._request_visible_pages()

    def on_resize(self) -> None:
        self._cache.clear()
        self._request_visible_pages()

    def _request_visible_pages(self) -> None:
        page_size = self.rows.page_size
        if not page_size:
            return
        top = self.scroll_offset.y
        height = max(self.scrollable_content_region.height, 1)
        # The window plus one screen either side, so paging ahead hides the fetch.
        pages = self.rows.missing_pages(max(0, top - height), top + 2 * height)
        if pages:
            centre = (top + height // 2) // page_size
            pages.sort(key=lambda p: abs(p - centre))
            self._fetch_pages(self.rows, pages)

    @work(thread=True, group="thread-pages", exit_on_error=False)
    def _fetch_pages(self, rows: ThreadRows, pages: list[int]) -> None:
        worker = get_current_worker()
        for i, page in enumerate(pages):
            # Rows arranged anew (a sort, the tree, new marks) page the same listing: the pages
            # claimed are still to fetch (a sort's load skipped them), and each sorts in when it comes.
            if worker.is_cancelled or not same_pages(rows, self.rows):
                rows.release(pages[i:])
                return
            error = None
            try:
                rows.fetch_page(page)
            except Exception as exc:  # the placeholder rows say so; scrolling retries
                error = error_line(exc)
            self.post_message(self.PageLoaded(rows, error))

    def on_thread_list_page_loaded(self, message: Any) -> None:
        message.stop()
        if same_pages(message.rows, self.rows):  # fetched for these rows, or for the same listing arranged before
            self.tags_arrived()  # v typed on its rows before they came (issue 35)
            if isinstance(self.rows, ArrangedRows):  # sort the new page in, cursor on its row
                self.replace_rows(self.rows.base)
                self.post_message(self.ArrangementChanged())
            elif self.virtual_size.height != len(self.rows):  # a search learnt how many results it has
                self.virtual_size = Size(0, len(self.rows))
                self._announce()
            self.refresh()
            if message.error:
                # Server text: inert, never parsed as markup.
                self.notify(f"could not fetch threads: {terminal_text(message.error)}", severity="error",
                            title="Thread list", markup=False)
