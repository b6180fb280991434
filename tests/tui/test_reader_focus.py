"""Issue 35 §1-2: Enter goes into the message, the reader's keys act there, and 80x24 works.

Pilot tests on a real mbox project (the thread list of tests/tui/helpers.py: newest first,
the heap-overflow thread last). Enter into the reader and q or Esc back: tests/tui/test_habits.py;
e in the reader: tests/tui/test_loose_ends.py.
"""

from __future__ import annotations

from mailtriage.tui.footer import KeyFooter
from mailtriage.tui.panes.folders import FoldersPane
from mailtriage.tui.panes.reader import ReaderPane, ThreadView
from mailtriage.tui.panes.sources import SourceList, SourcesPane
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.panes.threads import ThreadPane
from tests.tui.helpers import mail, make_app, mbox_project, settle


def footer_text(app) -> str:
    return " ".join(key.description for key in app.screen.query_one(KeyFooter).shown())


def long_project(folder):
    body = "\n".join(f"line {n} of a long report" for n in range(120))
    return mbox_project(folder, messages=[
        mail("Long report", "Ana Reporter <ana@example.com>", "Thu, 01 Oct 2026 09:00:00 +0000",
             "<long-1@example.com>", body),
        mail("Short note", "Bob Builder <bob@example.net>", "Wed, 30 Sep 2026 09:00:00 +0000",
             "<short-1@example.net>", "A short note.\n"),
    ])


async def test_space_pages_the_message_then_opens_the_next_thread(tmp_path):
    """mutt's habit: Space pages; at the end of the message it goes on to the next one."""
    app = make_app(long_project(tmp_path / "p"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        view = app.screen.query_one(ThreadView)
        assert view.scroll_y == 0 and view.max_scroll_y > 0
        await pilot.press("space")
        await settle(pilot)
        assert view.scroll_y > 0  # paged the message, not the list
        assert app.screen.query_one(ThreadList).cursor == 0
        for _ in range(40):
            if view.scroll_y >= view.max_scroll_y:
                break
            await pilot.press("space")
            await settle(pilot)
        assert app.screen.query_one(ReaderPane).thread.subject == "Long report"
        await pilot.press("space")  # at the end: the next message of the list
        await settle(pilot)
        assert app.screen.query_one(ReaderPane).thread.subject == "Short note"
        assert app.screen.query_one(ThreadList).cursor == 1 and isinstance(app.focused, ThreadView)
        await pilot.press("space")  # the last message, at its end: said, not silently ignored
        await settle(pilot)
        assert any("last" in str(n.message) for n in app._notifications)


async def test_the_footer_shows_the_keys_of_the_focused_pane(tmp_path):
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(160, 36)) as pilot:
        await settle(pilot)
        listing = footer_text(app)
        assert "Open" in listing and "Back to list" not in listing
        await pilot.press("enter")
        await settle(pilot)
        reading = footer_text(app)
        assert "Back to list" in reading and "Next message" in reading
        assert "Open" not in reading and "Search" not in reading and "Backends" not in reading


async def test_sources_and_folders_fold_back_and_the_zoom_key_gives_the_focused_pane_the_whole_screen_at_80x24(
        tmp_path):
    # One app for the two layouts of 80x24 (were two tests, each an app of the same project and size).
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not app.screen.query_one(SourcesPane).display or not app.screen.query_one("#sidebar").display
        await pilot.press("1")
        await settle(pilot)
        assert isinstance(app.focused, SourceList)
        assert app.screen.query_one(SourcesPane).region.width > 0
        await pilot.press("3")
        await settle(pilot)
        assert isinstance(app.focused, ThreadList)
        assert app.screen.query_one(SourcesPane).region.width == 0
        assert app.screen.query_one(FoldersPane).region.width == 0
        assert app.screen.query_one(ThreadList).region.width >= 76
        # The zoom key gives the focused pane the whole screen, and back.
        await pilot.press("enter")
        await settle(pilot)
        reader = app.screen.query_one(ReaderPane)
        before = reader.region.height
        await pilot.press("ctrl+w")
        await settle(pilot)
        assert reader.region.height >= 21 > before and app.screen.query_one(ThreadList).region.height == 0
        assert isinstance(app.focused, ThreadView)
        await pilot.press("ctrl+w")
        await settle(pilot)
        assert reader.region.height == before and app.screen.query_one(ThreadList).region.height > 0
        # Every pane zooms to the whole screen, not only the reader: the list (7 rows while a
        # message is read at 80x24) and the sources pane (45%) kept their height, centred on a
        # hatched screen.
        for key, pane in (("3", ThreadPane), ("1", SourcesPane)):
            await pilot.press(key, "ctrl+w")
            await settle(pilot)
            zoomed = app.screen.query_one(pane).region
            assert zoomed.height >= 21 and zoomed.width == 80, (pane.__name__, zoomed)
            await pilot.press("ctrl+w")
            await settle(pilot)
