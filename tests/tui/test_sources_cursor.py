"""The Sources pane keeps its cursor when the backend matrix is shown again (a refresh after a
listing): a Down typed just before it must not be undone, or Enter inspects the backend
instead of opening the account (seen in benchmarks/bench_habits.py under load)."""

from mailtriage.tui.controllers.listing import _accounts
from mailtriage.tui.panes.folders import FolderList
from mailtriage.tui.panes.sources import SourceList
from tests.tui.helpers import make_app, settle
from tests.tui.test_account_folders import account_project  # noqa: F401 (fixture)


async def test_a_refreshed_matrix_keeps_the_highlighted_account(account_project):
    app = make_app(account_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        await pilot.press("1", "down")  # the backend row first, then the account
        await settle(pilot)
        sources = app.screen.query_one(SourceList)
        assert sources.get_option_at_index(sources.highlighted).id.startswith("account:")
        # The matrix shown again, as the listing's end does (tui/controllers/listing.py).
        app.main.sources.show_matrix(app.main.listing.last_matrix, _accounts(app.session.settings))
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.focused, FolderList)
