"""The compose dialog: a reply, reply-all, forward or new mail, before its proposal.

It shows where the mail goes (a draft on a project source; sent or saved as a draft on a
personal account), the kind, the editable To, Cc, Subject and Attach fields and the text.
``Ctrl+o`` hands the whole mail to ``$EDITOR`` as one file, headers at the top, and checks
it on return; ``Ctrl+r`` switches between the receipt template and a quoted reply, and
``Ctrl+g`` a forward between inline and attached, when the other is offered. ``Ctrl+s``
dismisses with the :class:`~mailtriage.application.ComposeForm` the person left (the
controller then builds the proposal, which is confirmed in the proposal dialog); Esc
dismisses with None. Nothing is written from here.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Input, Label, Static, TextArea

from mailtriage.application import ComposeForm, editor_text, read_editor_text
from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS
from mailtriage.tui.footer import KeyFooter
from mailtriage.tui.sanitize import inert, inert_text
from mailtriage.tui.textual_private import FrameAhead, css_updates, hidden, hidden_changed, prepare_hidden

#: Seconds the dialog mounted ahead is left unchanged before it is laid out and rendered, hidden
#: (issue 35: its footer's keys come in a burst of changes, each a layout of its own).
PREPARE_AFTER = 0.03
#: Seconds before a prepare put off for what the app has queued (a key typed meanwhile) is tried again.
PREPARE_AGAIN = 0.002

FIELDS = (("to", "To"), ("cc", "Cc"), ("subject", "Subject"), ("attach", "Attach"))


class ComposeDialog(FrameAhead, ModalScreen["ComposeForm | None"], bindings.KeyContext):
    CSS_PATH = DIALOG_CSS
    key_context = "ComposeDialog"
    BINDINGS = bindings.COMPOSE

    def __init__(self, forms: dict[str, ComposeForm], *, where: str, note: str | None = None,
                 cursor_blink: bool = True) -> None:
        """``forms``: the offered forms by key, the first shown; a second one is the
        alternative Ctrl+r (receipt ↔ reply) or Ctrl+g (forward inline ↔ attached) loads.
        ``note``: why the dialog is back (a refusal), shown until the form has problems."""
        super().__init__()
        self.note = note
        self.forms = dict(forms)
        self.key = next(iter(self.forms))
        self.where = where
        self._editor_problems: tuple[str, ...] = ()
        self._cursor_blink = cursor_blink
        #: What the styles were made for, when the dialog was mounted ahead (not shown).
        self._styled_for: tuple[object, ...] | None = None
        #: Mounted ahead (hidden until r shows it), and laid out and rendered then (on_idle).
        self._ahead = False
        self._prepared = False
        self._prepare_timer: Timer | None = None
        #: Filled while hidden (``fill``): what changed is prepared at once, not after PREPARE_AFTER.
        self._filled = False
        #: Composed and mounted (its widgets can be filled: ``fill``).
        self._mounted = False
        #: The field focused on mount (None: the form's first empty one, ``_first_field``).
        self._first: str | None = None
        #: Runs a step of the hidden dialog's prepare now, or once the thread Enter is opening is on
        #: the screen (the reading controller's ``after_open``); None: now.
        self.hold: Callable[[Callable[[], object]], None] | None = None
        self._holding = False  # a prepare is held (one at a time)

    @classmethod
    def blank(cls, *, cursor_blink: bool = True) -> ComposeDialog:
        """A dialog to mount ahead, hidden, and ``fill`` with the forms r brings (issue 35:
        composing and mounting its ~25 widgets was most of r's time on the key). Never shown
        before it is filled."""
        dialog = cls({"reply": ComposeForm("reply")}, where="", cursor_blink=cursor_blink)
        dialog._first = "compose-body"  # where a reply's focus goes: its fill moves no focus
        return dialog

    @property
    def fillable(self) -> bool:
        """Mounted ahead and not shown (nor dismissed): ``fill`` may load it."""
        return self._mounted and self._ahead and hidden(self)

    def fill(self, forms: dict[str, ComposeForm], *, where: str, note: str | None = None,
             cursor_blink: bool = True) -> None:
        """Load ``forms`` (first one shown), ``where`` and ``note`` into this dialog mounted
        ahead and not shown: it then shows what ``ComposeDialog(forms, where=..., note=...)``
        would (tests/tui/test_dialogs_ahead.py compares the screens)."""
        keys = self._keys_offered()
        self.drop_frame_ahead()  # kept again once the fill is prepared (_prepare)
        self._filled = True
        self.forms = dict(forms)
        self.key = next(iter(self.forms))
        self.where = where
        self.note = note
        self._editor_problems = ()
        self._load(self.form)
        self._cursor_blink = cursor_blink  # its cursor blinks from the show (on_screen_resume)
        for name, _label in FIELDS:  # as a new Input puts it: at the end of its value
            field = self.query_one(f"#compose-{name}", Input)
            field.cursor_position = len(field.value)
        self.query_one("#compose-where", Static).update(Text.assemble(("Goes to: ", "bold"), inert_text(where)))
        switch = self.query_one("#switch", Button)
        switch.label = Text(self._switch_label())
        switch.display = self._alternative() is not None
        # Only what changed: a focus move or other keys recompose the footer's ~20 keys, work
        # that would run while r is on its way (a reply filled into the empty dialog has neither).
        first = self.query_one(f"#{self._first_field()}")
        if self.focused is not first:
            first.focus()
        if self._keys_offered() != keys:
            self.refresh_bindings()

    def _keys_offered(self) -> tuple[bool | None, bool | None]:
        """What ``check_action`` answers for the keys that depend on the form."""
        return self.check_action("switch_kind", ()), self.check_action("switch_forward", ())

    @property
    def form(self) -> ComposeForm:
        return self.forms[self.key]

    def _alternative(self) -> str | None:
        return next((k for k in self.forms if k != self.key), None)

    def _title(self) -> Text:
        return Text(self.form.title, "bold")

    def compose(self) -> ComposeResult:
        # The form is in the widgets as they are made: set after the mount (on_mount), each
        # value restyled and laid out the dialog again before its first paint (issue 35).
        form = self.form
        values = {"to": ", ".join(form.to), "cc": ", ".join(form.cc), "subject": form.subject,
                  "attach": ", ".join(form.attach)}
        with Vertical(id="compose-box", classes="dialog"):
            yield Static(self._title(), id="compose-title", classes="dialog-title")
            yield Static(Text.assemble(("Goes to: ", "bold"), inert_text(self.where)), id="compose-where",
                         classes="compose-where")
            for name, label in FIELDS:
                with Horizontal(classes="compose-field"):
                    yield Label(f"{label}:", classes="compose-label")
                    yield Input(values[name], id=f"compose-{name}", classes="compose-input")
            banner = Static("", id="compose-problems", classes="blocked-banner")
            self._show_problems(form.problems, banner)
            yield banner
            area = TextArea(form.body, id="compose-body", soft_wrap=True, show_line_numbers=False)
            area.cursor_blink = self._cursor_blink
            yield area
            with Horizontal(classes="dialog-buttons"):
                yield Button(Text("Review ^s"), id="submit", variant="warning")
                yield Button(Text("$EDITOR ^o"), id="editor")
                switch = Button(Text(self._switch_label()), id="switch")
                switch.display = self._alternative() is not None  # there when a fill offers one
                yield switch
                yield Button(Text("Cancel esc"), id="cancel", variant="primary")

    def _switch_label(self) -> str:
        return "Receipt/reply ^r" if self.form.is_reply else "Inline/attached ^g"

    def _first_field(self) -> str:
        return "compose-to" if not self.form.to else "compose-body"

    def _style_key(self) -> tuple[object, ...]:
        """What the dialog's styles depend on outside it: the app's CSS (theme, variables,
        stylesheets) and the app's pseudo-classes (dark/light, focus, ansi)."""
        return css_updates(self.app), self.app.theme, frozenset(self.app.get_pseudo_classes())

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # Runs before Screen's own handler. A push restyles every node of the screen (~20 % of
        # r's UI time on the dialog mounted ahead, issue 35), for what may have changed while
        # it was not shown; mounted ahead and styled then, nothing has if the key is the same.
        styled_for, self._styled_for = self._styled_for, None  # once: a later resume restyles
        if self._ahead:  # its cursor blinks once shown (hidden, each blink was a render and a prepare)
            self._blink_from_now()
        self._ahead = False  # shown: Textual's own updates from now on
        if styled_for is not None and styled_for == self._style_key():
            event.refresh_styles = False
        else:  # restyled on the push (a theme changed meanwhile): its frame is Textual's
            self.drop_frame_ahead()

    def _blink_from_now(self) -> None:
        """The cursor blinks (as set) from the show, shown first as it was rendered hidden: drawn,
        at the focus. Set as the reactive would, without its repaint of the whole text area (the
        push's frame is the one rendered ahead, FrameAhead; the first blink repaints its line)."""
        area = self.query_one("#compose-body", TextArea)
        if area.cursor_blink == self._cursor_blink:
            return
        area.set_reactive(TextArea.cursor_blink, self._cursor_blink)
        if self._cursor_blink and area.has_focus:
            area.blink_timer.reset()  # the first blink half a second from now, as a focus starts it
        else:
            area.blink_timer.pause()

    def on_mount(self) -> None:
        if not self.query("#compose-body"):  # let go before it was composed (Textual mounts nothing
            return  # into a closing screen, yet sends Mount): never fillable, r builds its own
        if self.app.screen is not self:  # mounted ahead (r shows it): styled now, for the show
            self._styled_for = self._style_key()
            self._ahead = True
            self.query_one("#compose-body", TextArea).cursor_blink = False  # until it is shown
            for field in self.query(Input):  # the class (-valid) an Input's first new value adds, and
                field.validate(field.value)  # its restyle, now: a fill restyles none (~1-2 ms on r's path)
        # The footer's keys come a frame after what the dialog shows (issue 35: mounted with
        # it, its ~20 keys were styled before the draft could be painted).
        self.call_after_refresh(self.mount, KeyFooter())  # one recompose per burst of binding changes
        self.query_one(f"#{self._first or self._first_field()}").focus()
        self._mounted = True

    def on_idle(self) -> None:
        # Runs before Screen's own handler (which does nothing for a screen not shown). Issue 35:
        # the push of the dialog mounted ahead laid out its ~25 widgets and rendered every line
        # of them (the footer's keys most) between r and the draft on the screen. Mounted ahead,
        # it is laid out and rendered once it has settled (PREPARE_AFTER without a change: its
        # footer's keys come in bursts), while the message is read: the push composes cached lines.
        # Filled (the reply built ahead, r about to come: typed as the body shows, it often
        # came within the 30 ms), what the fill changed is prepared as soon as it is in: its
        # widgets' updates come one by one, no burst of keys (a fill changes none).
        if self._ahead and hidden(self) and (not self._prepared or hidden_changed(self)) and not self._holding:
            if self._prepare_timer is not None:
                self._prepare_timer.stop()
            if self._filled and self._prepared:
                self._prepare()
                return
            self._prepare_timer = self.set_timer(PREPARE_AFTER, self._prepare)

    @property
    def prepared(self) -> bool:
        """Mounted ahead, and laid out and rendered while hidden since its last change (filled:
        its push's frame too, ``FrameAhead``)."""
        return self._prepared and self._prepare_timer is None and (not self._filled or self.frame_kept)

    def _prepare(self) -> None:
        # Put off while the app has a key to handle and held while Enter opens a thread (reply15,
        # issue 35): the reply to the row read ahead is filled as its read lands, and its layout
        # and frame (~7 ms) came between a key typed just then and its body's frame.
        self._prepare_timer = None
        if self._filled and self.app.message_queue_size:  # a key typed meanwhile (Enter) goes first
            self._prepare_timer = self.set_timer(PREPARE_AGAIN, self._prepare)
        elif self.hold is None:
            self._prepare_now()
        elif not self._holding:
            self._holding = True
            self.hold(self._unheld)

    def _unheld(self) -> None:
        self._holding = False
        self._prepare_now()

    def _prepare_now(self) -> None:
        """Mounted ahead and hidden: lay it out and render it now; filled (r is on its way), the
        frame its push writes too (``FrameAhead``), in the same full render: a partial render
        then a full one, a timer's step apart, were ~2 ms more on r's path (reply15's traces)."""
        if self._ahead and hidden(self):
            text = prepare_hidden(self, first=not self._prepared, frame=self._filled)
            self._prepared = True
            if self._filled:
                self.keep_frame_ahead(text)

    # -- the form in the widgets ------------------------------------------------------
    def _load(self, form: ComposeForm) -> None:
        self.query_one("#compose-to", Input).value = ", ".join(form.to)
        self.query_one("#compose-cc", Input).value = ", ".join(form.cc)
        self.query_one("#compose-subject", Input).value = form.subject
        self.query_one("#compose-attach", Input).value = ", ".join(form.attach)
        self.query_one("#compose-body", TextArea).load_text(form.body)
        self.query_one("#compose-title", Static).update(self._title())
        self._show_problems(form.problems)

    def _show_problems(self, problems, banner: Static | None = None) -> None:
        banner = banner if banner is not None else self.query_one("#compose-problems", Static)
        shown = "; ".join(problems) or self.note or ""
        banner.update(Text.assemble(("⚠ ", "bold"), inert_text(shown)) if shown else "")
        banner.display = bool(shown)

    def current(self) -> ComposeForm:
        """The form as the widgets hold it, read the way the editor file is read (the
        same checks: addresses, control characters)."""
        value = lambda name: self.query_one(f"#compose-{name}", Input).value  # noqa: E731
        text = "\n".join(f"{label}: {value(name)}" for name, label in FIELDS)
        body = self.query_one("#compose-body", TextArea).text
        form = read_editor_text(text + "\n\n" + body, self.form)
        # What the last editor round refused (a header nobody may add) stays refused until
        # the mail goes through the editor again: the proposal blocks, nothing is dropped silently.
        return replace(form, problems=tuple(dict.fromkeys((*self._editor_problems, *form.problems))))

    # -- actions ------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # A switch this mail has not is not offered (False), not dimmed: pressed, it did nothing (issue 35).
        if action == "switch_kind":
            return bool(self._alternative() and self.form.is_reply)
        if action == "switch_forward":
            return bool(self._alternative() and self.form.is_forward)
        return True

    def action_submit(self) -> None:
        bindings.after_typed(self.app, self._submit)  # what was typed before Ctrl+s, once handled (a burst)

    def _submit(self) -> None:
        if self.is_active:  # a second Ctrl+s of the burst: dismissed already
            self.dismiss(self.current())

    def action_cancel(self) -> None:
        self.dismiss(None)

    def _switch(self) -> None:
        other = self._alternative()
        if other is None:
            return
        self.forms[self.key] = replace(self.current(), problems=())  # keep what was typed, to come back to
        self._editor_problems = ()
        self.key = other
        self._load(self.form)
        self.refresh_bindings()

    def action_switch_kind(self) -> None:
        self._switch()

    def action_switch_forward(self) -> None:
        self._switch()

    def action_edit_in_editor(self) -> None:
        """The whole mail in ``$EDITOR`` (``$VISUAL`` first), headers at the top; checked on return."""
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        self._editor_problems = ()
        form = self.current()
        # The text may hold a decrypted quote: a memory-backed folder keeps it off the disk.
        from mailtriage.application.crypto import ON_DISK_EDITOR_NOTE, editor_folder  # on Ctrl+o only

        memory = editor_folder()
        if memory is None:
            self.notify(ON_DISK_EDITOR_NOTE, severity="warning", markup=False)
        with tempfile.TemporaryDirectory(prefix="mail-", dir=memory) as folder:
            path = Path(folder) / "message.eml"
            path.write_text(editor_text(form), encoding="utf-8")
            os.chmod(path, 0o600)
            try:
                # The app steps aside while the editor runs (a headless app has no terminal to hand over).
                with nullcontext() if self.app.is_headless else self.app.suspend():
                    result = subprocess.call([*shlex.split(editor), str(path)])
            except Exception as exc:  # no terminal to hand over (headless), or no such editor
                self.notify(f"could not run {inert(editor)}: {inert(str(exc))}", severity="error", markup=False)
                return
            if result != 0:
                self.notify(f"{inert(editor)} exited with status {result}; the mail is unchanged",
                            severity="warning", markup=False)
                return
            edited = read_editor_text(path.read_text(encoding="utf-8", errors="replace"), form)
        self._editor_problems = edited.problems
        self.forms[self.key] = edited
        self._load(edited)
        self.query_one("#compose-body", TextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        actions = {"submit": self.action_submit, "editor": self.action_edit_in_editor, "switch": self._switch,
                   "cancel": self.action_cancel}
        actions.get(event.button.id or "", self.action_cancel)()
