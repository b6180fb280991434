"""Pipe a message to a command (``|``, mutt's pipe-message, aerc's ``:pipe``).

Three steps, each on screen: type the command; read what will run (Enter, or a first
Ctrl+s) and confirm it with Ctrl+s (it runs a program: nothing runs before); the command's
output. The command is
split like a shell would split it and run without one, the raw message on its stdin,
stopped after 60 s, its output cut at 1 MiB (application/raw_message.py). The output is
shown through the sanitiser (it may echo the hostile mail back). Esc cancels or closes.
"""

from __future__ import annotations

import shlex
from typing import Callable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static

from mailtriage.core.secrets import scrub
from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS
from mailtriage.tui.sanitize import inert, inert_text


class PipeDialog(ModalScreen[None], bindings.KeyContext):
    CSS_PATH = DIALOG_CSS
    key_context = "PipeDialog"
    BINDINGS = bindings.PIPE_DIALOG
    DEFAULT_CSS = """
    PipeDialog { align: center middle; background: $background 60%; }
    #pipe-output { height: 1fr; }
    #pipe-plan { height: auto; margin: 1 0; }
    """

    def __init__(self, what: str, run: Callable[[str], tuple[int, bytes, bool]], *, cursor_blink: bool = True) -> None:
        """``what``: the message, for the title (inert); ``run(command)``: read the raw message
        and pipe it (a backend call and a program: run in a worker) → (exit status, output, cut)."""
        super().__init__()
        self.what = what
        self.run = run
        self.command: str | None = None  # set once Enter gave one: Ctrl+s then runs it
        self.ran = False
        self._cursor_blink = cursor_blink

    def compose(self) -> ComposeResult:
        with Vertical(id="pipe-box", classes="dialog"):
            yield Static(Text.assemble(("Pipe to a command · ", "bold"), inert_text(self.what, style="bold")),
                         classes="dialog-title")
            field = Input(placeholder="command, e.g. grep -i authentication-results   (Enter)", id="pipe-command")
            field.cursor_blink = self._cursor_blink  # the app's setting (off in tests: stable snapshots)
            yield field
            yield Static(id="pipe-plan")
            with VerticalScroll(id="pipe-output"):
                yield Static(id="pipe-output-text")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _plan(self, event: Input.Submitted) -> None:
        """Enter: say exactly what will run; Ctrl+s runs it."""
        self._show_plan(event.value)

    def _show_plan(self, value: str) -> None:
        command = value.strip()
        self.command = None  # what runs is only ever the plan shown
        plan = self.query_one("#pipe-plan", Static)
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            plan.update(Text(f"cannot read this command: {exc}", "bold"))
            return
        if not argv:
            plan.update(Text("type a command first", "italic"))
            return
        self.command = command
        text = Text("Will run ", "bold")
        text.append_text(inert_text(" ".join(shlex.quote(a) for a in argv)))
        text.append(" (no shell) with the raw message on its stdin; its output is shown below.\n"
                    "Ctrl+s runs it · Esc cancels (nothing runs)", "bold")
        plan.update(text)
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "run_command":
            return not self.ran
        return True

    def action_run_command(self) -> None:
        """Ctrl+s runs the plan shown; before a plan (or after the command was changed) it
        shows the plan first, and a second Ctrl+s runs it."""
        bindings.after_typed(self.app, self._run_typed)  # what was typed before the key, read once handled

    def _run_typed(self) -> None:
        if self.ran:
            return
        typed = self.query_one(Input).value.strip()
        if self.command is None or typed != self.command:
            self._show_plan(typed)
            return
        self.ran = True
        self.query_one(Input).disabled = True
        self.query_one("#pipe-plan", Static).update(Text("running … (Esc closes; the command is stopped after 60 s)",
                                                         "italic"))
        self._run(self.command)

    @work(thread=True, exclusive=True, group="pipe", exit_on_error=False)
    def _run(self, command: str) -> None:
        try:
            status, output, cut = self.run(command)
        except Exception as exc:  # noqa: BLE001 - shown in the dialog: the command or the read failed
            self.app.call_from_thread(self._done, Text(f"not run: {inert(scrub(str(exc)))}", "bold"), Text(""))
            return
        head = Text(f"exit status {status}" + (" · output cut at 1 MiB" if cut else ""), "bold")
        body = inert_text(scrub(output.decode("utf-8", "replace")), multiline=True)
        self.app.call_from_thread(self._done, head, body)

    def _done(self, head: Text, body: Text) -> None:
        self.query_one("#pipe-plan", Static).update(head)
        self.query_one("#pipe-output-text", Static).update(body)
        self.query_one("#pipe-output", VerticalScroll).focus()
        self.refresh_bindings()

    def action_cancel(self) -> None:
        self.dismiss(None)
