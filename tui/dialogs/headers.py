"""Full headers (``h`` in the reading pane): every header of every message of the open
thread, in the order the message carries them — ``Received``, ``Authentication-Results``,
``DKIM-Signature``, ``Return-Path`` … what a triager checks on a spoofed report.

Header names and values come from the sender (and the relays): each is shown through the
sanitiser (tui/sanitize.py), one line per header, so an escape sequence, a bidi override
or a forged line break stays a visible marker. Esc or q closes; nothing is written.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static

from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS
from mailtriage.tui.sanitize import inert_text


def headers_text(message, index: int, total: int) -> Text:
    """One message's headers as inert text, a title line first."""
    text = Text(f"Message {index} of {total} · ", "bold")
    text.append_text(inert_text(message.message_id, style="bold"))
    if not message.headers:
        text.append("\n(the backend returned no headers for this message)", "italic")
    for name, value in message.headers:
        text.append("\n")
        text.append_text(inert_text(name, style="bold"))
        text.append(": ")
        text.append_text(inert_text(value))
    return text


class HeadersDialog(ModalScreen[None], bindings.KeyContext):
    CSS_PATH = DIALOG_CSS
    key_context = "HeadersDialog"
    BINDINGS = bindings.HEADERS_DIALOG
    DEFAULT_CSS = """
    HeadersDialog { align: center middle; background: $background 60%; }
    #headers-list { height: 1fr; }
    .headers-message { margin-bottom: 1; }
    """

    def __init__(self, thread) -> None:
        super().__init__()
        self.thread = thread

    def compose(self) -> ComposeResult:
        with Vertical(id="headers-box", classes="dialog"):
            title = Text("Full headers · ", "bold")
            title.append_text(inert_text(self.thread.subject or "(no subject)", style="bold"))
            yield Static(title, classes="dialog-title")
            with VerticalScroll(id="headers-list", can_focus=True):
                total = len(self.thread.messages)
                for i, message in enumerate(self.thread.messages, 1):
                    yield Static(headers_text(message, i, total), classes="headers-message")
            with Horizontal(classes="dialog-buttons"):
                yield Button(Text("Close (esc)"), id="close", variant="primary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#headers-list").focus()

    def action_close(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)
