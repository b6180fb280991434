"""The main screen's layout: its width classes, the sidebar's width, the panes that fold below
100 columns, the focused pane's border and the pane zoom takes (issue 35), over the screen's CSS
classes.

The screen calls these as the focus moves and the terminal resizes (tui/screens/main.py);
they restyle only what a change of class must restyle (issue 33: a focus move restyled
every pane's subtree).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.containers import Vertical

from mailtriage.tui.focus_paint import edges_repainted

if TYPE_CHECKING:
    from textual.dom import DOMNode
    from textual.screen import Screen

NARROW_WIDTH = 100
#: Below this many rows (80x24) the empty reader folds to its hint until a thread is opened,
#: and the thread list has the rows (issue 35: the empty reader took 13 of 22, the list 6).
SHORT_HEIGHT = 30
#: The sidebar's columns (app.tcss), and its least when the addresses it shows need more.
SIDEBAR_WIDTH = 34
#: The tracker pane's (app.tcss) and a readable thread list's columns: below the sidebar's width
#: and these, they do not fit side by side (the -crowded class): while the tracker is open the
#: sidebar folds as it does narrow, and the tracker folds while the sidebar has the focus
#: (issue 35: 18 columns of subjects at 100x30).
TRACKER_WIDTH, LIST_WIDTH = 46, 52


def set_width_classes(screen: Screen, width: int) -> None:
    sidebar = fit_sidebar(screen, width)
    screen.set_class(width < NARROW_WIDTH, "-narrow")
    screen.set_class(width < sidebar + TRACKER_WIDTH + LIST_WIDTH, "-crowded")
    screen.set_class(screen.app.size.height < SHORT_HEIGHT, "-short")


def reader_holds_thread(screen: Screen, held: bool) -> None:
    """The reader shows (or loads) a thread, or is empty again: on a short terminal the empty
    reader folds (app.tcss). Tall, the class styles nothing: set without a restyle of the
    screen (the -short a resize sets restyles with it), as fold_panes does."""
    screen.set_class(held, "-reader-open", update=screen.has_class("-short"))


# -- the sidebar: the security addresses in full ----------------------------------------
# The triager checks the security CC (and the list's address) in the sidebar before trusting a
# reply's Cc: at 160x50 both were cut at 32 columns (issue 35). The sidebar grows to the widest
# address its panes show (their ``address_width``), within the room the threads can spare.
class SidebarPane(Vertical):
    """A pane of the sidebar (Sources, Lists) and the columns the addresses it shows need in full."""

    address_width = 0

    def addresses_shown(self, width: int) -> None:
        """The addresses shown now (a project opened) need ``width`` columns (0: none): the sidebar fits them."""
        if width != self.address_width:
            self.address_width = width
            set_width_classes(self.screen, self.app.size.width)
            fold_panes(self.screen)


def sidebar_width(terminal: int, wanted: int) -> int:
    """The sidebar's columns on a terminal ``terminal`` columns wide when its addresses want
    ``wanted``: at least SIDEBAR_WIDTH, at most 30% of the terminal (half below NARROW_WIDTH,
    where the sidebar shows only while it has the focus); a longer address folds there."""
    room = terminal // 2 if terminal < NARROW_WIDTH else terminal * 3 // 10
    return max(SIDEBAR_WIDTH, min(wanted, room))


def fit_sidebar(screen: Screen, width: int) -> int:
    """Size the sidebar (when composed) for a terminal ``width`` columns wide; its columns."""
    found = screen.query("#sidebar")
    if not found:
        return SIDEBAR_WIDTH
    sidebar = found.first()
    wanted = max((pane.address_width for pane in sidebar.children if isinstance(pane, SidebarPane)), default=0)
    columns = sidebar_width(width, wanted)
    if sidebar.styles.width is None or sidebar.styles.width.value != columns:
        sidebar.styles.width = columns  # the thread list and the reader lay out again: once per change
    return columns


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
    it has the focus), and give the reader the room while it is read (narrow, or short: the
    empty reader folded there unfolds while it has the focus)."""
    # Wide, these classes style nothing (app.tcss: only with -narrow): kept right, but no
    # restyle of every widget on each focus move (~20-50 ms of Enter -> body, issue 35);
    # the -narrow a resize sets restyles with them.
    narrow = screen.has_class("-narrow")
    folds = narrow or (screen.has_class("-crowded") and screen.has_class("-tracker"))
    screen.set_class(not tracker_has_focus(screen), "-tracker-folded", update=folds)
    screen.set_class(focus_within(screen, "#sidebar"), "-sidebar-open", update=folds)
    screen.set_class(focus_within(screen, "#reader-pane"), "-reading", update=narrow or screen.has_class("-short"))


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
