"""The reading pane: every message of the open thread, inert.

Header values, bodies and attachment names pass through :mod:`sanitize`: they are
plain :class:`~rich.text.Text` with control, bidi and zero-width characters shown as
markers. HTML parts arrive as the backend's html2text output and say so.
``List-Unsubscribe`` targets are shown and never fetched.
"""

from __future__ import annotations

import re

from typing import Callable

from rich.text import Text
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from mailtriage.core.lean_dataclass import lean_dataclass  # @dataclass(eq=False), none of its exec'd code
from mailtriage.application import Message, Thread
from mailtriage.core.inert import sender_mismatch
from mailtriage.tui import bindings, layout, typeahead
from mailtriage.tui.focus_paint import OwnFocusPaint, PaintedText, SizedInPlace
from mailtriage.tui.messages import Request
from mailtriage.tui.panes.crypto import crypto_text, part_label
from mailtriage.tui.panes.thread_keys import OffersWhereActing, acting_keys
from mailtriage.tui.sanitize import MARKER_STYLE, has_hidden_characters, inert_text
from mailtriage.tui.wrapped_text import WrappedText

#: Header and body pairs the reader keeps for the next thread (hidden while unused); a longer
#: thread's extra ones are let go when a shorter one is shown. Few: hidden widgets are restyled
#: too by every restyle of the screen (a theme, the narrow classes).
POOL_KEPT = 8
#: Bodies longer than this are cut for display (the backend still holds all of it).
MAX_BODY_CHARS = 200_000

_ANGLE = re.compile(r"<([^<>]*)>")
#: The view's children that belong to one thread only (the Case section, an empty thread's
#: line): removed when the next is shown (the hint is hidden: removed, it was laid out again).
_NOT_KEPT = frozenset({"case-section", "no-messages"})


def unsubscribe_targets(value: str | None) -> list[str]:
    """The targets of a List-Unsubscribe header (``<mailto:…>, <https://…>``), unfetched."""
    if not value:
        return []
    found = _ANGLE.findall(value)
    return [t.strip() for t in found if t.strip()] or [value.strip()]


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def header_text(message: Message, index: int, total: int) -> Text:
    out = Text()
    label = "bold"
    out.append(f"Message {index}/{total}\n", "bold reverse")

    def line(name: str, value: str | None, *, style: str = "") -> None:
        if value is None or value == "":
            return
        out.append(f"{name}: ", label)
        out.append_text(inert_text(value, style=style))
        out.append("\n")

    line("From", str(message.sender))
    spoof = sender_mismatch(message.sender.name, message.sender.email)
    if spoof:
        out.append("⚠ ", MARKER_STYLE)
        out.append_text(inert_text(f"sender's name is not their address: {spoof}", style="bold"))
        out.append("\n")
    line("To", ", ".join(str(a) for a in message.to))
    line("Cc", ", ".join(str(a) for a in message.cc))
    line("Date", message.date.strftime("%Y-%m-%d %H:%M %z").strip() if message.date else None)
    line("Subject", message.subject or "(no subject)")
    line("Message-ID", message.message_id + (" (synthetic: the message had none)" if message.synthetic_id else ""),
         style="dim")
    for target in unsubscribe_targets(message.header("List-Unsubscribe")):
        line("List-Unsubscribe", f"{target}  (shown, never fetched)", style="dim")
    for att in message.attachments:
        out.append("Attachment: ", label)
        out.append_text(inert_text(att.filename or "(no name)"))
        out.append(f"  ({att.content_type}, {_size(att.size)})", "dim")
        if att.note:
            out.append("  ")
            out.append_text(inert_text(att.note, style="italic"))
        out.append("\n")
    out.append_text(crypto_text(message))
    for note in message.notes:
        out.append("Note: ", "bold")
        out.append_text(inert_text(note, style="italic"))
        out.append("\n")
    fields = [message.subject, message.sender.name, message.sender.email,
              *(a.filename for a in message.attachments)]
    if any(has_hidden_characters(f) for f in fields):
        out.append("⚠ hidden or control characters in this message's headers are shown as markers\n", "bold")
    out.rstrip()
    return out


def body_text(message: Message) -> Text:
    out = Text()
    if not message.text_parts:
        out.append("(no readable text part)", "italic")
        return out
    for i, part in enumerate(message.text_parts):
        if i:
            out.append("\n\n")
        if part.from_html or len(message.text_parts) > 1 or message.crypto is not None:
            kind = "HTML shown as text" if part.from_html else part.content_type
            out.append(f"[{kind}{part_label(message, i)}]\n", "dim italic")
        if part.note:
            out.append_text(inert_text(f"[{part.note}]", style="dim italic"))
            out.append("\n")
        text = part.text
        if len(text) > MAX_BODY_CHARS:
            text = text[:MAX_BODY_CHARS]
            out.append_text(inert_text(text, multiline=True))
            out.append(f"\n[… cut for display at {MAX_BODY_CHARS} characters]", "dim italic")
        else:
            out.append_text(inert_text(text, multiline=True))
    return out


#: What the reader shows of a thread: its notes (or None) and each message's header and body.
ThreadTexts = tuple[Text | None, list[tuple[Text, Text]]]
#: Threads whose texts were made off the UI thread (:func:`prepare_texts`), by id: (the
#: thread, its texts), a few, newest last.
_PREPARED: dict[int, tuple[Thread, ThreadTexts]] = {}
PREPARED_KEPT = 4


def make_texts(thread: Thread) -> ThreadTexts:
    notes: Text | None = None
    if thread.notes:
        notes = Text()
        for note in thread.notes:
            notes.append("Note: ", "bold")
            notes.append_text(inert_text(note, style="italic"))
            notes.append("\n")
        notes.rstrip()
    total = len(thread.messages)
    return notes, [(header_text(message, i, total), body_text(message)) for i, message in enumerate(thread.messages, 1)]


def prepare_texts(thread: Thread) -> None:
    """Make what the reader shows of ``thread`` now, on the worker that read it (a read ahead):
    Enter then shows it without making it on the UI thread (issue 33). Plain rich Text, no widget."""
    texts = make_texts(thread)
    _PREPARED[id(thread)] = (thread, texts)
    while len(_PREPARED) > PREPARED_KEPT:
        _PREPARED.pop(next(iter(_PREPARED)), None)


def thread_texts(thread: Thread) -> ThreadTexts:
    """``thread``'s texts: the ones prepared for it (taken), else made now."""
    entry = _PREPARED.pop(id(thread), None)
    if entry is not None and entry[0] is thread:
        return entry[1]
    return make_texts(thread)


class ThreadView(OffersWhereActing, OwnFocusPaint, SizedInPlace, VerticalScroll, can_focus=True):
    BINDINGS = bindings.READER

    #: Set by the screen while search results are what the thread list shows.
    search_active: bool = False

    def watch_has_focus(self, _has_focus: bool) -> None:
        """Neither restyled nor repainted by a focus move (OwnFocusPaint): nothing in the view is
        styled by its focus (the pane's ``-active`` border shows it; tests/tui/test_open_restyle.py
        checks a restyle would change nothing). Textual restyled every header and body Static on
        Enter (~3-5 ms of the UI thread), then the view alone (~1-2 ms more, issue 33)."""

    @lean_dataclass
    class MatchStepRequested(Request):
        """n / N while a search is shown: open the next (+1) or previous (-1) match."""

        step: int

    @lean_dataclass
    class ReplyRequested(Request):
        """r (``kind`` ""), A reply_all, F forward, C new."""

        kind: str = ""

    class UrlRequested(Request):
        """u: the open thread's archive URL."""

    class ImportRequested(Request):
        """i: import the open thread into the tracker."""

    @lean_dataclass
    class KeyImportRequested(Request):
        """K: import a key the open thread offers (OpenPGP), through a proposal."""

    class BackRequested(Request):
        """q / Esc: back to the list."""

    class AttachmentsRequested(Request):
        """e: the open thread's attachments."""

    class IssueRequested(Request):
        """``s``: jump to the tracker issue of the open thread."""

    class HeadersRequested(Request):
        """``h``: every header of the open thread's messages (a dialog)."""

    class PipeRequested(Request):
        """``|``: pipe the message at the top of the view to a command (a dialog)."""

    class NextRowRequested(Request):
        """Space at the end of the open thread: open the next row of the list (mutt's habit)."""

    def action_page_down(self) -> None:
        if self.has_class("-has-thread") and self.scroll_y >= self.max_scroll_y:
            self.post_message(self.NextRowRequested())
            return
        self.scroll_page_down(animate=False)

    def action_page_up(self) -> None:
        self.scroll_page_up(animate=False)

    def action_half_page(self, step: int) -> None:
        self.scroll_relative(y=step * max(1, self.scrollable_content_region.height // 2), animate=False)

    def action_scroll_down(self) -> None:
        self.scroll_relative(y=1, animate=False)

    def action_scroll_up(self) -> None:
        self.scroll_relative(y=-1, animate=False)

    def action_scroll_home(self) -> None:
        self.scroll_home(animate=False)

    def action_scroll_end(self) -> None:
        self.scroll_end(animate=False)

    # n / N: while a search is shown, the next / previous match; otherwise the key goes on to
    # the next binding of n (the next message of the thread) — SkipAction hands it over.
    def action_next_match(self) -> None:
        self._match_step(1)

    def action_previous_match(self) -> None:
        self._match_step(-1)

    def _match_step(self, step: int) -> None:
        if not (self.search_active and self.has_class("-has-thread")):
            if step < 0:  # N has no other binding here: say why instead of nothing
                if self._thread_open():
                    search = bindings.key_label(self.app, "threads.search")
                    self.notify(f"no search yet: {search} in the thread list searches", timeout=4)
                return
            raise SkipAction()
        self.post_message(self.MatchStepRequested(step))

    def _headers(self) -> list[Static]:
        """The headers of the open thread's messages (widgets kept for a longer thread are hidden)."""
        return [header for header in self.query(".message-header").results(Static) if header.display]

    def _thread_open(self) -> bool:
        """True with a thread open; else a toast says why the key did nothing (issue 35)."""
        if self.has_class("-has-thread"):
            return True
        self.notify("No thread is open here: Enter on a row of the thread list opens one.", timeout=4)
        return False

    def action_next_message(self) -> None:
        if not self._thread_open():
            return
        y = self.scroll_y
        for header in self._headers():
            top = header.virtual_region.y
            # A header whose blank margin line is all that is above it is the current message:
            # n at the top of a thread went to its first header, one line down, not the second.
            if top - header.styles.margin.top > y and y < self.max_scroll_y:
                self.scroll_to(y=top, animate=False)
                return
        self.notify("This is the last message of the thread (Space at its end opens the next thread).", timeout=4)

    def action_previous_message(self) -> None:
        if not self._thread_open():
            return
        y = self.scroll_y
        if y == 0:
            self.notify("This is the first message of the thread.", timeout=4)
            return
        for header in reversed(self._headers()):
            top = header.virtual_region.y
            if top < y:
                self.scroll_to(y=top, animate=False)
                return
        self.scroll_home(animate=False)

    def action_reply(self) -> None:
        if self._thread_open():  # to the screen that handles it: bubbled, it waited in the view's
            typeahead.post_opening(self, self.ReplyRequested(), to=self.screen)  # and the pane's queues (issue 35)

    def action_compose(self, what: str) -> None:
        if what == "new" or self._thread_open():  # a new mail needs no thread
            typeahead.post_opening(self, self.ReplyRequested(what), to=self.screen)

    def action_back(self) -> None:
        self.post_message(self.BackRequested())

    def action_jump_issue(self) -> None:
        if self._thread_open():
            self.post_message(self.IssueRequested())

    def action_full_headers(self) -> None:
        if self._thread_open():
            typeahead.post_opening(self, self.HeadersRequested())

    def action_pipe(self) -> None:
        if self._thread_open():
            typeahead.post_opening(self, self.PipeRequested())

    def message_in_view(self) -> int:
        """The index of the message whose header is at or above the top of the view."""
        y = self.scroll_y
        return max(sum(1 for header in self._headers() if header.virtual_region.y <= y) - 1, 0)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next_match":
            # False hands n to its next binding (the next message), also in the footer; N has
            # none, so previous_match runs and says why when there is no search.
            return self.search_active and self.has_class("-has-thread")
        # A key that cannot act on the open thread is not offered; pressed, it says why (thread_keys.py);
        # with none open, the thread's keys say why too (_thread_open): a disabled key said nothing.
        return self.offered(action)


class ReaderPane(Vertical):
    def __init__(self, **kwargs) -> None:
        super().__init__(classes="pane", **kwargs)
        self.border_title = "Reading pane"
        self.thread: Thread | None = None
        #: How the open thread was read: the resolution (which backend), or None for a personal
        #: account's message (``account_id`` names the account then).
        self.resolution = None
        self.account_id: str | None = None
        self._thread_status = ("", "", "")  # the counts, the attachments' key, the backend
        self._showing_own = False
        #: The view's widgets, updated from one thread to the next (_fill); the notes and a pair mounted
        #: ahead, hidden (issue 35: mounted on Enter, a frame after the body's laid them out again).
        self._notes = Static(classes="thread-notes")
        self._pairs: list[tuple[WrappedText, WrappedText]] = [
            (PaintedText("", classes="message-header"), WrappedText("", classes="message-body"))]
        self._notes.display = self._pairs[0][0].display = self._pairs[0][1].display = False

    def compose(self) -> ComposeResult:
        with ThreadView(id="thread-view"):
            yield Static(Text("Open a thread with Enter (or a click) to read it here."), classes="reader-hint")
            yield from (self._notes, *self._pairs[0])
        yield Static(id="reader-status", classes="pane-status")

    @property
    def view(self) -> ThreadView:
        return self.query_one(ThreadView)

    def show_status(self, text: str, *, error: bool = False) -> None:
        status = self.query_one("#reader-status", Static)
        status.update(Text(text), layout=False)  # .pane-status is one line: no layout of the screen (issue 35)
        status.set_class(error, "-error")
        self._showing_own = False

    def restore_status(self) -> None:
        """Back to the open thread's own status line (after a transient message)."""
        self.show_status(self._own_status())
        self._showing_own = True

    def show_loading(self, subject: str) -> None:
        layout.reader_holds_thread(self.screen, True)  # short, the folded reader opens (app.tcss)
        self.show_status("loading thread … (Esc cancels)")
        self.border_title = Text.assemble("Reading · ", inert_text(subject))

    def show_thread(self, thread: Thread, resolution, account_id: str | None = None) -> None:
        self.thread = thread
        self.resolution, self.account_id = resolution, account_id
        layout.reader_holds_thread(self.screen, True)
        view = self.view
        notes, texts = thread_texts(thread)
        total = len(thread.messages)
        self._fill(view, notes, texts)
        view.scroll_home(animate=False)
        view.add_class("-has-thread")
        self.border_title = Text.assemble("Reading · ", inert_text(thread.subject or "(no subject)"))
        via = resolution.summary() if resolution is not None else ""
        attached = sum(len(m.attachments) for m in thread.messages)
        # " (e)" while the reader has focus, where e opens them; nothing elsewhere (the
        # list has no e), so the status line never offers a key that does nothing there.
        self._thread_status = (f"{total} message{'s' if total != 1 else ''}"
                               + (f" · {attached} attachment{'s' if attached != 1 else ''}" if attached else ""),
                               " (e)" if attached else "", f" · via {via}" if via else "")
        view.acting = acting_keys(thread, account_id)
        self.restore_status()
        view.refresh_bindings()

    def when_painted(self, callback: Callable[[], None]) -> None:
        """``callback`` in the turn after the frame that draws the thread just shown (issue 35)."""
        header = self._pairs[0][0]
        assert isinstance(header, PaintedText)
        header.when_painted(callback)

    def show_nothing(self) -> None:
        """No thread open, as at start: the list beside now shows another source."""
        layout.reader_holds_thread(self.screen, False)  # also after a load that never showed
        if self.thread is None:
            return
        self.thread, self.resolution, self.account_id, self._thread_status = None, None, None, ("", "", "")
        view = self.view
        self._fill(view, None, [])
        view.query(".no-messages").remove()
        view.query_one(".reader-hint").display = True
        view.remove_class("-has-thread").scroll_home(animate=False)
        self.border_title = "Reading pane"
        self.restore_status()
        view.refresh_bindings()

    def _fill(self, view: ThreadView, notes: Text | None, texts: list[tuple[Text, Text]]) -> None:
        """Show ``notes`` and one header and body per message in the view's widgets (issue 33).

        The widgets are kept from one thread to the next and updated in place (removed and mounted
        anew, they cost the frame after Enter). Widgets beyond what a thread needs are hidden with
        their text cleared (never read by next/previous message, nor seen), let go past POOL_KEPT."""
        view.query(".reader-hint").set(display=False)
        for old in [child for child in view.children if child.classes & _NOT_KEPT]:
            old.remove()  # the thread's own (show_case adds it again), an empty thread's line
        selections = self.screen.selections
        if selections:  # a mouse selection in the last thread is not carried onto the kept widgets
            others = {widget: selection for widget, selection in selections.items()
                      if view not in widget.ancestors_with_self}
            if len(others) != len(selections):
                self.screen.selections = others
        new: list[Static] = []
        if notes is not None or self._notes.display:
            self._notes.update(notes or "")
            self._notes.display = notes is not None
        pairs = self._pairs
        for i, (header, body) in enumerate(texts):
            if i < len(pairs):
                pair = pairs[i]
                pair[0].update(header)
                pair[1].update(body)
                pair[0].display = pair[1].display = True
            else:
                # Wrapped once and rendered where they show (tui/wrapped_text.py): the frame after
                # Enter no longer wraps every message to lay it out and the one on screen again
                # whole to paint a few rows of it (issue 33).
                pair = (WrappedText(header, classes="message-header"), WrappedText(body, classes="message-body"))
                pairs.append(pair)
                new.extend(pair)
        shown = len(texts)
        if len(pairs) > max(shown, POOL_KEPT):
            for pair in pairs[max(shown, POOL_KEPT):]:
                for widget in pair:
                    widget.remove()
            del pairs[max(shown, POOL_KEPT):]
        for spare_header, spare_body in pairs[shown:]:
            if spare_header.display:
                spare_header.update("")
                spare_body.update("")
                spare_header.display = spare_body.display = False
        if not texts:
            new.append(Static(Text("This thread has no messages.", "italic"), classes="no-messages"))
        if new:
            view.mount_all(new)

    def _own_status(self) -> str:
        counts, key, via = self._thread_status
        return counts + (key if self.view.has_focus else "") + via

    def on_descendant_focus(self) -> None:
        if self._showing_own:
            self.restore_status()

    def on_descendant_blur(self) -> None:
        if self._showing_own:
            self.restore_status()

    def show_case(self, text: Text) -> None:
        """The Case section (tui/case.py) above the messages of the open thread."""
        view = self.view
        for old in view.query(".case-section"):
            old.remove()
        section = Static(text, classes="case-section")
        children = list(view.children)
        if children:
            view.mount(section, before=children[0])
        else:
            view.mount(section)
