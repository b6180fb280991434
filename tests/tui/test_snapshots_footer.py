"""Issue 35: the footer whole at 80x24, in the list and in the reader (the compact form of
tui/footer.py: short words, ? Help pinned right)."""

from __future__ import annotations

import pytest

from mailtriage.tui.footer import KeyFooter
from tests.tui.attachment_data import attachments_project
from tests.tui.helpers import make_app, settle
from tests.tui.test_loose_ends import footer_keys_cut_at


@pytest.mark.parametrize("where", ["list", "reader"])
def test_footer_whole_at_80x24(snap_compare, tmp_path, where):
    async def run_before(pilot):
        await settle(pilot)
        if where == "reader":
            await pilot.press("enter")
            await settle(pilot)
        # Every key whole, ? Help there, and last in the reader (was tests/tui/test_loose_ends.py's
        # test_the_footer_fits_80_columns_in_the_list_and_the_reader_with_help_last, an app of its own).
        assert footer_keys_cut_at(pilot.app, 80) == []
        if where == "reader":
            assert pilot.app.screen.query_one(KeyFooter).shown()[-1].key_display == "?"
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(attachments_project(tmp_path / "p")), terminal_size=(80, 24), run_before=run_before)
