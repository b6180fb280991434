"""The reading pane never shows a thread of another source than the list beside it (found
trying the demo: after opening the demo account's INBOX the reader still showed the project
thread read before, under the account's messages). Opening a folder empties the reader; the
thread read there, or back in the project lists, shows as before."""

from tests.tui.helpers import screen_text, settle
from tests.tui.test_demo_walk import demo_app, open_demo_inbox


def reader(app):
    return app.main.reader


async def test_opening_an_account_folder_empties_the_reader_of_the_project_thread(tmp_path, monkeypatch):
    app, _ = demo_app(tmp_path, monkeypatch)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # the newest project thread
        await settle(pilot)
        project_subject = reader(app).thread.subject
        assert project_subject in screen_text(app)
        await pilot.press("q")
        await open_demo_inbox(app, pilot)
        shown = screen_text(app)
        assert reader(app).thread is None
        assert f"Reading · {project_subject}" not in shown
        assert "Open a thread with Enter" in shown
        await pilot.press("enter")  # an account message reads as before
        await settle(pilot)
        assert "Here is the rota for December." in screen_text(app)
        assert reader(app).account_id == "demo"


async def test_back_in_the_project_lists_the_account_message_leaves_the_reader(tmp_path, monkeypatch):
    app, _ = demo_app(tmp_path, monkeypatch)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_demo_inbox(app, pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert reader(app).account_id == "demo"
        await pilot.press("q", "2", "g", "enter")  # the folders pane: "← project lists"
        await settle(pilot)
        await pilot.press("enter")  # the project's list, highlighted first
        await settle(pilot)
        shown = screen_text(app)
        assert "Threads · security@" in shown
        assert reader(app).thread is None and "Here is the rota for December." not in shown
