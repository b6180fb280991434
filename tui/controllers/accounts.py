"""Personal accounts controller: a folder's messages into the thread list, and flag/move.

An account's folders are the lists pane's own work (:class:`FoldersPane`). A folder's
messages stay here while the thread list's listing is the screen's (its requests are the
listing controller's too: a list chosen after a folder supersedes it). Every write (mark
read, flag, archive, trash) goes through a proposal the user confirms.
"""

from __future__ import annotations

from textual import work

from mailtriage.tui.controllers.base import ControllerBase
from mailtriage.tui.mailbox_rows import MailboxRow
from mailtriage.tui.messages import FolderListed, ProposalFailed, ProposalReady, ThreadsFailed
from mailtriage.tui.panes.folders import FoldersPane
from mailtriage.tui.panes.thread_list import ThreadList


class AccountsController(ControllerBase):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        #: The folder in the thread list: (account id, folder id, name); None for a mailing list.
        self.open_folder_key: tuple[str, str, str] | None = None

    # -- intents from the panes ------------------------------------------------------
    def on_folders_pane_folder_chosen(self, message: FoldersPane.FolderChosen) -> None:
        self.open_folder(message.account_id, message.folder_id, message.name)
        self.query_one(ThreadList).focus()

    def on_thread_list_organize_requested(self, message: ThreadList.OrganizeRequested) -> None:
        self.organize(message.summary, message.action)

    # -- a folder's messages ------------------------------------------------------------------
    def open_folder(self, account_id: str, folder_id: str, name: str | None = None, *, keep: bool = False) -> None:
        """Page a folder, newest first, into the thread list (``list(MailQuery)`` pages).

        ``keep``: a refresh after a write — the rows stay until the new ones arrive and
        the cursor stays on the same position."""
        self.open_folder_key = (account_id, folder_id, name or folder_id)
        label = f"{account_id} · {name or folder_id}"
        cursor = 0
        if keep:
            cursor = self.threads.thread_list.cursor
        else:
            self.threads.show_loading(label)
            self.reader_leaves_source()
        self._list_folder(self.new_request("threads"), account_id, folder_id, label, cursor)

    def on_folder_listed(self, message: FolderListed) -> None:
        if not self.is_current("threads", message.request):
            return
        threads = self.threads
        threads.show_rows(message.rows, None, message.label)
        if message.cursor and len(message.rows):
            threads.thread_list.cursor = min(message.cursor, len(message.rows) - 1)

    @work(thread=True, exclusive=True, group="threads", exit_on_error=False)
    def _list_folder(self, request: int, account_id: str, folder_id: str, label: str, cursor: int = 0) -> None:
        # lazy: the mailbox rows (and the mailbox contract) load once an account is opened
        from mailtriage.tui.mailbox_rows import FOLDER_PAGE, FolderReads, FolderRows

        session = self.session
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
    def organize(self, summary: object, action: str) -> None:
        """m/f/a/d: build the flag or move proposal for the row; nothing is written before confirm."""
        if not isinstance(summary, MailboxRow) or summary.header is None:
            self.notify("Mark, flag, archive and trash work on a personal account's messages: open an account "
                        "in the sources pane first.", severity="warning", markup=False)
            return
        header = summary.header
        if action == "toggle_read":
            action = "unread" if header.read else "read"
        elif action == "toggle_flag":
            action = "unflag" if header.flagged else "flag"
        self._propose_organize(self.new_request("reply"), summary.account_id, header, action)

    @work(thread=True, exclusive=True, group="reply", exit_on_error=False)
    def _propose_organize(self, request: int, account_id: str, header, action: str) -> None:
        try:
            proposal = self.session.propose_organize(account_id, [header], action)
        except Exception as exc:
            self.post_message(ProposalFailed(request, "Preparing the change failed", exc))
            return
        self.post_message(ProposalReady(request, proposal, "organize"))

    def after_organize(self) -> None:
        """After a flag or move: list the folder again (a move changes IMAP IDs) and its counts."""
        if self.open_folder_key is None:
            return
        account_id, folder_id, name = self.open_folder_key
        self.open_folder(account_id, folder_id, name, keep=True)
        if self.folders.account_id == account_id:
            self.folders.open_account(account_id, reload=True)  # its counts
