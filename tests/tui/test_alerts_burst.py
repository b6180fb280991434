"""A burst of mail with the app open on a real Dovecot and a fast poll: a few coalesced
notifications that together name each new report once, rows inserted in place, and the
cursor stays on its thread."""

from __future__ import annotations

import re
import threading
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

from tests.tui.helpers import WAIT_BOUND, cursor_files, make_app, seen_threads, until
from tests.tui.test_imap_drafts import LIST, imap_project  # noqa: F401  (the fixture)

OLD = 30
NEW = 40
REPLIES = 80


def _mail(subject: str, message_id: str, when: datetime, in_reply_to: str | None = None) -> bytes:
    thread = f"In-Reply-To: {in_reply_to}\r\nReferences: {in_reply_to}\r\n" if in_reply_to else ""
    return (
        "From: Eve <eve@example.org>\r\n"
        f"To: {LIST}\r\n"
        f"Subject: {subject}\r\n"
        f"Date: {format_datetime(when)}\r\n"
        f"Message-ID: {message_id}\r\n"
        f"{thread}"
        "Content-Type: text/plain; charset=utf-8\r\n"
        "\r\n"
        "details follow\r\n"
    ).encode()


def _burst(dovecot, user, rate: float, done: threading.Event) -> None:
    """NEW new reports and REPLIES replies (to old threads and to the new ones), ``rate`` a second."""
    items = []
    for i in range(NEW):
        items.append((f"Burst report {i}", f"<burst-{i}@example.org>", None))
        for j in range(REPLIES // NEW):
            target = f"<old-{(i * 7 + j) % OLD}@example.org>" if j % 2 == 0 else f"<burst-{i}@example.org>"
            items.append((f"Re: reply {i}.{j}", f"<reply-{i}-{j}@example.org>", target))
    client = dovecot.client(user)
    try:
        start = time.monotonic()
        for n, (subject, mid, parent) in enumerate(items):
            delay = start + n / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            now = datetime.now(timezone.utc)
            client.append("INBOX", _mail(subject, mid, now, parent), msg_time=now)
    finally:
        client.logout()
        done.set()


async def test_a_burst_gives_a_few_coalesced_notifications_and_the_cursor_stays_on_its_thread(
        imap_project, dovecot, dovecot_user, user_config, user_data):
    with (user_config / "config.toml").open("a", encoding="utf-8") as f:
        f.write("\n[alerts]\npoll_seconds = 1\n")
    start = datetime.now(timezone.utc) - timedelta(days=20)
    client = dovecot.client(dovecot_user)
    try:
        for i in range(OLD):
            when = start + timedelta(hours=i)
            client.append("INBOX", _mail(f"Old report {i}", f"<old-{i}@example.org>", when), msg_time=when)
    finally:
        client.logout()

    app = make_app(imap_project, alerts=True)
    async with app.run_test(size=(140, 40)) as pilot:
        tl = app.main.threads.thread_list
        await until(pilot, lambda: len(tl.rows) >= OLD and bool(cursor_files(user_data)), "listing and baseline")
        listed = len(tl.rows)  # the old reports and what the project fixture seeded
        tl.focus()
        for _ in range(5):
            await pilot.press("j")
        await pilot.pause(0.1)
        held = tl.current.thread_id
        assert tl.cursor == 5

        done = threading.Event()
        writer = threading.Thread(target=_burst, args=(dovecot, dovecot_user, 20.0, done))
        began = time.monotonic()
        writer.start()
        alerts: dict[str, str] = {}  # identity -> title of every alert notification shown
        statuses: set[str] = set()

        def watch() -> None:
            for n in app._notifications:
                if "new report" in (n.title or "") or n.title == "New mail":
                    alerts[n.identity] = n.title
            assert tl.current is not None and tl.current.thread_id == held, "the cursor left its thread"
            statuses.add(str(app.main.threads.query_one("#threads-status").render()))

        new_ids = [f"<burst-{i}@example.org>" for i in range(NEW)]
        try:
            await until(pilot, done.is_set, "the burst", bound=WAIT_BOUND + 20, check=watch)  # the burst lasts 20 s
            elapsed = time.monotonic() - began
            await until(pilot, lambda: all(any(m in key for key in seen_threads(user_data)) for m in new_ids),
                        "every new report acknowledged", check=watch)
            await until(pilot, lambda: len(tl.rows) == listed + NEW, "every new thread listed", check=watch)
            await pilot.pause(app.alert_notice_seconds + 0.5)
            watch()
        finally:
            writer.join(timeout=60)

        # Bounded: at most one notification every alert_notice_seconds (plus the first).
        assert 1 <= len(alerts) <= elapsed / app.alert_notice_seconds + 3, (len(alerts), elapsed)
        # Together they name each new report exactly once.
        counts = [int(m.group(1)) for t in alerts.values() if (m := re.match(r"(\d+) new reports?", t))]
        assert sum(counts) == NEW, alerts
        # The list kept up without a reload and the cursor kept its thread.
        assert not any("loading" in s for s in statuses), statuses
        assert tl.current.thread_id == held
        rows = [tl.rows.peek(i) for i in range(len(tl.rows))]
        assert len({r.thread_id for r in rows}) == listed + NEW
        times = [r.last_activity for r in rows]
        assert times == sorted(times, reverse=True)
