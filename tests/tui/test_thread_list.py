"""The virtualized thread list: paints only what is visible, fetches pages as you go."""

from datetime import datetime, timedelta, timezone

from textual.app import App, ComposeResult

from mailtriage.application import Service
from mailtriage.backends.contract import Address, ThreadId, ThreadSummary
from mailtriage.core.settings import load_settings
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.panes.threads import ThreadPane
from mailtriage.tui.rows import ListRows, PagedRows


class PaneHost(App):
    """A thread pane alone, in an app with the service every area reaches (tui/panes/area.py),
    never opened here: the pane's row marks, asked for once the cursor rests, find it closed
    and ask nothing. Without it, a slow run (the timer firing before the test ends) failed with
    'PaneHost' object has no attribute 'session'."""

    def __init__(self, project_dir) -> None:
        super().__init__()
        self.session = Service(project_dir, demo=False, settings=load_settings())

    def compose(self) -> ComposeResult:
        yield ThreadPane()


BASE = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)


def summary(i: int) -> ThreadSummary:
    return ThreadSummary(ThreadId("test", f"<{i}@x>"), f"Report number {i}", f"<{i}@x>",
                         Address(f"Reporter {i}", f"r{i}@example.org"), BASE - timedelta(minutes=i), 1 + i % 3,
                         unread=i % 2 == 0)


class ListHost(App):
    def __init__(self, rows) -> None:
        super().__init__()
        self.rows = rows
        self.opened = []

    def compose(self) -> ComposeResult:
        yield ThreadList()

    def on_mount(self) -> None:
        tl = self.query_one(ThreadList)
        tl.set_rows(self.rows)
        tl.focus()

    def on_thread_list_opened(self, message: ThreadList.Opened) -> None:
        self.opened.append(message.summary.subject)


def painted(tl: ThreadList) -> list[str]:
    return [tl.render_line(y).text for y in range(tl.scrollable_content_region.height)]


async def test_100k_rows_paint_only_the_window_and_fetch_pages_on_demand():
    calls = []

    def loader(offset, limit):
        calls.append(offset)
        return [summary(i) for i in range(offset, offset + limit)]

    rows = PagedRows(100_000, loader, page_size=200)
    app = ListHost(rows)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        tl = app.query_one(ThreadList)
        assert calls == [0]  # the first window needs one page, nothing else was read
        assert "Report number 0" in painted(tl)[0]
        await pilot.press("G")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert tl.cursor == 99_999
        assert sorted(calls) == [0, 99_800]
        lines = painted(tl)
        assert "Report number 99999" in lines[-1]
        assert rows.loaded_pages() == 2
        await pilot.press("k", "k", "enter")
        assert app.opened == ["Report number 99997"]


async def test_cursor_keys_scroll_and_placeholders_before_pages_arrive():
    app = ListHost(ListRows([summary(i) for i in range(100_000)]))
    async with app.run_test(size=(60, 12)) as pilot:
        tl = app.query_one(ThreadList)
        height = tl.scrollable_content_region.height
        await pilot.press(*["j"] * (height + 3))
        assert tl.cursor == height + 3
        assert tl.scroll_offset.y == 4  # the cursor stays on screen, at the bottom
        await pilot.press("pagedown")
        assert tl.cursor == 2 * height + 2
        await pilot.press("g")
        assert tl.cursor == 0 and tl.scroll_offset.y == 0
        # Narrow terminals shorten the date column.
        assert painted(tl)[0].split()[1] == "11-27"

    never = PagedRows(10, lambda offset, limit: [], page_size=5)
    never.missing_pages(0, 10)  # claimed by someone else: stays unloaded
    app = ListHost(never)
    async with app.run_test(size=(80, 12)):
        tl = app.query_one(ThreadList)
        assert "… loading" in tl.render_line(0).text


async def test_click_opens_a_row():
    app = ListHost(ListRows([summary(i) for i in range(50)]))
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.click(ThreadList, offset=(10, 3))
        assert app.opened == ["Report number 3"]


def offered(app) -> set[str]:
    """The actions the footer offers (shown and enabled: a dimmed key is still on show)."""
    return {b.binding.action for b in app.screen.active_bindings.values() if b.binding.show}


async def test_an_empty_list_offers_no_key_that_needs_a_row():
    """Issue 35: an empty folder's footer offered Open, Reply and Import (dimmed), keys that
    do nothing there. They are not offered until a row is listed."""
    app = ListHost(ListRows([]))
    async with app.run_test(size=(100, 10)) as pilot:
        tl = app.query_one(ThreadList)
        assert not offered(app) & {"open", "reply", "import_thread"}, offered(app)
        assert "search" in offered(app)
        tl.set_rows(ListRows([summary(0)]))
        await pilot.pause()
        assert {"open", "reply", "import_thread"} <= offered(app)
        assert all(b.enabled for b in app.screen.active_bindings.values() if b.binding.action == "reply")


async def test_a_key_that_needs_a_row_says_the_list_is_empty():
    """Issue 35: in an empty folder m/f/a/d said "open an account first" (the folder was an
    account's), z that "these rows are threads", and v, T, M did nothing: each says why now."""
    app = ListHost(ListRows([]))
    async with app.run_test(size=(100, 10)) as pilot:
        for key in ("m", "f", "a", "d", "v", "T", "M", "z", "Z"):
            app.clear_notifications()
            await pilot.press(key)
            await pilot.pause()
            said = [n.message for n in app._notifications]
            assert len(said) == 1 and said[0].startswith("Nothing to ") and "the list is empty" in said[0], (key, said)


async def test_rows_mark_undated_and_implausible_dates():
    from dataclasses import replace

    rows = [replace(summary(0), subject="undated", date_marker="undated"),
            replace(summary(1), subject="odd", date_marker="implausible"), summary(2)]
    app = ListHost(ListRows(rows))
    async with app.run_test(size=(100, 10)):
        lines = painted(app.query_one(ThreadList))
        assert "2026-11-27 12:00? " in lines[0] and "2026-11-27 11:59! " in lines[1]
        assert "2026-11-27 11:58  " in lines[2]


async def test_news_merged_into_the_list_keeps_the_cursor_thread_and_the_screen_in_place():
    from dataclasses import replace

    from mailtriage.tui.rows import merge_news

    items = [summary(i) for i in range(1000)]
    app = ListHost(ListRows(items))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        tl = app.query_one(ThreadList)
        tl.cursor = 500
        await pilot.pause()
        held, line = tl.current.thread_id, tl.cursor - tl.scroll_offset.y
        before = painted(tl)
        # Three new threads and an update that moves row 900 to the top: all above the screen.
        news = [summary(-1), summary(-2), summary(-3), replace(items[900], last_activity=BASE + timedelta(hours=1))]
        tl.replace_rows(ListRows(merge_news(items, news)))
        await pilot.pause()
        assert tl.current.thread_id == held and tl.cursor == 504
        assert tl.cursor - tl.scroll_offset.y == line
        assert painted(tl) == before  # nothing moved on screen
        assert tl.rows.peek(0).thread_id == items[900].thread_id

        # At the top of the list the arrivals show, and the cursor follows its thread.
        await pilot.press("g")
        await pilot.press("j")
        await pilot.pause()
        held = tl.current.thread_id
        merged = merge_news(tl.rows.items, [summary(-10), summary(-11)])
        tl.replace_rows(ListRows(merged))
        await pilot.pause()
        assert tl.scroll_offset.y == 0 and tl.current.thread_id == held and tl.cursor == 3
        top = "\n".join(painted(tl)[:3])
        assert "Report number -11" in top and "Report number -10" in top


async def test_a_reload_keeps_the_cursor_thread_and_another_list_starts_at_the_top(tmp_path):
    first = [summary(i) for i in range(100)]
    other = [summary(i) for i in range(1000, 1100)]
    app = PaneHost(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(ThreadPane)
        tl = pane.thread_list
        pane.show_loading("a")
        pane.show_rows(ListRows(first), None, "a")
        await pilot.pause()
        tl.cursor = 40
        await pilot.pause()
        held = tl.current.thread_id
        # A reload of the same list (R) with two new threads on top: still on its thread.
        pane.show_loading("a")
        pane.show_rows(ListRows([summary(-2), summary(-1)] + first), None, "a")
        await pilot.pause()
        assert tl.current.thread_id == held and tl.cursor == 42
        # Another list starts at its first row.
        pane.show_loading("b")
        pane.show_rows(ListRows(other), None, "b")
        await pilot.pause()
        assert tl.cursor == 0 and tl.scroll_offset.y == 0


async def test_threads_that_arrive_above_the_screen_are_announced_and_g_shows_them(tmp_path):
    # Issue 39: at start the cached rows were on screen, then the server's listing brought more
    # new threads than the screen holds: they landed above the cursor, out of view, unsaid.
    # The cursor stays on the user's thread; the status line says how many are above; g (or
    # scrolling up) shows them and the marker goes.
    from textual.widgets import Static

    known = [summary(i) for i in range(100)]
    arrived = [summary(-n) for n in range(40, 0, -1)]  # newest first, as listed
    app = PaneHost(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(ThreadPane)
        pane.marks.request()  # what the marks' timer does on a slow run: the closed service asks nothing
        tl = pane.thread_list

        def status() -> str:
            return str(pane.query_one("#threads-status", Static).render())

        pane.show_loading("a")
        pane.show_rows(ListRows(known), None, "a", cached=True)  # the cache's rows at start
        await pilot.pause()
        tl.focus()
        held = tl.current.thread_id
        pane.show_rows(ListRows(arrived + known), None, "a")  # the server's listing
        await pilot.pause()
        assert tl.current.thread_id == held and tl.cursor == 40  # the user's row, not another
        assert "Report number 0" in painted(tl)[0]  # still on the same screen line
        assert "↑ 40 new above (g)" in status(), status()
        await pilot.press("k")  # one up: one of them in view, 39 still above
        assert "↑ 39 new above (g)" in status(), status()
        await pilot.press("g")
        assert tl.scroll_offset.y == 0 and "Report number -40" in painted(tl)[0]
        assert "new above" not in status(), status()


def styles(strip) -> list:
    return [segment.style for segment in strip]


async def test_news_folded_in_paints_the_new_rows_only_and_a_new_mark_its_row_only():
    """Issue 39: a poll's news folded into the list (rows inserted above, the others moved down)
    paints the new rows only: a row that only moved keeps its painted line (before: every fold
    painted the whole screen again, some 40 rows a poll, between the user's keys). New triage
    marks paint again the rows whose mark changed, not the others."""
    from dataclasses import replace

    from mailtriage.application import ThreadStatus

    items = [summary(i) for i in range(100)]
    app = ListHost(ListRows(items))
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.pause()
        tl = app.query_one(ThreadList)
        await pilot.press("j")
        await pilot.pause()
        before = [tl.render_line(y) for y in range(10)]
        tl.replace_rows(ListRows([summary(-2), summary(-1), *items]))
        await pilot.pause()
        assert tl.cursor == 3 and tl.current is items[1]  # the cursor stays on its thread
        assert tl.scroll_offset.y == 0 and "Report number -2" in tl.render_line(0).text  # the top in view
        after = [tl.render_line(y) for y in range(12)]
        assert [after[y + 2] for y in range(10)] == before  # the same lines, two lines down
        assert all(after[y + 2] is before[y] for y in range(10))  # not painted again
        assert after[0] is not before[0] and after[1] is not before[1]

        updated = replace(items[5], message_count=9)  # a poll's update of a known thread: painted again
        tl.replace_rows(ListRows([summary(-2), summary(-1), *items[:5], updated, *items[6:]]))
        await pilot.pause()
        assert " 9 " in tl.render_line(7).text and tl.render_line(8) is after[8]

        kept = [tl.render_line(y) for y in range(12)]
        tl.set_statuses({items[3].thread_id: ThreadStatus(issue="SEC-0007")})
        await pilot.pause()
        assert "SEC-0007" in tl.render_line(5).text and tl.render_line(5) is not kept[5]
        assert all(tl.render_line(y) is kept[y] for y in range(12) if y != 5)


class FocusHost(ListHost):
    """The list beside another focusable widget, as Enter moves the focus into the reader."""

    def compose(self) -> ComposeResult:
        from textual.widgets import Button  # why: only this host has a second focusable widget

        yield ThreadList()
        yield Button("reader")


async def test_a_focus_move_repaints_the_cursor_row_only_and_a_theme_change_every_row():
    """Issue 35: Enter moves the focus into the reader; only the cursor row's style follows the
    focus, so the other rows are not painted again (before: every visible row was, ~40-100 ms
    of an Enter under load). A theme change still paints every row in its colours."""
    from mailtriage.themes import THEMES  # why: registers the themes the app uses

    app = FocusHost(ListRows([summary(i) for i in range(40)]))
    async with app.run_test(size=(100, 20)) as pilot:
        for theme in THEMES:
            app.register_theme(theme)
        app.theme = "mailtriage-dark"
        await pilot.pause()
        tl = app.query_one(ThreadList)
        cursor_focused, row = tl.render_line(0), tl.render_line(3)
        app.query_one("Button").focus()
        await pilot.pause()
        assert not tl.has_focus
        cursor_blurred = tl.render_line(0)
        assert cursor_blurred.text == cursor_focused.text
        assert styles(cursor_blurred) != styles(cursor_focused)  # the focus move shows
        assert tl.render_line(3) is row  # the same painted strip: not painted again
        tl.focus()
        await pilot.pause()
        assert styles(tl.render_line(0)) == styles(cursor_focused)
        app.theme = "mailtriage-light"
        await pilot.pause()
        light = tl.render_line(3)
        assert light.text == row.text and styles(light) != styles(row)
