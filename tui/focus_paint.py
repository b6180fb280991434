"""A focus change that repaints only what the widget's own focus watcher repaints (issues 33, 35).

Textual's ``Widget._on_focus`` and ``_on_blur`` repaint the whole widget (``refresh()``) on every
focus move, whatever its look depends on. Enter on a row moves the focus from the thread list
to the reading pane's view, and q back: the list's blur repainted its every visible row (all
its cached lines styled again, ~1.4 ms) and the view's focus its whole area, both in the frame
after the body's, which an r typed at once waits behind, and whose box then spanned the whole
screen. Nothing in either widget is styled by its focus (no ``:focus`` rule: app.tcss, and
tests/tui/test_open_restyle.py checks that a restyle would change nothing): the list's cursor row
is the one thing that follows it, repainted by its ``watch_has_focus``; the view shows nothing of it
(the pane's ``-active`` border does, tui/layout.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Callable

from textual import events
from textual.dom import DOMNode, NoScreen
from textual.geometry import Region
from textual.widget import Widget

from mailtriage.tui.textual_private import SizedInPlace, output_pending
from mailtriage.tui.wrapped_text import WrappedText

__all__ = ["OwnFocusPaint", "PaintedText", "SizedInPlace", "edges_repainted"]

#: Seconds after which :meth:`PaintedText.when_painted` calls back though nothing was painted
#: (the reading pane hidden behind a zoomed pane, a header scrolled out by long notes).
PAINT_WAIT = 0.5
#: Seconds between two looks whether the painted frame is written yet, and how many looks at most.
WRITE_WAIT, WRITE_WAITS = 0.002, 20  # SizedInPlace: the reading pane's view takes both


class OwnFocusPaint:
    """A mixin, before the widget's class: Focus and Blur set ``has_focus`` and tell the parent,
    as Textual's handlers do, without their repaint of the whole widget (``prevent_default``: the
    handlers of the classes after this one in the MRO, Widget's among them, are not called), and
    ``focus()`` asks for the focus as Textual's does, without its repaint of the whole widget
    first (q from the reader focused the list: every row painted again)."""

    def focus(self, scroll_visible: bool = True):  # type: ignore[no-untyped-def]
        def set_focus(widget) -> None:  # type: ignore[no-untyped-def]
            try:
                widget.screen.set_focus(widget, scroll_visible=scroll_visible)
            except NoScreen:  # removed meanwhile, as in Textual's
                pass

        self.app.call_later(set_focus, self)  # type: ignore[attr-defined]
        return self

    def _on_focus(self, event: events.Focus) -> None:
        event.prevent_default()
        self.has_focus = True  # type: ignore[attr-defined]  # its watcher repaints what follows the focus
        if self.parent is not None:  # type: ignore[attr-defined]
            self.parent.post_message(events.DescendantFocus(self))  # type: ignore[attr-defined,arg-type]

    def _on_blur(self, event: events.Blur) -> None:
        event.prevent_default()
        self.has_focus = False  # type: ignore[attr-defined]
        if self.parent is not None:  # type: ignore[attr-defined]
            self.parent.post_message(events.DescendantBlur(self))  # type: ignore[attr-defined,arg-type]


def _edges(widget: Widget) -> tuple[Region, ...]:
    """The four edges of ``widget`` (its border's rows and columns), in the content's
    coordinates ``refresh`` takes."""
    width, height = widget.outer_size
    left, top = widget.content_offset
    return (Region(-left, -top, width, 1), Region(-left, height - top - 1, width, 1),
            Region(-left, -top, 1, height), Region(width - left - 1, -top, 1, height))


@contextmanager
def edges_repainted(nodes: Iterable[DOMNode]) -> Iterator[None]:
    """While ``nodes`` are restyled for a change of their border alone (the focused pane's
    ``-active``, tui/layout.py), a whole repaint they ask for repaints their four edges: Enter's
    focus move repainted the thread pane whole, every row of its list written to the terminal
    again in the body's frame (tmux traces, issue 35: 19 kB written for that frame, 8.7 kB
    without the thread pane's area). A layout, a recompose or regions asked for pass as asked."""
    widgets = [node for node in nodes if isinstance(node, Widget)]

    def edges_of(widget: Widget):  # type: ignore[no-untyped-def]
        whole = type(widget).refresh

        def refresh(*regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False):  # type: ignore[no-untyped-def]
            if not (regions or layout or recompose) and repaint and widget.outer_size:
                regions = _edges(widget)
            return whole(widget, *regions, repaint=repaint, layout=layout, recompose=recompose)
        return refresh

    for widget in widgets:
        widget.refresh = edges_of(widget)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for widget in widgets:
            del widget.refresh


class PaintedText(WrappedText):
    """The reader's first message header: calls :attr:`painted` back, once, in the turn after the
    frame that first draws a line of it (the frame that shows the open thread's body)."""

    painted: Callable[[], None] | None = None

    def when_painted(self, callback: Callable[[], None]) -> None:
        """``callback`` once the text just given is drawn. ``call_after_refresh`` ran it before
        the frame when the screen was not yet told of the changes (the widgets tell it a turn
        later), so the work it started after Enter (the reply built ahead, the case's read) took
        the UI thread's turns and the GIL while the body was painted (issue 35)."""
        if not self.display:  # a thread without messages: nothing of it to wait for
            self.painted = None
            self.call_after_refresh(callback)
            return
        self.painted = callback

        def unpainted() -> None:
            if self.painted is callback:
                self.painted = None
                callback()
        self.set_timer(PAINT_WAIT, unpainted)

    def render_line(self, y: int):  # type: ignore[no-untyped-def]
        callback, self.painted = self.painted, None
        if callback is not None:
            self.call_later(self._when_written, callback, WRITE_WAITS)  # a message: after this frame
        return super().render_line(y)

    def _when_written(self, callback: Callable[[], None], waits: int) -> None:
        """``callback`` once the frame is on the terminal: the UI thread idle meanwhile (a short
        timer), so the writer thread has the GIL; after WRITE_WAITS checks in any case."""
        if waits and output_pending(self.app):
            self.set_timer(WRITE_WAIT, partial(self._when_written, callback, waits - 1))
            return
        callback()
