"""Quitting while the close waits for something (a confirmed write, a mail being sent): says
what it waits for until the app ends, so the screen is never frozen without a word.

:func:`quit_after_close` shows it while the session closes on a thread; the words are read
again every LOOK_EVERY seconds (the write may end, or its text start going out). The close ran
in the app's on_unmount before, after the screens had gone: the terminal said nothing meanwhile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from mailtriage.tui.dialogs import DIALOG_CSS

if TYPE_CHECKING:
    from mailtriage.tui.app import MailTriageApp

#: When the close waits for nothing more (the write ended): it is ending the connections.
CLOSING = "closing the connections…"


class QuittingNotice(ModalScreen[None]):
    CSS_PATH = DIALOG_CSS
    DEFAULT_CSS = """
    QuittingNotice {
        align: center middle;
        background: $background 60%;
    }
    #quitting-box {  /* not .dialog: that one is 90% high */
        width: 90%;
        max-width: 72;
        height: auto;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    #quitting-waits {
        padding: 1 1 0 1;
        height: auto;
    }
    """
    LOOK_EVERY = 0.25

    def __init__(self, waits_for: Callable[[], str | None]) -> None:
        super().__init__()
        self.waits_for = waits_for

    def compose(self) -> ComposeResult:
        with Vertical(id="quitting-box"):
            yield Static(Text("Quitting mailtriage", "bold"), classes="dialog-title")
            yield Static(self._text(), id="quitting-waits")
        yield Footer()  # the screen below offered keys that no longer act

    def on_mount(self) -> None:
        self.set_interval(self.LOOK_EVERY, self._look)

    def _look(self) -> None:
        self.query_one("#quitting-waits", Static).update(self._text())

    def _text(self) -> Text:
        words = self.waits_for() or CLOSING
        text = Text(words[:1].upper() + words[1:])
        text.append("\n\nmailtriage ends as soon as this is done.", "italic")
        return text


def quit_after_close(app: "MailTriageApp") -> None:
    """Quit: at once, or, when the close would wait, close first with the notice up, then exit."""
    if app.session_closing:
        return  # the notice says what the quit waits for; the app ends when it is done
    session = app.session
    if session.close_waits_for() is None:
        app.exit(0)  # the close (on_unmount) ends every call at once
        return
    app.session_closing = True
    if app.main is not None:
        app.main.alerts.stop()  # no poll starts while the session closes
    app.push_screen(QuittingNotice(session.close_waits_for))

    def close_then_exit() -> None:
        try:
            session.close()
        finally:
            app.call_from_thread(app.exit, 0)

    app.run_worker(close_then_exit, thread=True, group="quit")
