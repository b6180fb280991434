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

from textual import events
from textual.dom import NoScreen

from mailtriage.tui.textual_private import SizedInPlace

__all__ = ["OwnFocusPaint", "SizedInPlace"]  # SizedInPlace: the reading pane's view takes both


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
