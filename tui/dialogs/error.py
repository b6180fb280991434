"""Error details: what failed, where, and the technical detail, as plain text.

Notifications carry one line; this dialog (``!``) shows the recent errors in full.
A traceback is shown only folded, as text, for a developer to copy.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Collapsible, Footer, Static

from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS
from mailtriage.tui.errors import ErrorRecord
from mailtriage.tui.sanitize import inert_text
from mailtriage.tui.scroll_keys import ScrollKeys

__all__ = ["ErrorDialog", "ErrorRecord"]


class ErrorDialog(ModalScreen[None], bindings.KeyContext, ScrollKeys):
    CSS_PATH = DIALOG_CSS
    key_context = "ErrorDialog"
    BINDINGS = bindings.ERROR_DIALOG
    scroll_target = "#error-list"  # j k space g G scroll it (ScrollKeys)

    @classmethod
    def open(cls, app: App, records: list[ErrorRecord]) -> None:
        """``!``: the dialog; before any error a toast says so (no dialog with nothing in it)."""
        if not records:
            app.notify("No errors so far.", title="Error details", markup=False)
            return
        app.push_screen(cls(records))

    def __init__(self, records: list[ErrorRecord]) -> None:
        super().__init__()
        self.records = records

    def compose(self) -> ComposeResult:
        with Vertical(id="error-box", classes="dialog"):
            count = len(self.records)
            yield Static(Text(f"Errors ({count}, newest first)" if count else "No errors so far", "bold"),
                         classes="dialog-title")
            with VerticalScroll(id="error-list"):
                for record in reversed(self.records[-20:]):
                    text = Text()
                    text.append_text(inert_text(record.title, style="bold"))
                    text.append("\n")
                    text.append_text(inert_text(record.message))
                    if record.where:
                        text.append("\nwhere: ", "bold")
                        text.append_text(inert_text(record.where))
                    if record.resolution:
                        text.append("\nbackends: ", "bold")
                        text.append_text(inert_text(record.resolution))
                    if record.details:
                        text.append("\n")
                        text.append_text(inert_text(record.details, multiline=True))
                    for hint in record.hints:
                        text.append("\n→ ", "bold")
                        text.append_text(inert_text(hint))
                    yield Static(text, classes="error-record")
                    if record.technical:
                        with Collapsible(title="technical detail", collapsed=True):
                            yield Static(inert_text(record.technical, multiline=True), classes="error-technical")
            with Horizontal(classes="dialog-buttons"):
                yield Button(Text("Close (esc)"), id="close", variant="primary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#close", Button).focus()

    def action_close(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)
