"""Rows of a server search, for the virtualized thread list.

The first page came with the answer (it told the total); the others are fetched page by
page through the same search (the backends keep what they need to page cheaply, e.g. the
IMAP folder's ordered UIDs). A personal account's hits are message headers, shown as
:class:`~mailtriage.tui.mailbox_rows.MailboxRow` so reading and organizing work on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from mailtriage.application import ThreadSummary
from mailtriage.tui.mailbox_rows import row_for
from mailtriage.tui.rows import PagedRows

if TYPE_CHECKING:  # annotations only: the search types (and the mailbox contract) load with a search
    from mailtriage.application import SearchPage


def rows_of(page: SearchPage, account_id: str | None) -> list[ThreadSummary]:
    """The page's items as thread-list rows (an account's headers become mailbox rows)."""
    if account_id is None:
        return list(page.items)
    return [row_for(header, account_id) for header in page.items]


class SearchRows(PagedRows):
    """Every result of one search; ``first`` is its page 0.

    When the backend has not counted the results yet (IMAP's first page of a large folder,
    Graph), the rows are those known plus one page of placeholders while more exist; each
    page fetched tells the new length (the exact total once a backend gives it)."""

    def __init__(self, first: SearchPage, load_page: Callable[[int], SearchPage], account_id: str | None) -> None:
        size = first.page_size
        self.total_known = first.total is not None
        self.unit = "message" if account_id else "thread"  # an account's search finds messages

        def loader(offset: int, limit: int) -> Sequence[ThreadSummary]:
            page = load_page(offset // size)
            self._learn(page)
            return rows_of(page, account_id)

        super().__init__(self._length(first), loader, page_size=size)
        if first.items:
            self._pages[0] = rows_of(first, account_id)

    @staticmethod
    def _length(page: SearchPage) -> int:
        if page.total is not None:
            return page.total
        return page.request.offset + len(page.items) + (page.page_size if page.more else 0)

    def _learn(self, page: SearchPage) -> None:
        if page.total is not None:
            self.total, self.total_known = page.total, True
        elif not self.total_known:
            self.total = max(self.total if page.more else 0, self._length(page))
