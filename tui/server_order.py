"""Sort, fold and next unread over a whole account folder, by the server (issue 35, item 5).

A folder is paged (100 messages at a time); sorting or grouping the pages fetched so far
leaves the rest out, and fetching every page to sort them costs the folder. Where the
account can (IMAP: ``SORT``, ``THREAD REFERENCES``, ``UID SEARCH UNSEEN``), the server
orders the whole folder and returns message IDs only; :class:`ServerArrangedRows` is that
order, whose rows are fetched a page at a time as the list paints them (the cost is what
is on screen). Where it cannot (``NotSupported``), the list falls back to arranging the
rows fetched so far (:mod:`mailtriage.tui.arrange`) and the status line says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from textual import work
from textual.message import Message

from mailtriage.application import Address, NotSupported, ThreadId
from mailtriage.core.inert import terminal_text
from mailtriage.tui.arrange import ArrangeKeys, Arrangement, ArrangedRows
from mailtriage.tui.errors import error_line
from mailtriage.tui.mailbox_rows import MAILBOX_KIND, FolderRows, MailboxRow, row_for
from mailtriage.tui.rows import PagedRows, ThreadRows
from mailtriage.tui.tagging import TagKeys

if TYPE_CHECKING:
    from mailtriage.application import FolderOrder


def _gone(message_id: str) -> MailboxRow:
    return MailboxRow(ThreadId(MAILBOX_KIND, message_id), "(moved or deleted since the list was ordered)", "",
                      Address("", ""), None, 1)


def same_order(a: Arrangement, b: Arrangement) -> bool:
    """Whether ``a`` and ``b`` ask the server the same (they may differ in what is collapsed)."""
    return (a.sort, a.reverse, a.tree) == (b.sort, b.reverse, b.tree)


class ServerArrangedRows(ArrangedRows):
    """A whole folder in the server's order (``FolderOrder``), folded by ``arrangement``;
    a row's header is fetched with its page (see the module)."""

    server = True
    base: FolderRows

    def __init__(self, base: FolderRows, arrangement: Arrangement, order: FolderOrder,
                 known: dict[str, MailboxRow] | None = None) -> None:
        self.base = base
        self.arrangement = arrangement
        self.order = order
        self.page_size = base.page_size
        self._known = {} if known is None else known  # rows fetched so far, by message ID
        self.root_of: dict[str, str] = {}
        self.ids: list[str] = []
        self._decoration: list[str] = []
        self.hidden = 0
        if arrangement.tree and order.depths:
            self._fold(order)
        else:
            self.ids = list(order.ids)
            self._decoration = [""] * len(self.ids)
        self.total = self.loaded = len(self.ids)
        self.has_size = True
        self._rows = PagedRows(self.total, self._load, page_size=self.page_size)

    def _fold(self, order: FolderOrder) -> None:
        threads: list[list[tuple[str, int]]] = []
        for message_id, depth in zip(order.ids, order.depths):
            if depth == 0 or not threads:
                threads.append([])
            threads[-1].append((message_id, depth))
        for members in threads:
            root = members[0][0]
            collapsed = len(members) > 1 and self.arrangement.collapsed(root)
            for n, (message_id, depth) in enumerate(members):
                self.root_of[message_id] = root
                if n == 0:
                    mark = "" if len(members) == 1 else (f"▸ +{len(members) - 1} " if collapsed else "▾ ")
                elif collapsed:
                    self.hidden += 1
                    continue
                else:
                    mark = "  " * (min(depth, 4) - 1) + "└ "
                self.ids.append(message_id)
                self._decoration.append(mark)

    def _load(self, offset: int, limit: int) -> list[MailboxRow]:
        wanted = self.ids[offset:offset + limit]
        missing = [i for i in wanted if i not in self._known]
        if missing:
            reads = self.base.reads
            assert reads is not None  # only built for a folder with whole-folder reads
            for header in reads.headers(missing):
                self._known[header.id] = row_for(header, self.base.account_id)
        return [self._known.get(i) or _gone(i) for i in wanted]

    def serves(self, base: ThreadRows, arrangement: Arrangement) -> ThreadRows | None:
        """Itself, or the same server order under another fold (no server call; the rows
        fetched are kept); None for another folder or another sort."""
        if base is not self.base or not same_order(arrangement, self.arrangement):
            return None
        if arrangement == self.arrangement:
            return self
        return ServerArrangedRows(self.base, arrangement, self.order, self._known)

    # -- ThreadRows -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ids)

    def base_index(self, index: int) -> int | None:
        return index if 0 <= index < len(self.ids) else None

    def peek(self, index: int):
        return self._rows.peek(index)

    def missing_pages(self, start: int, stop: int) -> list[int]:
        return self._rows.missing_pages(start, stop)

    def fetch_page(self, page: int) -> None:
        self._rows.fetch_page(page)

    def release(self, pages: list[int]) -> None:
        self._rows.release(pages)

    def matches(self, query, cancelled, progress) -> list[int] | None:
        return self._rows.matches(query, cancelled, progress)

    def loaded_pages(self) -> int:
        return self._rows.loaded_pages()

    def group_key(self, row) -> str:
        return self.root_of.get(row.thread_id.value, row.thread_id.value)

    def root_index(self, key: str) -> int | None:
        try:
            return self.ids.index(key)
        except ValueError:
            return None

    def describe(self) -> str:
        text = self.arrangement.describe() + f" · whole folder, by the server ({self.order.how})"
        if self.hidden:
            text += f" · {self.hidden:,} in collapsed threads"
        return text


def server_base(rows: ThreadRows) -> FolderRows | None:
    """The account folder behind ``rows`` when its server can order it whole, else None."""
    base = rows.base if isinstance(rows, ArrangedRows) else rows
    return base if isinstance(base, FolderRows) and base.reads is not None else None


class ServerOrderKeys(ArrangeKeys):
    """The server side of o O z Z and u; mixed into the thread list (see the module)."""

    rows: ThreadRows
    arrangement: Arrangement
    cursor: int

    if TYPE_CHECKING:  # the thread list's, which this is mixed into
        def post_message(self, message: Message) -> bool: ...
        def replace_rows(self, rows: ThreadRows) -> None: ...
        ArrangementChanged: Callable[[], Message]

    @dataclass
    class ServerOrdered(Message):
        """The server's order of ``base`` under ``arrangement`` came (``order`` None: it
        cannot; ``error`` says why)."""

        base: ThreadRows
        arrangement: Arrangement
        order: "FolderOrder | None"
        error: str = ""

    #: (folder, sort, reverse, tree) asked of the server and not answered yet.
    _server_pending: tuple | None = None

    def server_arrange(self, arranged: ArrangedRows) -> None:
        """Ask the server for the whole folder's order when ``arranged`` is an account folder
        not fully fetched (one fully fetched is arranged at hand, exactly) whose server did
        not decline before; once per folder and order."""
        base = server_base(arranged)
        if base is None or base.order_note or arranged.loaded >= arranged.total:
            return
        arrangement = arranged.arrangement
        asked = (base, arrangement.sort, arrangement.reverse, arrangement.tree)
        if self._server_pending != asked:
            self._server_pending = asked
            self._ask_server_order(base, arrangement)

    def server_asked(self, arranged: ArrangedRows) -> bool:
        arrangement = arranged.arrangement
        return self._server_pending == (arranged.base, arrangement.sort, arrangement.reverse, arrangement.tree)

    @work(thread=True, group="server-order", exclusive=True, exit_on_error=False)
    def _ask_server_order(self, base: FolderRows, arrangement: Arrangement) -> None:
        assert base.reads is not None
        try:
            order = base.reads.order(arrangement.sort, arrangement.reverse, arrangement.tree)
        except NotSupported as exc:
            self.post_message(self.ServerOrdered(base, arrangement, None, exc.detail or error_line(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - NotSupported or a failure: the fallback says why
            self.post_message(self.ServerOrdered(base, arrangement, None, error_line(exc)))
            return
        self.post_message(self.ServerOrdered(base, arrangement, order))

    def on_server_order_keys_server_ordered(self, message: ServerOrderKeys.ServerOrdered) -> None:
        message.stop()
        arrangement = message.arrangement
        if self._server_pending == (message.base, arrangement.sort, arrangement.reverse, arrangement.tree):
            self._server_pending = None
        base = server_base(self.rows)
        if base is not message.base or not same_order(arrangement, self.arrangement):
            return  # another folder, or another sort asked since
        if message.order is None:
            base.order_note = f"not ordered by the server ({terminal_text(message.error)}): from the rows fetched"
            self.post_message(self.ArrangementChanged())
            self.server_order_failed(self.arrangement)
            return
        self.replace_rows(ServerArrangedRows(base, self.arrangement, message.order))
        self.post_message(self.ArrangementChanged())

    # -- next unread (u) --------------------------------------------------------
    def server_unread(self, origin: int) -> bool:
        """u beyond the rows at hand: the server's ``UID SEARCH UNSEEN`` over the folder, mapped
        to the rows' order; False when the rows are not an account folder the server orders."""
        rows = self.rows
        base = server_base(rows)
        if base is None or (isinstance(rows, ArrangedRows) and not isinstance(rows, ServerArrangedRows)):
            return False
        self._ask_server_unread(rows, base, origin)
        return True

    @work(thread=True, group="next-unread", exclusive=True, exit_on_error=False)
    def _ask_server_unread(self, rows: ThreadRows, base: FolderRows, origin: int) -> None:
        assert base.reads is not None
        try:
            unread = set(base.reads.unread().ids)
            ids = rows.ids if isinstance(rows, ServerArrangedRows) else list(base.reads.order(None, False, False).ids)
        except NotSupported:  # this account cannot search: the page walk instead
            self.post_message(TagKeys.UnreadFound(rows, None, False, walk_from=origin))
            return
        except Exception as exc:  # noqa: BLE001 - said once; nothing moves
            self.post_message(TagKeys.UnreadFound(rows, None, False, error_line(exc)))
            return
        positions = [n for n, message_id in enumerate(ids[:len(rows)]) if message_id in unread]
        after = next((n for n in positions if n > origin), None)
        if after is not None:
            self.post_message(TagKeys.UnreadFound(rows, after, False))
        else:
            self.post_message(TagKeys.UnreadFound(rows, positions[0] if positions else None, bool(positions)))

