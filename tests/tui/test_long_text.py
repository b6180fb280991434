"""The proposal dialog's long multiline field (a batch's Messages list, issue 35) paints
what a Static paints, row for row, while rendering only the chunks of lines on screen."""

from textual.app import App
from textual.containers import VerticalScroll
from textual.widgets import Static

from mailtriage.tui.dialogs.proposal import LongText
from mailtriage.tui.sanitize import inert_text

LINES = "\n".join(
    f"{n:>4}. Report {n}: overflow in component {n % 97} — from Reporter {n % 40} <r{n % 40}@example.net>"
    + (" — in INBOX — now unread, flagged" * (n % 3)) + ("" if n % 7 else "\n")  # long, short and blank lines
    for n in range(1, 201))


class Host(App):
    CSS = ".m { padding: 0 2; height: auto; } VerticalScroll { height: 1fr; }"

    def compose(self):
        with VerticalScroll():
            yield Static(inert_text(LINES, multiline=True), classes="m", id="static")
            yield LongText(inert_text(LINES, multiline=True), classes="m", id="long")


async def test_long_text_paints_the_rows_a_static_paints_and_only_the_chunks_on_screen():
    for width in (80, 160):
        app = Host()
        async with app.run_test(size=(width, 30)) as pilot:
            await pilot.pause()
            static, long = app.query_one("#static"), app.query_one("#long")
            assert long.size == static.size and static.size.height > 200  # wrapped rows and blank lines counted
            assert len(long._chunks) == 0  # below the screen: nothing rendered for it yet
            rows = [long.render_line(y) for y in range(long.size.height)]
            assert [list(r) for r in rows] == [list(static.render_line(y)) for y in range(static.size.height)]
            assert len(long._chunks) == -(-len(LINES.split("\n")) // LongText.CHUNK)
