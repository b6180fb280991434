"""The explicit choice to draft in clear a reply to an encrypted report (OpenPGP).

Shown instead of the proposal when the reply cannot be encrypted (no key of the reporter in the
keyring, no GnuPG): it says why, and the default is to write nothing. Only ``c`` (or the button)
goes on to a new reply proposal marked IN CLEAR, which is then confirmed as any other.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static

from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS
from mailtriage.tui.sanitize import inert_text

__all__ = ["ClearReplyDialog"]


class ClearReplyDialog(ModalScreen[bool], bindings.KeyContext):
    CSS_PATH = DIALOG_CSS
    key_context = "ClearReplyDialog"
    BINDINGS = bindings.CLEAR_REPLY

    def __init__(self, why: str) -> None:
        super().__init__()
        self.why = why

    def compose(self) -> ComposeResult:
        with Vertical(id="clear-reply-box", classes="dialog"):
            yield Static(Text("This reply cannot be encrypted", "bold"), classes="dialog-title")
            text = Text()
            text.append_text(inert_text(self.why))
            text.append("\n\nNothing is written unless you choose to draft the reply IN CLEAR; "
                        "the next proposal then says so and still needs your confirmation.")
            yield Static(text, id="clear-reply-why")
            with Horizontal(classes="dialog-buttons"):
                yield Button(Text("Cancel (esc)"), id="cancel", variant="primary")
                yield Button(Text("Draft in clear (c)"), id="clear", variant="warning")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def action_cancel(self) -> None:
        self.dismiss(False)

    def action_clear(self) -> None:
        self.dismiss(True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "clear")
