"""The attachments dialog (``e`` in the reading pane): list, view, save.

It lists every attachment of the open thread (the sender's real name shown inert, its
type and size), shows one as inert text or as a hex dump (its first
``VIEW_LIMIT`` (application/attachments.py) bytes, a page at a time), and saves one or all of them to a
folder the user types: saving is a proposal (the proposal dialog shows each real name
beside the safe name it will be written under) and nothing is written before it is
confirmed. Nothing is run or opened outside the app, unless the user set their own
``attachment_command`` (``o``: run without a shell, with a timeout).

The dialog owns its workers: bytes are read on a worker thread through the session's
attachment set, and the answers come back as typed messages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

import mailtriage.application as application
from mailtriage.core.secrets import scrub
from mailtriage.tui import bindings
from mailtriage.tui.dialogs import DIALOG_CSS
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.messages import (AttachmentFailed, AttachmentLoaded, ApplyFailed, ProposalApplied,
                                     ProposalFailed, ProposalReady)
from mailtriage.tui.sanitize import inert, inert_text

if TYPE_CHECKING:
    from mailtriage.application import AttachmentSet, Proposal
    from mailtriage.application import Service

#: Bytes per page of the text view.
TEXT_PAGE = 8 * 1024
#: Lines per page of the hex view.
HEX_PAGE_LINES = 64


def size_text(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024 / 1024:.1f} MiB"


def item_text(item) -> Text:
    """One row of the list: key, real name (inert), type and size; the safe name when it differs."""
    text = Text()
    text.append(f"{item.key:>5}  ", "bold")
    text.append_text(inert_text(item.filename or "(no name)"))
    text.append(f"  {item.content_type} · {size_text(item.size)}", "dim")
    if item.safe_name != item.filename:
        text.append("  → saved as ", "dim")
        text.append_text(inert_text(item.safe_name, style="dim"))
    return text


class FolderInput(Input):
    """The folder to save into (shown when saving starts)."""


class AttachmentsDialog(ModalScreen[None], bindings.KeyContext):
    CSS_PATH = DIALOG_CSS
    key_context = "AttachmentsDialog"
    BINDINGS = bindings.ATTACHMENTS

    DEFAULT_CSS = """
    AttachmentsDialog { align: center middle; background: $background 60%; }
    #attachments-list { height: auto; max-height: 8; border: none; }
    #attachment-view { height: 1fr; border-top: solid $primary-muted; }
    #attachment-content { padding: 0 1; }
    #attachment-status { height: 1; color: $text-muted; padding: 0 1; }
    #attachment-folder { display: none; }
    #attachment-folder.-visible { display: block; }
    """

    def __init__(self, attachments: AttachmentSet, session: Service, *, title: str,
                 report: Callable[[str, BaseException], None], command: str | list | None = None,
                 folder: str = "", cursor_blink: bool = True) -> None:
        super().__init__()
        self.attachments = attachments
        self.session = session
        self.title_text = title
        self.report = report
        self.command = command
        self.folder = folder
        self.cursor_blink = cursor_blink
        self._request = 0
        self._loaded: AttachmentLoaded | None = None
        self._hex = False
        self._page = 0
        self._saving: list = []

    # -- layout -----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        items = self.attachments.items
        with Vertical(id="attachments-box", classes="dialog"):
            heading = Text.assemble((f"Attachments ({len(items)}) · ", "bold"), inert_text(self.title_text))
            yield Static(heading, classes="dialog-title")
            yield OptionList(*(Option(item_text(item), id=item.key) for item in items), id="attachments-list")
            with VerticalScroll(id="attachment-view"):
                yield Static(Text("Enter views the attachment: inert text, or a hex dump for binary parts. "
                                  "Nothing is opened or run.", "italic"), id="attachment-content")
            yield FolderInput(value=self.folder, placeholder="folder to save into", id="attachment-folder")
            yield Static(id="attachment-status")
        yield Footer()

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if self.attachments.items:
            options.highlighted = 0
        options.focus()
        self.query_one(FolderInput).cursor_blink = self.cursor_blink
        self._status(f"via {self.attachments.source} · Enter/v view · s save · A save all")

    def _status(self, text: str) -> None:
        # Errors quote server text: inert, and never a secret the session holds.
        self.query_one("#attachment-status", Static).update(Text(inert(scrub(text))))

    @property
    def selected(self):
        index = self.query_one(OptionList).highlighted
        items = self.attachments.items
        return items[index] if index is not None and 0 <= index < len(items) else None

    # -- viewing ----------------------------------------------------------------------------
    def action_cursor(self, step: int) -> None:
        options = self.query_one(OptionList)
        if options.option_count:
            current = options.highlighted or 0
            options.highlighted = max(0, min(options.option_count - 1, current + step))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_view()

    def action_view(self) -> None:
        item = self.selected
        if item is None:
            return
        self._request += 1
        self._status(f"reading {item.key} …")
        self._read(self._request, item)

    @work(thread=True, exclusive=True, group="attachment-view", exit_on_error=False)
    def _read(self, request: int, item) -> None:
        try:
            view = self.attachments.view(item)
        except Exception as exc:
            self.post_message(AttachmentFailed(request, "Reading the attachment failed", exc))
            return
        self.post_message(AttachmentLoaded(request, item.key, view.data, view.total, view.is_text))

    def on_attachment_loaded(self, message: AttachmentLoaded) -> None:
        if message.request != self._request:
            return
        self._loaded = message
        self._hex = not message.is_text
        self._page = 0
        self._show()

    def on_attachment_failed(self, message: AttachmentFailed) -> None:
        self._status(f"⚠ {message.title}: {message.error}")
        self.report(message.title, message.error)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # x and [ ] act on what is viewed: not offered before a view, nor [ ] for one page (issue 35)
        if action == "toggle_hex":
            return self._loaded is not None
        if action == "page":
            return self._loaded is not None and self._pages() > 1
        return True

    def action_toggle_hex(self) -> None:
        if self._loaded is not None:
            self._hex = not self._hex
            self._page = 0
            self._show()

    def action_page(self, step: int) -> None:
        if self._loaded is not None:
            self._page = max(0, min(self._pages() - 1, self._page + step))
            self._show()

    def _hex_width(self) -> int:
        return 16 if self.query_one("#attachment-view").size.width >= 80 else 8

    def _pages(self) -> int:
        data = self._loaded.data if self._loaded else b""
        per_page = HEX_PAGE_LINES * self._hex_width() if self._hex else TEXT_PAGE
        return max(1, (len(data) + per_page - 1) // per_page)

    def _show(self) -> None:
        loaded = self._loaded
        if loaded is None:
            return
        content = self.query_one("#attachment-content", Static)
        pages = self._pages()
        if self._hex:
            width = self._hex_width()
            lines = application.hex_lines(loaded.data, self._page * HEX_PAGE_LINES, HEX_PAGE_LINES, width)
            content.update(Text("\n".join(lines) or "(empty)"))
            start = self._page * HEX_PAGE_LINES * width
            shown = min(len(loaded.data), start + HEX_PAGE_LINES * width)
        else:
            start = self._page * TEXT_PAGE
            shown = min(len(loaded.data), start + TEXT_PAGE)
            chunk = loaded.data[start:shown].decode("utf-8", "replace")
            content.update(inert_text(chunk or "(empty)", multiline=True))
        self.query_one("#attachment-view", VerticalScroll).scroll_home(animate=False)
        cut = f" (first {size_text(len(loaded.data))} of {size_text(loaded.total)})" if loaded.total > len(
            loaded.data) else ""
        self._status(f"{loaded.key} · {'hex' if self._hex else 'text'} · page {self._page + 1}/{pages} · "
                     f"bytes {start}–{max(start, shown - 1)} of {loaded.total}{cut}"
                     f"{' · [ ] pages' if pages > 1 else ''} · x hex/text")
        self.refresh_bindings()  # x, and [ ] when there is more than one page

    # -- saving -------------------------------------------------------------------------------
    def action_save(self) -> None:
        item = self.selected
        if item is not None:
            self._ask_folder([item])

    def action_save_all(self) -> None:
        if self.attachments.items:
            self._ask_folder(list(self.attachments.items))

    def _ask_folder(self, items: list) -> None:
        self._saving = items
        box = self.query_one(FolderInput)
        box.add_class("-visible")
        box.focus()
        what = items[0].key if len(items) == 1 else f"all {len(items)} attachments"
        self._status(f"save {what}: type the folder, Enter proposes (nothing is written yet), Esc cancels")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        folder = event.value.strip()
        if not folder or not self._saving:
            return
        self.folder = folder
        self._hide_folder()
        self._request += 1
        self._propose(self._request, folder, list(self._saving))

    def _hide_folder(self) -> None:
        self.query_one(FolderInput).remove_class("-visible")
        self.query_one(OptionList).focus()

    @work(thread=True, exclusive=True, group="attachment-save", exit_on_error=False)
    def _propose(self, request: int, folder: str, items: list) -> None:
        try:
            proposal = self.attachments.propose_save(folder, items)
        except Exception as exc:
            self.post_message(ProposalFailed(request, "Preparing the save failed", exc))
            return
        self.post_message(ProposalReady(request, proposal, "attachments"))

    def on_proposal_ready(self, message: ProposalReady) -> None:
        message.stop()
        proposal = message.proposal

        def decided(confirmed: bool | None) -> None:
            if confirmed:
                self._status("saving …")
                self._apply(proposal)
            else:
                self._status("cancelled: nothing was written")

        self.app.push_screen(ProposalDialog(proposal, cursor_blink=self.cursor_blink), decided)

    def on_proposal_failed(self, message: ProposalFailed) -> None:
        message.stop()
        self._status(f"⚠ {message.title}: {message.error}")
        self.report(message.title, message.error)

    @work(thread=True, group="attachment-apply", exit_on_error=False)
    def _apply(self, proposal: Proposal) -> None:
        try:
            report = self.session.apply(proposal)
        except Exception as exc:
            self.post_message(ApplyFailed(0, "Saving failed", exc))
            return
        self.post_message(ProposalApplied(proposal, report, "attachments"))

    def on_proposal_applied(self, message: ProposalApplied) -> None:
        message.stop()
        report = message.report
        paths = [str(value.saved.path) for _summary, value in report.written]
        if report.failed is None:  # report.ok, said so the type checker sees failed is set below
            self._status(f"saved {len(paths)}: " + ", ".join(paths))
            self.notify("\n".join(inert(p) for p in paths) or "nothing", title="Saved", markup=False)
        else:
            self._status(f"⚠ saving stopped after {len(paths)}: {report.failed[1]}")
            self.report("Saving failed", RuntimeError(report.failed[1]))

    def on_apply_failed(self, message: ApplyFailed) -> None:
        message.stop()
        self._status(f"⚠ {message.title}: {message.error}")
        self.report(message.title, message.error)

    # -- the user's own command ---------------------------------------------------------------
    def action_open_command(self) -> None:
        item = self.selected
        if item is None:
            return
        if not self.command:
            self._status("nothing is opened outside mailtriage: set attachment_command in config.toml to allow it")
            return
        self._status(f"handing {item.key} to attachment_command …")
        self._run_command(item)

    @work(thread=True, exclusive=True, group="attachment-command", exit_on_error=False)
    def _run_command(self, item) -> None:
        try:
            code = application.run_command(self.command, item, self.attachments.data(item))
        except Exception as exc:
            self.post_message(AttachmentFailed(0, "attachment_command failed", exc))
            return
        self.app.call_from_thread(self._status, f"attachment_command exited with status {code}")

    # -- closing --------------------------------------------------------------------------------
    def action_close(self) -> None:
        if self.query_one(FolderInput).has_class("-visible"):
            self._hide_folder()
            self._status("saving cancelled: nothing was written")
            return
        self.dismiss(None)
