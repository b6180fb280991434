"""The reading pane's scroll keys (j k, space -, g G, and the arrows, PgUp/PgDn, Home/End) for a
screen whose text scrolls in one container while the focus may be elsewhere (a button): the
full headers, the error details, the first-run guide. ``scroll_target`` names the container."""

from __future__ import annotations

from typing import Any

from textual.containers import ScrollableContainer


class ScrollKeys:
    """Actions ``scroll(step)``, ``page(step)``, ``top``, ``bottom`` on ``scroll_target``
    (bound by :func:`mailtriage.tui.bindings.scroll_keys`)."""

    #: The CSS selector of the container the keys scroll.
    scroll_target: str = ""

    def _scrolled(self) -> ScrollableContainer:
        screen: Any = self  # the Screen this is mixed into
        return screen.query_one(self.scroll_target, ScrollableContainer)

    def action_scroll(self, step: int) -> None:
        self._scrolled().scroll_relative(y=step, animate=False)

    def action_page(self, step: int) -> None:
        scrolled = self._scrolled()
        (scrolled.scroll_page_down if step > 0 else scrolled.scroll_page_up)(animate=False)

    def action_top(self) -> None:
        self._scrolled().scroll_home(animate=False)

    def action_bottom(self) -> None:
        self._scrolled().scroll_end(animate=False)


class OwnScrollKeys:
    """The same keys' actions for a widget that scrolls itself when focused (the proposal's
    body, the tracker's issue view), without animation, as the reader scrolls."""

    def action_scroll_down(self) -> None:
        self.scroll_relative(y=1, animate=False)  # type: ignore[attr-defined]

    def action_scroll_up(self) -> None:
        self.scroll_relative(y=-1, animate=False)  # type: ignore[attr-defined]

    def action_page_down(self) -> None:
        self.scroll_page_down(animate=False)  # type: ignore[attr-defined]

    def action_page_up(self) -> None:
        self.scroll_page_up(animate=False)  # type: ignore[attr-defined]

    def action_scroll_home(self) -> None:
        self.scroll_home(animate=False)  # type: ignore[attr-defined]

    def action_scroll_end(self) -> None:
        self.scroll_end(animate=False)  # type: ignore[attr-defined]
