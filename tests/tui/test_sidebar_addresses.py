"""The sidebar shows the security list's address and the security CC in full (issue 35: at
160x50 both were cut at 32 columns): the triager checks that CC before trusting a reply's."""

from __future__ import annotations

import pytest

from tests.tui.helpers import make_app, mbox_project, screen_text, settle

ADDRESS = "security@frobnicator.apache.org"  # the demo's list and CC: 31 characters
LONGER = "product-security-response@frobnicator.apache.org"  # 48: longer than the sidebar may grow


def sidebar_text(app) -> str:
    """The sidebar's columns of the screen, as a person reads them."""
    region = app.screen.query_one("#sidebar").region
    lines = screen_text(app).splitlines()[region.y:region.bottom]
    return "\n".join(line[region.x:region.right] for line in lines)


@pytest.mark.parametrize("size", [(160, 50), (120, 40), (80, 24)], ids=lambda size: f"{size[0]}x{size[1]}")
async def test_the_security_addresses_show_in_full(tmp_path, size):
    app = make_app(mbox_project(tmp_path / "p", security_list=ADDRESS))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if size[0] < 100:
            await pilot.press("1")  # narrow, the sidebar shows while it has the focus
            await settle(pilot)
        text = sidebar_text(app)
        assert text.count(ADDRESS) == 2, text  # the list's (the lists pane) and the CC (the sources pane)
        assert "security CC" in text and "…" not in text
        # The thread list keeps its room (a subject column of 50 at 80 columns with the sidebar open).
        assert app.screen.query_one("#center").region.width >= min(size[0] * 7 // 10, size[0] - 40)


async def test_an_address_longer_than_the_sidebar_folds_onto_a_second_line(tmp_path):
    app = make_app(mbox_project(tmp_path / "p", security_list=LONGER))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = sidebar_text(app)
        joined = "".join(text.replace("│", "").split())  # the pane's lines, end to end
        assert joined.count(LONGER) == 2 and "…" not in text, text  # the CC and the list, folded
