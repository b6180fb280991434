"""New-report alerts on a real Dovecot: IMAP IDLE wakes the app's poller when a report arrives."""

from __future__ import annotations

from datetime import datetime, timezone
from email.utils import format_datetime

from tests.servers.fixtures import *  # noqa: F401,F403
from tests.tui.helpers import make_app, screen_text
from tests.tui.test_alerts import _cursor_files, _seen, _until
from tests.tui.test_imap_drafts import LIST, imap_project  # noqa: F401  (the fixture)


def _report(subject: str, message_id: str) -> bytes:
    return (
        "From: Eve <eve@example.org>\r\n"
        f"To: {LIST}\r\n"
        f"Subject: {subject}\r\n"
        f"Date: {format_datetime(datetime.now(timezone.utc))}\r\n"
        f"Message-ID: {message_id}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        "\r\n"
        "details follow\r\n"
    ).encode()


async def test_idle_wakes_the_poller_and_the_new_report_is_shown(imap_project, dovecot, dovecot_user, user_config,
                                                                 user_data):
    # An hour between polls: only IMAP IDLE can bring the report in during the test.
    with (user_config / "config.toml").open("a", encoding="utf-8") as f:
        f.write("\n[alerts]\npoll_seconds = 3600\n")
    app = make_app(imap_project, alerts=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await _until(pilot, lambda: bool(_cursor_files(user_data)), "the baseline cursor", rounds=1000)
        await pilot.pause(0.5)  # the poller is waiting on IDLE now
        dovecot.append(dovecot_user, "INBOX", _report("Auth bypass in frobd", "<bypass-1@example.org>"),
                       when=datetime.now(timezone.utc))
        await _until(pilot, lambda: any(n.title == "1 new report" for n in app._notifications), "the alert",
                     rounds=1000)
        await _until(pilot, lambda: any("<bypass-1@example.org>" in key for key in _seen(user_data)),
                     "the acknowledgement", rounds=1000)
        assert any("Auth bypass in frobd" in line and "●" in line for line in screen_text(app).splitlines())
