"""Overview controller: the triage state of the threads on screen, thread ↔ issue, and
whether local tracker changes wait to be published.

* **Row marks.** For the rows on screen only (never the whole listing), a worker asks the
  session once for the screen whether each thread is filed in the tracker, has a draft
  pending and was replied to (the backend looks once for all the rows); answers are cached per thread, so scrolling back costs nothing and a
  listing is never slower for it. The cache is dropped after a write and on ``R``.
* **``s``** on a thread opens the tracker pane on the issue that holds it; on a tracker
  issue it goes to the thread its rollup names (the row in the list, or read directly).
* **Unpublished changes.** Once the tracker is open, and after every write, the screen
  asks whether the tracker keeps local changes to publish: the title says so, and ``q``
  asks before quitting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work
from textual.timer import Timer
from textual.worker import WorkerState, get_current_worker

from mailtriage.core.trace import calling_as
from mailtriage.tui.controllers.base import ControllerBase
from mailtriage.tui.mailbox_rows import MailboxRow
from mailtriage.tui.messages import (IssueOfThreadFound, JumpFailed, PublishPendingChecked, RowStatusLoaded,
                                     ThreadOfIssueFound)
from mailtriage.tui.panes.reader import ThreadView
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.panes.tracker import TrackerList, TrackerPane
from mailtriage.tui.pending import PendingWork
from mailtriage.tui.rows import index_of
from mailtriage.tui.sanitize import inert

if TYPE_CHECKING:
    from mailtriage.application import ThreadId, ThreadStatus, ThreadSummary

#: Seconds the row marks wait for the cursor to rest before they are asked for.
ROW_STATUS_DELAY = 0.25
#: Worker groups that write (a quit while one runs asks first).
WRITE_GROUPS = ("apply",)
PUBLISH_MARK = "✎ tracker changes to publish (P)"


class OverviewController(ControllerBase, PendingWork):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.publish_pending = False
        self.row_status: dict[ThreadId, ThreadStatus] = {}
        self._row_timer: Timer | None = None
        #: The issue ``s`` jumped to, selected in the tracker list once it is listed.
        self.pending_issue: str | None = None

    # -- what a quit would drop ---------------------------------------------------------
    def pending_work(self) -> list[str]:
        pending = []
        running = (WorkerState.PENDING, WorkerState.RUNNING)
        if any(w.group in WRITE_GROUPS and w.state in running for w in self.workers):
            pending.append("a confirmed write is still running")
        if self.publish_pending:
            pending.append("local tracker changes are not published (P reviews them)")
        return pending

    # -- unpublished tracker changes ------------------------------------------------------
    def check_publish_pending(self) -> None:
        """Ask (in a worker) whether the tracker keeps changes to publish; only once it is open."""
        if self.session.is_open and self.session.tracker is not None:
            self._check_publish()

    @work(thread=True, exclusive=True, group="publish-check", exit_on_error=False)
    def _check_publish(self) -> None:
        try:
            pending = self.session.needs_publish()
        except Exception:  # the publish review says why when asked; the mark stays as it was
            return
        self.post_message(PublishPendingChecked(pending))

    def on_publish_pending_checked(self, message: PublishPendingChecked) -> None:
        self.publish_pending = message.pending
        parts = ["demo"] if self.session.demo else []
        if message.pending:
            parts.append(PUBLISH_MARK)
        self.shell.sub_title = " · ".join(parts)

    # -- row marks ------------------------------------------------------------------------
    def on_thread_list_highlighted(self, message: ThreadList.Highlighted) -> None:
        # The list moved (cursor, new rows): ask for the rows now on screen once it rests.
        if self._row_timer is not None:
            self._row_timer.stop()
        self._row_timer = self.set_timer(ROW_STATUS_DELAY, self.request_row_status)

    def request_row_status(self) -> None:
        if not self.session.is_open or not self.panes_ready:
            return
        thread_list = self.query_one(ThreadList)
        wanted = [row.thread_id for row in thread_list.visible_rows()
                  if not isinstance(row, MailboxRow) and row.thread_id not in self.row_status]
        if wanted:
            self._row_status(self.new_request("row-status"), list(dict.fromkeys(wanted)))

    @work(thread=True, exclusive=True, group="row-status", exit_on_error=False)
    def _row_status(self, request: int, thread_ids: list[ThreadId]) -> None:
        from mailtriage.application import ThreadStatus  # lazy: loads the flows and trackers (start-up)

        with calling_as("overview"):  # the console's op log says who asked
            try:  # one call for the screen: the backend looks once for all its rows
                statuses = self.session.thread_statuses(thread_ids)
            except Exception:  # a mark is a hint: unknown, never an error on screen
                statuses = {}
        if get_current_worker().is_cancelled:
            return
        self.post_message(RowStatusLoaded(request, {t: statuses.get(t, ThreadStatus()) for t in thread_ids}))

    def on_row_status_loaded(self, message: RowStatusLoaded) -> None:
        self.row_status.update(message.statuses)
        thread_list = self.query_one(ThreadList)
        thread_list.set_statuses(self.row_status)
        current = thread_list.current
        if current is not None and current.thread_id in message.statuses:
            thread_list.post_message(ThreadList.Highlighted(thread_list.cursor, len(thread_list.rows)))

    def forget_row_status(self) -> None:
        """After a write or on R: the marks are asked for again."""
        self.row_status = {}
        self.query_one(ThreadList).set_statuses(self.row_status)
        self.request_row_status()

    # -- s: thread → issue -----------------------------------------------------------------
    def on_thread_list_issue_requested(self, message: ThreadList.IssueRequested) -> None:
        if message.summary is not None and not isinstance(message.summary, MailboxRow):
            self.jump_to_issue(message.summary.thread_id)

    def on_thread_view_issue_requested(self, message: ThreadView.IssueRequested) -> None:
        thread = self.reader.thread
        if thread is not None and self.open_summary is not None and not isinstance(self.open_summary, MailboxRow):
            self.jump_to_issue(thread.thread_id)

    def jump_to_issue(self, thread_id: ThreadId) -> None:
        if not self.session.is_open:
            return
        known = self.row_status.get(thread_id)
        if known is not None and known.issue:
            self._show_issue(known.issue)
            return
        self._find_issue(self.new_request("jump"), thread_id)

    @work(thread=True, exclusive=True, group="jump", exit_on_error=False)
    def _find_issue(self, request: int, thread_id: ThreadId) -> None:
        try:
            issue_id = self.session.thread_issue(thread_id)
        except Exception as exc:
            self.post_message(JumpFailed(request, "Finding the thread's issue failed", exc))
            return
        self.post_message(IssueOfThreadFound(request, thread_id, issue_id))

    def on_issue_of_thread_found(self, message: IssueOfThreadFound) -> None:
        if not self.is_current("jump", message.request):
            return
        if message.issue_id is None:
            self.notify("No tracker issue holds this thread (import it with i).", markup=False)
            return
        self._show_issue(message.issue_id)

    def _show_issue(self, issue_id: str) -> None:
        """The tracker pane, on ``issue_id``: its row selected (once listed) and its fields shown."""
        self.set_class(True, "-tracker")
        self.set_class(False, "-tracker-folded")
        self.pending_issue = issue_id
        if not self.tracker.loaded:
            self.load_tracker()  # the row is selected when the list arrives (select_pending_issue)
        else:
            self.select_pending_issue()
        self.open_issue(issue_id)
        self.call_after_refresh(self.query_one(TrackerList).focus)

    def select_pending_issue(self) -> None:
        """The tracker list is shown: put its cursor on the issue ``s`` jumped to."""
        if self.pending_issue is not None and self.tracker.select_issue(self.pending_issue):
            self.pending_issue = None

    # -- s: issue → thread -----------------------------------------------------------------
    def on_tracker_pane_thread_requested(self, message: TrackerPane.ThreadRequested) -> None:
        if self.session.is_open:
            self._find_thread(self.new_request("jump"), message.issue_id)

    @work(thread=True, exclusive=True, group="jump", exit_on_error=False)
    def _find_thread(self, request: int, issue_id: str) -> None:
        try:
            thread_id = self.session.issue_thread(issue_id)
        except Exception as exc:
            self.post_message(JumpFailed(request, f"Finding the thread of {issue_id} failed", exc))
            return
        self.post_message(ThreadOfIssueFound(request, issue_id, thread_id))

    def on_thread_of_issue_found(self, message: ThreadOfIssueFound) -> None:
        if not self.is_current("jump", message.request):
            return
        if message.thread_id is None:
            self.notify(f"{inert(message.issue_id)} names no thread in its status rollup.", markup=False)
            return
        thread_list = self.query_one(ThreadList)
        index = index_of(thread_list.rows, message.thread_id, thread_list.cursor)
        self._fold_tracker(True)
        if index is not None:
            thread_list.cursor = index
            thread_list.focus()
            row: ThreadSummary | None = thread_list.current
            if row is not None:
                self.open_thread(row)
            return
        # Not in the list (older than the window, another list): read it directly.
        thread_list.focus()
        self.open_thread_id(message.thread_id)

    def on_jump_failed(self, message: JumpFailed) -> None:
        if self.accept_failure(self.on_jump_failed, message):
            self.report_failure(message)

    # -- what this controller asks of others ------------------------------------------------
    def _fold_tracker(self, folded: bool) -> None:
        """main screen: fold the tracker pane away when narrow."""
        raise NotImplementedError

    def open_thread_id(self, thread_id: ThreadId) -> None:
        """reading: read a thread that is not a row of the list."""
        raise NotImplementedError
