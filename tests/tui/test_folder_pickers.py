"""Issue 35: the move picker (``M``) narrows as you type, with the change-folder picker's
filter field, and ``c`` from the project's lists reaches the personal accounts' folders
(``account/folder``), opening one as choosing it in the account's folders does."""

from __future__ import annotations

import pytest
from textual.app import App

from mailtriage.backends.mailbox_contract import MailFolder
from mailtriage.tui.dialogs.folder_jump import FolderJump
from mailtriage.tui.dialogs.folder_picker import FolderPicker
from mailtriage.tui.panes.folders import FolderList, FoldersPane
from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.helpers import make_app, screen_text, settle
from tests.tui.test_account_folders import write_project

FOLDERS = [MailFolder("Trash", "Trash", None, "trash", 0, 0),
           MailFolder("Lists", "Lists", None, None, 0, 0, selectable=False),
           MailFolder("Lists.dev", "dev", "Lists", None, 0, 3),
           MailFolder("Archive", "Archive", None, "archive", 0, 0),
           MailFolder("INBOX", "INBOX", None, "inbox", 1, 2),
           MailFolder("Lists.announce", "announce", "Lists", None, 0, 1)]


class PickerHost(App):
    def __init__(self) -> None:
        super().__init__()
        self.picked: list = []

    def on_mount(self) -> None:
        self.push_screen(FolderPicker(FOLDERS, current="INBOX", count=1, account_id="work"),
                         callback=self.picked.append)


def shown(app) -> list[str]:
    options = app.screen.query_one("#folder-picker-list")
    return [options.get_option_at_index(i).prompt.plain.split("  ")[0] for i in range(options.option_count)]


async def test_the_move_picker_lists_full_paths_sorted_with_the_inbox_first():
    """(from tests/tui/test_words.py: issue 35 §6, leaf names in server order)"""
    app = PickerHost()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert shown(app) == ["INBOX", "Archive", "Lists/announce", "Lists/dev", "Trash"]
        assert app.screen.query_one("#folder-picker-list").highlighted == 1  # the first folder the messages can go to
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.picked == ["Lists.announce"]  # the ID of the folder picked, by its path


async def test_typing_narrows_the_move_picker_and_enter_moves_to_the_first_match():
    app = PickerHost()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press(*"are")  # a path, not the current folder's "(the messages are here)"
        await pilot.pause()
        assert shown(app) == []
        await pilot.press("backspace", "backspace", "backspace", *"is")  # Lists/…: letters type, not move
        await pilot.pause()
        assert shown(app) == ["Lists/announce", "Lists/dev"]
        assert app.screen.query_one("#folder-picker-filter").value == "is"
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.picked == ["Lists.dev"]


async def test_the_folder_the_messages_are_in_cannot_be_picked_by_narrowing_to_it():
    app = PickerHost()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press(*"inb", "enter")
        await pilot.pause()
        assert shown(app) == ["INBOX"] and isinstance(app.screen, FolderPicker) and app.picked == []
        await pilot.press("backspace", "backspace", "backspace", "escape")
        await pilot.pause()
        assert app.picked == [None]


@pytest.fixture
def account_project(tmp_path, user_config, dovecot, dovecot_user, memory_keyring):
    return write_project(tmp_path, user_config, dovecot, dovecot_user, "draft")


async def test_c_from_the_project_lists_opens_an_account_folder(account_project):
    app = make_app(account_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        assert app.screen.query_one(FoldersPane).account_id is None  # the project's lists
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, FolderJump)
        await pilot.press(*"work/arch")
        await settle(pilot)
        assert "work/Archive" in screen_text(app) and "listing the accounts' folders" not in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, FolderJump) and isinstance(app.focused, ThreadList)
        assert "Threads · work · Archive" in screen_text(app)
        folders = app.screen.query_one(FoldersPane)  # the pane shows where we are, as after Enter there
        folder_list = folders.query_one(FolderList)
        assert folders.account_id == "work"
        assert folder_list.get_option_at_index(folder_list.highlighted).prompt.plain.startswith("Archive")
