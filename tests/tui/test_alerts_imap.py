"""New-report alerts on a real Dovecot: IMAP IDLE wakes the app's poller when a report arrives."""

from __future__ import annotations

from datetime import datetime, timezone
from email.utils import format_datetime

from mailtriage.core.trace import TRACE

from tests.tui.helpers import WAIT_BOUND, cursor_files, make_app, screen_text, seen_threads
from tests.tui.helpers import until as wait
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


async def until(pilot, condition, what: str, bound: float = 2 * WAIT_BOUND) -> None:
    """Wait for ``condition`` (twice the shared bound: IDLE and a poll against a real Dovecot)."""
    await wait(pilot, condition, what, bound=bound, step=0.05)


async def test_idle_wakes_the_poller_and_the_new_report_is_shown(imap_project, dovecot, dovecot_user, user_config,
                                                                 user_data):
    # An hour between polls: only IMAP IDLE can bring the report in during the test.
    with (user_config / "config.toml").open("a", encoding="utf-8") as f:
        f.write("\n[alerts]\npoll_seconds = 3600\n")
    idles = []
    unsubscribe = TRACE.subscribe(lambda line: idles.append(line) if line.direction == ">"
                                  and line.text.split()[1:2] == ["IDLE"] else None)
    app = make_app(imap_project, alerts=True)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await until(pilot, lambda: bool(cursor_files(user_data)), "the baseline cursor")
            await until(pilot, lambda: bool(idles), "the poller's IDLE")  # the report comes while it waits
            dovecot.append(dovecot_user, "INBOX", _report("Auth bypass in frobd", "<bypass-1@example.org>"),
                           when=datetime.now(timezone.utc))
            await until(pilot, lambda: any(n.title == "1 new report" for n in app._notifications), "the alert")
            await until(pilot, lambda: any("<bypass-1@example.org>" in key for key in seen_threads(user_data)),
                        "the acknowledgement")
            assert any("Auth bypass in frobd" in line and "●" in line for line in screen_text(app).splitlines())
    finally:
        unsubscribe()
