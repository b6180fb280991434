"""Habits and the triage overview on a real Dovecot: the sender's Date: in the rows (arrival
time as an option), and the "draft pending" mark once a reply draft is written."""

from datetime import datetime, timezone

from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.helpers import make_app, screen_text, settle
from tests.tui.test_habits import marks_ready
from tests.tui.test_imap_drafts import LIST, imap_project  # noqa: F401 (fixture)
from tests.tui.test_security_cc_paths import confirm_twice

ARRIVED = datetime(2026, 10, 3, 18, 30, tzinfo=timezone.utc)
LATE = (
    "From: Bob Builder <bob@example.net>\r\n"
    f"To: {LIST}\r\n"
    "Subject: Slow mail about the frob uploader\r\n"
    "Date: Thu, 01 Oct 2026 11:15:00 +0200\r\n"
    "Message-ID: <late-1@example.net>\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n"
    "\r\n"
    "Sent on the 1st, delivered on the 3rd.\r\n"
).encode()


def rows(app) -> list[str]:
    tl = app.screen.query_one(ThreadList)
    return [tl.render_line(y).text for y in range(min(len(tl.rows), tl.scrollable_content_region.height))]


async def test_rows_show_the_senders_date_by_default_and_arrival_as_an_option(imap_project, dovecot, dovecot_user,
                                                                               user_config):
    dovecot.append(dovecot_user, "INBOX", LATE, when=ARRIVED)
    app = make_app(imap_project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        late = next(r for r in rows(app) if "Slow mail" in r)
        assert "2026-10-01 09:15" in late  # the sender's 11:15 +0200, in the user's zone (UTC: tests/conftest.py)
        assert rows(app)[0] == late  # still ordered by arrival (newest first)
    settings = user_config / "config.toml"
    settings.write_text(settings.read_text().replace('name = "Test Triager"\n',
                                                     'name = "Test Triager"\ndate_column = "arrival"\n'))
    app = make_app(imap_project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        late = next(r for r in rows(app) if "Slow mail" in r)
        assert "2026-10-03 18:30" in late and "2026-10-01 09:15" not in late


async def test_a_bad_date_column_is_reported_and_the_default_used(imap_project, user_config):
    settings = user_config / "config.toml"
    settings.write_text(settings.read_text().replace('name = "Test Triager"\n',
                                                     'name = "Test Triager"\ndate_column = "received"\n'))
    app = make_app(imap_project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert app.date_column == "sent"
        assert any("date_column" in p and "arrival" in p for p in app.startup_problems)


REPLY = (
    "From: Test Triager <triager@frob.example>\r\n"
    "To: Ana Reporter <ana@example.com>\r\n"
    f"Cc: {LIST}\r\n"
    "Subject: Re: Heap overflow in the frob parser\r\n"
    "Date: Fri, 02 Oct 2026 10:00:00 +0000\r\n"
    "Message-ID: <reply-1@frob.example>\r\n"
    "In-Reply-To: <overflow-1@example.com>\r\n"
    "References: <overflow-1@example.com>\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n"
    "\r\n"
    "Thanks Ana, confirmed.\r\n"
).encode()


async def test_replied_mark_from_the_sent_folder_then_draft_pending_after_a_confirmed_reply(imap_project, dovecot,
                                                                                             dovecot_user):
    """Two tests, one app each, on one app (issue 36 §7): the replied mark (a reply in Sent
    from the start: it reads), then a reply confirmed (it writes a draft) and its mark."""
    dovecot.append(dovecot_user, "Sent", REPLY, flags=(b"\\Seen",),
                   when=datetime(2026, 10, 2, 10, 0, tzinfo=timezone.utc))
    app = make_app(imap_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        await marks_ready(pilot)  # the marks wait for the cursor to rest
        heap = next(r for r in rows(app) if "Heap overflow" in r)
        assert "↩" in heap and "✎" not in heap
        assert "replied" in screen_text(app)
        # The draft pending mark after a confirmed reply.
        assert "✎" not in rows(app)[0]
        await pilot.press("r")
        await settle(pilot)
        await confirm_twice(app, pilot)  # the compose dialog, then the proposal: confirmed
        await marks_ready(pilot)
        assert "✎" in rows(app)[0], "the draft pending mark"
        assert "draft pending" in screen_text(app)


def _report(n: int) -> bytes:
    return (
        "From: Eve Finder <eve@example.net>\r\n"
        f"To: {LIST}\r\n"
        f"Subject: Finding number {n}\r\n"
        f"Date: Thu, 01 Oct 2026 {10 + n // 60:02d}:{n % 60:02d}:00 +0000\r\n"
        f"Message-ID: <finding-{n}@example.net>\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        "\r\n"
        "Details inside.\r\n"
    ).encode()


async def test_the_marks_of_a_screen_cost_one_search_of_drafts_and_of_sent(imap_project, dovecot, dovecot_user):
    # Issue 39: each row's list_drafts and list_sent_since selected their folder again (a
    # SELECT Drafts / SELECT Sent pair per row on screen); the screen is asked for at once.
    from mailtriage.core.trace import TRACE

    for n in range(16):
        dovecot.append(dovecot_user, "INBOX", _report(n), when=datetime(2026, 10, 1, 10, n, tzinfo=timezone.utc))
    reply = REPLY.replace(b"<overflow-1@example.com>", b"<finding-7@example.net>").replace(
        b"<reply-1@", b"<reply-7@")
    dovecot.append(dovecot_user, "Sent", reply, flags=(b"\\Seen",), when=datetime(2026, 10, 2, 10, 0, tzinfo=timezone.utc))
    selects: list[str] = []

    def seen(line) -> None:
        words = line.text.split(None, 3)
        if line.direction == ">" and len(words) > 2 and words[1].upper() in ("SELECT", "EXAMINE"):
            selects.append(words[2].strip('"'))

    stop = TRACE.subscribe(seen)
    try:
        app = make_app(imap_project)
        async with app.run_test(size=(140, 44)) as pilot:
            await settle(pilot)
            await marks_ready(pilot)
            on_screen = rows(app)
            assert len(on_screen) >= 12
    finally:
        stop()
    assert "↩" in next(r for r in on_screen if "Finding number 7" in r)
    assert not any("↩" in r for r in on_screen if "Finding number 7" not in r)
    marks = [f for f in selects if f in ("Drafts", "Sent")]
    assert len(marks) <= 4, f"{len(marks)} SELECTs of Drafts/Sent for {len(on_screen)} rows: {marks}"
