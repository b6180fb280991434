"""Tags of the thread list, aerc/mutt style: the set of rows the next action works on.

``v`` tags or untags the row under the cursor, ``V`` clears every tag, ``T`` tags every
listed row. With tags set, the action keys (``m f M a d i``) act on the tagged set in one
proposal. Tags are kept by thread id (a personal account's row: its message ID), so they
survive paging, a search and a refresh of the same folder; opening another folder or list
clears them. After a batch write the tags of the messages that were done are cleared and
the failed ones stay tagged, ready for a retry.

``v`` on a row whose page is not fetched yet (typed faster than a paged folder loads, issue
35) is not lost: the position is remembered and toggled when its page arrives; until then
the action keys wait for it (a toast says so) rather than act on fewer rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from textual import events, work
from textual.message import Message
from textual.worker import get_current_worker

from mailtriage.application import ThreadId, ThreadSummary
from mailtriage.tui import typeahead
from mailtriage.core.inert import terminal_text
from mailtriage.tui.arrange import same_pages
from mailtriage.tui.rows import ThreadRows


class Tags:
    """The tagged rows, in the order they were tagged (that is the proposal's order)."""

    def __init__(self) -> None:
        self._rows: dict[ThreadId, ThreadSummary] = {}
        #: Positions of ``_pending_of`` toggled before their page was fetched.
        self._pending: set[int] = set()
        self._pending_of: ThreadRows | None = None

    def __len__(self) -> int:
        return len(self._rows)

    def __bool__(self) -> bool:
        return bool(self._rows)

    def __contains__(self, row: object) -> bool:
        return isinstance(row, ThreadSummary) and row.thread_id in self._rows

    def rows(self) -> list[ThreadSummary]:
        return list(self._rows.values())

    def toggle(self, row: ThreadSummary) -> bool:
        """Tag ``row``, or untag it when it is tagged; True when it is tagged now."""
        if row.thread_id in self._rows:
            del self._rows[row.thread_id]
            return False
        self._rows[row.thread_id] = row
        return True

    def add(self, rows: Iterable[ThreadSummary]) -> int:
        """Tag ``rows``; returns how many were not tagged before."""
        before = len(self._rows)
        for row in rows:
            self._rows.setdefault(row.thread_id, row)
        return len(self._rows) - before

    def clear(self) -> int:
        count = len(self._rows) + self.pending
        self._rows.clear()
        self._pending.clear()
        return count

    # -- rows not fetched yet ------------------------------------------------
    @property
    def pending(self) -> int:
        """How many toggles wait for their page."""
        return len(self._pending)

    def toggle_later(self, rows: ThreadRows, index: int) -> None:
        """Row ``index`` of ``rows`` is not fetched yet: toggle it when it is (:meth:`arrived`)."""
        if rows is not self._pending_of:  # another list: its positions mean nothing here
            self._pending_of, self._pending = rows, set()
        self._pending ^= {index}

    def pending_elsewhere(self, rows: ThreadRows) -> int:
        """Toggles typed on a list that ``rows`` has replaced (a re-sort, news, a refresh): their
        positions mean nothing in ``rows``, so they are dropped; how many were."""
        if rows is self._pending_of or not self._pending:
            return 0
        dropped = len(self._pending)
        self._pending.clear()
        return dropped

    def waits_at(self, rows: ThreadRows, index: int) -> bool:
        return rows is self._pending_of and index in self._pending

    def arrived(self, rows: ThreadRows) -> bool:
        """Apply the toggles of ``rows`` whose rows are at hand now; True when any was."""
        if rows is not self._pending_of:
            self._pending.clear()  # the list was replaced: those positions are gone
            return False
        done = [index for index in sorted(self._pending) if rows.peek(index) is not None]
        for index in done:
            row = rows.peek(index)
            if row is not None:
                self.toggle(row)
            self._pending.discard(index)
        return bool(done)

    def drop(self, thread_ids: Iterable[ThreadId]) -> None:
        for thread_id in thread_ids:
            self._rows.pop(thread_id, None)

    def refresh(self, rows: ThreadRows) -> None:
        """Take the newest state of tagged rows that ``rows`` has at hand (flags change after
        a write; what a toggle decides must see them)."""
        if not self._rows:
            return
        for index in range(len(rows)):
            row = rows.peek(index)
            if row is not None and row.thread_id in self._rows:
                self._rows[row.thread_id] = row


def loaded_rows(rows: ThreadRows) -> tuple[list[ThreadSummary], int]:
    """The rows of ``rows`` at hand (a paged source fetches pages as they are painted), and
    how many are not fetched yet."""
    found = [row for row in (rows.peek(i) for i in range(len(rows))) if row is not None]
    return found, len(rows) - len(found)


class TagKeys:
    """The thread list's tag keys (v V T), the move key (M) and next unread (u); mixed into
    :class:`~mailtriage.tui.panes.thread_list.ThreadList`, whose rows, cursor and messages they use."""

    tags: Tags
    rows: ThreadRows
    cursor: int
    #: ``;`` was typed with rows tagged: the status line says the prefix waits for its action
    #: until the next key (the action, or Esc that only drops it).
    tag_prefix_waits: bool = False

    if TYPE_CHECKING:  # the widget's (ThreadList), which the mixin's toasts go through
        def notify(self, message: str, *args: Any, **kwargs: Any) -> Any: ...

        def nothing_listed(self, what: str) -> bool: ...  # ArrangeKeys'

    # -- tags (v V T) and the batch move (M) ---------------------------------
    def action_tag_toggle(self) -> None:
        """v: tag or untag the row under the cursor, then move down (mutt's t, aerc's v)."""
        row = self.current
        if row is None:
            if self.nothing_listed("tag"):
                return
            # Its page is on its way (v typed faster than it loads): toggled when it arrives.
            self.tags.toggle_later(self.rows, self.cursor)
        else:
            self.tags.toggle(row)
            self._tags_changed()
        self.refresh_line(self.cursor)
        self._move(1)

    def tags_arrived(self) -> None:
        """A page came: the v's typed on its rows before it did take effect now."""
        if self._tags_dropped():
            return
        if self.tags.pending and self.tags.arrived(self.rows):
            self._repaint_tags()

    def _tags_dropped(self) -> bool:
        """The list was replaced while v's waited for their page: say they tagged nothing."""
        dropped = self.tags.pending_elsewhere(self.rows)
        if dropped:
            self.notify(f"{dropped:,} v typed before their rows were listed tagged nothing: the list changed "
                        "meanwhile (tag those rows again)", severity="warning", markup=False, timeout=6)
            self._repaint_tags()
        return bool(dropped)

    def tags_still_loading(self) -> bool:
        """True (and a toast says so) while tagged rows wait for their page: an action on the
        tags waits for them rather than act on fewer rows than were tagged."""
        if self._tags_dropped():
            return True  # fewer rows are tagged than were typed: the user learns it before the action
        if not self.tags.pending:
            return False
        self.notify(f"{self.tags.pending:,} tagged rows are still loading; the action waits for them "
                    "(press the key again when they are listed)", severity="warning", markup=False, timeout=3)
        return True

    def action_tags_clear(self) -> None:
        """V: untag every row."""
        if self.tags.clear():
            self._repaint_tags()

    def action_tag_all(self) -> None:
        """T: tag every listed row at hand; rows of a large folder not fetched yet are not
        fetched for this (the cost stays with what was listed) and the status says so."""
        if self.nothing_listed("tag"):
            return
        rows, missing = loaded_rows(self.rows)
        self.tags.add(rows)
        self._repaint_tags()
        if missing:
            self.notify(f"tagged the {len(rows):,} rows listed so far; {missing:,} more are not fetched yet "
                        "(scroll down to list them, then T again)", markup=False)

    def action_tag_prefix(self) -> None:
        """; (mutt's tag-prefix): the next action key acts on the tagged rows. Here an action
        key acts on the tagged rows whenever there are some (aerc's way), so ``;`` says what
        the next key will act on, or that nothing is tagged (then the key acts on one row)."""
        if not self.tags:
            self.notify("tag prefix: no row is tagged (tag rows first); the next key acts on the row under "
                        "the cursor", severity="warning", markup=False, timeout=4)
            return
        self.tag_prefix_waits = True  # said on the status line (a toast would cover it), until the next key
        self._tags_changed()

    def on_key(self, event: events.Key) -> None:
        """The key after ``;`` spends the prefix: an action key then acts (on the tagged rows,
        as it would anyway); Esc only drops the prefix (not the search nor the loading too)."""
        if not self.tag_prefix_waits or event.key == "semicolon":
            return
        self.tag_prefix_waits = False
        self._tags_changed()
        if event.key == "escape":
            event.stop()
            event.prevent_default()

    def action_move(self) -> None:
        """M: move the tagged rows (or the current one) to a folder picked next."""
        if self.tags_still_loading() or self.nothing_listed("move"):
            return
        rows = tuple(self.tags.rows()) if self.tags else ((self.current,) if self.current is not None else ())
        if rows:
            typeahead.post_opening(self, self.BatchRequested(rows, "move"))  # type: ignore[arg-type]  # (a ThreadList)

    def untag(self, thread_ids) -> None:
        """Drop the tags of ``thread_ids`` (a batch write did them)."""
        self.tags.drop(thread_ids)
        self._repaint_tags()

    def clear_tags(self) -> None:
        if self.tags.clear():
            self._repaint_tags()

    def _repaint_tags(self) -> None:
        self._cache.clear()
        self.refresh()
        self._tags_changed()

    def _tags_changed(self) -> None:
        self.post_message(self.TagsChanged(len(self.tags)))

    # -- next unread (u) ------------------------------------------------------
    @dataclass
    class UnreadFound(Message):
        """The page walk of ``u`` ended: ``index`` is the next unread row (None: there is none)."""

        rows: ThreadRows
        index: int | None
        wrapped: bool
        error: str = ""
        #: The server cannot search (NotSupported): walk the pages from this row instead.
        walk_from: int | None = None

    def server_unread(self, origin: int) -> bool:
        """u beyond the rows at hand, asked of the server (see ``server_order``); False: it cannot."""
        return False

    def action_next_unread(self) -> None:
        """u: the next unread row after the cursor, wrapping to the top. In a paged folder the
        rows not fetched yet are looked at too (issue 33: "no unread" while 323 were unread):
        at the first such row the walk goes on in a worker that fetches page after page and
        stops at the first unread row."""
        total = len(self.rows)
        for step in range(1, total + 1):
            index = (self.cursor + step) % total
            row = self.rows.peek(index)
            if row is None and self.rows.page_size:
                if self.server_unread(self.cursor):  # issue 35: the server's UID SEARCH UNSEEN
                    return
                self.notify("looking for unread rows in pages not loaded yet…", markup=False, timeout=2)
                self._seek_unread(self.rows, self.cursor, step)
                return
            if row is not None and row.unread:
                if index <= self.cursor:
                    self.notify("wrapped to the top", markup=False, timeout=2)
                self.cursor = index
                return
        self.notify("no unread", markup=False, timeout=3)

    @work(thread=True, group="next-unread", exclusive=True, exit_on_error=False)
    def _seek_unread(self, rows: ThreadRows, origin: int, first_step: int) -> None:
        worker = get_current_worker()
        total = len(rows)
        for step in range(first_step, total + 1):
            if worker.is_cancelled:
                return
            if rows is not self.rows:  # re-sorted or another folder: the handler decides
                break
            index = (origin + step) % total
            row = rows.peek(index)
            if row is None:
                try:
                    rows.fetch_page(index // rows.page_size)
                except Exception:  # noqa: BLE001 - the page's placeholder rows say why; skip it
                    continue
                row = rows.peek(index)
            if row is not None and row.unread:
                self.post_message(self.UnreadFound(rows, index, index <= origin))
                return
        self.post_message(self.UnreadFound(rows, None, False))

    def on_tag_keys_unread_found(self, message: "TagKeys.UnreadFound") -> None:
        message.stop()
        if message.rows is not self.rows:
            # A page of the same listing arrived meanwhile and re-sorted the rows shown: the
            # walk's positions are of the old order, so u goes on in the new one (the pages it
            # fetched stay fetched). Another folder or search: u was for rows no longer shown.
            if same_pages(message.rows, self.rows):
                self.action_next_unread()
            return
        self.refresh()
        if message.walk_from is not None:
            self._seek_unread(message.rows, message.walk_from, 1)
            return
        if message.index is None:  # a server's error text: inert, never parsed as markup
            self.notify(f"next unread: {terminal_text(message.error)}" if message.error else "no unread",
                        severity="error" if message.error else "information", markup=False, timeout=3)
            return
        if message.wrapped:
            self.notify("wrapped to the top", markup=False, timeout=2)
        self.cursor = message.index
