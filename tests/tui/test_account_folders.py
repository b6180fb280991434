"""Personal accounts in the TUI, against the real Dovecot: browse folders, read a
message without setting \\Seen, flag / archive / trash through the proposal dialog."""

from datetime import datetime, timezone

import pytest

from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.panes.folders import FolderList
from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.helpers import back_to_the_list, make_app, screen_text, settle, write_imap_project

LIST = "security@frob.example"


def report(n: int, subject: str) -> bytes:
    return (f"From: Ana Reporter <ana@example.com>\r\nTo: {LIST}\r\nSubject: {subject}\r\n"
            f"Date: Thu, 0{n} Oct 2026 09:00:00 +0000\r\nMessage-ID: <r{n}@example.com>\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
            f"Body of report {n}.\r\n").encode()


def write_project(tmp_path, user_config, dovecot, dovecot_user, access: str):
    project = write_imap_project(tmp_path, user_config, dovecot, dovecot_user, access=access, list_address=LIST)
    dovecot.append(dovecot_user, "INBOX", report(1, "Heap overflow in the frob parser"),
                   when=datetime(2026, 10, 1, 9, 0, tzinfo=timezone.utc))
    dovecot.append(dovecot_user, "INBOX", report(2, "Path traversal in frob-serve"),
                   when=datetime(2026, 10, 2, 9, 0, tzinfo=timezone.utc))
    return project


@pytest.fixture
def account_project(tmp_path, user_config, dovecot, dovecot_user, memory_keyring):
    return write_project(tmp_path, user_config, dovecot, dovecot_user, "draft")


def inbox_flags(dovecot, user) -> dict[str, tuple]:
    """Subject -> flags, read without touching \\Seen."""
    with dovecot.client(user) as client:
        client.select_folder("INBOX", readonly=True)
        uids = client.search("ALL")
        fetched = client.fetch(uids, ["FLAGS", "BODY.PEEK[HEADER.FIELDS (SUBJECT)]"]) if uids else {}
        out = {}
        for data in fetched.values():
            raw = data[b"BODY[HEADER.FIELDS (SUBJECT)]"].decode().strip()
            # \Recent belongs to the IMAP session that saw the mail first, not to the message.
            out[raw.partition(": ")[2]] = tuple(f for f in data[b"FLAGS"] if f != b"\\Recent")
        return out


def folder_subjects(dovecot, user, folder: str) -> list[str]:
    with dovecot.client(user) as client:
        client.select_folder(folder, readonly=True)
        uids = client.search("ALL")
        fetched = client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (SUBJECT)]"]) if uids else {}
        return sorted(d[b"BODY[HEADER.FIELDS (SUBJECT)]"].decode().strip().partition(": ")[2]
                      for d in fetched.values())


async def open_inbox(app, pilot):
    """Sources pane → the account → its folders → INBOX."""
    await settle(pilot)
    await pilot.press("1")
    await settle(pilot)
    await pilot.press("down", "enter")  # the backend row first, then the account
    await settle(pilot)
    assert isinstance(app.focused, FolderList)
    await pilot.press("enter")  # INBOX is highlighted first
    await settle(pilot)
    assert isinstance(app.focused, ThreadList)


async def browse_folders_and_read_without_marking_seen(app, pilot) -> None:
    await pilot.press("1")
    await settle(pilot)
    await pilot.press("down", "enter")
    await settle(pilot)
    shown = screen_text(app)
    assert "Folders · work" in shown
    assert "INBOX inbox 2/2" in shown
    assert "Archive archive 0/0" in shown and "Trash trash 0/0" in shown
    await pilot.press("enter")
    await settle(pilot)
    shown = screen_text(app)
    assert "Threads · work · INBOX" in shown
    rows = app.main.threads.thread_list.rows
    assert [rows.peek(i).subject for i in range(len(rows))] == [
        "Path traversal in frob-serve", "Heap overflow in the frob parser"]  # newest first
    status = str(app.screen.query_one("#threads-status").render())
    assert "2 messages" in status and "thread" not in status  # a folder's rows are messages
    # Esc on a proposal changes nothing (was test_cancelled_flag_and_mark_read_change_nothing, an
    # app of its own): once, as the dialog is the same for every organize key: f, a and d open
    # their proposals in the tests below, and the app machine cancels all four at random with
    # its "nothing written without a confirmation" invariant (test_app_machine.py).
    await pilot.press("m")
    await settle(pilot)
    assert isinstance(app.screen, ProposalDialog)
    await pilot.press("escape")
    await settle(pilot)
    assert not isinstance(app.screen, ProposalDialog)
    await pilot.press("enter")
    await settle(pilot)
    shown = screen_text(app)
    assert "Body of report 2." in shown


async def a_large_folder_is_paged_as_you_scroll(app, pilot, count: int) -> None:
    await pilot.press("1", "g")  # the Sources pane keeps its cursor: g, its first row (the backend)
    await settle(pilot)
    await pilot.press("down", "enter")
    await settle(pilot)
    folder_list = app.screen.query_one(FolderList)
    index = next(i for i in range(folder_list.option_count)
                 if "Lists" in str(folder_list.get_option_at_index(i).prompt))
    folder_list.highlighted = index
    await pilot.press("enter")
    await settle(pilot)
    rows = app.main.threads.thread_list.rows
    assert len(rows) == count and rows.loaded_pages() == 1  # only the first page was fetched
    assert rows.peek(count - 1) is None
    await pilot.press("G")
    await settle(pilot)
    assert rows.loaded_pages() == 2
    assert rows.peek(count - 1).subject == "Bulk message 000"  # the oldest, last


async def an_account_that_cannot_be_browsed_says_so_in_the_folders_pane(app, pilot) -> None:
    await pilot.press("1", "g")  # from the first row, as the app starts
    await settle(pilot)
    await pilot.press("down", "down", "enter")  # backend, work, outlook
    await settle(pilot)
    shown = screen_text(app)
    assert "Folders · outlook" in shown
    status = str(app.screen.query_one("#folders-status").render())
    assert "← project lists" in shown and "⚠" in shown
    assert status.startswith("⚠") and "accounts of kind 'graph' cannot be browsed yet" in status
    assert "loading folders" not in shown
    await pilot.press("enter")  # back to the project's lists
    await settle(pilot)
    assert "Folders · outlook" not in screen_text(app)


async def a_folder_gone_from_the_server_says_so_in_the_thread_list(app, pilot, dovecot, dovecot_user) -> None:
    """The folder's listing failed (the accounts' worker answers to the accounts, which hand
    the failure to the listing): the thread list and the error list say so."""
    await pilot.press("1", "g")
    await settle(pilot)
    await pilot.press("down", "enter")
    await settle(pilot)
    folder_list = app.screen.query_one(FolderList)
    folder_list.highlighted = next(i for i in range(folder_list.option_count)
                                   if "Lists" in str(folder_list.get_option_at_index(i).prompt))
    with dovecot.client(dovecot_user) as client:  # another client deletes it meanwhile
        client.delete_folder("Lists")
    await pilot.press("enter")
    await settle(pilot)
    assert (app.main.threads.failure or "").startswith("⚠ press R to retry")
    assert [(e.title, e.where) for e in app.errors][-1:] == [("Listing work · Lists failed", "threads")]


async def test_browse_read_a_paged_folder_and_an_account_that_cannot_be_browsed(account_project, dovecot,
                                                                                 dovecot_user, user_config):
    """Four tests that write nothing, one app each, on one app (issue 36 §7): the account
    has a large Lists folder and the settings a graph account beside it from the start (neither
    changes what the INBOX and the folder list of work show; the last check deletes Lists).
    Each check starts from the list focused (``back_to_the_list`` asserts it) and opens the
    Sources pane itself."""
    from mailtriage.tui.mailbox_rows import FOLDER_PAGE

    count = FOLDER_PAGE + 30
    with dovecot.client(dovecot_user) as client:
        client.create_folder("Lists")
        for n in range(count):
            client.append("Lists", report(3, f"Bulk message {n:03d}"),
                          msg_time=datetime(2026, 9, 1, 0, n % 60, n // 60, tzinfo=timezone.utc))
    with (user_config / "config.toml").open("a", encoding="utf-8") as settings:
        settings.write('\n[accounts.outlook]\nkind = "graph"\n')
    before = inbox_flags(dovecot, dovecot_user)
    app = make_app(account_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        await browse_folders_and_read_without_marking_seen(app, pilot)
        await back_to_the_list(pilot)
        await a_large_folder_is_paged_as_you_scroll(app, pilot, count)
        await back_to_the_list(pilot)
        await an_account_that_cannot_be_browsed_says_so_in_the_folders_pane(app, pilot)
        await back_to_the_list(pilot)
        await a_folder_gone_from_the_server_says_so_in_the_thread_list(app, pilot, dovecot, dovecot_user)
    flags = inbox_flags(dovecot, dovecot_user)
    assert b"\\Seen" not in flags["Path traversal in frob-serve"]
    assert flags == before  # neither the read nor the cancelled mark-read changed a flag
    assert folder_subjects(dovecot, dovecot_user, "Archive") == []


async def test_flag_confirmed_writes_flagged_and_refreshes(account_project, dovecot, dovecot_user):
    app = make_app(account_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("j", "f")  # the second (older) message
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        shown = screen_text(app)
        assert "Flag · on the server of account work" in shown
        assert "Change: flag (add \\Flagged)" in shown
        assert "Message: Heap overflow in the frob parser — from Ana Reporter <ana@example.com> — in INBOX" in shown
        assert b"\\Flagged" not in inbox_flags(dovecot, dovecot_user)["Heap overflow in the frob parser"]
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, ProposalDialog)
        thread_list = app.main.threads.thread_list
        assert thread_list.cursor == 1  # the refreshed list keeps the cursor on the flagged message
        assert thread_list.current.header.flagged and thread_list.current.subject.startswith("⚑ ")
    flags = inbox_flags(dovecot, dovecot_user)
    assert b"\\Flagged" in flags["Heap overflow in the frob parser"]
    assert b"\\Flagged" not in flags["Path traversal in frob-serve"]
    assert b"\\Seen" not in flags["Heap overflow in the frob parser"]


async def test_archive_and_trash_move_through_the_proposal(account_project, dovecot, dovecot_user):
    app = make_app(account_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("a")
        await settle(pilot)
        shown = screen_text(app)
        assert "Move to the archive folder · on the server of account work" in shown
        assert "To folder: Archive" in shown
        await pilot.press("ctrl+s")
        await settle(pilot)
        rows = app.main.threads.thread_list.rows
        assert len(rows) == 1 and rows.peek(0).subject == "Heap overflow in the frob parser"
        await pilot.press("d")
        await settle(pilot)
        assert "To folder: Trash" in screen_text(app)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert len(app.main.threads.thread_list.rows) == 0
        assert "INBOX inbox 0/0" in screen_text(app)
    assert folder_subjects(dovecot, dovecot_user, "INBOX") == []
    assert folder_subjects(dovecot, dovecot_user, "Archive") == ["Path traversal in frob-serve"]
    assert folder_subjects(dovecot, dovecot_user, "Trash") == ["Heap overflow in the frob parser"]


async def test_a_read_only_account_shows_the_refusal(tmp_path, user_config, dovecot, dovecot_user, memory_keyring):
    project = write_project(tmp_path, user_config, dovecot, dovecot_user, "read")
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        assert "Nothing can be written: account work has access = 'read'" in screen_text(app)
        assert not app.screen.can_confirm
        await pilot.press("ctrl+s")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
    assert all(b"\\Flagged" not in flags for flags in inbox_flags(dovecot, dovecot_user).values())


def test_snapshot_of_an_account_folder_with_a_message_open(snap_compare, account_project):
    async def run_before(pilot):
        await open_inbox(pilot.app, pilot)
        await pilot.press("enter")
        await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(account_project), terminal_size=(130, 36), run_before=run_before)
