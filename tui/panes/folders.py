"""The lists pane: the mailing lists (and, with personal accounts, folders) to read.

The security list comes from ``security_list`` in project.md; when it is not
configured the pane says so and nothing is listed (the contract skips a list read
with no configured list).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from mailtriage.tui import bindings
from mailtriage.tui.sanitize import inert_text


class FolderList(OptionList, inherit_bindings=False):
    BINDINGS = bindings.FOLDERS


class FoldersPane(Vertical):
    @dataclass(eq=False)
    class ListChosen(Message):
        list_name: str | None

    def __init__(self, **kwargs) -> None:
        super().__init__(classes="pane", **kwargs)
        self.border_title = "Lists"
        self._entries: list = []

    def compose(self) -> ComposeResult:
        yield FolderList(id="folder-list")
        yield Static(id="folders-status", classes="pane-status")

    def show_lists(self, entries, since_text: str) -> None:
        self._entries = list(entries)
        options = []
        for i, entry in enumerate(self._entries):
            text = inert_text(entry.label, style="bold" if entry.list_name else "italic")
            options.append(Option(text, id=f"list:{i}", disabled=entry.list_name is None))
        folder_list = self.query_one(FolderList)
        folder_list.set_options(options)
        enabled = [i for i, option in enumerate(options) if not option.disabled]
        if enabled:
            folder_list.highlighted = enabled[0]
        notes = [e.note for e in self._entries if e.list_name is None and e.note]
        status = self.query_one("#folders-status", Static)
        status.update(Text(notes[0] if notes else f"since {since_text}"))
        status.set_class(bool(notes), "-warning")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id or ""
        if option_id.startswith("list:"):
            entry = self._entries[int(option_id.partition(":")[2])]
            self.post_message(self.ListChosen(entry.list_name))
