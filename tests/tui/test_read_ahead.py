"""Issue 35: Enter and r on a personal account's message as fast as aerc. The message under the
cursor is read ahead, so Enter shows it without a round trip; r answers the message the reader
already holds instead of reading it again (twice, before). Against the real Dovecot behind a
proxy whose answers the test holds: what shows while the server says nothing came from no read."""

from datetime import datetime, timezone

import pytest

from mailtriage.tui.controllers.accounts import Accounts
from mailtriage.tui.dialogs.compose import ComposeDialog
from mailtriage.tui.mailbox_rows import MailboxRow
from mailtriage.tui.panes.reader import ReaderPane
from tests.servers.faultproxy import FaultProxy
from tests.tui.helpers import account_through, make_app, screen_text, settle, write_imap_project
from tests.tui.test_account_folders import open_inbox, report
from tests.tui.test_imap_network import wait_until

LIST = "security@frob.example"
BODY = "Shall we meet at noon on Friday?"


def personal(to: str) -> bytes:
    """A message to the account itself, answering nothing: the account's own mail to reply to."""
    return (f"From: Bo Friend <bo@example.net>\r\nTo: {to}\r\nSubject: Lunch on Friday\r\n"
            "Date: Fri, 09 Oct 2026 09:00:00 +0000\r\nMessage-ID: <lunch@example.net>\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
            f"{BODY}\r\n").encode()


@pytest.fixture
def held_project(tmp_path, user_config, dovecot, dovecot_user, memory_keyring):
    """An account (access = "draft") reaching Dovecot through a proxy; its newest message is
    the personal one, so it is the first row."""
    project = write_imap_project(tmp_path, user_config, dovecot, dovecot_user, access="draft", list_address=LIST)
    dovecot.append(dovecot_user, "INBOX", report(1, "Heap overflow in the frob parser"),
                   when=datetime(2026, 10, 1, 9, 0, tzinfo=timezone.utc))
    dovecot.append(dovecot_user, "INBOX", personal(f"{dovecot_user.name}@example.org"),
                   when=datetime(2026, 10, 9, 9, 0, tzinfo=timezone.utc))
    proxy = FaultProxy(dovecot.port)
    with account_through(proxy, user_config, dovecot):
        yield project, proxy


async def test_enter_shows_the_message_under_the_cursor_and_r_quotes_it_with_the_server_held(held_project):
    project, proxy = held_project
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)  # the cursor rests on the newest message: read ahead
        await settle(pilot)
        proxy.hold()  # from now on the server answers nothing
        try:
            await pilot.press("enter")
            await pilot.pause()
            reader = app.main.query_one(ReaderPane)
            assert reader.thread is not None and reader.thread.subject == "Lunch on Friday"
            assert BODY in screen_text(app)
            await pilot.press("r")  # the reader's copy is what the reply quotes
            await wait_until(pilot, lambda: isinstance(app.screen, ComposeDialog))
            assert f"> {BODY}" in screen_text(app)
        finally:
            proxy.release()


async def test_esc_while_the_reply_is_prepared_cancels_it_and_no_dialog_opens_later(held_project):
    """r on a report of the security list: its draft needs the project's thread, which the
    held server does not give. Esc in the reader while "preparing the mail … (Esc cancels)"
    shows cancels the preparation: when the server answers again, no compose dialog opens."""
    project, proxy = held_project
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("down")  # the report; resting on it reads it ahead
        await settle(pilot)
        proxy.hold()
        try:
            await pilot.press("enter")
            await wait_until(pilot, lambda: "Body of report 1." in screen_text(app))
            await pilot.press("r")
            await wait_until(pilot, lambda: "preparing the mail" in screen_text(app))
            await pilot.press("escape")
            await pilot.pause()
        finally:
            proxy.release()
        await wait_until(pilot, lambda: not any(w.group == "reply" and not w.is_finished
                                                for w in app.main.workers))
        await settle(pilot)
        assert not isinstance(app.screen, ComposeDialog)
        assert "preparing the mail" not in screen_text(app)


async def test_the_newest_message_is_being_read_when_the_folders_rows_are_first_drawn(held_project, monkeypatch):
    """A habit user opens the folder and types Enter as soon as the newest row shows (bench_habits):
    its read ahead started when the list's Highlighted reached the screen, which a frame (the rows'
    first) could precede, and that Enter then waited for the round trip (issue 35: open <= 2x aerc's,
    traced in tmux: the read asked 3-7 ms before the Enter, answered after it). Now the turn that
    shows the rows starts it, so no frame comes between."""
    project, _proxy = held_project
    app = make_app(project)
    seen: list[bool] = []  # as the folder's rows are shown: a read of the cursor's message on its way?
    shown = Accounts.on_folder_listed

    def showing(self, message) -> None:
        shown(self, message)
        seen.append(any(w.group == "read-ahead" for w in self.workers))
    monkeypatch.setattr(Accounts, "on_folder_listed", showing)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        assert seen == [True]
        assert isinstance(app.main.threads.thread_list.current, MailboxRow)
        await settle(pilot)
        await pilot.press("enter")
        await pilot.pause()
        assert BODY in screen_text(app)
