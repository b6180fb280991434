"""Snapshots of tags and batches on a personal account (real Dovecot, fixed arrival dates):
the thread list with tagged rows, the one batch proposal and the folder picker of a move,
at 80x24 and 160x45."""

import pytest

from tests.tui.helpers import make_app, settle
from tests.tui.test_account_folders import open_inbox
from tests.tui.test_sort_and_tree import thread_project  # noqa: F401 (fixture)
from tests.tui.test_tags import tags_project  # noqa: F401 (fixture)

SIZES = {"narrow": (80, 24), "wide": (160, 45)}


def shot(*keys: str):
    async def run_before(pilot):
        await open_inbox(pilot.app, pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES)
def test_list_with_tags(snap_compare, tags_project, size):  # noqa: F811
    assert snap_compare(make_app(tags_project), terminal_size=SIZES[size], run_before=shot("v", "j", "v"))


@pytest.mark.parametrize("size", SIZES)
def test_batch_proposal(snap_compare, tags_project, size):  # noqa: F811
    assert snap_compare(make_app(tags_project), terminal_size=SIZES[size], run_before=shot("v", "v", "v", "f"))


@pytest.mark.parametrize("size", SIZES)
def test_move_folder_picker(snap_compare, tags_project, size):  # noqa: F811
    assert snap_compare(make_app(tags_project), terminal_size=SIZES[size], run_before=shot("T", "M"))


@pytest.mark.parametrize("size", SIZES)
def test_thread_tree_sorted_by_sender(snap_compare, thread_project, size):  # noqa: F811
    assert snap_compare(make_app(thread_project), terminal_size=SIZES[size], run_before=shot("o", "o", "z", "v"))
