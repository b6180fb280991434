"""Issue 30 §7 in the app: with no security_list configured, the listing and the
new-report poller skip the list read with the CLI's configuration warning
(application/list_read.py), instead of reading the whole folder as if it were the list. The
listing's side: tests/tui/test_flows.py's test_propose_reply_see_cc_warning_and_cancel_writes_nothing,
whose project has no security_list."""

from __future__ import annotations

from tests.tui.helpers import make_app, mbox_project, settle, until

WARNING = "CONFIGURATION WARNING: no list to read: security_list is not configured in"


_until = until  # the shared wait (tests/tui/helpers.py): a wall-clock bound, not a count of rounds


async def test_poller_without_a_list_skips_with_one_warning(tmp_path, user_data):
    folder = tmp_path / "p"
    mbox_project(folder, security_list=None, extra_config={"alerts": {"poll_seconds": 3600}})
    app = make_app(folder, alerts=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await _until(pilot, lambda: app.session.is_open and app.main.panes_ready, "the session")

        def warnings() -> list:
            return [n for n in app._notifications if n.title == "Alerts" and WARNING in n.message]

        await _until(pilot, lambda: bool(warnings()), "the alerts warning")
        # Choosing a list again does not repeat it; nothing is announced as a new report.
        await pilot.press("2")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert len(warnings()) == 1
        assert "new-report alerts are off" in warnings()[0].message
        assert not any("new report" in (n.title or "") for n in app._notifications)
        assert app.main.alerts.alert_loop is None
    assert not (user_data / "alerts").exists() or not list((user_data / "alerts").glob("*.json"))
