"""The folder picker of a move (``M``): the account's folders, Enter picks, Esc cancels; j k g G
move as in every list of the app.

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
from textual.widgets.option_list import Option

from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS
from mailtriage.tui.panes.folders import folder_paths
from mailtriage.tui.sanitize import inert_text


class FolderPicker(ModalScreen[str | None], bindings.KeyContext):
    CSS_PATH = DIALOG_CSS
    key_context = "FolderPicker"
    BINDINGS = bindings.FOLDER_PICKER

    def __init__(self, folders, *, current: str | None, count: int, account_id: str) -> None:
        super().__init__()
        # Paths from every folder (a parent that holds no mail still names its children).
        self.paths = [(f, path) for f, path in folder_paths(list(folders)) if f.selectable]
        self.folders = [f for f, _path in self.paths]
        self.current = current
        self.count = count
        self.account_id = account_id

    def compose(self) -> ComposeResult:
        with Vertical(id="folder-picker-box", classes="dialog"):
            title = Text(f"Move {self.count} message{'s' if self.count != 1 else ''} to … ", "bold")
            title.append_text(inert_text(f"(account {self.account_id})", style="not bold"))
            yield Static(title, classes="dialog-title")
            options = []
            # Full paths (Lists/dev, not dev), the inbox first, then by path: as the folders pane.
            for folder, path in self.paths:
                label = inert_text(path)
                if folder.role:
                    label.append(f"  {folder.role}", "dim")
                if folder.id == self.current:
                    label.append("  (the messages are here)", "italic")
                options.append(Option(label, id=folder.id, disabled=folder.id == self.current))
            yield OptionList(*options, id="folder-picker-list")
            with Horizontal(classes="dialog-buttons"):
                yield Button(Text("Cancel (esc)"), id="cancel", variant="primary")
        yield Footer()

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.focus()
        first = next((i for i, f in enumerate(self.folders) if f.id != self.current), None)
        if first is not None:
            options.highlighted = first

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    # -- keys: j k g G as every list of the app, Enter picks (or presses the focused button) ----
    def action_cursor_down(self) -> None:
        self.query_one(OptionList).action_cursor_down()

    def action_cursor_up(self) -> None:
        self.query_one(OptionList).action_cursor_up()

    def action_first(self) -> None:
        self.query_one(OptionList).action_first()

    def action_last(self) -> None:
        self.query_one(OptionList).action_last()

    def action_pick(self) -> None:
        if isinstance(self.focused, Button):
            self.focused.press()
        else:
            self.query_one(OptionList).action_select()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)
