"""Issue 35 §4 on a personal account (the real Dovecot): g/G and c (change folder) over the
account's folders, and ``confirm_flag_changes = false`` (read/unread and flag written at
once; a move still asks)."""

from __future__ import annotations

import pytest

from mailtriage.tui.dialogs.folder_jump import FolderJump
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.panes.folders import FolderList
from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.helpers import back_to_the_list, make_app, screen_text, settle
from tests.tui.test_account_folders import folder_subjects, inbox_flags, open_inbox, write_project


@pytest.fixture
def account_project(tmp_path, user_config, dovecot, dovecot_user, memory_keyring):
    return write_project(tmp_path, user_config, dovecot, dovecot_user, "draft")


def highlighted_label(app) -> str:
    folder_list = app.screen.query_one(FolderList)
    return folder_list.get_option_at_index(folder_list.highlighted).prompt.plain


async def test_confirm_flag_changes_false_writes_flags_at_once_but_a_move_still_asks(
        account_project, user_config, dovecot, dovecot_user):
    config = user_config / "config.toml"
    config.write_text("confirm_flag_changes = false\n" + config.read_text(encoding="utf-8"), encoding="utf-8")
    app = make_app(account_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("f")
        await settle(pilot)
        assert not isinstance(app.screen, ProposalDialog)
        assert b"\\Flagged" in inbox_flags(dovecot, dovecot_user)["Path traversal in frob-serve"]
        await pilot.press("m")  # mark read: at once too
        await settle(pilot)
        assert b"\\Seen" in inbox_flags(dovecot, dovecot_user)["Path traversal in frob-serve"]
        await pilot.press("a")  # a move is never written unasked
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        await pilot.press("escape")
        await settle(pilot)
    assert folder_subjects(dovecot, dovecot_user, "Archive") == []


def test_a_wrong_confirm_flag_changes_is_reported_at_start(tmp_path):
    from mailtriage.core.settings import UserSettings

    settings = UserSettings(tmp_path / "config.toml", {"confirm_flag_changes": "no"})
    app = make_app(tmp_path, settings=settings)
    assert f"{tmp_path / 'config.toml'}: confirm_flag_changes: is 'no' (valid: true or false)" in app.startup_problems


async def g_and_G_in_the_folders_pane_and_c_jumps_to_a_folder_by_name(app, pilot) -> None:
    """From the INBOX's list (the folders pane shows the account's folders)."""
    await pilot.press("2", "G")
    await settle(pilot)
    folder_list = app.screen.query_one(FolderList)
    assert isinstance(app.focused, FolderList) and folder_list.highlighted == folder_list.option_count - 1
    await pilot.press("g")
    await settle(pilot)
    assert folder_list.highlighted == 0 and highlighted_label(app) == "← project lists"
    await pilot.press("3", "c")
    await settle(pilot)
    assert isinstance(app.screen, FolderJump)
    await pilot.press(*"arch", "enter")
    await settle(pilot)
    assert not isinstance(app.screen, FolderJump) and isinstance(app.focused, ThreadList)
    assert "Threads · work · Archive" in screen_text(app)
    await pilot.press("c", "escape")  # Esc: stay where we are
    await settle(pilot)
    assert "Threads · work · Archive" in screen_text(app)


async def test_pipe_an_account_message_then_g_G_and_c_in_its_folders(account_project, dovecot, dovecot_user):
    """Two tests that write nothing, one app each, on one app (issue 36 §7): the pipe on the
    INBOX's first message (it must not mark it read), then, from the INBOX's list again
    (``back_to_the_list``), g/G and c over the account's folders."""
    from textual.widgets import Static

    app = make_app(account_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        # The pipe gets the server's raw bytes.
        await pilot.press("enter", "4", "vertical_line", *"grep -c -e ^Message-ID: -e ^Body", "enter", "ctrl+s")
        await settle(pilot)
        assert app.screen.query_one("#pipe-plan", Static).content.plain == "exit status 0"
        assert app.screen.query_one("#pipe-output-text", Static).content.plain == "2\n"  # a header and the body
        await back_to_the_list(pilot)
        await g_and_G_in_the_folders_pane_and_c_jumps_to_a_folder_by_name(app, pilot)
    assert b"\\Seen" not in inbox_flags(dovecot, dovecot_user)["Path traversal in frob-serve"], \
        "the pipe marked the message read"
