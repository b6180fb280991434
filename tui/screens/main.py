"""The main screen: sources and lists on the left, threads over the reading pane, tracker on the right.

Panes post intents (open this thread, reply, inspect that backend); the screen hands
them to the app, which runs the backend work in workers and feeds results back.
Below 100 columns the sidebar folds away (Tab still reaches every visible pane).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from mailtriage.tui import bindings
from mailtriage.tui.panes.folders import FolderList, FoldersPane
from mailtriage.tui.panes.reader import ReaderPane, ThreadView
from mailtriage.tui.panes.sources import SourceList, SourcesPane
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.panes.threads import ThreadPane
from mailtriage.tui.panes.tracker import TrackerList, TrackerPane

NARROW_WIDTH = 100


class MainScreen(Screen, inherit_bindings=False):
    BINDINGS = bindings.MAIN

    def compose(self) -> ComposeResult:
        yield Header(icon="✉")
        yield Static(id="banner", classes="warning-banner")
        with Horizontal(id="body"):
            with Vertical(id="sidebar"):
                yield SourcesPane(id="sources-pane")
                yield FoldersPane(id="folders-pane")
            with Vertical(id="center"):
                yield ThreadPane(id="thread-pane")
                yield ReaderPane(id="reader-pane")
            yield TrackerPane(id="tracker-pane")
        yield Footer()

    def on_mount(self) -> None:
        self.set_class(self.app.size.width < NARROW_WIDTH, "-narrow")
        self.query_one(ThreadList).focus()
        self.app.main_screen_ready()

    def on_resize(self, event) -> None:
        self.set_class(event.size.width < NARROW_WIDTH, "-narrow")

    # -- banner ------------------------------------------------------------
    def show_banner(self, text: Text | None, *, error: bool = False) -> None:
        banner = self.query_one("#banner", Static)
        banner.update(text or "")
        banner.set_class(bool(text), "-visible")
        banner.set_class(error, "-error")

    # -- focus -------------------------------------------------------------
    PANE_FOCUS = {
        "sources": SourceList,
        "folders": FolderList,
        "threads": ThreadList,
        "reader": ThreadView,
        "tracker": TrackerList,
    }

    def action_focus_pane(self, name: str) -> None:
        if name == "tracker":
            self.set_class(True, "-tracker")
            self._load_tracker_once()
        if name in ("sources", "folders"):
            self.set_class(False, "-narrow")
        widget = self.query_one(self.PANE_FOCUS[name])
        self.call_after_refresh(widget.focus)

    def action_cancel_work(self) -> None:
        self.app.cancel_work()

    def toggle_tracker(self) -> None:
        show = not self.has_class("-tracker")
        self.set_class(show, "-tracker")
        if show:
            self._load_tracker_once()
            self.call_after_refresh(self.query_one(TrackerList).focus)
        elif isinstance(self.focused, TrackerList):
            self.query_one(ThreadList).focus()

    def _load_tracker_once(self) -> None:
        if not self.query_one(TrackerPane).loaded:
            self.app.load_tracker()

    def on_tracker_pane_issue_chosen(self, message: TrackerPane.IssueChosen) -> None:
        self.app.open_issue(message.issue_id)

    # -- intents from panes ------------------------------------------------
    def on_thread_list_opened(self, message: ThreadList.Opened) -> None:
        if getattr(message.summary, "header", None) is not None:  # a personal account's message
            self.app.open_mailbox_message(message.summary)
            return
        self.app.open_thread(message.summary)

    def on_thread_list_reply_requested(self, message: ThreadList.ReplyRequested) -> None:
        self.app.reply_to(message.summary)

    def on_thread_view_reply_requested(self, message: ThreadView.ReplyRequested) -> None:
        self.app.reply_to(None)

    def on_thread_list_import_requested(self, message: ThreadList.ImportRequested) -> None:
        self.app.import_thread(message.summary)

    def on_thread_view_import_requested(self, message: ThreadView.ImportRequested) -> None:
        self.app.import_thread(None)

    def on_thread_view_url_requested(self, message: ThreadView.UrlRequested) -> None:
        self.app.show_thread_url()

    def on_thread_view_back_requested(self, message: ThreadView.BackRequested) -> None:
        self.query_one(ThreadList).focus()

    def on_sources_pane_inspect_backend(self, message: SourcesPane.InspectBackend) -> None:
        self.app.open_console(message.backend)

    def on_folders_pane_list_chosen(self, message: FoldersPane.ListChosen) -> None:
        self.app.load_threads(message.list_name)
        self.query_one(ThreadList).focus()

    # -- personal accounts: folders, messages, flag/move -----------------------
    def on_sources_pane_account_chosen(self, message: SourcesPane.AccountChosen) -> None:
        self.app.open_account(message.account_id)
        self.query_one(FolderList).focus()

    def on_folders_pane_folder_chosen(self, message: FoldersPane.FolderChosen) -> None:
        self.app.open_folder(message.account_id, message.folder_id, message.name)
        self.query_one(ThreadList).focus()

    def on_thread_list_organize_requested(self, message: ThreadList.OrganizeRequested) -> None:
        self.app.organize(message.summary, message.action)

    # -- pane access for the app -------------------------------------------
    @property
    def threads(self) -> ThreadPane:
        return self.query_one(ThreadPane)

    @property
    def reader(self) -> ReaderPane:
        return self.query_one(ReaderPane)

    @property
    def sources(self) -> SourcesPane:
        return self.query_one(SourcesPane)

    @property
    def folders(self) -> FoldersPane:
        return self.query_one(FoldersPane)
