"""Snapshots of the server search results in the thread list (issue 14 §4), at 80x24 and 160x45:
the matching messages newest first and the status line naming the backend that answered."""

from pathlib import Path

from tests.tui.helpers import make_app, settle
from tests.tui.test_search import NARROW, WIDE, search, workdir  # noqa: F401 (fixture)


def shot(text: str):
    async def run_before(pilot):
        await settle(pilot)
        await search(pilot, text)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


def test_snapshot_results_narrow(snap_compare, workdir):
    assert snap_compare(make_app(Path("p")), terminal_size=NARROW, run_before=shot("overflow"))


def test_snapshot_results_wide(snap_compare, workdir):
    assert snap_compare(make_app(Path("p")), terminal_size=WIDE, run_before=shot("overflow"))
