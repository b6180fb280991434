"""Issue 33: opening a thread once the app is live costs no server round trip the app could
have made while the user looked at the list. Against the real Dovecot behind a proxy whose
answers the test holds: what shows while the server says nothing came from no read.

- The thread of the row the cursor moved to and rests on is read ahead; Enter shows it.
- After the row marks (which select Drafts and Sent on the reading connection), the list
  folder is selected again and its newest message opened: the next Enter sends no SELECT
  (Dovecot's first open of a 100k folder: 0.6-1.2 s).
"""

from datetime import timedelta

import pytest

from mailtriage.core.trace import TRACE
from mailtriage.tui.panes.reader import ReaderPane
from mailtriage.tui.panes.thread_list import ThreadList
from tests.servers.faultproxy import FaultProxy
from tests.tui.helpers import account_through, make_app, screen_text, settle
from tests.tui.test_imap_drafts import REPORT, WHEN, imap_project  # noqa: F401 (fixture)
from tests.tui.test_imap_network import wait_until

SECOND_BODY = "The second report's own body."
OUR_REPLY = (b"From: Security <security@frob.example>\r\nTo: ana@example.com\r\nSubject: Re: old\r\n"
             b"Date: Thu, 01 Oct 2026 10:00:00 +0000\r\nMessage-ID: <ours@frob.example>\r\n"
             b"In-Reply-To: <older@example.com>\r\n\r\nThanks.\r\n")


@pytest.fixture
def idle_project(imap_project, user_config, dovecot, dovecot_user):  # noqa: F811 (the fixture imported)
    """Two report threads (the newer first), one message in Sent (so the row marks select it),
    the account reaching Dovecot through a proxy the test can hold."""
    second = (REPORT.replace(b"overflow-1@", b"second@").replace(b"Heap overflow in the frob parser", b"Second report")
              .replace(b"A crafted .frob file overflows the parser's heap buffer.", SECOND_BODY.encode()))
    dovecot.append(dovecot_user, "INBOX", second, when=WHEN - timedelta(hours=1))
    dovecot.append(dovecot_user, "Sent", OUR_REPLY, when=WHEN)
    proxy = FaultProxy(dovecot.port)
    with account_through(proxy, user_config, dovecot):
        yield imap_project, proxy


class Sent:
    """The IMAP commands the app sends (tag dropped), in order."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    def __enter__(self) -> "Sent":
        self._stop = TRACE.subscribe(self._seen)
        return self

    def __exit__(self, *exc) -> None:
        self._stop()

    def _seen(self, line) -> None:
        if line.direction == ">" and line.channel.startswith("imap"):
            self.commands.append(line.text.split(None, 1)[-1])

    def selects(self) -> list[str]:
        return [c for c in self.commands if c.upper().startswith(("SELECT", "EXAMINE"))]


async def rest_on_the_second_row(app, pilot) -> ThreadList:
    """The cursor moves to the second report and rests there until its thread is read ahead."""
    await settle(pilot)
    listing = app.screen.query_one(ThreadList)
    assert listing.rows.peek(1).subject == "Second report"
    await pilot.press("j")
    await wait_until(pilot, lambda: app.screen.reading.thread_ahead.holds(listing.current))
    return listing


async def test_the_thread_the_cursor_rests_on_is_shown_at_enter_with_the_server_held(idle_project):
    project, proxy = idle_project
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        await rest_on_the_second_row(app, pilot)
        proxy.hold()  # from now on the server answers nothing
        try:
            await pilot.press("enter")
            await pilot.pause()
            reader = app.screen.query_one(ReaderPane)
            assert reader.thread is not None and reader.thread.subject == "Second report"
            assert SECOND_BODY in screen_text(app)
        finally:
            proxy.release()


async def test_enter_while_the_read_ahead_is_on_its_way_reads_the_thread_once(idle_project):
    project, proxy = idle_project
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        with Sent() as sent:
            proxy.hold()  # the read ahead waits for the server
            await pilot.press("j")
            listing = app.screen.query_one(ThreadList)
            await wait_until(pilot, lambda: app.screen.reading.thread_ahead.reading(listing.current))
            await pilot.press("enter")
            await pilot.pause(0.1)
            proxy.release()
            await wait_until(pilot, lambda: SECOND_BODY in screen_text(app))
            await settle(pilot)
        reads = [c for c in sent.commands if "BODY.PEEK[]" in c and "<0.1>" not in c]
        assert len(reads) == 1, sent.commands


async def test_after_the_row_marks_the_list_folder_is_open_again_and_enter_selects_nothing(idle_project):
    project, _proxy = idle_project
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        with Sent() as sent:
            await settle(pilot)
            # The row marks ask Drafts and Sent, then the list folder's newest message is opened.
            await wait_until(pilot, lambda: any("BODY.PEEK[]<0.1>" in c for c in sent.commands))
            await settle(pilot)
            assert sent.selects()[-1].split(None, 1)[1].strip('"') == "INBOX", sent.selects()
            assert any("Sent" in c for c in sent.selects()), sent.commands  # the marks did leave INBOX
            before = len(sent.commands)
            await pilot.press("enter")  # the first row: no read ahead of it, a read of its own
            await wait_until(pilot, lambda: "heap buffer" in screen_text(app))
            await settle(pilot)
            during = [c for c in sent.commands[before:] if c.upper().startswith(("SELECT", "EXAMINE"))]
            assert during == [], sent.commands[before:]


async def test_after_r_enter_reads_the_thread_again_rather_than_show_the_one_read_ahead(idle_project):
    # R promises to read again; a thread read ahead before it was shown as current (a review).
    project, proxy = idle_project
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        listing = await rest_on_the_second_row(app, pilot)
        proxy.hold()
        try:
            await pilot.press("R")
            await pilot.pause()
            assert not app.screen.reading.thread_ahead.holds(listing.current)
            await pilot.press("enter")
            await pilot.pause()
            assert SECOND_BODY not in screen_text(app)  # a read of its own, waiting on the server
        finally:
            proxy.release()
        await wait_until(pilot, lambda: SECOND_BODY in screen_text(app))
