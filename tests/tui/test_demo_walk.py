"""The demo app walked by keystroke (issue 35 item 8): the Sources pane shows the demo's
personal Maildir account; Enter opens its folders, INBOX, and a message."""

from mailtriage.application import project_dir
from mailtriage.tui.panes.folders import FolderList
from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.helpers import make_app, screen_text, settle


async def test_demo_walks_account_folder_message(tmp_path, monkeypatch):
    monkeypatch.setenv("MAILTRIAGE_DEMO_DIR", str(tmp_path / "demo"))
    app = make_app(project_dir(demo_session=True), demo=True)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        await pilot.press("down", "down", "enter")  # the two backend rows first, then the account
        await settle(pilot)
        assert isinstance(app.focused, FolderList)
        shown = screen_text(app)
        assert "Folders · demo" in shown
        assert "INBOX inbox 2/4" in shown and "Drafts drafts 0/0" in shown
        await pilot.press("enter")  # INBOX is highlighted first
        await settle(pilot)
        assert isinstance(app.focused, ThreadList)
        assert "Threads · demo · INBOX" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert "Here is the rota for December." in screen_text(app)
