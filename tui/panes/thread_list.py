"""The virtualized thread list: a Line-API widget whose cost follows the visible rows.

``render_line`` paints one screen row from one :class:`ThreadRows` row; nothing is
built for rows off screen, so 100,000 threads scroll like 100. Painted rows are kept
in a small LRU cache keyed by the row itself (not its place) and what its line shows, so
moving the cursor repaints two lines, a focus move one, and news folded into the list paints
the new rows only (issue 39). Rows a paged source has not fetched yet paint as placeholders and
their pages are fetched by one worker, nearest to the viewport first.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from mailtriage.core.lean_dataclass import lean_dataclass  # @dataclass(eq=False), none of its exec'd code
from mailtriage.application import ThreadSummary, shown_date
from mailtriage.core.inert import sender_label
from mailtriage.tui import bindings, keymaps, typeahead
from mailtriage.tui.arrange import Arrangement, ArrangedRows
from mailtriage.tui.focus_paint import OwnFocusPaint
from mailtriage.tui.mailbox_rows import MailboxRow
from mailtriage.tui.messages import Request
from mailtriage.tui.rows import ListRows, ThreadRows, index_of, status_mark
from mailtriage.tui.sanitize import MARKER_STYLE, inert_text
from mailtriage.tui.row_pages import RowPages
from mailtriage.tui.server_order import ServerOrderKeys
from mailtriage.tui.tagging import TagKeys, Tags

#: The mark of a tagged row (mutt's and aerc's ``*``), in the column after the unread dot.
TAG_MARK = "*"


def format_date(row: ThreadSummary, narrow: bool, column: str = "sent") -> str:
    """The row's date in the user's time zone (application/dates.py: the one date rule).

    ``column`` "sent" shows the sender's ``Date:`` where the backend lists by arrival
    (``row.sent``), "arrival" the time the mail arrived (``last_activity``)."""
    when = shown_date(row, column)  # the same rule as `mailtriage list`
    if when is None:
        return "?" * (5 if narrow else 16)
    return when.strftime("%m-%d" if narrow else "%Y-%m-%d %H:%M")


class ThreadList(OwnFocusPaint, RowPages, ServerOrderKeys, TagKeys, ScrollView, can_focus=True):
    """Thread summaries, one per line, newest first as the backend returned them."""

    BINDINGS = bindings.THREAD_LIST

    COMPONENT_CLASSES = {
        "thread-list--cursor",
        "thread-list--cursor-blurred",
        "thread-list--unread",
        "thread-list--date",
        "thread-list--count",
        "thread-list--sender",
        "thread-list--placeholder",
        "thread-list--tagged",
        "thread-list--status",
    }

    DEFAULT_CSS = """
    ThreadList {
        background: $surface;
        overflow-x: hidden;
        overflow-y: auto;
    }
    /* Not ":focus > .thread-list--cursor": a component style that follows the focus makes
       every focus move repaint every row (issue 35); _paint picks one of the two. */
    ThreadList > .thread-list--cursor-blurred {
        background: $block-cursor-blurred-background;
        color: $block-cursor-blurred-foreground;
        text-style: $block-cursor-blurred-text-style;
    }
    ThreadList > .thread-list--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: $block-cursor-text-style;
    }
    ThreadList > .thread-list--unread { text-style: bold; }
    ThreadList > .thread-list--date { color: $text-muted; }
    ThreadList > .thread-list--count { color: $text-muted; }
    ThreadList > .thread-list--sender { color: $text-secondary; }
    ThreadList > .thread-list--placeholder { color: $text-disabled; }
    ThreadList > .thread-list--tagged { color: $accent; text-style: bold; }
    ThreadList > .thread-list--status { color: $text-accent; text-style: bold; }
    """

    cursor: reactive[int] = reactive(0, init=False, repaint=False)

    @lean_dataclass
    class Opened(Request):
        """Enter or a click on a row."""

        summary: ThreadSummary
        index: int

    @lean_dataclass
    class Highlighted(Request):
        index: int
        total: int

    @lean_dataclass
    class SearchRequested(Message):
        pass

    @lean_dataclass
    class SearchCleared(Message):
        pass

    @lean_dataclass
    class ReplyRequested(Request):
        """r (``kind`` ""), A reply_all, F forward, C new."""

        summary: ThreadSummary | None
        kind: str = ""

    @lean_dataclass
    class ImportRequested(Request):
        summary: ThreadSummary | None

    @lean_dataclass
    class OrganizeRequested(Request):
        """m/f/a/d on a personal account's message: ``action`` toggle_read, toggle_flag, archive, trash."""

        summary: ThreadSummary | None
        action: str

    @lean_dataclass
    class BatchRequested(Request):
        """An action on several rows (the tagged ones) or a move (``M``, which asks for a folder):
        ``action`` toggle_read, toggle_flag, archive, trash, move or import."""

        rows: tuple[ThreadSummary, ...]
        action: str

    @lean_dataclass
    class TagsChanged(Message):
        count: int

    @lean_dataclass
    class ArrangementChanged(Message):
        """The sort or the tree changed (the status line says which)."""

    @lean_dataclass
    class IssueRequested(Request):
        """``s``: jump to the tracker issue of this thread."""

        summary: ThreadSummary | None

    @lean_dataclass
    class PageLoaded(Message):
        rows: ThreadRows
        error: str | None = None

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.rows: ThreadRows = ListRows([])
        self.filtered = False
        self._cache: LRUCache[tuple, tuple[ThreadSummary, Strip]] = LRUCache(512)
        #: The styles the cached rows were painted with, and whether they may have changed
        #: since (see notify_style_update).
        self._painted_with: tuple[Style, ...] | None = None
        self._styles_changed = True
        self._generation = 0
        self.tags = Tags()
        self.arrangement = Arrangement()
        #: "sent" (the sender's Date:, the default) or "arrival" (the settings' date_column).
        self.date_column = "sent"
        #: The triage overview of rows on screen (ThreadId -> ThreadStatus), kept by the screen.
        self.statuses: dict = {}
        #: Threads with new activity that came in above the screen and were not scrolled to yet.
        self.new_above = 0

    # -- data ------------------------------------------------------------
    def set_rows(self, rows: ThreadRows, *, filtered: bool = False, keep_cursor: bool = False) -> None:
        self.rows = rows = self._arranged(rows)
        self.filtered = filtered
        self._generation += 1
        self._cache.clear()
        self.virtual_size = Size(0, len(rows))
        new_cursor = min(self.cursor, max(len(rows) - 1, 0)) if keep_cursor else 0
        if new_cursor != self.cursor:
            self.cursor = new_cursor
        else:
            self._announce()
        if not keep_cursor:
            self.scroll_to(y=0, animate=False, immediate=True)
            self.new_above = 0
        self.refresh()
        self.refresh_bindings()
        self._request_visible_pages()

    def replace_rows(self, rows: ThreadRows) -> None:
        """New rows for the same list (news applied, or a reload) that keep the user's place:
        the cursor stays on its thread and on the same screen line. At the top of the list
        the top stays in view, so arrivals show, as long as the cursor's thread stays visible."""
        rows = self._arranged(rows)
        current = self.current
        old_cursor, old_top = self.cursor, self.scroll_offset.y
        new_cursor = index_of(rows, current.thread_id, old_cursor) if current is not None else None
        if new_cursor is None:
            new_cursor = min(old_cursor, max(len(rows) - 1, 0))
        height = max(self.scrollable_content_region.height, 1)
        if old_top == 0 and new_cursor < height:
            new_top = 0
        else:
            new_top = max(0, new_cursor - max(0, old_cursor - old_top))
        self.rows = rows
        # No cache clear: rows are kept painted by the row (render_line), so a fold paints the new ones only.
        self.virtual_size = Size(0, len(rows))
        self.scroll_to(y=new_top, animate=False, immediate=True)
        # Rows that came in above the cursor's thread and out of view: said, not hidden (issue 39).
        shift = new_cursor - old_cursor if current is not None else 0
        self.new_above = min(self.new_above + max(0, shift), new_top)
        if new_cursor != self.cursor:
            self.cursor = new_cursor
        else:
            self._announce()
        self.refresh()
        self.refresh_bindings()
        self._request_visible_pages()

    @property
    def current(self) -> ThreadSummary | None:
        return self.rows.peek(self.cursor) if len(self.rows) else None

    def visible_rows(self) -> list[ThreadSummary]:
        """The rows on screen that are at hand (what the overview marks are computed for)."""
        top = self.scroll_offset.y
        height = max(self.scrollable_content_region.height, 1)
        return [row for i in range(top, min(top + height, len(self.rows))) if (row := self.rows.peek(i)) is not None]

    def set_statuses(self, statuses: dict) -> None:
        """New overview marks: the rows whose mark changed are painted again (render_line's key)."""
        self.statuses = statuses
        self.refresh()

    def notify_style_update(self) -> None:
        """Textual calls this on every focus move in the pane (its fresh styles never compare
        equal to the applied ones): the rows are painted again only when a style they are
        painted with changed (a theme), not on every Enter (issue 35)."""
        super().notify_style_update()
        self._styles_changed = True  # compared at the next paint: the component styles come after

    def _check_styles(self) -> None:
        self._styles_changed = False
        styles = self._paint_styles()
        if styles != self._painted_with:
            self._painted_with = styles
            self._cache.clear()

    def _paint_styles(self) -> tuple[Style, ...]:
        """The Rich styles _paint uses, as it asks for them (unread partial)."""
        return (self.rich_style, *(self.get_component_rich_style(name, partial=name == "thread-list--unread")
                                   for name in sorted(self.COMPONENT_CLASSES)))

    def watch_has_focus(self, _has_focus: bool) -> None:
        """Only the cursor row's style follows the focus. Not restyled (Textual's restyle: 1-3 ms
        before Enter's frame): no rule styles the list by its focus (tests/tui/test_open_restyle.py)."""
        self.refresh_line(self.cursor)

    # -- painting ----------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        if self._styles_changed:
            self._check_styles()
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if index >= len(self.rows) or width <= 0:
            return Strip.blank(width, self.rich_style)
        is_cursor = index == self.cursor
        row = self.rows.peek(index)
        if row is None:  # a placeholder: painted again once its page arrives
            return self._paint(None, width, is_cursor, self.tags.waits_at(self.rows, index))
        tagged, mark = row in self.tags, status_mark(self.statuses.get(row.thread_id)) if self.statuses else ""
        decoration = self.rows.decoration(index) if isinstance(self.rows, ArrangedRows) else ""
        # By the row itself (kept in the entry: its id is never another's), not by its place.
        key = (id(row), width, is_cursor, is_cursor and self.has_focus, self._generation, tagged, decoration, mark)
        cached = self._cache.get(key)
        if cached is not None and cached[0] is row:
            return cached[1]
        strip = self._paint(row, width, is_cursor, tagged, decoration, mark)
        self._cache[key] = (row, strip)
        return strip

    def _paint(self, row: ThreadSummary | None, width: int, is_cursor: bool, tagged: bool = False,
               decoration: str = "", status: str | None = None) -> Strip:
        base = self.rich_style
        if is_cursor:
            base = base + self.get_component_rich_style(
                "thread-list--cursor" if self.has_focus else "thread-list--cursor-blurred")
        if row is None:
            style = base if is_cursor else base + self.get_component_rich_style("thread-list--placeholder")
            label = (TAG_MARK if tagged else " ") + "… loading"
            return Strip([Segment(label.ljust(width)[:width], style)], width)
        narrow = width < 72
        # Full (not partial) component styles: their colours come out blended with the
        # background, which is what makes $text-muted readable in light themes too.
        muted = Style() if is_cursor else self.get_component_rich_style("thread-list--date")
        count_style = Style() if is_cursor else self.get_component_rich_style("thread-list--count")
        sender_style = Style() if is_cursor else self.get_component_rich_style("thread-list--sender")
        unread = self.get_component_rich_style("thread-list--unread", partial=True) if row.unread else Style()
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        text.append("●" if row.unread else " ", unread)
        text.append(TAG_MARK if tagged else " ", self.get_component_rich_style("thread-list--tagged") if tagged else "")
        text.append(format_date(row, narrow, self.date_column), muted)
        mark = row.date_mark  # "?" undated (the archive's date), "!" implausible date, else " "
        if mark != " ":
            text.append(mark, muted)
        else:
            text.append(" ")
        text.append(f"{row.message_count:>3}", count_style)
        text.append(" ")
        sender_width = 14 if narrow else 22
        # A name that could pass for another address shows the real address first, marked.
        label = sender_label(row.sender.name, row.sender.email)
        sender = inert_text(label, style=sender_style)
        if label.startswith("⚠ "):
            sender.stylize(MARKER_STYLE, 0, 1)
        sender.truncate(sender_width, overflow="ellipsis", pad=True)
        text.append_text(sender)
        text.append(" ")
        if decoration:  # the thread tree's mark (ours, not mail text)
            text.append(decoration, muted)
        mark = status if status is not None else status_mark(self.statuses.get(row.thread_id))
        if mark:  # the issue ID comes from our tracker's file names; inert all the same
            text.append_text(inert_text(mark, style=Style() if is_cursor else
                                        self.get_component_rich_style("thread-list--status")))
            text.append(" ")
        subject = inert_text(row.subject or "(no subject)")
        subject.stylize(unread)
        text.append_text(subject)
        text.truncate(width, overflow="ellipsis", pad=True)
        segments = list(text.render(self.app.console, end=""))
        return Strip(segments, text.cell_len).apply_style(base).adjust_cell_length(width, base)

    # -- cursor ------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:  # two rows, not the whole list (repaint=False)
        self.refresh_line(old)
        self.refresh_line(new)
        self._scroll_cursor_into_view()
        self._announce()

    def _announce(self) -> None:
        self.post_message(self.Highlighted(self.cursor, len(self.rows)))

    def _scroll_cursor_into_view(self) -> None:
        height = self.scrollable_content_region.height
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif height > 0 and self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def _move(self, delta: int) -> None:
        if len(self.rows):
            self.cursor = max(0, min(len(self.rows) - 1, self.cursor + delta))

    def action_cursor_down(self) -> None:
        self._move(1)

    def action_cursor_up(self) -> None:
        self._move(-1)

    def action_cursor_first(self) -> None:
        if len(self.rows):
            self.cursor = 0

    def action_cursor_last(self) -> None:
        if len(self.rows):
            self.cursor = len(self.rows) - 1

    def action_page_down(self) -> None:
        self._move(max(1, self.scrollable_content_region.height - 1))

    def action_page_up(self) -> None:
        self._move(-max(1, self.scrollable_content_region.height - 1))

    def action_half_page(self, step: int) -> None:
        self._move(step * max(1, self.scrollable_content_region.height // 2))

    def action_open(self) -> None:
        row = self.current
        if row is not None:
            self.post_message(self.Opened(row, self.cursor))

    def action_reply(self) -> None:
        typeahead.post_opening(self, self.ReplyRequested(self.current))

    def action_compose(self, kind: str) -> None:
        typeahead.post_opening(self, self.ReplyRequested(self.current, kind))

    def action_import_thread(self) -> None:
        if self.tags_still_loading():
            return
        if self.tags:
            typeahead.post_opening(self, self.BatchRequested(tuple(self.tags.rows()), "import"))
            return
        typeahead.post_opening(self, self.ImportRequested(self.current))

    def action_jump_issue(self) -> None:
        self.post_message(self.IssueRequested(self.current))

    def action_organize(self, action: str) -> None:
        if self.tags_still_loading() or self.nothing_listed("mark, flag, archive or trash"):
            return
        if self.tags:
            self.post_message(self.BatchRequested(tuple(self.tags.rows()), action))
            return
        self.post_message(self.OrganizeRequested(self.current, action))

    def action_search(self) -> None:
        self.post_message(self.SearchRequested())

    def action_clear_search(self) -> None:
        self.post_message(self.SearchCleared())

    # -- search matches (n / N): every row of a search result is a match --------------------
    def action_next_match(self) -> None:
        self._move(1)

    def action_previous_match(self) -> None:
        self._move(-1)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("next_match", "previous_match"):
            return self.filtered and len(self.rows) > 0  # a search that matched nothing has no next match
        if action == "clear_search":
            return self.filtered
        if action == "import_thread" and isinstance(self.current, MailboxRow):
            return False  # a key that only refuses is not offered; pressed, it says why (on_key)
        if action in ("open", "reply", "import_thread") or (action == "compose" and parameters != ("new",)):
            return len(self.rows) > 0  # not offered without a row (issue 35): a dimmed key is still on show
        return True

    def no_match_to_step(self) -> None:
        """n / N with no search shown (mutt's "No search pattern"), or one that matched nothing."""
        search = bindings.key_label(self.app, "threads.search")
        if self.filtered:
            self.notify(f"the search matched nothing: {search} searches again, Esc clears it", timeout=4)
        else:
            self.notify(f"no search yet: {search} searches", timeout=4)

    def on_key(self, event: events.Key) -> None:
        """i on a personal account's message: not offered (check_action), yet pressed it says why
        import works on a project source's threads only (its keys as the user's key map has them).
        n / N with no match to step to are not offered either: pressed, they say why."""
        if not self.check_action("next_match", ()) and (
                event.key in bindings.keys_of(self.app, "threads.next_match")
                or event.key in bindings.keys_of(self.app, "threads.previous_match")):
            event.stop()
            self.no_match_to_step()
            return
        hint = keymaps.habit_hint(self.app, "threads", event.key)  # the preset's key with no action here
        if hint is not None:
            event.stop()
            self.notify(hint, timeout=5, markup=False)
            return
        if isinstance(self.current, MailboxRow) and event.key in bindings.keys_of(self.app, "threads.import"):
            event.stop()  # TagKeys.on_key still runs: a waiting tag prefix is spent
            self.action_import_thread()

    def on_click(self, event) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        index = self.scroll_offset.y + offset.y
        if 0 <= index < len(self.rows):
            self.focus()
            self.cursor = index
            self.action_open()
