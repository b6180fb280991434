"""Unlock the OpenPGP key a thread needs: the agent's pinentry (the app suspended) or, when the
user opted in (``[pgp] pinentry = "loopback"``), a passphrase typed here.

Shown when a message stayed encrypted because its key needs a passphrase and no pinentry could
ask from behind the app. The passphrase goes to gpg on a pipe (loopback) and is kept nowhere:
not in the app, the log or the trace.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Static

from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS

__all__ = ["PassphraseDialog"]


class PassphraseDialog(ModalScreen["str | None"], bindings.KeyContext):
    """Dismissed with None (not now), "" (ask with the agent's pinentry) or the passphrase (loopback)."""
    CSS_PATH = DIALOG_CSS

    key_context = "PassphraseDialog"
    BINDINGS = bindings.PASSPHRASE

    def __init__(self, loopback: bool, *, cursor_blink: bool = True) -> None:
        super().__init__()
        self.loopback = loopback
        self._cursor_blink = cursor_blink

    def compose(self) -> ComposeResult:
        with Vertical(id="passphrase-box", classes="dialog"):
            yield Static(Text("The secret key needs its passphrase", "bold"), classes="dialog-title")
            if self.loopback:
                yield Static(Text("Type it here (pgp.pinentry = loopback); it goes to gpg on a pipe and is kept "
                                  "nowhere. Enter unlocks, Esc leaves the message encrypted."))
                field = Input(password=True, placeholder="passphrase", id="passphrase")
                field.cursor_blink = self._cursor_blink
                yield field
            else:
                yield Static(Text("Enter suspends the app and lets your GnuPG agent ask (its pinentry, on this "
                                  "terminal); the app comes back afterwards. Esc leaves the message encrypted."))
            with Horizontal(classes="dialog-buttons"):
                yield Button(Text("Unlock (enter)"), id="unlock", variant="primary")
                yield Button(Text("Not now (esc)"), id="cancel")
        yield Footer()

    def on_mount(self) -> None:
        if self.loopback:
            self.query_one("#passphrase", Input).focus()
        else:
            self.query_one("#unlock", Button).focus()

    def _value(self) -> str:
        return self.query_one("#passphrase", Input).value if self.loopback else ""

    def action_unlock(self) -> None:
        self.dismiss(self._value())

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(self._value() if event.button.id == "unlock" else None)
