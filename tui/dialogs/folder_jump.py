"""Change folder (``c``, mutt's change-folder, aerc's ``:cf``): jump to a list or folder by name.

Offers what the lists pane offers right now (the project's lists, or the open account's
folders with their full paths) and, from the project's lists, every personal account's
folders as ``account/folder`` (they arrive as the accounts answer: :meth:`FolderJump.add_choices`);
typing narrows the choice, Enter opens the highlighted one (or the first that matches), Esc
cancels. Names come from the server or project.md: they are shown inert. Dismisses with the
key of the choice, or None.

:class:`NarrowedChoices`, its filter field over the list, is the move picker's too (``M``).
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS

#: A choice: its key (what the dialog dismisses with), its label (already inert), whether it can be
#: taken, and the text typing narrows on (the name or path: not a note such as "the messages are here").
Choice = tuple[str, Text, bool, str]


class NarrowedChoices(Vertical):
    """A filter field over a list: typing narrows the choices to those whose name holds what is
    typed (any case, anywhere), Up/Down move over those that can be taken, and the dialog's
    Enter takes :meth:`highlighted_key`. The field keeps the focus, so letters always type."""

    DEFAULT_CSS = """
    NarrowedChoices { height: 1fr; }
    NarrowedChoices > OptionList { height: 1fr; }
    """

    def __init__(self, choices: list[Choice], *, placeholder: str, cursor_blink: bool, field_id: str,
                 list_id: str) -> None:
        super().__init__()
        self.choices = list(choices)
        self._placeholder, self._cursor_blink = placeholder, cursor_blink
        self._field_id, self._list_id = field_id, list_id
        self._shown_for = ""  # the text the list is narrowed by

    def compose(self) -> ComposeResult:
        field = Input(placeholder=self._placeholder, id=self._field_id)
        field.cursor_blink = self._cursor_blink  # the app's setting (off in tests: stable snapshots)
        yield field
        yield OptionList(*self._matching(""), id=self._list_id)

    def on_mount(self) -> None:
        self.query_one(OptionList).action_first()

    def _matching(self, typed: str) -> list[Option]:
        needle = typed.casefold()
        return [Option(label, id=key, disabled=not takes) for key, label, takes, matched in self.choices
                if needle in matched.casefold()]

    @on(Input.Changed)
    def _narrow(self, event: Input.Changed) -> None:
        event.stop()
        self._show(event.value)

    def _show(self, typed: str) -> None:
        self._shown_for = typed
        options = self.query_one(OptionList)
        kept = options.highlighted_option.id if options.highlighted_option is not None else None
        options.set_options(self._matching(typed))
        index = next((i for i in range(options.option_count) if options.get_option_at_index(i).id == kept), None)
        if index is not None and not typed:
            options.highlighted = index  # more choices arrived: the cursor stays where it was
        else:
            options.action_first()

    def take(self, dialog: ModalScreen) -> None:
        """Enter: ``dialog`` dismissed with the highlighted choice's key (none: it stays), once
        the keys typed before Enter are in the field and the list is narrowed by them (a burst:
        the field's Changed may still wait behind Enter)."""
        def taken() -> None:
            typed = self.query_one(Input).value
            if typed != self._shown_for:
                self._show(typed)
            key = self.highlighted_key()
            if key is not None and dialog.is_active:
                dialog.dismiss(key)

        bindings.after_typed(self.app, taken)

    def add(self, choices: list[Choice]) -> None:
        """More choices (after those shown), narrowed by what is typed."""
        self.choices.extend(choices)
        self._show(self.query_one(Input).value)

    def highlighted_key(self) -> str | None:
        """The key of the highlighted choice (the first that matches), None when none can be taken."""
        option = self.query_one(OptionList).highlighted_option
        return option.id if option is not None and not option.disabled else None

    def move(self, step: int) -> None:
        options = self.query_one(OptionList)
        if step > 0:
            options.action_cursor_down()
        else:
            options.action_cursor_up()


class FolderJump(ModalScreen[str | None], bindings.KeyContext):
    CSS_PATH = DIALOG_CSS
    key_context = "FolderJump"
    BINDINGS = bindings.FOLDER_JUMP
    DEFAULT_CSS = """
    FolderJump { align: center middle; background: $background 60%; }
    #folder-jump-box { max-width: 70; }
    #folder-jump-more { color: $text-muted; }
    """

    def __init__(self, choices: list[tuple[str, Text]], title: str, *, cursor_blink: bool = True,
                 more: str | None = None) -> None:
        """``choices``: (a key, its label, already inert); ``more``: what is still being listed
        (shown under the list until :meth:`add_choices` says it is done)."""
        super().__init__()
        self.choices = choices
        self.title_text = title
        self.more = more
        self._cursor_blink = cursor_blink

    def compose(self) -> ComposeResult:
        with Vertical(id="folder-jump-box", classes="dialog"):
            yield Static(Text(self.title_text, "bold"), classes="dialog-title")
            yield NarrowedChoices([(key, label, True, label.plain) for key, label in self.choices],
                                  placeholder="type to narrow, Enter opens", cursor_blink=self._cursor_blink,
                                  field_id="folder-jump-filter", list_id="folder-jump-list")
            more = Static(Text(self.more or ""), id="folder-jump-more")
            more.display = self.more is not None
            yield more
        yield Footer()

    def add_choices(self, choices: list[tuple[str, Text]], *, takes: bool = True, done: bool = False) -> None:
        """More choices (an account's folders; ``takes`` False: a line that cannot be taken, why
        an account has none); ``done``: nothing more is coming."""
        self.query_one(NarrowedChoices).add([(key, label, takes, label.plain) for key, label in choices])
        if done:
            self.query_one("#folder-jump-more").display = False

    def action_open(self) -> None:
        """Enter: the highlighted list or folder (the first that matches what is typed)."""
        self.query_one(NarrowedChoices).take(self)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cursor(self, step: int) -> None:
        self.query_one(NarrowedChoices).move(step)

    def action_cancel(self) -> None:
        self.dismiss(None)
