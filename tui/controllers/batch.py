"""Batch controller: the action keys on the tagged rows, in ONE proposal.

With tags set in the thread list, ``m f a d`` (and ``M``, which asks for a folder first)
on a personal account's messages build one organize proposal over every tagged message
(the application layer writes it in bulk calls of at most 100 IDs); ``i`` on a project
source's threads builds one proposal holding one import per thread. Nothing is written
before the proposal dialog is confirmed. After the write the folder is listed again, the
tags of the messages that were done are cleared, and of those that are gone (expunged or
moved by another client, their folder reset); the other failed ones stay tagged. A partial
failure is reported message by message (``!`` shows each failed message and why).

A component of the main screen (issue 36 §2: a hidden widget, tui/controllers/component.py):
it keeps the batch proposal on screen, and runs its work on itself as the screen's "reply"
work (the worker group and request kind Esc cancels, which a proposal or a compose started
later supersedes). It takes its own answers (``BatchFoldersReady``, ``BatchReady``); a
failure to build the proposal is a ``ProposalFailed`` posted to the screen, which hands every
proposal's failure to the proposals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mailtriage.application import ThreadId
from mailtriage.tui.controllers.component import Component
from mailtriage.tui.mailbox_rows import MAILBOX_KIND, MailboxRow
from mailtriage.tui.messages import BatchFoldersReady, BatchReady, ProposalFailed
from mailtriage.tui.panes.thread_list import ThreadList

if TYPE_CHECKING:
    from mailtriage.application import ApplyReport, MailHeader, Proposal, ThreadSummary
    from mailtriage.tui.controllers.base import ControllerBase


class Batch(Component):
    """The action keys on the tagged rows: one proposal, and the tags after its write."""

    def __init__(self, screen: ControllerBase) -> None:
        # screen: its "reply" requests, the thread pane, the proposal dialog and the folder
        # listing after a write.
        super().__init__(screen, id="batch")
        #: The batch proposal on screen (or being written): its outcome decides which tags stay.
        self.proposal: Proposal | None = None

    def on_thread_list_batch_requested(self, message: ThreadList.BatchRequested) -> None:
        """The action keys with rows tagged."""
        screen, rows, action = self._screen, message.rows, message.action
        if action == "import":
            self.import_batch(rows)
            return
        messages = [r for r in rows if isinstance(r, MailboxRow) and r.header is not None]
        if not messages or len(messages) != len(rows):
            screen.notify("Mark, flag, move, archive and trash work on a personal account's messages: open an "
                        "account in the sources pane first.", severity="warning", markup=False)
            return
        accounts = {r.account_id for r in messages}
        if len(accounts) != 1:
            screen.notify("The tagged messages belong to more than one account: tag one account's messages.",
                        severity="warning", markup=False)
            return
        account_id = accounts.pop()
        headers = tuple(r.header for r in messages)
        if action == "move":
            self._start(self._batch_folders, screen.new_request("reply"), account_id, headers, group="reply")
        else:
            self._start(self._propose_batch, screen.new_request("reply"), account_id, headers, action, group="reply")

    #: The requests this component takes, each with its handler (the screen hands them on).
    TAKES = {ThreadList.BatchRequested: on_thread_list_batch_requested}

    # -- building the proposal --------------------------------------------------------
    def _propose_batch(self, request: int, account_id: str, headers: tuple[MailHeader, ...], action: str,
                       folder_id: str | None = None) -> None:
        screen = self._screen
        try:
            proposal = screen.session.propose_organize(account_id, list(headers), action, folder_id)
        except Exception as exc:
            screen.post_message(ProposalFailed(request, "Preparing the change failed", exc))
            return
        self.post_message(BatchReady(request, proposal))

    def _batch_folders(self, request: int, account_id: str, headers: tuple[MailHeader, ...]) -> None:
        screen = self._screen
        try:
            folders = screen.session.account_folders(account_id)
        except Exception as exc:
            screen.post_message(ProposalFailed(request, f"Listing the folders of {account_id} failed", exc))
            return
        self.post_message(BatchFoldersReady(request, account_id, headers, folders))

    def on_batch_folders_ready(self, message: BatchFoldersReady) -> None:
        """The folders a move may go to: the folder picker, then the proposal."""
        message.stop()
        screen = self._screen
        if not screen.is_current("reply", message.request):
            return
        headers = message.headers

        def picked(folder_id: str | None) -> None:
            if folder_id:
                self._start(self._propose_batch, screen.new_request("reply"), message.account_id, headers, "move",
                            folder_id, group="reply")

        # lazy: dialogs are not on the first screen (tests/tui/test_startup_imports.py)
        from mailtriage.tui.dialogs.folder_picker import FolderPicker

        screen.app.push_screen(FolderPicker(message.folders, current=headers[0].folder_id, count=len(headers),
                                            account_id=message.account_id, cursor_blink=screen.shell.cursor_blink),
                               picked)

    def on_batch_ready(self, message: BatchReady) -> None:
        """The batch proposal: the proposal dialog."""
        message.stop()
        screen = self._screen
        if not screen.is_current("reply", message.request):
            return
        self.proposal = message.proposal
        screen.proposals.show(message.proposal, "batch")

    # -- import: one import per tagged thread ---------------------------------------------
    def import_batch(self, rows: tuple[ThreadSummary, ...]) -> None:
        if any(isinstance(r, MailboxRow) for r in rows):
            self._screen.notify("Import works on a project source's threads; the tagged rows are a personal account's "
                        "messages.", severity="warning", markup=False)
            return
        self._start(self._propose_imports, self._screen.new_request("reply"), tuple(r.thread_id for r in rows),
                    group="reply")

    def _propose_imports(self, request: int, thread_ids: tuple[ThreadId, ...]) -> None:
        screen = self._screen
        try:
            proposal = screen.session.propose_imports(list(thread_ids))
        except Exception as exc:
            screen.post_message(ProposalFailed(request, "Preparing the imports failed", exc))
            return
        self.post_message(BatchReady(request, proposal))

    # -- after the write -------------------------------------------------------------------
    def after(self, report: ApplyReport) -> None:
        """Clear the tags of what was done or is gone (other failed messages stay tagged) and list again."""
        proposal, self.proposal = self.proposal, None
        thread_list = self._screen.threads.thread_list
        outcome = proposal.facts.get("outcome") if proposal is not None else None
        if isinstance(outcome, dict):
            # Done, or gone (expunged or moved by another client): only what can be retried stays tagged.
            thread_list.untag(ThreadId(MAILBOX_KIND, i) for i in (*outcome.get("done", ()), *outcome.get("gone", ())))
            self._screen.accounts.after_organize()
        elif report.ok:  # imports: every thread was written
            thread_list.clear_tags()
