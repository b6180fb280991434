"""Row sources behind the thread list: what the virtualized list reads, one row at a time.

The list widget only ever asks for the rows it paints (:meth:`ThreadRows.peek`), so
drawing cost follows the window, not the folder. A source that holds everything
(:class:`ListRows`) answers at once; a paged source (:class:`PagedRows`) answers
``None`` for a row it has not fetched yet, the list paints a placeholder and asks
for the missing pages, which a worker fetches nearest-first off the UI thread.

A backend may return, instead of a plain sequence, an object with ``__len__`` and
``fetch_page(offset, limit) -> Sequence[ThreadSummary]`` (a lazy listing, e.g. sorted
UIDs whose envelopes are fetched on demand); the app wraps it in :class:`PagedRows`.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence as SequenceABC
import threading
from dataclasses import replace
from datetime import datetime, timezone
from typing import Callable, Iterable, Protocol, Sequence, runtime_checkable

from mailtriage.application import ThreadSummary
from mailtriage.tui.errors import error_line


class ThreadRows(Protocol):
    #: Rows per page of a paged source; 0 when every row is at hand.
    page_size: int
    #: What one row is, in the status line's count: "thread" (a list), "message" (a folder).
    unit: str

    def __len__(self) -> int: ...

    def peek(self, index: int) -> ThreadSummary | None:
        """The row at ``index`` if it is at hand; never blocks."""

    def missing_pages(self, start: int, stop: int) -> list[int]:
        """Pages covering rows [start, stop) that still need fetching."""

    def fetch_page(self, page: int) -> None:
        """Fetch one page (blocking: call from a worker thread)."""

    def release(self, pages: list[int]) -> None:
        """Give back pages claimed by :meth:`missing_pages` but not fetched."""

    def matches(self, query: str, cancelled: Callable[[], bool],
                progress: Callable[[int, int], None]) -> list[int] | None:
        """Indexes of rows matching ``query`` (blocking), or None when cancelled."""


def _row_matches(row: ThreadSummary, needle: str) -> bool:
    return (needle in row.subject.casefold()
            or needle in row.sender.name.casefold()
            or needle in row.sender.email.casefold())


class ListRows:
    """Every row in memory (what ``list_recent_threads`` returns)."""

    page_size = 0
    unit = "thread"

    def __init__(self, rows: Sequence[ThreadSummary], *, index: dict[str, ThreadSummary] | None = None) -> None:
        self._rows = rows
        # Each row by its thread's key, for :func:`merged_rows` (made on first use, handed on).
        self._index = index

    def take_index(self) -> dict[str, ThreadSummary] | None:
        """Each row by its thread's key (made now, unless handed on by the last merge), for the
        caller to change: these rows keep none. None when two rows share a key."""
        index, self._index = self._index, None
        if index is None:
            index = {str(row.thread_id): row for row in self._rows}
            if len(index) != len(self._rows):
                return None
        return index

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def items(self) -> Sequence[ThreadSummary]:
        return self._rows

    def peek(self, index: int) -> ThreadSummary | None:
        if 0 <= index < len(self._rows):
            return self._rows[index]
        return None

    def missing_pages(self, start: int, stop: int) -> list[int]:
        return []

    def fetch_page(self, page: int) -> None:
        return None

    def release(self, pages: list[int]) -> None:
        return None

    def matches(self, query, cancelled, progress) -> list[int] | None:
        needle = query.casefold()
        total = len(self._rows)
        found: list[int] = []
        step = 5000
        for start in range(0, total, step):
            if cancelled():
                return None
            for index in range(start, min(start + step, total)):
                if _row_matches(self._rows[index], needle):
                    found.append(index)
            progress(min(start + step, total), total)
        return found


class PagedRows:
    """Rows fetched page by page through ``loader(offset, limit)``."""

    unit = "thread"

    def __init__(self, total: int, loader: Callable[[int, int], Sequence[ThreadSummary]],
                 page_size: int = 200) -> None:
        self.total = total
        self.page_size = page_size
        self._loader = loader
        self._pages: dict[int, Sequence[ThreadSummary]] = {}
        self._pending: set[int] = set()
        self._lock = threading.Lock()
        self.errors: dict[int, str] = {}

    def __len__(self) -> int:
        return self.total

    def peek(self, index: int) -> ThreadSummary | None:
        page = self._pages.get(index // self.page_size)
        if page is None:
            return None
        offset = index % self.page_size
        return page[offset] if offset < len(page) else None

    def missing_pages(self, start: int, stop: int) -> list[int]:
        if stop <= start:
            return []
        first, last = start // self.page_size, (max(stop, 1) - 1) // self.page_size
        with self._lock:
            wanted = [p for p in range(first, last + 1)
                      if p not in self._pages and p not in self._pending and p * self.page_size < self.total]
            self._pending.update(wanted)
        return wanted

    def release(self, pages: list[int]) -> None:
        """Give back pages that were claimed by :meth:`missing_pages` but not fetched."""
        with self._lock:
            self._pending.difference_update(pages)

    def fetch_page(self, page: int) -> None:
        offset = page * self.page_size
        try:
            rows = self._loader(offset, min(self.page_size, self.total - offset))
            self._pages[page] = list(rows)
            self.errors.pop(page, None)
        except Exception as exc:  # shown on the placeholder rows; the next scroll retries
            self.errors[page] = error_line(exc)
            raise
        finally:
            with self._lock:
                self._pending.discard(page)

    def loaded_pages(self) -> int:
        return len(self._pages)

    def items_at_hand(self) -> list[tuple[int, ThreadSummary]]:
        """(index, row) of every fetched row, in order (the pages fetched, not the folder)."""
        out = []
        for page in sorted(self._pages):
            start = page * self.page_size
            out.extend((start + offset, row) for offset, row in enumerate(self._pages[page]))
        return out

    def matches(self, query, cancelled, progress) -> list[int] | None:
        needle = query.casefold()
        found: list[int] = []
        pages = (self.total + self.page_size - 1) // self.page_size
        for page in range(pages):
            if cancelled():
                return None
            if page not in self._pages:
                self.fetch_page(page)
            for offset, row in enumerate(self._pages[page]):
                if _row_matches(row, needle):
                    found.append(page * self.page_size + offset)
            progress(min((page + 1) * self.page_size, self.total), self.total)
        return found


class FilteredRows:
    """A view of another source through a list of indexes (a search result)."""

    def __init__(self, base: ThreadRows, indexes: list[int], query: str) -> None:
        self.base = base
        self.indexes = indexes
        self.query = query
        self.page_size = base.page_size
        self.unit = base.unit

    def __len__(self) -> int:
        return len(self.indexes)

    def peek(self, index: int) -> ThreadSummary | None:
        if 0 <= index < len(self.indexes):
            return self.base.peek(self.indexes[index])
        return None

    def missing_pages(self, start: int, stop: int) -> list[int]:
        return []

    def fetch_page(self, page: int) -> None:
        return None

    def release(self, pages: list[int]) -> None:
        return None

    def matches(self, query, cancelled, progress) -> list[int] | None:
        needle = query.casefold()
        found = []
        for i, base_index in enumerate(self.indexes):
            if cancelled():
                return None
            row = self.base.peek(base_index)
            if row is not None and _row_matches(row, needle):
                found.append(i)
        progress(len(self.indexes), len(self.indexes))
        return found


@runtime_checkable
class LazyListing(Protocol):
    """A listing a backend may return instead of a sequence: its length, and its rows
    fetched on demand (e.g. sorted UIDs whose envelopes are fetched page by page)."""

    def __len__(self) -> int: ...

    def fetch_page(self, offset: int, limit: int) -> Sequence[ThreadSummary]: ...


class SameRows:
    """A wrapper whose row i is its base's row i (e.g. the alert marks): :func:`plain_rows`
    looks through it. A filter is not one."""

    base: ThreadRows


def rows_for(value: object) -> ThreadRows:
    """Wrap what ``list_recent_threads`` returned in a row source."""
    if isinstance(value, LazyListing):
        return PagedRows(len(value), value.fetch_page)
    # A sequence as it is: a listing handed over by start-up's child builds its rows as read.
    return ListRows(value if isinstance(value, SequenceABC) else list(value))  # type: ignore[arg-type]


def plain_rows(rows: object) -> Sequence[ThreadSummary] | None:
    """The in-memory rows behind ``rows`` (through wrappers such as the alert marks), or None
    when they are not all at hand (a paged or filtered source)."""
    listed = list_rows(rows)
    return listed.items if listed is not None else None


def list_rows(rows: object) -> ListRows | None:
    """The :class:`ListRows` behind ``rows`` (through wrappers such as the alert marks), or None."""
    while not isinstance(rows, ListRows):
        if not isinstance(rows, SameRows):
            return None
        rows = rows.base
    return rows


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _order(row: ThreadSummary) -> tuple:
    when = row.last_activity
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return (when or _EPOCH, row.root_message_id)


def _combined(old: ThreadSummary, new: ThreadSummary) -> ThreadSummary:
    """A known row with the news of a poll. The poll looked at a short window only, so a
    thread that started before it keeps what the full listing said about its start."""
    keep_head = new.continued or new.message_count < old.message_count
    return replace(
        new,
        subject=old.subject if keep_head else new.subject,
        root_message_id=old.root_message_id,
        sender=old.sender if keep_head else new.sender,
        message_count=max(old.message_count, new.message_count),
        participants=tuple(dict.fromkeys(old.participants + new.participants)),
        unread=old.unread or new.unread,
        continued=False,
        notes=tuple(dict.fromkeys(old.notes + new.notes)),
    )


def _newest_by_thread(news: Iterable[ThreadSummary]) -> dict[str, ThreadSummary]:
    """Each thread's newest row among ``news``, by the thread's key."""
    incoming: dict[str, ThreadSummary] = {}
    for row in news:
        key = str(row.thread_id)
        known = incoming.get(key)
        incoming[key] = row if known is None or _order(row) >= _order(known) else known
    return incoming


def merge_news(rows: Sequence[ThreadSummary], news: Iterable[ThreadSummary]) -> list[ThreadSummary]:
    """``rows`` (newest activity first) with ``news`` applied: new threads inserted, known ones
    updated and moved to their new place; one pass over the rows, no backend call."""
    incoming = _newest_by_thread(news)
    if not incoming:
        return list(rows)
    rest = []
    for row in rows:
        key = str(row.thread_id)
        update = incoming.get(key)
        if update is None:
            rest.append(row)
        elif _order(row) <= _order(update):
            incoming[key] = _combined(row, update)
        else:  # the list already knows newer activity than this poll (a later listing)
            incoming[key] = row
    fresh = sorted(incoming.values(), key=_order, reverse=True)
    return list(heapq.merge(fresh, rest, key=_order, reverse=True))


def merged_rows(rows: ListRows, news: Iterable[ThreadSummary]) -> ListRows:
    """:func:`merge_news` for a list on screen, at the cost of the news rather than of the list
    (issue 39: a poll in a storm merged 20,000 rows on the UI thread, ~40 ms, between keys):
    each known thread's row is found through the rows' index and a binary search by time, and
    each row is moved or inserted at its place. Rows with two of one key, or a known row not
    found where its time puts it (rows out of time order), take :func:`merge_news`."""
    incoming = _newest_by_thread(news)
    if not incoming:
        return rows
    items = rows.items
    index = rows.take_index()
    if index is None:
        return ListRows(merge_news(items, incoming.values()))
    out = list(items)
    fresh: list[ThreadSummary] = []
    for key, update in incoming.items():
        old = index.get(key)
        if old is None:
            fresh.append(update)
            continue
        if _order(old) > _order(update):
            continue  # the list already knows newer activity than this poll (a later listing)
        at = _position(out, old)
        if at is None:
            return ListRows(merge_news(items, incoming.values()))
        del out[at]
        fresh.append(_combined(old, update))
    fresh.sort(key=_order, reverse=True)
    for row in reversed(fresh):  # each before the rows of equal order, as merge_news places it
        out.insert(_insertion(out, _order(row)), row)
        index[str(row.thread_id)] = row
    return ListRows(out, index=index)


def _time(row: ThreadSummary) -> datetime:
    return _order(row)[0]


def _position(rows: list[ThreadSummary], row: ThreadSummary) -> int | None:
    """Where ``row`` (that very object) is in ``rows`` (newest first), or None."""
    when = _time(row)
    lo, hi = 0, len(rows)
    while lo < hi:  # the first row not newer than ``row``
        mid = (lo + hi) // 2
        if _time(rows[mid]) > when:
            lo = mid + 1
        else:
            hi = mid
    while lo < len(rows) and _time(rows[lo]) == when:
        if rows[lo] is row:
            return lo
        lo += 1
    return None


def _insertion(rows: list[ThreadSummary], order: tuple) -> int:
    """The first place in ``rows`` (newest first) whose row does not come after ``order``."""
    lo, hi = 0, len(rows)
    while lo < hi:
        mid = (lo + hi) // 2
        if _order(rows[mid]) > order:
            lo = mid + 1
        else:
            hi = mid
    return lo


def index_of(rows: ThreadRows, thread_id, hint: int = 0) -> int | None:
    """Where the row of ``thread_id`` is in ``rows`` (rows at hand only), searching out from ``hint``."""
    items = plain_rows(rows)
    total = len(rows)
    if items is not None:
        # Most updates move a row by a few places: look near the hint first.
        lo, hi = max(0, hint - 64), min(total, hint + 64)
        for i in range(lo, hi):
            if items[i].thread_id == thread_id:
                return i
        for i in range(total):
            if items[i].thread_id == thread_id:
                return i
        return None
    for i in range(total):
        row = rows.peek(i)
        if row is not None and row.thread_id == thread_id:
            return i
    return None


# -- the triage overview mark of a row (habits §6: filed / draft pending / replied) --------

def status_mark(status) -> str:
    """The short mark a row shows for its ``ThreadStatus`` (None: not known yet):
    the issue that holds it, ``✎`` a draft pending, ``↩`` replied."""
    if status is None:
        return ""
    parts = []
    if status.issue:
        parts.append(status.issue)
    if status.drafts:
        parts.append("✎")
    if status.replied:
        parts.append("↩")
    return " ".join(parts)
