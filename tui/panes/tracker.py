"""The tracker pane: issues of the configured tracker, an issue's fields and rollup.

This build has no tracker backends yet (``mailtriage.trackers`` is empty), so the pane
says so plainly instead of showing an empty list that looks like "no issues".
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from mailtriage.tui import bindings


def tracker_support() -> str | None:
    """None when a tracker contract is present in this build, else why not."""
    try:
        import mailtriage.trackers.contract  # noqa: F401
    except ImportError:
        return "No tracker is available in this build of mailtriage (the tracker backends are not installed)."
    return None


class TrackerList(OptionList, inherit_bindings=False):
    BINDINGS = bindings.TRACKER


class TrackerPane(Vertical):
    def __init__(self, **kwargs) -> None:
        super().__init__(classes="pane", **kwargs)
        self.border_title = "Tracker"

    def compose(self) -> ComposeResult:
        yield TrackerList(id="tracker-list")
        yield Static(id="tracker-status", classes="pane-status")

    def on_mount(self) -> None:
        why = tracker_support()
        tracker_list = self.query_one(TrackerList)
        if why:
            tracker_list.set_options([Option(Text(why, "italic"), disabled=True)])
            self.query_one("#tracker-status", Static).update(Text("tracker: not available"))
        else:
            tracker_list.set_options([Option(Text("tracker support is present but not wired into this pane yet",
                                                  "italic"), disabled=True)])
