"""The reading pane: every message of the open thread, inert.

Header values, bodies and attachment names pass through :mod:`sanitize`: they are
plain :class:`~rich.text.Text` with control, bidi and zero-width characters shown as
markers. HTML parts arrive as the backend's html2text output and say so.
``List-Unsubscribe`` targets are shown and never fetched.
"""

from __future__ import annotations

import re

from rich.text import Text
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message as TextualMessage
from textual.widgets import Static

from mailtriage.core.lean_dataclass import lean_dataclass  # @dataclass(eq=False), none of its exec'd code
from mailtriage.application import Message, Thread
from mailtriage.core.inert import sender_mismatch
from mailtriage.tui import bindings
from mailtriage.tui.panes.crypto import crypto_text, part_label
from mailtriage.tui.sanitize import MARKER_STYLE, has_hidden_characters, inert_text

#: Bodies longer than this are cut for display (the backend still holds all of it).
MAX_BODY_CHARS = 200_000

_ANGLE = re.compile(r"<([^<>]*)>")


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


class ThreadView(VerticalScroll, can_focus=True):
    BINDINGS = bindings.READER

    #: Set by the screen while search results are what the thread list shows.
    search_active: bool = False

    @lean_dataclass
    class MatchStepRequested(TextualMessage):
        """n / N while a search is shown: open the next (+1) or previous (-1) match."""

        step: int

    @lean_dataclass
    class ReplyRequested(TextualMessage):
        """r (``kind`` ""), A reply_all, F forward, C new."""

        kind: str = ""

    @lean_dataclass
    class UrlRequested(TextualMessage):
        pass

    @lean_dataclass
    class ImportRequested(TextualMessage):
        pass

    @lean_dataclass
    class KeyImportRequested(TextualMessage):
        """K: import a key the open thread offers (OpenPGP), through a proposal."""

    @lean_dataclass
    class BackRequested(TextualMessage):
        pass

    @lean_dataclass
    class AttachmentsRequested(TextualMessage):
        pass

    class IssueRequested(TextualMessage):
        """``s``: jump to the tracker issue of the open thread."""

    class HeadersRequested(TextualMessage):
        """``h``: every header of the open thread's messages (a dialog)."""

    class PipeRequested(TextualMessage):
        """``|``: pipe the message at the top of the view to a command (a dialog)."""

    class NextRowRequested(TextualMessage):
        """Space at the end of the open thread: open the next row of the list (mutt's habit)."""

    def action_page_down(self) -> None:
        if self.has_class("-has-thread") and self.scroll_y >= self.max_scroll_y:
            self.post_message(self.NextRowRequested())
            return
        self.scroll_page_down(animate=False)

    def action_page_up(self) -> None:
        self.scroll_page_up(animate=False)

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
            raise SkipAction()
        self.post_message(self.MatchStepRequested(step))

    def _headers(self) -> list[Static]:
        return list(self.query(".message-header"))

    def action_next_message(self) -> None:
        y = self.scroll_y
        for header in self._headers():
            top = header.virtual_region.y
            if top > y:
                self.scroll_to(y=top, animate=False)
                return

    def action_previous_message(self) -> None:
        y = self.scroll_y
        for header in reversed(self._headers()):
            top = header.virtual_region.y
            if top < y:
                self.scroll_to(y=top, animate=False)
                return
        self.scroll_home(animate=False)

    def action_reply(self) -> None:
        self.post_message(self.ReplyRequested())

    def action_compose(self, kind: str) -> None:
        self.post_message(self.ReplyRequested(kind))

    def action_import_thread(self) -> None:
        self.post_message(self.ImportRequested())

    def action_import_key(self) -> None:
        self.post_message(self.KeyImportRequested())

    def action_thread_url(self) -> None:
        self.post_message(self.UrlRequested())

    def action_back(self) -> None:
        self.post_message(self.BackRequested())

    def action_attachments(self) -> None:
        self.post_message(self.AttachmentsRequested())

    def action_jump_issue(self) -> None:
        self.post_message(self.IssueRequested())

    def action_full_headers(self) -> None:
        self.post_message(self.HeadersRequested())

    def action_pipe(self) -> None:
        self.post_message(self.PipeRequested())

    def message_in_view(self) -> int:
        """The index of the message whose header is at or above the top of the view."""
        y = self.scroll_y
        return max(sum(1 for header in self._headers() if header.virtual_region.y <= y) - 1, 0)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("next_match", "previous_match"):
            # False hands n / N to their next binding (next / previous message), also in the footer.
            return self.search_active and self.has_class("-has-thread")
        if action in ("reply", "import_thread", "thread_url", "next_message", "previous_message", "attachments",
                      "jump_issue", "import_key", "full_headers", "pipe") or (action == "compose" and parameters != ("new",)):
            return True if self.has_class("-has-thread") else None
        return True


class ReaderPane(Vertical):
    def __init__(self, **kwargs) -> None:
        super().__init__(classes="pane", **kwargs)
        self.border_title = "Reading pane"
        self.thread: Thread | None = None
        #: How the open thread was read: the resolution (which backend), or None for a personal
        #: account's message (``account_id`` names the account then).
        self.resolution = None
        self.account_id: str | None = None
        self._thread_status = ""

    def compose(self) -> ComposeResult:
        with ThreadView(id="thread-view"):
            yield Static(Text("Open a thread with Enter (or a click) to read it here."), classes="reader-hint")
        yield Static(id="reader-status", classes="pane-status")

    @property
    def view(self) -> ThreadView:
        return self.query_one(ThreadView)

    def show_status(self, text: str, *, error: bool = False) -> None:
        status = self.query_one("#reader-status", Static)
        status.update(Text(text))
        status.set_class(error, "-error")

    def restore_status(self) -> None:
        """Back to the open thread's own status line (after a transient message)."""
        self.show_status(self._thread_status)

    def show_loading(self, subject: str) -> None:
        self.show_status("loading thread … (Esc cancels)")
        self.border_title = Text.assemble("Reading · ", inert_text(subject))

    def show_thread(self, thread: Thread, resolution, account_id: str | None = None) -> None:
        self.thread = thread
        self.resolution, self.account_id = resolution, account_id
        view = self.view
        view.remove_children()
        widgets: list[Static] = []
        if thread.notes:
            notes = Text()
            for note in thread.notes:
                notes.append("Note: ", "bold")
                notes.append_text(inert_text(note, style="italic"))
                notes.append("\n")
            notes.rstrip()
            widgets.append(Static(notes, classes="thread-notes"))
        total = len(thread.messages)
        for i, message in enumerate(thread.messages, 1):
            widgets.append(Static(header_text(message, i, total), classes="message-header"))
            widgets.append(Static(body_text(message), classes="message-body"))
        if not thread.messages:
            widgets.append(Static(Text("This thread has no messages.", "italic")))
        view.mount_all(widgets)
        view.scroll_home(animate=False)
        view.add_class("-has-thread")
        self.border_title = Text.assemble("Reading · ", inert_text(thread.subject or "(no subject)"))
        via = resolution.summary() if resolution is not None else ""
        attached = sum(len(m.attachments) for m in thread.messages)
        self._thread_status = (f"{total} message{'s' if total != 1 else ''}"
                               + (f" · {attached} attachment{'s' if attached != 1 else ''} (e)" if attached else "")
                               + (f" · via {via}" if via else ""))
        self.show_status(self._thread_status)
        view.refresh_bindings()

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
