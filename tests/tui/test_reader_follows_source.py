"""The reading pane never shows a thread of another source than the list beside it (found
trying the demo: after opening the demo account's INBOX the reader still showed the project
thread read before, under the account's messages). Opening a folder empties the reader; the
thread read there, or back in the project lists, shows as before; and back in the project's
list, the cursor is on the report the user was on (issue 35, habits8 §1: as mutt and aerc do).

One walk in one demo app (were three tests, each a demo app: this file's two and
tests/tui/test_demo_walk.py's test_coming_back_from_a_folder_puts_the_cursor_on_the_thread_it_was_on)."""

from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.helpers import screen_text, settle
from tests.tui.test_demo_walk import demo_app, open_demo_inbox


def reader(app):
    return app.main.reader


async def test_a_folder_and_back_each_empty_the_reader_of_the_other_sources_thread_and_the_cursor_comes_back(
        demo_dir):
    app, _ = demo_app(demo_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        thread_list = app.main.query_one(ThreadList)
        assert len(thread_list.rows) > 3
        await pilot.press("down", "down", "down")
        await settle(pilot)
        was_on = thread_list.current.thread_id
        assert thread_list.cursor == 3
        await pilot.press("enter")  # a project thread
        await settle(pilot)
        project_subject = reader(app).thread.subject
        assert project_subject in screen_text(app)
        await pilot.press("q")
        # Opening an account folder empties the reader of the project thread.
        await open_demo_inbox(app, pilot)
        assert thread_list.cursor == 0
        shown = screen_text(app)
        assert reader(app).thread is None
        assert f"Reading · {project_subject}" not in shown
        assert "Open a thread with Enter" in shown
        await pilot.press("enter")  # an account message reads as before
        await settle(pilot)
        assert "Here is the rota for December." in screen_text(app)
        assert reader(app).account_id == "demo"
        # Back in the project lists, the account message leaves the reader; the cursor is back.
        await pilot.press("q", "2", "home", "enter")  # the folders pane: "← project lists"
        await settle(pilot)
        await pilot.press("enter")  # the project's list, highlighted first
        await settle(pilot)
        assert isinstance(app.focused, ThreadList)
        shown = screen_text(app)
        assert "Threads · security@" in shown and "Threads · demo · INBOX" not in shown
        assert reader(app).thread is None and "Here is the rota for December." not in shown
        assert thread_list.current.thread_id == was_on and thread_list.cursor == 3
