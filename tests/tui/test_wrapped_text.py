"""The reading pane's text (tui/wrapped_text.py) lays out and paints what a Static does, row for
row, while it wraps its text once and renders only the chunks of lines on screen (issue 33)."""

from rich.text import Text
from textual.app import App
from textual.containers import VerticalScroll
from textual.widgets import Static

from mailtriage.tui.sanitize import inert_text
from mailtriage.tui.wrapped_text import WrappedText

# Long, short, blank, tabbed, wide (CJK), hidden-character and styled lines; a trailing newline.
LINES = "\n".join(
    f"{n:>4}. Report {n}: overflow in component {n % 97} — from Reporter {n % 40} <r{n % 40}@example.net>"
    + (" — in INBOX — now unread, flagged" * (n % 3)) + ("" if n % 7 else "\n")
    + ("\tindented\tby tabs" if n % 11 == 0 else "") + (" 報告書の件名が長い" * (n % 5) if n % 13 == 0 else "")
    + ("\u202e hidden" if n % 17 == 0 else "") + ("x" * 300 if n % 19 == 0 else "")
    for n in range(1, 121)) + "\n" + "\n".join(  # every length about each width's edge, cut and folded
    ("y" * k if k % 2 else "w " * (k // 2)) for k in range(50, 170)) + "\n"


#: The chunks with a tab: counted by painting them (WrappedText._starts), so rendered with the layout.
TABBED = {i // WrappedText.CHUNK for i, line in enumerate(LINES.split("\n")) if "\t" in line}


def styled() -> Text:
    text = inert_text(LINES, multiline=True)
    text.stylize("bold", 10, 400)
    text.stylize("italic red", 2000, 2600)
    return text


class Host(App):
    CSS = ".m { padding: 1 1 0 1; height: auto; } VerticalScroll { height: 1fr; }"

    def compose(self):
        with VerticalScroll():
            yield Static(styled(), classes="m", id="static")
            yield WrappedText(styled(), classes="m", id="wrapped")


async def test_wrapped_text_paints_the_rows_a_static_paints_and_only_the_chunks_on_screen():
    for width in (60, 160):
        app = Host()
        async with app.run_test(size=(width, 30)) as pilot:
            await pilot.pause()
            static, wrapped = app.query_one("#static", Static), app.query_one("#wrapped", WrappedText)
            assert wrapped.size == static.size and static.size.height > 250  # wrapped rows and blank lines counted
            assert set(wrapped._chunks) == TABBED  # below the screen: nothing else rendered for it yet
            rows = [wrapped.render_line(y) for y in range(wrapped.size.height)]
            assert [list(r) for r in rows] == [list(static.render_line(y)) for y in range(static.size.height)]
            assert len(wrapped._chunks) == -(-len(LINES.split("\n")) // WrappedText.CHUNK)

            # an update shows the new text, counted again
            wrapped.update(Text("one\ntwo"))
            static.update(Text("one\ntwo"))
            await pilot.pause()
            assert wrapped.size == static.size and wrapped.size.height == 2
            assert [list(wrapped.render_line(y)) for y in range(2)] == [list(static.render_line(y)) for y in range(2)]


async def test_only_the_rows_on_screen_are_rendered():
    class Top(App):
        CSS = ".m { height: auto; } VerticalScroll { height: 1fr; }"

        def compose(self):
            with VerticalScroll():
                yield WrappedText(styled(), classes="m", id="wrapped")

    app = Top()
    async with app.run_test(size=(160, 20)) as pilot:
        await pilot.pause()
        wrapped = app.query_one("#wrapped", WrappedText)
        assert wrapped.size.height > 240
        assert set(wrapped._chunks) - TABBED == {0, 1, 2} - TABBED  # the 20 rows on screen: lines 0-19 at most
        app.query_one(VerticalScroll).scroll_end(animate=False)
        await pilot.pause()
        last = len(wrapped._layout[3]) - 2
        untabbed = set(range(last + 1)) - TABBED
        assert last in wrapped._chunks and len(set(wrapped._chunks) - TABBED) < len(untabbed)  # not the middle's


async def test_every_line_of_a_text_with_tabs_and_wide_characters_is_shown():
    # Textual counts such a line a row shorter than it paints it (Content.get_height: 5 rows,
    # the paint: 6, at width 16): the chunk's last line, "dﾊword", was never shown. A chunk
    # with tabs is counted by the rows it paints.
    text = ("\n\n\n\nb\t\u200d👩\u200d💻\u200d👩\u200d💻\tﾊ\t😀\u200d\n\n\ndﾊword\n"
            "\u200dxxxxxxxxxxxxxxxxxxxxxxxxxxx  ")

    class Top(App):
        CSS = ".m { padding: 1 1 0 1; height: auto; } VerticalScroll { height: 1fr; }"

        def compose(self):
            with VerticalScroll():
                yield WrappedText(inert_text(text, multiline=True), classes="m", id="wrapped")

    app = Top()
    async with app.run_test(size=(18, 30)) as pilot:  # the text 16 cells wide
        await pilot.pause()
        wrapped = app.query_one("#wrapped", WrappedText)
        assert wrapped.content_region.width == 16
        shown = [wrapped.render_line(y).text for y in range(wrapped.size.height)]
        assert "dﾊword" in shown and shown[-1].rstrip() == "xxx", shown
