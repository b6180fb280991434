"""Rows of a server search, for the virtualized thread list.

The first page came with the answer (it told the total); the others are fetched page by
page through the same search (the backends keep what they need to page cheaply, e.g. the
IMAP folder's ordered UIDs). A personal account's hits are message headers, shown as
:class:`~mailtriage.tui.mailbox_rows.MailboxRow` so reading and organizing work on them.
"""

from __future__ import annotations

from typing import Callable, Sequence

from mailtriage.application import SearchPage, ThreadSummary
from mailtriage.tui.mailbox_rows import row_for
from mailtriage.tui.rows import PagedRows


def rows_of(page: SearchPage, account_id: str | None) -> list[ThreadSummary]:
    """The page's items as thread-list rows (an account's headers become mailbox rows)."""
    if account_id is None:
        return list(page.items)
    return [row_for(header, account_id) for header in page.items]


class SearchRows(PagedRows):
    """Every result of one search; ``first`` is its page 0. A backend that gives no total
    shows its first page only (the status line says more exist)."""

    def __init__(self, first: SearchPage, load_page: Callable[[int], SearchPage], account_id: str | None) -> None:
        size = first.page_size
        total = first.total if first.total is not None else len(first.items)

        def loader(offset: int, limit: int) -> Sequence[ThreadSummary]:
            return rows_of(load_page(offset // size), account_id)

        super().__init__(total, loader, page_size=size)
        if total:
            self._pages[0] = rows_of(first, account_id)
