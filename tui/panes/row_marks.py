"""The triage marks of the rows on screen (filed in the tracker, draft pending, replied).

A small part of the thread pane that owns its state and work (tui/panes/area.py): for the
rows on screen only (never the whole listing), once the cursor rests, one worker of the
pane asks the service about all of them at once (the backend looks once for all the
rows). Answers are kept per thread, so scrolling back costs nothing and a listing is never
slower for them; :meth:`RowMarks.forget` drops them (after a write, on ``R``).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.worker import get_current_worker

from mailtriage.core.trace import calling_as
from mailtriage.tui.mailbox_rows import MailboxRow
from mailtriage.tui.messages import RowStatusLoaded
from mailtriage.tui.panes.area import Requests, service
from mailtriage.tui.panes.thread_list import ThreadList

if TYPE_CHECKING:
    from textual.timer import Timer
    from textual.widget import Widget

    from mailtriage.application import ThreadId, ThreadStatus

#: Seconds the row marks wait for the cursor to rest before they are asked for.
ROW_STATUS_DELAY = 0.25


class RowMarks:
    """The marks of ``pane``'s thread list, asked for by workers of ``pane``."""

    def __init__(self, pane: Widget) -> None:
        self._pane = pane
        self.statuses: dict[ThreadId, ThreadStatus] = {}
        self._timer: Timer | None = None
        self._requests = Requests()

    def cursor_moved(self) -> None:
        """The list moved (cursor, new rows): ask for the rows now on screen once it rests."""
        if self._timer is not None:
            self._timer.stop()
        self._timer = self._pane.set_timer(ROW_STATUS_DELAY, self.request)

    def request(self) -> None:
        if not service(self._pane).is_open or not self._pane.is_mounted:
            return
        thread_list = self._pane.query_one(ThreadList)
        wanted = [row.thread_id for row in thread_list.visible_rows()
                  if not isinstance(row, MailboxRow) and row.thread_id not in self.statuses]
        if wanted:
            work = partial(self._load, self._requests.new("row-status"), list(dict.fromkeys(wanted)))
            self._pane.run_worker(work, thread=True, exclusive=True, group="row-status", exit_on_error=False)

    def _load(self, request: int, thread_ids: list[ThreadId]) -> None:
        from mailtriage.application import ThreadStatus  # lazy: loads the flows and trackers (start-up)

        with calling_as("overview"):  # the console's op log says who asked
            try:  # one call for the screen: the backend looks once for all its rows
                statuses = service(self._pane).thread_statuses(thread_ids)
            except Exception:  # a mark is a hint: unknown, never an error on screen
                statuses = {}
        if get_current_worker().is_cancelled:
            return
        self._pane.post_message(RowStatusLoaded(request, {t: statuses.get(t, ThreadStatus()) for t in thread_ids}))
        # The marks selected Drafts and Sent on the reading connection: the list folder is opened
        # again now, while the user looks at the screen, not by the next Enter (issue 33: 0.6-1.2 s
        # at 100k messages in Dovecot).
        with calling_as("read ahead"):
            try:
                service(self._pane).prepare_next_read()
            except Exception:  # noqa: BLE001 - a preparation: the read meets the problem and says it
                pass

    def loaded(self, message: RowStatusLoaded) -> None:
        if not self._requests.is_current("row-status", message.request):
            return  # asked before the marks were forgotten (a write, R): its answer may be stale
        self.statuses.update(message.statuses)
        thread_list = self._pane.query_one(ThreadList)
        thread_list.set_statuses(self.statuses)
        current = thread_list.current
        if current is not None and current.thread_id in message.statuses:
            thread_list.post_message(ThreadList.Highlighted(thread_list.cursor, len(thread_list.rows)))

    def forget(self, *, ask_again: bool = True) -> None:
        """After a write or on R: the marks are asked for again (``ask_again``: now)."""
        self._requests.new("row-status")  # an answer on its way was asked before: dropped when it comes
        self.statuses = {}
        self._pane.query_one(ThreadList).set_statuses(self.statuses)
        if ask_again:
            self.request()
