"""The sources pane: configured mail backends (and user accounts) with availability.

Each backend shows its role and whether it is available now; Enter opens the backend
console on it. Enter on a personal account (``[accounts.<id>]``) lists its folders. The status line carries the resolved security CC and, when the CC
fell back, the warning.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from mailtriage.core.lean_dataclass import lean_dataclass  # @dataclass(eq=False), none of its exec'd code
from mailtriage.tui import bindings, layout
from mailtriage.tui.messages import Request
from mailtriage.tui.row_keys import RowKeys
from mailtriage.tui.sanitize import inert_text


class SourceList(RowKeys, OptionList, inherit_bindings=False):
    BINDINGS = bindings.SOURCES


class SourcesPane(layout.SidebarPane):
    @lean_dataclass
    class InspectBackend(Message):
        backend: str

    @lean_dataclass
    class AccountChosen(Request):
        """A personal account was selected: its folders go to the folders pane."""

        account_id: str

    def __init__(self, **kwargs) -> None:
        super().__init__(classes="pane", **kwargs)
        self.border_title = "Sources"

    def compose(self) -> ComposeResult:
        yield SourceList(Option(Text("checking backends …", "italic"), disabled=True), id="source-list")
        yield Static(id="sources-status", classes="pane-status")

    def show_matrix(self, matrix: list[dict], accounts: dict[str, dict] | None = None) -> None:
        options: list[Option] = []
        for row in matrix:
            text = Text(no_wrap=True, overflow="ellipsis")
            # No hue and no dim here: the mark says it, and the row stays readable under the
            # cursor in every theme and in 256 colours (tests/tui/test_theme_contrast.py).
            text.append("✓ " if row["available"] else "✗ ", "bold")
            text.append(row["backend"], "bold")
            text.append(f" {row['role']}")
            if row["mandatory"]:
                text.append(" mandatory")
            if not row["available"] and row.get("reason"):
                text.append("\n  ")
                text.append_text(inert_text(row["reason"], style="italic"))
            options.append(Option(text, id=f"backend:{row['backend']}"))
        for account_id, body in (accounts or {}).items():
            text = Text(no_wrap=True, overflow="ellipsis")
            text.append("• ")
            text.append_text(inert_text(account_id, style="bold"))
            text.append(f" account ({inert_text(str(body.get('kind', '?'))).plain})")
            options.append(Option(text, id=f"account:{account_id}"))
        if not options:
            options.append(Option(Text("no mail sources configured", "italic"), disabled=True))
        source_list = self.query_one(SourceList)
        # A refresh keeps the row under the cursor (a Down typed just before it stays done).
        kept = (source_list.get_option_at_index(source_list.highlighted).id
                if source_list.highlighted is not None else None)
        source_list.set_options(options)
        ids = [option.id for option in options]
        if kept in ids:
            source_list.highlighted = ids.index(kept)
        elif source_list.option_count and not source_list.get_option_at_index(0).disabled:
            source_list.highlighted = 0

    def show_cc(self, cc) -> None:
        status = self.query_one("#sources-status", Static)
        if cc is None:
            status.update("")
            self.addresses_shown(0)
            return
        text = Text(overflow="fold")
        address = inert_text(cc.security_cc or "", style="bold")
        if cc.security_cc:
            # The address on a line of its own, never cut: the triager checks it (issue 35).
            text.append("FALLBACK " if cc.cc_fallback else "", "bold")
            text.append("security CC\n")
            text.append_text(address)
        else:
            text.append("no security CC: drafts blocked", "bold")
        status.update(text)
        status.set_class(bool(cc.warnings), "-warning")
        self.addresses_shown(cell_len(address.plain) + 4 if cc.security_cc else 0)  # + border, padding

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id or ""
        if option_id.startswith("backend:"):
            self.post_message(self.InspectBackend(option_id.partition(":")[2]))
        elif option_id.startswith("account:"):
            self.post_message(self.AccountChosen(option_id.partition(":")[2]))
