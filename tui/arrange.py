"""Sort keys and the collapsible thread tree of the thread list, over the rows at hand.

A folder is paged lazily (100 messages a page, fetched as the list paints them).
:class:`ArrangedRows` sorts (and groups into a tree) the rows already fetched, and keeps
the rows not fetched yet after them, in the server's order, as placeholders; each page
that arrives is sorted in. The status line says so ("sorted by sender ↑ · 100 of 5,000
loaded"). A sort (``o``/``O``) also fetches the pages not loaded yet in the background and
sorts them in once they are all there (issue 33: sorting the loaded pages alone left rows
out of order); the tree alone (``z``) does not.

The tree groups a personal account's messages by their ``thread_key``: the thread's
oldest message is its root, its replies are indented under it (by ``In-Reply-To`` /
``References`` within the group), and a collapsed thread shows its root only. Threads are
ordered by where their first message falls in the sort. Rows that are threads already (a
mailing list's) have no tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from textual import work
from textual.worker import get_current_worker

from mailtriage.application import ThreadSummary
from mailtriage.tui.errors import error_line
from mailtriage.tui.mailbox_rows import FolderRows, MailboxRow
from mailtriage.tui.rows import PagedRows, SameRows, ThreadRows

#: The sort keys ``o`` cycles through ("size" only where the rows carry sizes).
SORT_KEYS = ("date", "sender", "subject", "size")
#: Keys sorted largest / newest first unless reversed with ``O``.
DESCENDING = frozenset({"date", "size"})
MAX_DEPTH = 4

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_REPLY_PREFIX = re.compile(r"^(?:\s*(?:re|fwd?|aw|sv|wg)\s*(?:\[\d+\])?\s*:\s*)+", re.IGNORECASE)


@dataclass(frozen=True)
class Arrangement:
    """How the list is arranged: ``sort`` None keeps the server's order (newest first)."""

    sort: str | None = None
    reverse: bool = False
    tree: bool = False
    collapse_all: bool = False
    #: Threads whose state differs from ``collapse_all`` (z on one thread).
    toggled: frozenset[str] = field(default_factory=frozenset)

    @property
    def active(self) -> bool:
        return self.sort is not None or self.reverse or self.tree

    def collapsed(self, key: str) -> bool:
        return self.collapse_all != (key in self.toggled)

    def next_sort(self, has_size: bool) -> Arrangement:
        keys = [k for k in SORT_KEYS if k != "size" or has_size]
        following = keys[(keys.index(self.sort) + 1) % len(keys)] if self.sort in keys else keys[0]
        return replace(self, sort=following, reverse=False)

    def describe(self) -> str:
        parts = []
        if self.sort is not None or self.reverse:
            key = self.sort or "date"
            descending = (key in DESCENDING) != self.reverse
            parts.append(f"sorted by {key} {'↓' if descending else '↑'}")
        if self.tree:
            parts.append("thread tree" + (" (collapsed)" if self.collapse_all and not self.toggled else ""))
        return ", ".join(parts)


def size_of(row: ThreadSummary) -> int | None:
    return row.header.size if isinstance(row, MailboxRow) and row.header is not None else None


def _when(row: ThreadSummary) -> datetime:
    when = row.last_activity or _EPOCH
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _subject(row: ThreadSummary) -> str:
    subject = row.subject.removeprefix("⚑ ")
    return _REPLY_PREFIX.sub("", subject).casefold()


def _sender(row: ThreadSummary) -> str:
    return (row.sender.name or row.sender.email or "").casefold()


SORTERS: dict[str, Callable[[ThreadSummary], object]] = {
    "date": _when,
    "sender": _sender,
    "subject": _subject,
    "size": lambda row: size_of(row) or 0,
}


def has_sizes(rows: ThreadRows) -> bool:
    """Whether the rows carry sizes (a personal account's messages do; threads do not): the
    first row at hand tells."""
    first = next(iter(at_hand(rows, limit=1)), None)
    return first is not None and size_of(first[1]) is not None


def at_hand(rows: ThreadRows, limit: int | None = None) -> list[tuple[int, ThreadSummary]]:
    """(index, row) of the rows of ``rows`` fetched so far (the first ``limit``), in order."""
    if isinstance(rows, PagedRows):
        return rows.items_at_hand()[:limit]
    found = []
    for index in range(len(rows)):
        row = rows.peek(index)
        if row is not None:
            found.append((index, row))
            if limit is not None and len(found) >= limit:
                break
    return found


def page_source(rows: ThreadRows) -> ThreadRows:
    """The rows whose pages ``rows`` fetches (its ``missing_pages`` / ``fetch_page`` numbers): through
    a sort or tree of the rows at hand and the alert marks to the listing; a server's order is
    its own (its pages are of its order)."""
    while True:
        if isinstance(rows, ArrangedRows) and not rows.server:
            rows = rows.base
        elif isinstance(rows, SameRows):
            rows = rows.base
        else:
            return rows


def same_pages(a: ThreadRows, b: ThreadRows) -> bool:
    """Whether a page fetched for ``a`` is one of ``b``'s (the same listing, arranged anew)."""
    return a is b or page_source(a) is page_source(b)


class ArrangedRows:
    """``base`` sorted and/or grouped into a tree, over the rows at hand (see the module)."""

    #: The whole folder ordered by the server (:mod:`mailtriage.tui.server_order`), not the rows at hand.
    server = False

    def __init__(self, base: ThreadRows, arrangement: Arrangement) -> None:
        self.base = base
        self.arrangement = arrangement
        self.page_size = base.page_size
        self.unit = base.unit
        loaded = at_hand(base)
        self.loaded = len(loaded)
        self.total = len(base)
        self.has_size = any(size_of(row) is not None for _i, row in loaded)
        order = self._sorted(loaded)
        self._index: list[int] = []
        self._decoration: list[str] = []
        self.hidden = 0
        if arrangement.tree:
            self._grow_tree(order)
        else:
            self._index = [i for i, _row in order]
            self._decoration = [""] * len(self._index)
        seen = {i for i, _row in loaded}
        self._tail = [i for i in range(self.total) if i not in seen] if self.loaded < self.total else []
        self._position = {base_index: n for n, base_index in enumerate(self._index)}

    # -- building -----------------------------------------------------------------
    def _sorted(self, loaded: list[tuple[int, ThreadSummary]]) -> list[tuple[int, ThreadSummary]]:
        key = self.arrangement.sort
        if key is None:
            return list(reversed(loaded)) if self.arrangement.reverse else list(loaded)
        sorter = SORTERS[key]
        descending = (key in DESCENDING) != self.arrangement.reverse
        # Stable: equal keys keep the server's order.
        return sorted(loaded, key=lambda item: sorter(item[1]), reverse=descending)

    def _grow_tree(self, order: list[tuple[int, ThreadSummary]]) -> None:
        groups: dict[str, list[tuple[int, ThreadSummary]]] = {}
        for index, row in order:
            groups.setdefault(thread_key(row), []).append((index, row))
        for key, members in groups.items():
            members.sort(key=lambda item: (_when(item[1]), item[0]))  # the root is the oldest
            depths = _depths([row for _i, row in members])
            collapsed = len(members) > 1 and self.arrangement.collapsed(key)
            for n, ((index, _row), depth) in enumerate(zip(members, depths)):
                if n == 0:
                    mark = "" if len(members) == 1 else (f"▸ +{len(members) - 1} " if collapsed else "▾ ")
                elif collapsed:
                    self.hidden += 1
                    continue
                else:
                    mark = "  " * (depth - 1) + "└ "
                self._index.append(index)
                self._decoration.append(mark)

    # -- ThreadRows ---------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._index) + len(self._tail)

    def base_index(self, index: int) -> int | None:
        if 0 <= index < len(self._index):
            return self._index[index]
        tail = index - len(self._index)
        return self._tail[tail] if 0 <= tail < len(self._tail) else None

    def peek(self, index: int) -> ThreadSummary | None:
        base_index = self.base_index(index)
        return self.base.peek(base_index) if base_index is not None else None

    def decoration(self, index: int) -> str:
        """The tree mark painted before the row's subject ("▾ ", "▸ +2 ", "└ ") or ""."""
        return self._decoration[index] if 0 <= index < len(self._decoration) else ""

    def missing_pages(self, start: int, stop: int) -> list[int]:
        first, last = max(start - len(self._index), 0), stop - len(self._index)
        tail = self._tail[first:last] if last > 0 else []
        return self.base.missing_pages(tail[0], tail[-1] + 1) if tail else []

    def fetch_page(self, page: int) -> None:
        self.base.fetch_page(page)

    def release(self, pages: list[int]) -> None:
        self.base.release(pages)

    def matches(self, query, cancelled, progress) -> list[int] | None:
        found = self.base.matches(query, cancelled, progress)
        if found is None:
            return None
        tail = {base_index: len(self._index) + n for n, base_index in enumerate(self._tail)}
        mapped = [self._position.get(i, tail.get(i)) for i in found]
        return sorted(i for i in mapped if i is not None)

    def serves(self, base: ThreadRows, arrangement: Arrangement) -> ThreadRows | None:
        """These rows (or the same order refolded) for ``base`` under ``arrangement``, when
        they need no rebuild; None: rebuild (rows at hand are arranged again each time)."""
        return None

    def group_key(self, row: ThreadSummary) -> str:
        """The key ``z`` collapses the row's thread by."""
        return thread_key(row)

    def root_index(self, key: str) -> int | None:
        """Where the thread ``key``'s first row is (rows at hand only)."""
        for index in range(len(self)):
            found = self.peek(index)
            if found is None:
                return None
            if self.group_key(found) == key:
                return index
        return None

    def describe(self) -> str:
        text = self.arrangement.describe()
        note = self.base.order_note if isinstance(self.base, FolderRows) else ""
        if self.loaded < self.total:
            text += f" · {self.loaded:,} of {self.total:,} loaded (scroll to load more)"
        if note:
            text += f" · {note}"
        if self.hidden:
            text += f" · {self.hidden:,} in collapsed threads"
        return text


def thread_key(row: ThreadSummary) -> str:
    """The tree's grouping key: a personal account's thread key; a thread row is its own group."""
    if isinstance(row, MailboxRow) and row.header is not None and row.header.thread_key:
        return row.header.thread_key
    return f"{row.thread_id.kind}:{row.thread_id.value}"


def _depths(rows: list[ThreadSummary]) -> list[int]:
    """Each member's depth under the group's root (0), by In-Reply-To, else the nearest
    References entry that is in the group, else 1."""
    ids = {row.root_message_id: n for n, row in enumerate(rows)}
    depths = [0] * len(rows)
    for n, row in enumerate(rows):
        if n == 0:
            continue
        parent = None
        header = row.header if isinstance(row, MailboxRow) else None
        if header is not None:
            chain = [header.in_reply_to, *reversed(header.references)]
            parent = next((ids[p] for p in chain if p and p in ids and ids[p] < n), None)
        depths[n] = min(depths[parent] + 1, MAX_DEPTH) if parent is not None else 1
    return depths


class ArrangeKeys:
    """The thread list's sort keys (o O) and thread tree keys (z Z); mixed into
    :class:`~mailtriage.tui.panes.thread_list.ThreadList`."""

    rows: ThreadRows
    arrangement: Arrangement

    if TYPE_CHECKING:  # the widget's (ThreadList), which the mixin's toasts go through
        def notify(self, message: str, *args: Any, **kwargs: Any) -> Any: ...

    # -- sort (o O) and the thread tree (z Z) ---------------------------------
    @property
    def listed_rows(self) -> ThreadRows:
        """The rows as listed, under the sort and tree."""
        return self.rows.base if isinstance(self.rows, ArrangedRows) else self.rows

    def _arranged(self, rows: ThreadRows) -> ThreadRows:
        if isinstance(rows, ArrangedRows) and rows.server and rows.arrangement == self.arrangement:
            return rows  # the server's order, as it came
        if isinstance(rows, ArrangedRows):
            rows = rows.base
        if not self.arrangement.active:
            return rows
        current = self.rows
        kept = current.serves(rows, self.arrangement) if isinstance(current, ArrangedRows) else None
        if kept is not None:
            return kept
        arranged = ArrangedRows(rows, self.arrangement)
        self.server_arrange(arranged)  # the whole folder's order, where the server gives it
        return arranged

    def arrangement_text(self) -> str:
        return self.rows.describe() if isinstance(self.rows, ArrangedRows) else ""

    def reset_arrangement(self) -> None:
        """Another list or folder: the server's order again, no tree."""
        self.arrangement = Arrangement()

    def _rearrange(self, arrangement: Arrangement) -> None:
        self.arrangement = arrangement
        self.replace_rows(self.listed_rows)
        self.post_message(self.ArrangementChanged())
        rows = self.rows
        if not isinstance(rows, ArrangedRows) or not (rows.server or self.server_asked(rows)):
            self.server_order_failed(arrangement)

    def server_arrange(self, arranged: ArrangedRows) -> None:
        """Ask the server to order the whole folder of ``arranged`` (see ``server_order``)."""

    def server_asked(self, arranged: ArrangedRows) -> bool:
        """Whether the server was asked for the order of ``arranged`` and has not answered yet."""
        return False

    def server_order_failed(self, arrangement: Arrangement) -> None:
        """No server order: the rows at hand are arranged; a sort loads the rest to sort it in."""
        rows = self.rows
        if isinstance(rows, ArrangedRows) and rows.loaded < rows.total and rows.page_size \
                and (arrangement.sort is not None or arrangement.reverse):
            # Issue 33: a sort of the loaded pages alone put rows out of order. The rest is
            # fetched in the background, then sorted in once (one re-sort, not one a page).
            self.notify(f"sorting: loading the {rows.total - rows.loaded:,} rows not fetched yet…",
                        markup=False, timeout=3)
            self._load_every_page(rows.base)

    # Not exclusive: a page claimed is fetched by whoever claimed it. A second sort's load
    # skips the pages the first (or the list's page fetcher) holds; had the first been cancelled
    # it would give them back after the second looked, and nothing would fetch them (a run at
    # load 13-20 sorted without the last page). Each fetcher's PageLoaded sorts its pages in.
    @work(thread=True, group="sort-pages", exit_on_error=False)
    def _load_every_page(self, base: ThreadRows) -> None:
        worker = get_current_worker()
        pages = base.missing_pages(0, len(base))
        error = None
        for i, page in enumerate(pages):
            if worker.is_cancelled or not same_pages(base, self.listed_rows):
                base.release(pages[i:])
                return
            try:
                base.fetch_page(page)
            except Exception as exc:  # noqa: BLE001 - said once; those rows stay at the end
                error = error or error_line(exc)
        self.post_message(self.PageLoaded(self.rows, error))

    def action_sort_next(self) -> None:
        """o: sort by the next key (date, sender, subject, size where the rows have sizes)."""
        self._rearrange(self.arrangement.next_sort(has_sizes(self.listed_rows)))

    def action_sort_reverse(self) -> None:
        """O: reverse the order."""
        self._rearrange(replace(self.arrangement, reverse=not self.arrangement.reverse))

    def action_tree_toggle(self) -> None:
        """z: turn the thread tree on; with it on, collapse or expand the current thread."""
        if not self._tree_applies():
            return
        if not self.arrangement.tree:
            self._rearrange(replace(self.arrangement, tree=True))
            return
        row = self.current
        if row is None:
            return
        key = self.rows.group_key(row) if isinstance(self.rows, ArrangedRows) else thread_key(row)
        self._rearrange(replace(self.arrangement, toggled=self.arrangement.toggled ^ {key}))
        self._cursor_to_thread(key, row)

    def action_tree_all(self) -> None:
        """Z: collapse every thread, or expand them all when they are collapsed."""
        if not self._tree_applies():
            return
        arrangement = self.arrangement
        row = self.current
        collapse = not arrangement.tree or not arrangement.collapse_all or bool(arrangement.toggled)
        self._rearrange(replace(arrangement, tree=True, collapse_all=collapse, toggled=frozenset()))
        if row is not None:
            self._cursor_to_thread(self.rows.group_key(row) if isinstance(self.rows, ArrangedRows)
                                   else thread_key(row), row)

    def nothing_listed(self, what: str) -> bool:
        """True, and a toast says so, when the list is empty: a key that needs a row says why it
        did nothing (issue 35), rather than what it does elsewhere."""
        if len(self.rows):
            return False
        self.notify(f"Nothing to {what}: the list is empty.", markup=False, timeout=3)
        return True

    def _tree_applies(self) -> bool:
        """The tree groups a personal account's messages; a list of threads has none."""
        if self.nothing_listed("group into threads"):
            return False
        if isinstance(self.current, MailboxRow):
            return True
        self.notify("The thread tree groups a personal account's messages; these rows are threads already.",
                    markup=False, timeout=4)
        return False

    def _cursor_to_thread(self, key: str, row: ThreadSummary) -> None:
        """After a collapse the cursor's row may be hidden: put the cursor on its thread's root."""
        rows = self.rows
        current = self.current
        if current is not None and current.thread_id == row.thread_id:
            return
        index = rows.root_index(key) if isinstance(rows, ArrangedRows) else None
        if index is not None:
            self.cursor = index
