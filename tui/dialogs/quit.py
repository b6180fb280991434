"""Quit with something pending: says what would be dropped, and quits only on ``y``."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static

from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS
from mailtriage.tui.sanitize import inert_text


class QuitDialog(ModalScreen[bool], bindings.KeyContext):
    CSS_PATH = DIALOG_CSS
    key_context = "QuitDialog"
    BINDINGS = bindings.QUIT_DIALOG

    def __init__(self, pending: list[str]) -> None:
        super().__init__()
        self.pending = pending

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box", classes="dialog"):
            yield Static(Text("Quit mailtriage? Something is pending", "bold"), classes="dialog-title")
            text = Text()
            for line in self.pending:
                text.append("• ")
                text.append_text(inert_text(line))
                text.append("\n")
            text.append("\nQuitting now drops what is not written yet.", "italic")
            yield Static(text, id="quit-pending")
            with Horizontal(classes="dialog-buttons"):
                yield Button(Text("Quit anyway (y)"), id="quit", variant="error")
                yield Button(Text("Stay (n / esc)"), id="stay", variant="primary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#stay", Button).focus()

    def action_quit_anyway(self) -> None:
        self.dismiss(True)

    def action_stay(self) -> None:
        self.dismiss(False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "quit")
