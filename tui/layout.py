"""The main screen's layout: its width classes, the panes that fold below 100 columns, the
focused pane's border and the pane zoom takes (issue 35), over the screen's CSS classes.

The screen calls these as the focus moves and the terminal resizes (tui/screens/main.py);
they restyle only what a change of class must restyle (issue 33: a focus move restyled
every pane's subtree).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mailtriage.tui.focus_paint import edges_repainted

if TYPE_CHECKING:
    from textual.dom import DOMNode
    from textual.screen import Screen

NARROW_WIDTH = 100
#: Below this width the sidebar (34), the tracker pane (46) and a thread list of 50 columns do
#: not fit side by side: while the tracker is open the sidebar folds as it does narrow, and the
#: tracker folds while the sidebar has the focus (issue 35: 18 columns of subjects at 100x30).
CROWDED_WIDTH = 34 + 46 + 52


def set_width_classes(screen: Screen, width: int) -> None:
    screen.set_class(width < NARROW_WIDTH, "-narrow")
    screen.set_class(width < CROWDED_WIDTH, "-crowded")


def focused_pane(screen: Screen) -> DOMNode | None:
    """The pane (a node of class ``pane``) that holds the focus, or None."""
    focused = screen.focused
    return next((node for node in focused.ancestors_with_self if node.has_class("pane")), None) \
        if focused is not None else None


def focus_within(screen: Screen, selector: str) -> bool:
    focused = screen.focused
    return focused is not None and screen.query_one(selector) in focused.ancestors_with_self


# -- the tracker pane below 100 columns ------------------------------------
# Beside the threads it would leave the subjects two characters: narrow, it takes the
# body while it has the focus and folds away (still open) when another pane gets it.
def tracker_has_focus(screen: Screen) -> bool:
    return focus_within(screen, "#tracker-pane")


def tracker_folded_away(screen: Screen) -> bool:
    """Open but not shown: folded narrow, or behind the sidebar's focus when crowded."""
    return screen.has_class("-tracker-folded") and (
        screen.has_class("-narrow") or (screen.has_class("-crowded") and screen.has_class("-sidebar-open")))


def fold_panes(screen: Screen) -> None:
    """Fold what the focus left: the tracker, the sidebar (narrow; issue 35: it unfolds while
    it has the focus), and give the reader the room while it is read (narrow)."""
    # Wide, these classes style nothing (app.tcss: only with -narrow): kept right, but no
    # restyle of every widget on each focus move (~20-50 ms of Enter -> body, issue 35);
    # the -narrow a resize sets restyles with them.
    narrow = screen.has_class("-narrow")
    folds = narrow or (screen.has_class("-crowded") and screen.has_class("-tracker"))
    screen.set_class(not tracker_has_focus(screen), "-tracker-folded", update=folds)
    screen.set_class(focus_within(screen, "#sidebar"), "-sidebar-open", update=folds)
    screen.set_class(focus_within(screen, "#reader-pane"), "-reading", update=narrow)


def mark_active_pane(screen: Screen, previous: DOMNode | None) -> DOMNode | None:
    """The pane holding the focus gets ``-active`` (app.tcss: its border), restyled alone;
    ``previous`` had it. Returns the pane that has it now.

    A ``.pane:focus-within`` rule made Textual restyle both panes' whole subtrees (every
    row, header and body Static) on each focus move: ~7 ms of the UI thread on Enter
    before the body's frame (issue 33). No rule styles what is inside an active pane, so
    the two panes whose class changes are the only nodes restyled."""
    pane = focused_pane(screen)
    if pane is previous:
        return pane
    changed = [node for node in (previous, pane) if node is not None]
    for node in changed:
        node.set_class(node is pane, "-active", update=False)
    with edges_repainted(changed):  # only their borders change: not their lists and texts written again
        screen.app.stylesheet.update_nodes(changed, animate=True)
    return pane
