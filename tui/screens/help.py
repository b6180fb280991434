"""The help screen: every key binding, generated from :mod:`bindings` so it never drifts.

Keys shown are the effective ones, after the user's ``[keys]`` remapping; the id in
the last column is what to write in the settings file to remap a key.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.binding import Binding
from textual.widgets import Footer, Static

from mailtriage.tui import bindings
from mailtriage.tui.scroll_keys import ScrollKeys


def key_label(app, key: str) -> str:
    return app.get_key_display(Binding(key, ""))


def bindings_table(app, keymap: dict[str, str], title: str, items) -> Table:
    table = Table(title=Text(title, "bold"), title_justify="left", expand=False, show_edge=False,
                  pad_edge=False, box=None, header_style="bold")
    table.add_column("Keys", width=20, no_wrap=True)
    table.add_column("Does", width=28)
    table.add_column("Binding id", style="dim", no_wrap=True)
    for binding in items:
        keys = " ".join(key_label(app, k) for k in bindings.effective_keys(binding, keymap))
        table.add_row(Text(keys), Text(binding.description), Text(binding.id or ""))
    return table


class HelpView(VerticalScroll, can_focus=True):
    pass


class HelpScreen(Screen, bindings.KeyContext, ScrollKeys):
    key_context = "HelpScreen"
    BINDINGS = bindings.HELP
    scroll_target = "HelpView"  # j k space - g G scroll it (ScrollKeys)

    def compose(self) -> ComposeResult:
        keymap = bindings.keymap_of(self.app)
        with HelpView(id="help-view"):
            yield Static(Text.assemble(
                ("mailtriage keys", "bold"), "\n",
                "Every command is also in the command palette (ctrl+p). Remap a key in the [keys] table of "
                "your settings file with its binding id, e.g.  \"threads.down\" = \"n,down\".",
            ), id="help-intro")
            for context in bindings.CONTEXTS:
                yield Static(bindings_table(self.app, keymap, context.title, context.bindings), classes="help-table")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(HelpView).focus()

    def action_back(self) -> None:
        self.app.pop_screen()
