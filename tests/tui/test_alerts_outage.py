"""The app's new-report alerts across a server outage, on a real Dovecot of the test's own
that is killed and started again on the same port: the app says the alerts paused, then
that they work again, and announces the report delivered meanwhile."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tests.servers.dovecot import DovecotServer
from tests.tui.helpers import WAIT_BOUND, cursor_files, make_app, write_imap_project
from tests.tui.helpers import until as wait
from tests.tui.test_alerts_imap import _report
from tests.tui.test_imap_drafts import LIST, REPORT, WHEN

BOUND = 1.5 * WAIT_BOUND  # seconds: an outage and its recovery against a real Dovecot; a passing run takes a few


async def until(pilot, condition, what: str, bound: float = BOUND) -> None:
    await wait(pilot, condition, what, bound=bound, step=0.05)


@pytest.fixture
def own_dovecot():
    server = DovecotServer().start()  # our own: the session's server stays up for other tests
    try:
        yield server
    finally:
        server.stop()


def _titles(app) -> list[str]:
    return [n.title for n in app._notifications]


async def test_the_app_says_alerts_paused_and_resumed_and_shows_the_report_of_the_outage(
        tmp_path, user_config, user_data, own_dovecot, memory_keyring):
    user = own_dovecot.add_user()
    project = write_imap_project(tmp_path, user_config, own_dovecot, user, access="draft", list_address=LIST)
    own_dovecot.append(user, "INBOX", REPORT, when=WHEN)
    with (user_config / "config.toml").open("a", encoding="utf-8") as f:
        f.write("\n[alerts]\npoll_seconds = 2\n")
    app = make_app(project, alerts=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: bool(cursor_files(user_data)), "the baseline cursor")
        own_dovecot.kill_master()
        await until(pilot, lambda: "New-report alerts paused" in _titles(app), "the outage notice")
        await until(pilot, lambda: sum(r.where == "alerts" for r in app.errors) >= 2, "a second failed poll")
        assert _titles(app).count("New-report alerts paused") == 1  # said once, not at every poll
        own_dovecot.start()
        own_dovecot.append(user, "INBOX", _report("Auth bypass in frobd", "<bypass-9@example.org>"),
                           when=datetime.now(timezone.utc))
        await until(pilot, lambda: "New-report alerts resumed" in _titles(app), "the end of the outage")
        await until(pilot, lambda: "1 new report" in _titles(app), "the alert of the report")
