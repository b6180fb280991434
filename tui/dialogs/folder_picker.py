"""The folder picker of a move (``M``): the account's folders; typing narrows them (the filter
field of the change-folder picker, ``c``), Up/Down move, Enter picks, Esc cancels.

Folder names come from the server: they are shown inert. The folder the messages are in
is listed but cannot be picked; folders that cannot hold mail are left out. Dismisses
with the picked folder's ID, or None (nothing happens).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, OptionList, Static

from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS
from mailtriage.tui.dialogs.folder_jump import Choice, NarrowedChoices
from mailtriage.tui.panes.folders import folder_paths
from mailtriage.tui.sanitize import inert_text


class FolderPicker(ModalScreen[str | None], bindings.KeyContext):
    CSS_PATH = DIALOG_CSS
    key_context = "FolderPicker"
    BINDINGS = bindings.FOLDER_PICKER

    def __init__(self, folders, *, current: str | None, count: int, account_id: str,
                 cursor_blink: bool = True) -> None:
        super().__init__()
        # Paths from every folder (a parent that holds no mail still names its children).
        self.paths = [(f, path) for f, path in folder_paths(list(folders)) if f.selectable]
        self.folders = [f for f, _path in self.paths]
        self.current = current
        self.count = count
        self.account_id = account_id
        self._cursor_blink = cursor_blink

    def compose(self) -> ComposeResult:
        with Vertical(id="folder-picker-box", classes="dialog"):
            title = Text(f"Move {self.count} message{'s' if self.count != 1 else ''} to … ", "bold")
            title.append_text(inert_text(f"(account {self.account_id})", style="not bold"))
            yield Static(title, classes="dialog-title")
            choices: list[Choice] = []
            # Full paths (Lists/dev, not dev), the inbox first, then by path: as the folders pane.
            for folder, path in self.paths:
                label = inert_text(path)
                if folder.role:
                    label.append(f"  {folder.role}", "dim")
                if folder.id == self.current:
                    label.append("  (the messages are here)", "italic")
                choices.append((folder.id, label, folder.id != self.current, path))
            yield NarrowedChoices(choices, placeholder="type to narrow, Enter moves", cursor_blink=self._cursor_blink,
                                  field_id="folder-picker-filter", list_id="folder-picker-list")
            with Horizontal(classes="dialog-buttons"):
                yield Button(Text("Cancel (esc)"), id="cancel", variant="primary")
        yield Footer()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    # -- keys: letters narrow, Up/Down move, Enter picks (or presses the focused button) ----
    def action_cursor(self, step: int) -> None:
        self.query_one(NarrowedChoices).move(step)

    def action_pick(self) -> None:
        if isinstance(self.focused, Button):
            self.focused.press()
            return
        self.query_one(NarrowedChoices).take(self)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)
