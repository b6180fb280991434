"""Change folder (``c``, mutt's change-folder, aerc's ``:cf``): jump to a list or folder by name.

Offers what the lists pane offers right now (the project's lists, or the open account's
folders with their full paths); typing narrows the choice, Enter opens the highlighted one
(or the first that matches), Esc cancels. Names come from the server or project.md: they
are shown inert. Dismisses with the pane's option index, or None.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS


class FolderJump(ModalScreen[int | None], bindings.KeyContext):
    CSS_PATH = DIALOG_CSS
    key_context = "FolderJump"
    BINDINGS = bindings.FOLDER_JUMP
    DEFAULT_CSS = """
    FolderJump { align: center middle; background: $background 60%; }
    #folder-jump-box { max-width: 70; }
    #folder-jump-list { height: 1fr; }
    """

    def __init__(self, choices: list[tuple[int, Text]], title: str, *, cursor_blink: bool = True) -> None:
        """``choices``: (the lists pane's option index, its label, already inert)."""
        super().__init__()
        self.choices = choices
        self.title_text = title
        self._cursor_blink = cursor_blink
        self._narrowed = ""  # the filter the list shows

    def compose(self) -> ComposeResult:
        with Vertical(id="folder-jump-box", classes="dialog"):
            yield Static(Text(self.title_text, "bold"), classes="dialog-title")
            field = Input(placeholder="type to narrow, Enter opens", id="folder-jump-filter")
            field.cursor_blink = self._cursor_blink  # the app's setting (off in tests: stable snapshots)
            yield field
            yield OptionList(*self._options(""), id="folder-jump-list")
        yield Footer()

    def _options(self, typed: str) -> list[Option]:
        needle = typed.casefold()
        return [Option(label, id=str(index)) for index, label in self.choices if needle in label.plain.casefold()]

    @on(Input.Changed)
    def _narrow(self, event: Input.Changed) -> None:
        self._narrow_to(event.value)

    def _narrow_to(self, typed: str) -> None:
        self._narrowed = typed
        options = self.query_one(OptionList)
        options.set_options(self._options(typed))
        if options.option_count:
            options.highlighted = 0

    def action_open(self) -> None:
        """Enter: the highlighted list or folder (the first that matches what is typed)."""
        bindings.after_typed(self.app, self._open)  # the filter typed before Enter, once handled (a burst)

    def _open(self) -> None:
        typed = self.query_one(Input).value
        if typed != self._narrowed:  # its Changed not handled yet (queued behind this)
            self._narrow_to(typed)
        options = self.query_one(OptionList)
        if options.option_count and self.is_active:
            self.dismiss(int(options.get_option_at_index(options.highlighted or 0).id or 0))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(int(event.option.id or 0))

    def action_cursor(self, step: int) -> None:
        options = self.query_one(OptionList)
        if options.option_count:
            options.highlighted = ((options.highlighted or 0) + step) % options.option_count

    def action_cancel(self) -> None:
        self.dismiss(None)
