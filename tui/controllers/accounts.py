"""Personal accounts: a folder's messages into the thread list, and flag/move.

An account's folders are the lists pane's own work (:class:`FoldersPane`). A folder's
messages are listed here while the thread list's listing is the screen's: the listing runs
as the screen's "threads" work (a list chosen after a folder supersedes it, Esc cancels
it). Every write (mark read, flag, archive, trash) goes through a proposal the user
confirms: built as the screen's "reply" work, shown by the proposals.

A component of the main screen (issue 36 §2: a hidden widget, tui/controllers/component.py).
It owns the folder in the thread list (:attr:`Accounts.open_folder_key`): the listing forgets
it when a list replaces the folder, the search takes it as its scope, compose's new mail its
account. It takes an account chosen in the sources pane, a folder chosen and ``m f a d`` on a
row (``TAKES``; the screen hands them on). Its workers run on
it: the folder's rows (``FolderListed``) and its failure (``ThreadsFailed``, shown as a list's
is, by the listing) come back to it; a proposal goes to the screen, which hands every
proposal to the proposals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mailtriage.tui.controllers.component import Component
from mailtriage.tui.mailbox_rows import MailboxRow
from mailtriage.tui.messages import FolderListed, ProposalFailed, ProposalReady, ThreadsFailed
from mailtriage.tui.panes.folders import FolderList, FoldersPane
from mailtriage.tui.panes.sources import SourcesPane
from mailtriage.tui.panes.thread_list import ThreadList

if TYPE_CHECKING:
    from mailtriage.application import MailHeader
    from mailtriage.tui.controllers.base import ControllerBase


class Accounts(Component):
    """A personal account's folder in the thread list, and the flag and move proposals on its rows."""

    def __init__(self, screen: ControllerBase) -> None:
        # screen: the service, its "threads" and "reply" requests, the thread and lists panes,
        # the reader left behind when a folder replaces a list.
        super().__init__(screen, id="accounts")
        #: The folder in the thread list: (account id, folder id, name); None for a mailing list.
        self.open_folder_key: tuple[str, str, str] | None = None

    # -- requests from the panes -----------------------------------------------------------
    def on_sources_pane_account_chosen(self, message: SourcesPane.AccountChosen) -> None:
        """An account chosen in the sources pane: its folders in the lists pane, focused."""
        self._screen.folders.open_account(message.account_id)
        self._screen.query_one(FolderList).focus()

    def on_folders_pane_folder_chosen(self, message: FoldersPane.FolderChosen) -> None:
        """A folder chosen in the lists pane: its messages, the thread list focused."""
        self.open_folder(message.account_id, message.folder_id, message.name)
        self._screen.threads.thread_list.focus()

    def left_folder(self) -> None:
        """A mailing list replaces the folder in the thread list (the listing says so): search,
        C and the refresh after a write act on what is shown, never on the account left behind."""
        self.open_folder_key = None

    # -- a folder's messages ------------------------------------------------------------------
    def open_folder(self, account_id: str, folder_id: str, name: str | None = None, *, keep: bool = False) -> None:
        """Page a folder, newest first, into the thread list (``list(MailQuery)`` pages).

        ``keep``: a refresh after a write — the rows stay until the new ones arrive and
        the cursor stays on the same position."""
        screen = self._screen
        self.open_folder_key = (account_id, folder_id, name or folder_id)
        label = f"{account_id} · {name or folder_id}"
        cursor = 0
        if keep:
            cursor = screen.threads.thread_list.cursor
        else:
            screen.threads.show_loading(label)
            screen.reader_leaves_source()
        self._start(self._list_folder, screen.new_request("threads"), account_id, folder_id, label, cursor,
                    group="threads")

    def on_folder_listed(self, message: FolderListed) -> None:
        """The folder's rows: into the thread list, the cursor kept. The cursor's message is
        read ahead in the turn that shows the rows, not a frame later when the list's
        Highlighted comes: an Enter typed at the rows' first frame waited for it (issue 35)."""
        message.stop()
        if self._screen.is_current("threads", message.request):
            threads = self._screen.threads
            threads.show_rows(message.rows, None, message.label)
            if message.cursor and len(message.rows):
                threads.thread_list.cursor = min(message.cursor, len(message.rows) - 1)
        self._screen.reading.highlighted()

    def on_threads_failed(self, message: ThreadsFailed) -> None:
        """The folder could not be listed: the thread list says so as for a list (the listing's)."""
        message.stop()
        self._screen.listing.failed(message)

    def _list_folder(self, request: int, account_id: str, folder_id: str, label: str, cursor: int = 0) -> None:
        # lazy: the mailbox rows (and the mailbox contract) load once an account is opened
        from mailtriage.tui.mailbox_rows import FOLDER_PAGE, FolderReads, FolderRows

        screen = self._screen
        session = screen.session
        try:
            first = session.account_page(account_id, folder_id, 0, FOLDER_PAGE)
        except Exception as exc:
            self.post_message(ThreadsFailed(request, f"Listing {label} failed", exc))
            return
        reads = FolderReads(  # the whole folder ordered by the server (issue 35): sort, fold, u
            order=lambda sort, reverse, threads: session.account_order(account_id, folder_id, sort, reverse, threads),
            unread=lambda: session.account_unread_ids(account_id, folder_id),
            headers=lambda ids: session.account_headers(account_id, ids))
        rows = FolderRows(account_id, folder_id, first,
                          lambda page, size: session.account_page(account_id, folder_id, page, size), reads=reads)
        self.post_message(FolderListed(request, label, rows, cursor))

    # -- flag and move ----------------------------------------------------------------------
    def on_thread_list_organize_requested(self, message: ThreadList.OrganizeRequested) -> None:
        """m/f/a/d: build the flag or move proposal for the row; nothing is written before confirm."""
        summary, action = message.summary, message.action
        if not isinstance(summary, MailboxRow) or summary.header is None:
            self._screen.notify("Mark, flag, archive and trash work on a personal account's messages: open an "
                                "account in the sources pane first.", severity="warning", markup=False)
            return
        header = summary.header
        if action == "toggle_read":
            action = "unread" if header.read else "read"
        elif action == "toggle_flag":
            action = "unflag" if header.flagged else "flag"
        self._start(self._propose_organize, self._screen.new_request("reply"), summary.account_id, header, action,
                    group="reply")

    #: The requests this component takes, each with its handler (the screen hands them on).
    TAKES = {
        SourcesPane.AccountChosen: on_sources_pane_account_chosen,
        FoldersPane.FolderChosen: on_folders_pane_folder_chosen,
        ThreadList.OrganizeRequested: on_thread_list_organize_requested,
    }

    def _propose_organize(self, request: int, account_id: str, header: MailHeader, action: str) -> None:
        screen = self._screen
        try:
            proposal = screen.session.propose_organize(account_id, [header], action)
        except Exception as exc:
            screen.post_message(ProposalFailed(request, "Preparing the change failed", exc))
            return
        screen.post_message(ProposalReady(request, proposal, "organize"))

    def after_organize(self) -> None:
        """After a flag or move: list the folder again (a move changes IMAP IDs) and its counts."""
        if self.open_folder_key is None:
            return
        account_id, folder_id, name = self.open_folder_key
        self.open_folder(account_id, folder_id, name, keep=True)
        folders = self._screen.folders
        if folders.account_id == account_id:
            folders.open_account(account_id, reload=True)  # its counts
