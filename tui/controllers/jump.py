"""``s``: from a thread to the tracker issue that holds it, and from an issue to its thread
(issue 36 §2: a component of the main screen, as the screen's handlers were).

The tracker pane finds what the marks do not know (its own workers, its own answers); its
news, ``IssueOfThreadFound`` and ``ThreadOfIssueFound``, bubbles to the screen, which hands
it here with the list's and the reader's ``s``. The queue screen posts a ThreadOfIssueFound
to the main screen too (a claimed row's thread).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mailtriage.tui.controllers.component import Component
from mailtriage.tui.mailbox_rows import MailboxRow
from mailtriage.tui.messages import IssueOfThreadFound, ThreadOfIssueFound
from mailtriage.tui.panes.reader import ThreadView
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.panes.tracker import TrackerList
from mailtriage.tui.rows import index_of

if TYPE_CHECKING:
    from mailtriage.application import ThreadId, ThreadSummary
    from mailtriage.tui.controllers.base import ControllerBase


class Jump(Component):
    """The ``s`` key both ways between the thread list or reader and the tracker pane (hidden)."""

    def __init__(self, screen: ControllerBase) -> None:
        super().__init__(screen, id="jump")  # the screen: the panes, the reading component, the service

    def on_thread_list_issue_requested(self, message: ThreadList.IssueRequested) -> None:
        if isinstance(message.summary, MailboxRow):
            self._no_issue_of_personal_mail()
        elif message.summary is not None:
            self.jump_to_issue(message.summary.thread_id)

    def on_thread_view_issue_requested(self, _message: ThreadView.IssueRequested) -> None:
        # The thread shown, also one s read from an issue (no row of the list: reading.open_summary None).
        reader = self._screen.reader
        thread = reader.thread
        if thread is not None and reader.account_id is not None:
            self._no_issue_of_personal_mail()
        elif thread is not None:
            self.jump_to_issue(thread.thread_id)

    def _no_issue_of_personal_mail(self) -> None:
        self._screen.notify("s finds the tracker issue of a project source's thread; this is a personal account's "
                            "message.", markup=False)

    def jump_to_issue(self, thread_id: ThreadId) -> None:
        screen = self._screen
        if not screen.session.is_open:
            return
        known = screen.threads.marks.statuses.get(thread_id)
        if known is not None and known.issue:
            self._show_issue(known.issue)
            return
        screen.tracker.find_issue_of(thread_id)

    def on_issue_of_thread_found(self, message: IssueOfThreadFound) -> None:
        if message.issue_id is not None:
            self._show_issue(message.issue_id)

    def _show_issue(self, issue_id: str) -> None:
        screen = self._screen
        screen.set_class(True, "-tracker")
        screen.set_class(False, "-tracker-folded")
        screen.tracker.show_issue_of(issue_id)
        screen.call_after_refresh(screen.query_one(TrackerList).focus)

    def on_thread_of_issue_found(self, message: ThreadOfIssueFound) -> None:
        if message.thread_id is None:
            return
        screen = self._screen
        thread_list = screen.query_one(ThreadList)
        index = index_of(thread_list.rows, message.thread_id, thread_list.cursor)
        screen.set_class(True, "-tracker-folded")
        if index is not None:
            thread_list.cursor = index
            thread_list.focus()
            row: ThreadSummary | None = thread_list.current
            if row is not None:
                screen.reading.open_thread(row)
            return
        # Not in the list (older than the window, another list): read it directly, the keys on
        # it (the list's row is another thread: r and i there answered that one).
        if screen.accounts.open_folder_key is not None:
            # An account's folder is listed: the project list comes back under the thread read,
            # its cursor on the thread once a listing holds it, so q lands beside it (not in the folder).
            listing = screen.listing
            screen.threads.return_to(listing.current_list, message.thread_id)
            listing.load_threads(listing.current_list)
        screen.query_one(ThreadView).focus()
        screen.reading.open_thread_id(message.thread_id)

    #: The requests this component takes, each with its handler (the screen hands them on).
    TAKES = {
        ThreadList.IssueRequested: on_thread_list_issue_requested,
        ThreadView.IssueRequested: on_thread_view_issue_requested,
        IssueOfThreadFound: on_issue_of_thread_found,
        ThreadOfIssueFound: on_thread_of_issue_found,
    }
