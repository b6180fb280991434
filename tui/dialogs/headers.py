"""Full headers (``h`` in the reading pane): every header of every message of the open
thread, in the order the message carries them — ``Received``, ``Authentication-Results``,
``DKIM-Signature``, ``Return-Path`` … what a triager checks on a spoofed report. ``x``
shows the raw source instead (the bytes as the backend holds them), and back.

Header names and values come from the sender (and the relays): each is shown through the
sanitiser (tui/sanitize.py), one line per header, so an escape sequence, a bidi override
or a forged line break stays a visible marker; the raw source goes through it too (as
multi-line text). Esc or q closes; nothing is written.
"""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static

from mailtriage.core.secrets import scrub
from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS
from mailtriage.tui.errors import error_line
from mailtriage.tui.sanitize import inert_text
from mailtriage.tui.scroll_keys import ScrollKeys

#: How much of one message's raw source is shown (the rest is said, not drawn).
RAW_SHOWN = 256 * 1024


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


def raw_text(raw: bytes, index: int, total: int) -> Text:
    """One message's raw source as inert text (undecodable bytes shown as U+FFFD)."""
    text = Text(f"Message {index} of {total} · raw source, {len(raw):,} bytes\n", "bold")
    text.append_text(inert_text(raw[:RAW_SHOWN].decode("utf-8", "replace"), multiline=True))
    if len(raw) > RAW_SHOWN:
        text.append(f"\n… {len(raw) - RAW_SHOWN:,} more bytes not shown (| pipes all of it)", "italic")
    return text


class HeadersDialog(ModalScreen[None], bindings.KeyContext, ScrollKeys):
    CSS_PATH = DIALOG_CSS
    key_context = "HeadersDialog"
    BINDINGS = bindings.HEADERS_DIALOG
    scroll_target = "#headers-list"  # j k space g G scroll it (ScrollKeys)
    DEFAULT_CSS = """
    HeadersDialog { align: center middle; background: $background 60%; }
    #headers-list { height: 1fr; }
    .headers-message { margin-bottom: 1; }
    """

    def __init__(self, thread, fetch_raw: Callable[[object], bytes] | None = None) -> None:
        """``fetch_raw(message)``: its raw bytes (a backend call: run in a worker)."""
        super().__init__()
        self.thread = thread
        self.fetch_raw = fetch_raw
        self.showing_raw = False
        self._raw: dict[int, bytes] = {}  # each message's source, read once while the dialog is open

    def compose(self) -> ComposeResult:
        with Vertical(id="headers-box", classes="dialog"):
            title = Text("Full headers · ", "bold")
            title.append_text(inert_text(self.thread.subject or "(no subject)", style="bold"))
            yield Static(title, classes="dialog-title", id="headers-title")
            with VerticalScroll(id="headers-list", can_focus=True):
                yield from self._header_statics()
            with Horizontal(classes="dialog-buttons"):
                yield Button(Text("Close (esc)"), id="close", variant="primary")
        yield Footer()

    def _header_statics(self) -> list[Static]:
        total = len(self.thread.messages)
        return [Static(headers_text(m, i, total), classes="headers-message")
                for i, m in enumerate(self.thread.messages, 1)]

    def on_mount(self) -> None:
        self.query_one("#headers-list").focus()

    def action_toggle_raw(self) -> None:
        """x: the raw source of every message, or back to the headers."""
        listing = self.query_one("#headers-list", VerticalScroll)
        if self.showing_raw:
            self.showing_raw = False
            listing.remove_children()
            listing.mount_all(self._header_statics())
            return
        if self.fetch_raw is None:
            self.notify("No raw source here.", severity="warning", markup=False)
            return
        self.showing_raw = True
        listing.remove_children()
        listing.mount(Static(Text("reading the raw source …", "italic"), classes="headers-message"))
        self._read_raw()

    @work(thread=True, exclusive=True, group="raw", exit_on_error=False)
    def _read_raw(self) -> None:
        total = len(self.thread.messages)
        shown: list[Text] = []
        for i, message in enumerate(self.thread.messages, 1):
            try:
                raw = self._raw.get(i)
                if raw is None:
                    raw = self._raw[i] = self.fetch_raw(message)
                shown.append(raw_text(raw, i, total))
            except Exception as exc:  # noqa: BLE001 - said in place of that message's source
                shown.append(Text.assemble((f"Message {i} of {total} · no raw source: ", "bold"),
                                           inert_text(scrub(error_line(exc)))))
        self.app.call_from_thread(self._show_raw, shown)

    def _show_raw(self, shown: list[Text]) -> None:
        if not self.showing_raw:
            return
        listing = self.query_one("#headers-list", VerticalScroll)
        listing.remove_children()
        listing.mount_all([Static(text, classes="headers-message") for text in shown])

    def action_close(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)
