"""The proposal dialog: exactly what would be written, and nothing written before confirm.

It shows each write of a :class:`~mailtriage.application.flows.proposals.Proposal`: what it
is, the backend that will write it, every field (To, Cc with the resolved security CC
marked, Subject, In-Reply-To; tracker fields; files and commit message) and the body,
which can be edited here or in ``$EDITOR``. Warnings (a security-CC fallback) come
first and loud; a blocked proposal cannot be confirmed. Dismisses with True on
confirm (the caller applies it) and False on cancel (nothing happens at all).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from bisect import bisect_right
from typing import Any, Callable

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.content import Content
from textual.strip import Strip
from textual.visual import Visual
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea

from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS
from mailtriage.tui.footer import KeyFooter
from mailtriage.tui.pending import PendingWork
from mailtriage.tui.scroll_keys import OwnScrollKeys
from mailtriage.tui.sanitize import inert, inert_text
from mailtriage.tui.textual_private import LaidOutOnce, wrap_cuts
from mailtriage.tui.wrapped_text import shifted


def field_text(label: str, value: str, marker: str | None) -> Text:
    text = Text()
    text.append(f"{label}: ", "bold")
    text.append_text(inert_text(value or "(empty)"))
    if marker:
        text.append(f"   ◀ {marker}", "bold")
    return text


def editable_field(write):
    """The field a person may edit before confirming: the draft's Body, or the multiline
    field holding the write's text (a commit message); None when nothing is editable."""
    if not write.editable_body:
        return None
    multiline = [f for f in write.fields if f.multiline]
    for field in multiline:
        if field.label.lower() == "body":
            return field
    for field in multiline:
        if write.body is not None and field.value == write.body:
            return field
    return None


#: Fields shown in the pinned summary too (who a publish commits as).
PINNED_FIELDS = ("Commits as",)


def security_cc_fields(proposal) -> list:
    """The fields marked as the security CC (a write's Cc, or the preview's), in order."""
    fields = [f for w in proposal.writes for f in w.fields]
    fields += list(proposal.preview)
    return [f for f in fields if f.marker and "security cc" in f.marker.lower()]


#: Rows of the pinned summary (dialogs.tcss, .proposal-summary's max-height).
PIN_ROWS = 6


def _pinned_write(index: int, write) -> Text:
    """A write's lines in the pin: "1. Save draft · into …  summary", then its pinned fields."""
    out = Text()
    out.append(f"{index + 1}. {write.heading}", "bold")
    if write.where:  # the words of the write's heading below ("· into Drafts of account work")
        out.append(" · ")
        out.append_text(inert_text(write.where))
    else:
        out.append(" → ")
        out.append_text(inert_text(write.backend, style="bold"))
    out.append("  ")
    out.append_text(inert_text(write.summary))
    out.append("\n")
    for field in write.fields:
        if field.label in PINNED_FIELDS:
            out.append_text(field_text(field.label, field.value, field.marker))
            out.append("\n")
    return out


def summary_text(proposal) -> Text:
    """The pinned summary: what is written where (or by which backend), and the security-CC line,
    always in view whatever the scroll of the content below."""
    out = Text()
    # The security CC first: however many writes follow, it is never cut from the pin.
    cc_fields = security_cc_fields(proposal)
    for field in cc_fields[:2]:  # one per draft is the usual; more would crowd the pin
        out.append_text(field_text(field.label, field.value, field.marker))
        out.append("\n")
    if len(cc_fields) > 2:
        out.append(f"… and {len(cc_fields) - 2} more Cc lines below\n", "dim")
    # One row a line (dialogs.tcss: no wrap): the writes that fit, then how many are below.
    room = PIN_ROWS - min(len(cc_fields), 2) - (len(cc_fields) > 2)
    lines = [_pinned_write(index, write) for index, write in enumerate(proposal.writes)]
    if sum(text.plain.count("\n") for text in lines) > room:
        shown, used = 0, 0
        while shown < len(lines) and used + lines[shown].plain.count("\n") <= room - 1:
            used += lines[shown].plain.count("\n")
            shown += 1
        more = len(proposal.writes) - shown
        lines = lines[:shown] + [Text(f"… and {more} more write{'s' if more > 1 else ''} below\n", "dim")]
    for text in lines:
        out.append_text(text)
    if not proposal.writes and proposal.preview:
        out.append("Preview only: no configured backend can write it\n", "bold")
    out.rstrip()
    return out


class LongText(Static):
    """A long, read-only multiline field (a batch's "Messages": one line per message)
    painted a chunk of lines at a time as it scrolls into view (issue 35).

    A Static wraps its whole text for its height and renders every line of it for its
    first paint, on the screen or not: ~30 % of the UI thread's CPU of ``f`` on 200 tagged
    messages (cProfile). Here the height counts rows without rendering (a chunk whose
    lines all fit is a row a line; another is wrapped only), and a chunk of lines is
    rendered when the compositor first asks for one of its rows, exactly as the Static
    would (its text is wrapped line by line too, so a chunk's rows are the Static's rows
    for those lines): the same screen. While a mouse selection is in it, the Static's own
    paint."""

    #: Source lines rendered together on the first paint of any of them (one Content each).
    CHUNK = 64

    def __init__(self, text: Text, **kwargs) -> None:
        super().__init__(text, **kwargs)
        self._lines = text.split("\n", allow_blank=True)
        #: (width, style) -> the first row of each line (and the total last), for that key.
        self._layout: tuple[object, list[int]] | None = None
        self._chunks: dict[int, list[Strip]] = {}  # chunk -> its rows, for the layout's key

    def _chunk(self, chunk: int) -> Text:
        return Text("\n").join(self._lines[chunk * self.CHUNK:(chunk + 1) * self.CHUNK])

    def _starts(self, width: int) -> list[int]:
        """The first row of each chunk of lines (and the total last) at ``width``: a line that
        fits is a row, a longer one its wrap's rows, counted from where it is cut (not wrapped
        into lines and formatted: ~25 % of f's UI time on 200 messages, counted twice as the
        dialog's first two layouts differ by the scrollbar's width)."""
        key = (width, self.visual_style)
        if self._layout is None or self._layout[0] != key:
            self._chunks = {}
            starts, row = [], 0
            rules: Any = self.styles  # what Widget.get_content_height passes (a RulesMap by its rules)
            # Content.get_height's own wrap, counted without making the lines: each line's cuts
            # (rich's divide_line, as Content._wrap_and_format cuts it) and one row more. Any
            # other rule than plain wrapping: Content's own count of the chunk.
            plain_wrap = (rules.get("text_wrap", "wrap") != "nowrap" and not rules.get("line_pad", 0))
            fold = rules.get("text_overflow", "fold") == "fold"
            for chunk in range(0, max(1, -(-len(self._lines) // self.CHUNK))):
                starts.append(row)
                lines = self._lines[chunk * self.CHUNK:(chunk + 1) * self.CHUNK]
                if plain_wrap and not any("\t" in line.plain for line in lines):
                    row += sum(1 if cell_len(line.plain) <= width else len(wrap_cuts(line.plain, width, fold)) + 1
                               for line in lines)
                else:
                    row += Content("\n".join(line.plain for line in lines)).get_height(rules, width)
            starts.append(row)
            self._layout = (key, starts)
        return self._layout[1]

    def get_content_height(self, container, viewport, width: int) -> int:
        if not width:
            return 0
        return self._starts(width)[-1]

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if self.text_selection is not None or not width:
            return super().render_line(y)
        starts = self._starts(width)
        chunk = bisect_right(starts, y) - 1
        if not 0 <= chunk < len(starts) - 1:
            return Strip.blank(width, self.visual_style.rich_style)
        rows = self._chunks.get(chunk)
        if rows is None:
            content = Content.from_rich_text(self._chunk(chunk), console=self.app.console)
            rows = Visual.to_strips(self, content, width, None, self.visual_style)
            if chunk:  # each row's text offset (mouse selection) counts the lines from the first chunk
                rows = [shifted(row, chunk * self.CHUNK) for row in rows]
            self._chunks[chunk] = rows
        offset = y - starts[chunk]
        return rows[offset] if offset < len(rows) else Strip.blank(width, self.visual_style.rich_style)


class ProposalBody(OwnScrollKeys, VerticalScroll, can_focus=True):
    """The proposal's content: focused when the dialog opens, scrolled from the keyboard."""

    BINDINGS = bindings.PROPOSAL_BODY


class ProposalDialog(LaidOutOnce, ModalScreen[bool], bindings.KeyContext, PendingWork):
    CSS_PATH = DIALOG_CSS
    key_context = "ProposalDialog"
    BINDINGS = bindings.PROPOSAL

    def pending_work(self) -> list[str]:
        return [f"a proposal is open and not confirmed: {self.proposal.title}"]

    def __init__(self, proposal, *, cursor_blink: bool = True, on_confirm: Callable[[], None] | None = None) -> None:
        """``on_confirm``: called on the confirm itself, before the dialog is dismissed with
        True (issue 35: the write starts on the key, not after the screen below is restored
        and repainted, which took ~30 ms of the UI thread before the write's first command)."""
        super().__init__()
        self.proposal = proposal
        self._cursor_blink = cursor_blink
        self._editors: dict[int, TextArea] = {}
        self._on_confirm = on_confirm
        self._confirmed = False

    @property
    def sends(self) -> bool:
        return self.proposal.sends

    @property
    def confirm_word(self) -> str:
        return "Send" if self.sends else "Confirm and write"

    @property
    def can_confirm(self) -> bool:
        return not self.proposal.blocked and not self.proposal.empty

    def compose(self) -> ComposeResult:
        p = self.proposal
        with Vertical(id="proposal-box", classes="dialog"):
            yield Static(Text(p.title, "bold"), id="proposal-title", classes="dialog-title")
            for warning in p.warnings:
                yield Static(Text.assemble(("⚠ ", "bold"), inert_text(warning)), classes="warning-banner -visible")
            if p.blocked:
                yield Static(Text.assemble(("⛔ Nothing can be written: ", "bold"), inert_text(p.blocked.text)),
                             classes="blocked-banner")
            summary = summary_text(p)
            if summary.plain:
                yield Static(summary, id="proposal-summary", classes="proposal-summary")
            with ProposalBody(id="proposal-body"):
                if p.empty and not p.blocked and not p.preview:
                    yield Static(Text("Nothing to write.", "italic"))
                for index, write in enumerate(p.writes):
                    head = Text()
                    head.append(f"{index + 1}. {write.heading}", "bold")
                    head.append(" · ")
                    head.append_text(inert_text(write.destination))
                    head.append("\n")
                    head.append_text(inert_text(write.summary, style="dim"))
                    yield Static(head, classes="write-head")
                    for field in write.fields:
                        if field.multiline:
                            continue
                        classes = "write-field" + (" -marked" if field.marker else "")
                        if field.marker and "fallback" in field.marker.lower():
                            classes += " -fallback"
                        yield Static(field_text(field.label, field.value, field.marker), classes=classes)
                    editable = editable_field(write)
                    for field in write.fields:
                        if not field.multiline:
                            continue
                        yield Static(Text(f"{field.label}:", "bold"), classes="write-field")
                        if field is editable:
                            area = TextArea(write.body if write.body is not None else field.value,
                                            id=f"body-{index}", classes="body-editor", soft_wrap=True,
                                            show_line_numbers=False)
                            area.cursor_blink = self._cursor_blink
                            self._editors[index] = area
                            yield area
                        else:
                            yield LongText(inert_text(field.value, multiline=True), classes="write-multiline")
                # Blocked means blocked: no text to copy by hand either.
                if p.preview and not p.blocked:
                    yield Static(Text.assemble(("Would write", "bold"),
                                               " — no configured backend can write it (see below); "
                                               "copy the text to draft it by hand:"), classes="write-head")
                    for field in p.preview:
                        if field.multiline:
                            yield Static(Text(f"{field.label}:", "bold"), classes="write-field")
                            area = TextArea(field.value, read_only=True, classes="body-editor", soft_wrap=True)
                            area.cursor_blink = self._cursor_blink
                            yield area
                        else:
                            classes = "write-field" + (" -marked" if field.marker else "")
                            if field.marker and "fallback" in field.marker.lower():
                                classes += " -fallback"
                            yield Static(field_text(field.label, field.value, field.marker), classes=classes)
                if p.notes:
                    notes = Text()
                    for note in p.notes:
                        notes.append("• ")
                        notes.append_text(inert_text(note))
                        notes.append("\n")
                    notes.rstrip()
                    yield Static(notes, classes="proposal-notes")
                if p.recap:
                    recap = Text("Backends (resolution):\n", "bold")
                    for res in p.recap:
                        recap.append("  ")
                        summary = res if isinstance(res, str) else res.summary()  # a Resolution, or a line
                        recap.append_text(inert_text(summary, style="not bold"))
                        recap.append("\n")
                    recap.rstrip()
                    yield Static(recap, classes="proposal-recap")
            with Horizontal(classes="dialog-buttons"):
                yield Button(Text(f"{self.confirm_word} (ctrl+s)"), id="confirm", variant="warning",
                             disabled=not self.can_confirm)
                if self._editors or any(w.editable_body for w in p.writes):
                    yield Button(Text("Edit in $EDITOR (ctrl+o)"), id="editor")
                yield Button(Text("Cancel (esc)"), id="cancel", variant="primary")
        yield KeyFooter()  # one recompose per burst of binding changes, not five (issue 35)

    def on_mount(self) -> None:
        # The content first, so it scrolls from the keyboard; Tab reaches the editable body.
        self.query_one(ProposalBody).focus()

    # -- actions -------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "edit_in_editor":
            return bool(self._editors)  # not offered when nothing is editable; on_key says why
        if action in ("confirm", "send"):  # one ctrl+s, named for what it does
            if (action == "send") != self.sends:
                return False
            return self.can_confirm  # not offered when nothing can be written; on_key says why
        return True

    def on_key(self, event) -> None:
        # ctrl+o is not offered where nothing is editable, nor ctrl+s where nothing can be
        # written (a dimmed key is still on show, issue 35); pressed all the same, each says why.
        if event.key == "ctrl+o" and not self._editors:
            event.stop()
            self.notify("Nothing to edit here: this proposal has no text you can change "
                        "(only drafts, sends and commit messages do)", severity="information", markup=False)
        elif event.key == "ctrl+s" and not self.can_confirm:
            event.stop()
            self.action_confirm()

    def action_send(self) -> None:
        self.action_confirm()

    def action_confirm(self) -> None:
        if self._editors:  # text typed into the body just before Ctrl+s (a burst) still waits in its queue
            bindings.after_typed(self.app, self._confirm)
            return
        self._confirm()  # nothing to type into: the write starts on the key

    def _confirm(self) -> None:
        if self._confirmed:  # a second Ctrl+s before the dialog is gone: nothing written or changed again
            return
        if not self.can_confirm:
            why = self.proposal.blocked.text if self.proposal.blocked else "nothing to write"
            self.notify("This proposal cannot be written: " + inert(why),
                        severity="warning", markup=False)
            return
        for index, area in self._editors.items():
            self.proposal.writes[index].body = area.text
        self._confirmed = True
        if self._on_confirm is not None:
            self._on_confirm()
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)

    def action_edit_in_editor(self) -> None:
        if not self._editors:
            return
        index, area = next(iter(self._editors.items()))
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        # The text may hold a decrypted quote: a memory-backed folder keeps it off the disk.
        from mailtriage.application import ON_DISK_EDITOR_NOTE, editor_folder  # on Ctrl+o only

        memory = editor_folder()
        if memory is None:
            self.notify(ON_DISK_EDITOR_NOTE, severity="warning", markup=False)
        with tempfile.TemporaryDirectory(prefix="mailtriage-draft-", dir=memory) as folder:
            path = Path(folder) / "draft.txt"
            path.write_text(area.text, encoding="utf-8")
            os.chmod(path, 0o600)
            try:
                with self.app.suspend():
                    result = subprocess.call([*shlex.split(editor), str(path)])
            except Exception as exc:  # no terminal to hand over (headless), or no such editor
                self.notify(f"could not run {editor}: {exc}", severity="error", markup=False)
                return
            if result != 0:
                self.notify(f"{editor} exited with status {result}; the draft text is unchanged",
                            severity="warning", markup=False)
                return
            area.load_text(path.read_text(encoding="utf-8"))
        area.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "confirm":
            self.action_confirm()
        elif event.button.id == "editor":
            self.action_edit_in_editor()
        else:
            self.action_cancel()
