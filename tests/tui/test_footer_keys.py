"""The key footer: its keys drawn as one line that follows the bindings without a widget
mounted or restyled (issue 35: a focus move recomposed ~20 key widgets, and the frame after the
body's held them; issue 39: a list's news refreshed the bindings each poll)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from mailtriage.tui.footer import KeyFooter, KeyLine
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.rows import ListRows, merge_news
from tests.tui.test_thread_list import BASE, summary


class Other(Static, can_focus=True):
    BINDINGS = [("y", "noop", "Other key")]
    pressed = 0

    def action_noop(self) -> None:
        self.pressed += 1


class FooterHost(App):
    def compose(self) -> ComposeResult:
        yield ThreadList()
        yield Other("other")
        yield KeyFooter()

    def on_mount(self) -> None:
        tl = self.query_one(ThreadList)
        tl.set_rows(ListRows([summary(i) for i in range(50)]))
        tl.focus()


def _keys(app: App) -> list[str]:
    """The descriptions of the keys the footer drew last."""
    return [k.description for k in app.query_one(KeyFooter).shown()]


async def _settled(pilot) -> None:
    for _ in range(3):
        await pilot.pause()


async def test_news_that_leave_the_keys_as_they_were_keep_the_footer_and_a_change_still_shows():
    app = FooterHost()
    async with app.run_test(size=(140, 20)) as pilot:
        await _settled(pilot)
        tl = app.query_one(ThreadList)
        footer = app.query_one(KeyFooter)
        before, widgets = _keys(app), list(footer.children)
        assert "Open" in before
        for n in range(3):  # three polls' news: rows inserted, the bindings refreshed each time
            news = summary(1000 + n)
            news = type(news)(news.thread_id, "News", news.root_message_id, news.sender, BASE, 1)
            tl.replace_rows(ListRows(merge_news(list(tl.rows.items), [news])))
            await _settled(pilot)
        assert len(tl.rows) == 53
        assert list(footer.children) == widgets and _keys(app) == before  # nothing mounted again
        # Other bindings (another widget focused) and another width still change the keys.
        app.query_one(Other).focus()
        await _settled(pilot)
        assert "Other key" in _keys(app)
        tl.focus()
        await _settled(pilot)
        assert "Other key" not in _keys(app)
        shown = _keys(app)
        await pilot.resize_terminal(150, 20)
        await _settled(pilot)
        assert _keys(app) == shown
        await pilot.resize_terminal(40, 20)  # too narrow for the long form: the compact one
        await _settled(pilot)
        assert footer.compact and footer.query_one(KeyLine).has_class("-compact")


async def test_a_focus_move_mounts_and_restyles_no_footer_widget_in_both_forms():
    """Issue 35: every focus move recomposed the footer (~20 keys removed, mounted and styled,
    then laid out in a second frame after the body's). Now the line of keys is drawn again:
    no widget of the footer is mounted, removed or restyled."""
    app = FooterHost()
    async with app.run_test(size=(140, 20)) as pilot:
        await _settled(pilot)
        restyled: list[object] = []
        real = app.update_styles

        def update_styles(node, animate: bool = True) -> None:
            restyled.append(node)
            real(node, animate)
        app.update_styles = update_styles
        footer = app.query_one(KeyFooter)
        forms = []
        for width in (140, 20):  # the same form for both widgets' keys at each width
            await pilot.resize_terminal(width, 20)
            await _settled(pilot)
            widgets = list(footer.children)
            for focus in (Other, ThreadList, Other, ThreadList):
                restyled.clear()
                app.query_one(focus).focus()
                await _settled(pilot)
                assert ("Other key" in _keys(app)) == (focus is Other)
                assert [k for k in restyled if k in widgets] == []
                assert list(footer.children) == widgets
                forms.append(footer.compact)
        assert set(forms) == {True, False}  # both forms were seen


async def test_focus_moves_in_a_burst_leave_the_keys_of_the_last_as_a_recompose_shows_them():
    """The in-place update of the footer before this one counted a key still being removed as
    shown: two updates before the removal ran (a move to a pane with fewer keys and back) left
    the list's keys three short. The line now reads the bindings as they are when it is drawn."""
    app = FooterHost()
    async with app.run_test(size=(140, 20)) as pilot:
        await _settled(pilot)
        footer = app.query_one(KeyFooter)
        listed = _keys(app)
        for _ in range(3):
            app.screen.set_focus(app.query_one(Other))
            app.screen.set_focus(app.query_one(ThreadList))
        app.screen.set_focus(app.query_one(Other))
        await pilot.pause()
        app.screen.set_focus(app.query_one(ThreadList))
        await _settled(pilot)
        assert _keys(app) == listed
        footer.refresh(recompose=True)  # what a recompose shows: the same keys
        await _settled(pilot)
        assert _keys(app) == listed


async def test_a_click_on_a_key_presses_it_and_a_disabled_key_rings_the_bell():
    app = FooterHost()
    async with app.run_test(size=(140, 20)) as pilot:
        other = app.query_one(Other)
        other.focus()
        await _settled(pilot)
        line = app.query_one(KeyLine)
        [(key, region)] = [(k, r) for k, r in line.key_regions() if k.description == "Other key"]
        await pilot.click(KeyLine, offset=(region.x - line.region.x + 1, 0))
        await _settled(pilot)
        assert other.pressed == 1
        rung = []
        app.bell = lambda: rung.append(1)
        line._spans = [(s, e, k._replace(disabled=True)) for s, e, k in line._spans]
        await pilot.click(KeyLine, offset=(region.x - line.region.x + 1, 0))
        await _settled(pilot)
        assert other.pressed == 1 and rung == [1]
