"""A Static whose text is wrapped once and rendered only where it shows (issue 33).

A Static wraps its whole text to learn its height (the layout), then wraps all of it again
and renders every row to paint any of them: in the reading pane, every message's header and
body was wrapped for the layout of the frame after Enter (~1.5 ms for a 30-line body, five
bodies for a five-message thread, on screen or not), and the body on screen was wrapped and
rendered whole a second time for the paint.

:class:`WrappedText` counts its rows without wrapping (a line that fits its width is one row;
only a longer one is cut, where Textual's Content cuts it) and renders a chunk of
:attr:`WrappedText.CHUNK` lines when the compositor first asks for one of its rows, as the
Static would render those lines (Content wraps line by line, so a chunk's rows are the
Static's rows for those lines). The counts and the chunks are kept until the text, the width
or the style changes: a scroll renders only the chunks it brings into view. What a Static
with another kind of content, text rule or alignment does, and the paint while a mouse
selection is in it, are the Static's own.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.content import Content
from textual.strip import Strip
from textual.visual import Visual
from textual.widgets import Static

from mailtriage.tui.textual_private import SizedInPlace, wrap_cuts


def shifted(strip: Strip, lines: int) -> Strip:
    """``strip`` with the line of each segment's text offset (what a mouse selection reads)
    ``lines`` further down: a chunk's rows, numbered from its own first line, as the whole
    text's rows."""
    segments = []
    for segment in strip:
        style = segment.style
        offset = style.meta.get("offset") if style is not None else None
        if style is not None and offset is not None:
            segment = Segment(segment.text, style + RichStyle.from_meta({"offset": (offset[0], offset[1] + lines)}),
                              segment.control)
        segments.append(segment)
    return Strip(segments, strip.cell_length)


class WrappedText(SizedInPlace, Static):
    """A Static of text, laid out by counting rows and painted a chunk of lines at a time."""

    #: Lines rendered together on the first paint of any of their rows.
    CHUNK = 8

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: (the visual, width, style, the first line of each line, the first row of each
        #: chunk and the total last) for the text on show.
        self._layout: tuple[Content, object, list[int], list[int]] | None = None
        self._chunks: dict[int, list[Strip]] = {}  # chunk -> its rows, for the layout

    def _plain_wrap(self) -> bool:
        """Whether the text is wrapped as this class counts: no rule it does not follow."""
        rules: Any = self.styles
        return (rules.get("text_wrap", "wrap") != "nowrap" and not rules.get("line_pad", 0)
                and tuple(self.styles.content_align) == ("left", "top"))

    def _starts(self, width: int) -> tuple[Content, list[int], list[int]] | None:
        """(the text, the character offset of each line and the end, the first row of each chunk
        and the total last) at ``width``; None for what the Static lays out and paints itself."""
        visual = self.visual
        if not isinstance(visual, Content) or not width:
            return None
        key = (width, self.visual_style)
        layout = self._layout
        if layout is not None and layout[0] is visual and layout[1] == key:
            return visual, layout[2], layout[3]
        if not self._plain_wrap():
            return None
        self._chunks = {}
        lines = visual.plain.split("\n")
        rules: Any = self.styles
        fold = rules.get("text_overflow", "fold") == "fold"
        offsets, at = [], 0
        for line in lines:
            offsets.append(at)
            at += len(line) + 1
        offsets.append(at)
        starts, row, size = [], 0, self.CHUNK
        for first in range(0, len(lines), size):
            starts.append(row)
            chunk = lines[first:first + size]
            if any("\t" in line for line in chunk):
                # Tabs: counted by the rows painted (kept for the paint). Content.get_height counts
                # a tabbed line of wide characters a row short of its paint, and the chunk's last
                # row was never shown (tests/tui/test_wrapped_text.py).
                row += len(self._render_chunk(visual, offsets, first // size, width))
            else:
                # Content.get_height's wrap, counted without making the lines: a line that fits
                # is a row; a longer one, its cuts (rich's divide_line, as Content cuts) and one more.
                row += sum(1 if len(line) <= width and cell_len(line) <= width
                           else len(wrap_cuts(line, width, fold)) + 1 for line in chunk)
        starts.append(row)
        self._layout = (visual, key, offsets, starts)
        return visual, offsets, starts

    def _render_chunk(self, visual: Content, offsets: list[int], chunk: int, width: int) -> list[Strip]:
        """The rows of ``chunk`` (its lines as the Static renders them), kept until the layout changes."""
        first = chunk * self.CHUNK
        last = min(first + self.CHUNK, len(offsets) - 1)
        piece = visual[offsets[first]:offsets[last] - 1]
        rows = Visual.to_strips(self, piece, width, None, self.visual_style)
        if first:  # the rows' text offsets (mouse selection) count the lines from the text's first
            rows = [shifted(row, first) for row in rows]
        self._chunks[chunk] = rows
        return rows

    def get_content_height(self, container, viewport, width: int) -> int:  # type: ignore[no-untyped-def]
        layout = self._starts(width)
        if layout is None:
            return super().get_content_height(container, viewport, width)
        return layout[2][-1]

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        layout = None if self.text_selection is not None else self._starts(width)
        if layout is None:
            return super().render_line(y)
        visual, offsets, starts = layout
        chunk = bisect_right(starts, y) - 1
        if not 0 <= chunk < len(starts) - 1:
            return Strip.blank(width, self.visual_style.rich_style)
        rows = self._chunks.get(chunk)
        if rows is None:
            rows = self._render_chunk(visual, offsets, chunk, width)
        offset = y - starts[chunk]
        return rows[offset] if offset < len(rows) else Strip.blank(width, self.visual_style.rich_style)
