"""Launching a personal account (Enter on the account, then on a folder) never waits for the
project's listing: the account's mailbox is its own connection, so it has its own lock.
Against the real Dovecot."""

from __future__ import annotations

from mailtriage.tui.panes.folders import FolderList
from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.helpers import make_app, screen_text, settle, until
from tests.tui.test_account_folders import account_project  # noqa: F401 (fixture)


_until = until  # the shared wait (tests/tui/helpers.py): a wall-clock bound, not a count of rounds


async def test_account_folders_and_first_page_arrive_while_the_project_listing_runs(account_project):
    app = make_app(account_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        # A listing of the project's sources that takes for ever (a 43k-message window):
        # it holds the session's backend lock, as that listing does while it runs.
        app.session._lock.acquire()
        try:
            await pilot.press("1")
            await pilot.pause()
            await pilot.press("down", "enter")  # the backend row first, then the account
            await _until(pilot, lambda: isinstance(app.focused, FolderList) and "INBOX" in screen_text(app),
                         "the account's folders")
            await pilot.press("enter")  # INBOX
            await _until(pilot, lambda: len(app.main.query_one(ThreadList).rows) == 2, "the folder's first page")
            assert "Path traversal in frob-serve" in screen_text(app)
        finally:
            app.session._lock.release()
        await settle(pilot)
