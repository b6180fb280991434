"""What Enter costs the UI thread after the body (issues 33 and 35): the focus move restyles the
two panes alone, not their subtrees, and the footer's keys follow the focus in place.

Pilot tests on a real mbox project (tests/tui/helpers.py)."""

from __future__ import annotations

import re
import traceback

import pytest
from rich.cells import cell_len

from mailtriage.tui import textual_private
from mailtriage.tui.dialogs.ahead import dialog_css_loaded
from mailtriage.tui.footer import KeyFooter
from mailtriage.tui.panes.reader import ReaderPane, ThreadView
from mailtriage.tui.panes.sources import SourcesPane
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.panes.threads import ThreadPane
from tests.tui.helpers import mail, make_app, mbox_project, screen_text, settle, until

# What they test is made 0.3 s after the first list (off in the other TUI tests: tests/tui/conftest.py).
pytestmark = pytest.mark.usefixtures("dialogs_ahead")


def _border(widget) -> tuple:
    return tuple(edge for edge in widget.styles.border)


def _styles(widget) -> tuple:
    """What a widget is styled with: its rules and its component classes' rules."""
    return (widget.styles.css,
            {name: widget.get_component_styles(name).css for name in sorted(widget.COMPONENT_CLASSES)})


def _keys(app) -> list[tuple]:
    """The footer's keys as they show: key, text, action, disabled, tooltip."""
    return [tuple(k) for k in app.screen.query_one(KeyFooter).shown()]


async def test_enter_restyles_the_two_panes_borders_and_nothing_inside_them(tmp_path):
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        threads, reader = app.screen.query_one(ThreadPane), app.screen.query_one(ReaderPane)
        sources = app.screen.query_one(SourcesPane)
        list_border, reader_border, sources_border = _border(threads), _border(reader), _border(sources)
        assert list_border != reader_border  # the focused pane's border stands out
        restyled: list[object] = []
        update_nodes = app.stylesheet.update_nodes
        set_focus = app.screen.set_focus

        def recording(nodes, animate: bool = False) -> None:
            nodes = list(nodes)
            restyled.extend(nodes)
            update_nodes(nodes, animate)

        def focusing(*args, **kwargs) -> None:  # what the focus move itself restyles
            app.stylesheet.update_nodes = recording
            try:
                set_focus(*args, **kwargs)
            finally:
                app.stylesheet.update_nodes = update_nodes

        app.screen.set_focus = focusing
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.focused, ThreadView)
        # The borders swapped; a pane the focus did not enter or leave kept its own.
        assert _border(reader) == list_border and _border(threads) == reader_border
        assert _border(sources) == sources_border
        # The focus move restyled the two panes, none of the widgets inside them (a :focus-within
        # rule walked both subtrees: every message's Statics, the search box, the status lines).
        assert threads in restyled and reader in restyled
        assert not [node for node in restyled if node not in (threads, reader)]
        del app.screen.set_focus  # Textual's own again
        await pilot.press("q")
        await settle(pilot)
        assert _border(threads) == list_border and _border(reader) == reader_border
        # the dialogs' stylesheet, loaded once after the first list, restyles every widget: not now
        await until(pilot, lambda: dialog_css_loaded(app), "the dialogs' stylesheet")
        restyled.clear()
        app.stylesheet.update_nodes = recording
        try:  # the list's and the view's own focus restyle neither (nor the messages in the view)
            await pilot.press("enter")
            await settle(pilot)
        finally:
            app.stylesheet.update_nodes = update_nodes
        assert isinstance(app.focused, ThreadView)
        inside = {*threads.walk_children(), *reader.walk_children()}
        assert threads in restyled and reader in restyled
        assert not [node for node in restyled if node in inside]
        # ... as no rule styles them by their focus: a restyle now (the focus moved) changes nothing
        listing = app.screen.query_one(ThreadList)
        for key in ("q", "enter"):  # (the dialogs' stylesheet restyled both while one had the focus)
            await pilot.press(key)
            await settle(pilot)
            for widget in (listing, reader.view):
                before = _styles(widget)
                app.stylesheet.update_nodes([widget])
                assert _styles(widget) == before, (key, widget)


async def test_the_footer_follows_the_focus_in_place_with_the_keys_a_recompose_shows(tmp_path):
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(KeyFooter)
        on_the_list = _keys(app)
        widgets = list(footer.children)
        await pilot.press("enter")
        await settle(pilot)
        in_the_reader = _keys(app)
        assert in_the_reader != on_the_list
        assert "Back to list" in [description for _, _, description, *_ in in_the_reader]
        # The line of keys was drawn again, no widget mounted...
        assert list(footer.children) == widgets
        # ... and shows what a recompose for the reader's bindings shows.
        footer.refresh(recompose=True)
        await settle(pilot)
        assert footer.children[0] is not widgets[0]  # composed anew
        assert _keys(app) == in_the_reader
        await pilot.press("q")
        await settle(pilot)
        assert _keys(app) == on_the_list


async def test_j_shows_the_rows_and_the_status_lines_position_in_one_screen_update(tmp_path):
    """The cursor's rows and the status line's n/N came in two updates, a message apart (the
    pane's Highlighted handler): now one update per key, the position with the rows."""
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        # the dialogs' stylesheet, loaded once after the first list, repaints every widget: not now
        await until(pilot, lambda: dialog_css_loaded(app), "the dialogs' stylesheet")
        await settle(pilot)
        listing = app.screen.query_one(ThreadList)
        status = app.screen.query_one("#threads-status")
        frames: list[tuple[int, str]] = []
        display = app._display

        def frame(screen, update) -> None:  # each screen update Textual writes
            if update is not None:
                frames.append((listing.cursor, str(status.render())))
            display(screen, update)

        app._display = frame
        for cursor in (1, 2):
            frames.clear()
            await pilot.press("j")
            await settle(pilot)
            assert [at for at, _ in frames] == [cursor]  # one update for the key
            assert frames[0][1].startswith(f"{cursor + 1}/3 ")


async def test_the_marked_pane_and_the_footer_follow_every_kind_of_focus_move(tmp_path):
    """Review of open3: the ``-active`` border and the footer's keys changed in place follow
    the focus however it moves (a pane key, Tab, Enter/q, a click, a dialog shown and gone, a
    resize across the 100-column fold), with a key preset, and show what a recompose shows."""
    from mailtriage.core.settings import UserSettings

    settings = UserSettings(tmp_path / "config.toml", {"keys": {"preset": "mutt"}})
    app = make_app(mbox_project(tmp_path / "p"), settings=settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        main = app.screen
        active_border = _border(main.query_one(ThreadPane))

        def keys() -> list[tuple]:  # as they show, and what a click or a hover on each does
            return _keys(app)

        async def check(step) -> None:
            focused = main.focused
            panes = list(main.query(".pane"))
            holding = [p for p in panes if focused is not None and p in focused.ancestors_with_self]
            assert [p for p in panes if p.has_class("-active")] == holding, step
            assert [p for p in panes if p.display and _border(p) == active_border] == holding, step
            if app.screen is main:
                footer = main.query_one(KeyFooter)
                shown = keys()
                footer.refresh(recompose=True)
                await settle(pilot)
                assert keys() == shown, step

        for key in ("2", "1", "3", "tab", "enter", "q", "5", "3", "question_mark", "escape"):
            await pilot.press(key)
            await settle(pilot)
            await check(key)
        # (a click on a row of the list focuses the list and opens the row: the reader has the focus then)
        # (the empty reader is folded to its one line at 80x24: the click lands on it)
        for target, kind, row in (("#thread-view", ThreadView, 0), ("#thread-list", ThreadView, 1)):
            assert main.query_one(target).region  # on screen at 80x24 (the sidebar is folded)
            await pilot.click(target, offset=(2, row))
            await settle(pilot)
            assert isinstance(main.focused, kind), target
            await check(target)
        for size in ((160, 50), (80, 24)):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            await check(size)
            for key in ("enter", "4", "2"):
                await pilot.press(key)
                await settle(pilot)
                await check((size, key))


def _long_threads(count: int) -> list:
    """``count`` one-message threads whose bodies are longer than the reading pane (it scrolls)."""
    return [mail(f"Long report {n}", f"Sender {n} <s{n}@example.com>", f"Thu, {1 + n:02d} Oct 2026 09:00:00 +0000",
                 f"<long-{n}@example.com>", "\n".join(f"Line {k} of report {n}." for k in range(40 + 10 * n)) + "\n")
            for n in range(count)]


async def test_enter_and_q_repaint_the_lists_cursor_row_alone_and_lay_the_screen_out_once(tmp_path, monkeypatch):
    """Textual's Focus and Blur handlers repaint the whole widget: Enter's blur painted every
    visible row of the list again (its cursor row is the one that changes), the view's focus its
    whole area, and the view's new height asked a second layout of the whole screen, all in the
    frame after the body's that an r typed at once waits behind (issue 35); q focused the list
    with Widget.focus(), which repainted it whole too."""
    app = make_app(mbox_project(tmp_path / "p", messages=_long_threads(4)))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        listing = app.screen.query_one(ThreadList)
        marks = app.screen.query_one(ThreadPane).marks  # the rows' marks repaint the list when they come
        for keys in (["enter"], ["q", "j"]):  # a thread read first: the view scrolls before the timed Enter
            await pilot.press(*keys)
            await until(pilot, lambda: all(row.thread_id in marks.statuses for row in listing.visible_rows()),
                        "the rows' marks")
            await settle(pilot)
        painted: list[int] = []
        render_line = ThreadList.render_line

        def counting(self, y: int):
            painted.append(self.scroll_offset.y + y)
            return render_line(self, y)
        monkeypatch.setattr(ThreadList, "render_line", counting)
        layouts: list[str] = []
        refresh_layout = app.screen._refresh_layout

        def laying_out(*args, **kwargs) -> None:
            layouts.append("layout")
            refresh_layout(*args, **kwargs)
        monkeypatch.setattr(app.screen, "_refresh_layout", laying_out)
        cursor = listing.cursor
        view = app.screen.query_one(ThreadView)
        height = view.virtual_size.height
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.focused, ThreadView) and app.screen.query_one(ReaderPane).thread is not None
        assert view.virtual_size.height != height and view.max_scroll_y > 0  # another height, scrolling
        assert set(painted) == {cursor}  # its blurred cursor row, not every row
        assert layouts == ["layout"]  # the body's, and no second one for the view's new height
        painted.clear()
        await pilot.press("q")
        await settle(pilot)
        assert app.focused is listing
        assert set(painted) == {cursor}


async def _rest_on_the_second_row(app, pilot) -> None:
    """The cursor rests on the second row until its thread is read ahead (Enter shows it in its own turn)."""
    await settle(pilot)
    listing = app.screen.query_one(ThreadList)
    await pilot.press("j")
    await until(pilot, lambda: app.screen.reading.thread_ahead.holds(listing.current), "the read ahead")


async def test_the_work_after_a_thread_is_shown_waits_for_the_frame_that_shows_its_body(tmp_path, monkeypatch):
    """The case's read starts once the body is on the screen (a personal message's reply built
    ahead fills its dialog then): asked with call_after_refresh, it started in the turn after Enter, before the body's
    frame, the screen not having heard of the reader's changes yet (its widgets tell it a turn
    later), and their workers took the UI thread's turns and the GIL while it painted (issue 35)."""
    app = make_app(mbox_project(tmp_path / "p", messages=_long_threads(2)))
    async with app.run_test(size=(160, 50)) as pilot:
        await _rest_on_the_second_row(app, pilot)
        reader = app.screen.query_one(ReaderPane)
        seen: list[tuple[str, object]] = []
        display = app._display

        def displaying(screen, renderable) -> None:
            display(screen, renderable)
            seen.append(("frame", reader.thread))
        monkeypatch.setattr(app, "_display", displaying)
        add_worker = app.workers.add_worker

        def adding(worker, *args, **kwargs):
            seen.append(("worker", worker.group))
            return add_worker(worker, *args, **kwargs)
        monkeypatch.setattr(app.workers, "add_worker", adding)
        await pilot.press("enter")
        await settle(pilot)
        assert reader.thread is not None
        case = seen.index(("worker", "case"))
        assert ("frame", reader.thread) in seen[:case], seen


async def test_enters_body_is_drawn_once_the_screen_is_idle_not_at_the_update_timers_next_tick(tmp_path, monkeypatch):
    """Textual draws a screen's updates on a 60 Hz timer whose ticks keep a fixed grid: Enter typed
    as the folder's rows showed waited for the next tick (1-10 ms in tmux traces, the UI thread
    idle meanwhile). The body's frame is drawn as soon as the screen is idle with it (issue 35)."""
    app = make_app(mbox_project(tmp_path / "p", messages=_long_threads(2)))
    async with app.run_test(size=(160, 50)) as pilot:
        await _rest_on_the_second_row(app, pilot)
        reader = app.screen.query_one(ReaderPane)
        by_timer: list[bool] = []  # per layout of the screen: drawn by the update timer's tick
        refresh_layout = app.screen._refresh_layout

        def laying_out(*args, **kwargs) -> None:
            by_timer.append(any(frame.name == "_tick" for frame in traceback.extract_stack()))
            refresh_layout(*args, **kwargs)
        monkeypatch.setattr(app.screen, "_refresh_layout", laying_out)
        await pilot.press("enter")
        await settle(pilot)
        assert reader.thread is not None and by_timer[:1] == [False], by_timer  # the body's layout
        assert "Line 0 of report" in screen_text(app)  # the body


_CONTROL = re.compile(r"\x1b\[(\d+);(\d+)H|\x1b\[([0-9;]*)m|\x1b\[[0-9;?]*[A-Za-z]|\r|\n")


def _written(text: str, cells: dict[tuple[int, int], tuple[str, str]]) -> set[tuple[int, int]]:
    """Apply a terminal write to ``cells`` ((row, column) -> (character, SGR)); the cells it wrote."""
    row = column = 0
    sgr = ""
    wrote: set[tuple[int, int]] = set()
    at = 0
    for control in [*_CONTROL.finditer(text), None]:
        for char in text[at:control.start() if control else len(text)]:
            cells[(row, column)] = (char, sgr)
            wrote.add((row, column))
            column += cell_len(char)
        if control is None:
            break
        at = control.end()
        if control.group(1):
            row, column = int(control.group(1)) - 1, int(control.group(2)) - 1
        elif control.group(3) is not None:
            sgr = "" if control.group(3) in ("", "0") else control.group(3)
    return wrote


async def test_enters_focus_move_writes_the_thread_panes_border_not_its_rows_and_the_screen_is_whole(tmp_path, monkeypatch):
    """The focused pane's border follows the focus (``-active``): its restyle repainted the thread
    pane whole, every row of the list written to the terminal again in the body's frame (19 kB for
    that frame in tmux traces, 8.7 kB without, issue 35). Its four edges are written now, and what
    the writes leave on the terminal is what a full render of the screen shows (no stale border)."""
    app = make_app(mbox_project(tmp_path / "p", messages=_long_threads(2)))
    async with app.run_test(size=(160, 50)) as pilot:
        await _rest_on_the_second_row(app, pilot)
        screen, console = app.screen, app.console
        cells: dict[tuple[int, int], tuple[str, str]] = {}
        _written(textual_private.full_frame(screen, console), cells)
        wrote: set[tuple[int, int]] = set()
        display = app._display

        def displaying(on, renderable) -> None:
            display(on, renderable)
            if renderable is not None:
                wrote.update(_written(renderable.render_segments(console), cells))
        monkeypatch.setattr(app, "_display", displaying)
        pane = screen.query_one(ThreadPane)
        listing = screen.query_one(ThreadList)
        cursor_row = listing.region.y + listing.cursor - int(listing.scroll_offset.y)
        await pilot.press("enter")
        await settle(pilot)
        assert not pane.has_class("-active") and screen.query_one(ReaderPane).has_class("-active")
        region = pane.region
        edges = {region.x, region.right - 1}
        inside = {(y, x) for (y, x) in wrote if region.y < y < region.bottom - 1 and y != cursor_row
                  and region.x <= x < region.right}
        assert inside and {x for _, x in inside} <= edges, sorted({x for _, x in inside} - edges)[:5]
        expected: dict[tuple[int, int], tuple[str, str]] = {}
        _written(textual_private.full_frame(screen, console), expected)
        assert cells == expected


async def test_a_step_of_the_dialogs_ahead_that_comes_while_enter_opens_a_thread_waits_for_it(tmp_path):
    """The dialogs made ready ahead (their imports, stylesheet, the hidden compose dialog's mount)
    came between Enter and its body on the terminal in tmux traces (issue 35): a step that comes
    then waits until the thread is on the screen (OPEN_HOLD at most), and runs at once otherwise."""
    app = make_app(mbox_project(tmp_path / "p", messages=_long_threads(2)))
    async with app.run_test(size=(160, 50)) as pilot:
        await _rest_on_the_second_row(app, pilot)
        reading, reader = app.screen.reading, app.screen.query_one(ReaderPane)
        ran: list[object] = []
        reading.after_open(lambda: ran.append("at once"))
        assert ran == ["at once"]
        reading.open_row(app.screen.query_one(ThreadList).current)  # what Enter's Opened does
        reading.after_open(lambda: ran.append(reader.thread))
        assert ran == ["at once"]
        await settle(pilot)
        assert ran == ["at once", reader.thread] and reader.thread is not None
