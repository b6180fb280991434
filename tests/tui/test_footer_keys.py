"""The key footer mounts its keys again only when they change (issue 39: a list's news in a
storm refreshed the bindings each poll, and each refresh mounted and styled ~20 keys on the
UI thread, between the user's keys)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from mailtriage.tui.footer import KeyFooter
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.rows import ListRows, merge_news
from mailtriage.tui.textual_private import FooterKey
from tests.tui.test_thread_list import BASE, summary


class Other(Static, can_focus=True):
    BINDINGS = [("y", "noop", "Other key")]

    def action_noop(self) -> None:
        pass


class FooterHost(App):
    def compose(self) -> ComposeResult:
        yield ThreadList()
        yield Other("other")
        yield KeyFooter()

    def on_mount(self) -> None:
        tl = self.query_one(ThreadList)
        tl.set_rows(ListRows([summary(i) for i in range(50)]))
        tl.focus()


def _keys(app: App) -> list[FooterKey]:
    return list(app.query_one(KeyFooter).query(FooterKey))


async def _settled(pilot) -> None:
    for _ in range(3):
        await pilot.pause()


async def test_news_that_leave_the_keys_as_they_were_keep_the_footer_and_a_change_still_shows():
    app = FooterHost()
    async with app.run_test(size=(140, 20)) as pilot:
        await _settled(pilot)
        tl = app.query_one(ThreadList)
        before = _keys(app)
        assert before
        for n in range(3):  # three polls' news: rows inserted, the bindings refreshed each time
            news = summary(1000 + n)
            news = type(news)(news.thread_id, "News", news.root_message_id, news.sender, BASE, 1)
            tl.replace_rows(ListRows(merge_news(list(tl.rows.items), [news])))
            await _settled(pilot)
        assert len(tl.rows) == 53
        assert [id(k) for k in _keys(app)] == [id(k) for k in before]  # not mounted again
        # Other bindings (another widget focused) and another width still recompose the keys.
        app.query_one(Other).focus()
        await _settled(pilot)
        assert "Other key" in [k.description for k in _keys(app)]
        tl.focus()
        await _settled(pilot)
        assert "Other key" not in [k.description for k in _keys(app)]
        shown = [(k.key, k.description) for k in _keys(app)]
        await pilot.resize_terminal(150, 20)
        await _settled(pilot)
        assert [(k.key, k.description) for k in _keys(app)] == shown
        await pilot.resize_terminal(40, 20)  # too narrow for the long form: the compact one
        await _settled(pilot)
        assert app.query_one(KeyFooter).compact and all(k.has_class("-compact") for k in _keys(app))


async def test_a_focus_move_styles_each_new_key_once_in_both_forms():
    """Issue 35: each key of a recompose was styled on its mount, then again twice (its
    ``compact`` started True, -compact added, and the footer's data bind set it back), ~6 ms a
    key on the loaded machine for every focus move. Now a key is made in the footer's form."""
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
        for width in (140, 40):
            await pilot.resize_terminal(width, 20)
            await _settled(pilot)
            for focus in (Other, ThreadList, Other, ThreadList):
                restyled.clear()
                app.query_one(focus).focus()
                await _settled(pilot)
                keys = _keys(app)
                assert ("Other key" in [k.description for k in keys]) == (focus is Other)
                assert [k for k in restyled if isinstance(k, FooterKey)] == []
                assert all(k.has_class("-compact") == (footer.compact or k.has_class("-command-palette"))
                           for k in keys)
                forms.append(footer.compact)
        assert set(forms) == {True, False}  # both forms were seen
