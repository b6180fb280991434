"""The alerts component: the new-report poll worker of the session, and what its news does
to the thread list (rows inserted and marked unread) and the notifications.

A hidden widget of the main screen that holds the alerts' state and runs their workers on
itself (issue 36 §2: no longer a mixin of the screen). What it asks of the rest of the
screen, the list shown and the thread pane, it asks of the screen's listing through
:class:`ListingView`; the listing and the reader call its public methods.
"""

from __future__ import annotations

import gc
import time
from typing import TYPE_CHECKING, Callable, Protocol, TypeVar

from textual import work
from textual.timer import Timer
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from mailtriage.core.errors import ConfigError
from mailtriage.core.secrets import scrub
from mailtriage.tui.alerts import AlertLoop, MarkedRows
from mailtriage.tui.errors import ErrorRecord
from mailtriage.tui.head_start import END_WAIT
from mailtriage.tui.messages import AlertsChecked, AlertsFailed, AlertsFound, AlertsResumed
from mailtriage.tui.panes import area
from mailtriage.tui.rows import ListRows, ThreadRows, list_rows, merge_news, merged_rows, plain_rows
from mailtriage.tui.sanitize import inert

if TYPE_CHECKING:
    from mailtriage.application import ThreadSummary
    from mailtriage.application import PollOutcome
    from mailtriage.tui.panes.threads import ThreadPane


#: Marked rows kept made between polls (MarkedRows.made): some screens of them; more are dropped.
MARKED_ROWS_KEPT = 2048


M = TypeVar("M")


class ListingView(Protocol):
    """What the alerts ask of the main screen's listing, the one owner of the list shown."""

    @property
    def current_list(self) -> str | None:
        """The mailing list in the thread list (None: a personal account's folder, or none yet)."""

    @property
    def threads(self) -> ThreadPane: ...

    def is_current(self, kind: str, request: int) -> bool: ...

    def thread_read_in_flight(self) -> bool: ...

    def defer(self, handler: Callable[[M], None], message: M) -> bool: ...


class Alerts(Widget):
    """The new-report poll of the session and its news in the thread list (hidden)."""

    DEFAULT_CSS = "Alerts { display: none; }"

    def __init__(self, listing: ListingView) -> None:
        super().__init__(id="alerts")
        self._listing = listing
        self.alert_loop: AlertLoop | None = None
        self._alerts_asked = False  # start ran for this session (the listing calls it each time)
        self._alerts_after_read = False  # start waits for a thread read in flight (reader_done)
        self._alert_marks: set[str] = set()
        # News not announced yet (coalesced): thread key -> summary, and the outcomes whose
        # cursors the next notification acknowledges.
        self._alert_new: dict[str, ThreadSummary] = {}
        self._alert_updated: dict[str, ThreadSummary] = {}
        self._alert_unacked: list[PollOutcome] = []
        self._alert_last_notice = float("-inf")  # time.monotonic() of the last alert notification
        self._alert_timer: Timer | None = None
        # News that arrived since the listing on its way was asked for: merged into it.
        self._alert_live: dict[str, ThreadSummary] = {}
        # The listing request whose whole rows are on screen (no listing on its way since).
        self._alert_whole: int | None = None
        self._frozen_list: str | None = None  # the list whose whole window the app's state was frozen with
        # The marked rows made so far, handed from one MarkedRows to the next (tui/alerts.py).
        self._marked_rows_made: dict = {}
        # The loop stopped last (the session closed): a new one polls once it has written.
        self._stopped_loop: AlertLoop | None = None

    def start(self) -> None:
        """Start the poll worker of this session (once; a silent baseline comes first).

        The listing calls it once the whole window is shown (not after a first page), so the
        poll's baseline (a second listing, on mail sources of its own) does not compete with
        the first paint or the window's walk on two cores."""
        listed = (self._listing.current_list or "").lower()
        if area.shell(self).freeze_gc_after_start and listed != self._frozen_list:
            # The whole window is on screen: its rows live as long as the list. Frozen, full
            # collections no longer walk them (issue 39: ~1 s each in a storm, between keys).
            # Once per list shown: a later whole listing of it (a refresh) would freeze the
            # cyclic garbage waiting for a collection too, never to be freed.
            self._frozen_list = listed
            gc.freeze()
        if not area.shell(self).alerts_enabled or self._alerts_asked or not area.service(self).is_open:
            return
        if self._listing.thread_read_in_flight():
            # A thread being read (an Enter typed on the first frame, issue 33) comes first: the
            # poll's start (its flows load, its baseline lists) would share the cores with it.
            self._alerts_after_read = True
            return
        self._alerts_asked = True
        try:
            watch = area.service(self).alert_watch()
        except ConfigError as exc:
            self.notify(f"new-report alerts are off: {inert(str(exc))}", title="Alerts", severity="warning",
                        markup=False)
            return
        if watch is None:
            self._say_no_list()
            return
        last, self._stopped_loop = self._stopped_loop, None
        loop = AlertLoop(watch.make_poller, watch.interval, watch.list_name,
                         after=last if last is not None and not last.finished.is_set() else None)
        self.alert_loop = loop
        self._poll_alerts(loop)

    def reader_done(self, worker: Worker) -> None:
        """A worker of the screen changed state: the poll a thread read held back starts
        once that read is over (its body on screen)."""
        if worker.group == "reader" and worker.is_finished and self._alerts_after_read:
            self._alerts_after_read = False
            self.call_after_refresh(self.start)

    def _say_no_list(self) -> None:
        """Polling is off for want of a list (not by ``poll_seconds = 0``): said once, with
        the CLI's configuration warning, rather than polling the whole folder (issue 30 §7)."""
        try:
            polling = bool(area.service(self).poll_interval())
        except ConfigError:
            return  # start reported it already
        missing = area.service(self).unconfigured_list(None) if polling else None
        if missing is not None:
            self.notify(f"new-report alerts are off: {inert(missing.warning)}", title="Alerts",
                        severity="warning", markup=False)

    def stop(self) -> None:
        """Stop the poll worker (quit, or the session is replaced); news not announced yet is
        dropped unacknowledged, so the next run reports it again. What was announced is
        written by the loop as it ends (``AlertLoop.run``), and a loop started after this
        (the session reopened) polls only once that is done."""
        loop, self.alert_loop = self.alert_loop, None
        self._alerts_asked = self._alerts_after_read = False
        if loop is not None:
            loop.stop()
            self._stopped_loop = loop
        self.workers.cancel_group(self, "alerts")
        if self._alert_timer is not None:
            self._alert_timer.stop()
            self._alert_timer = None
        self._alert_new, self._alert_updated, self._alert_unacked = {}, {}, []
        self._alert_marks = set()
        self._marked_rows_made = {}
        self._alert_live = {}

    @work(thread=True, exclusive=True, group="alerts", exit_on_error=False)
    def _poll_alerts(self, loop: AlertLoop) -> None:
        list_name = loop.list_name
        # The baseline reads the summary cache that start-up's child may still be writing.
        area.shell(self).wait_for_listing_child(END_WAIT)

        def on_news(outcome) -> None:
            if not loop.stopped.is_set():
                self.post_message(AlertsFound(outcome, list_name, loop))

        def on_error(error: Exception) -> None:
            if not loop.stopped.is_set():
                outage = loop.poller.outage if loop.poller is not None else None
                self.post_message(AlertsFailed(error, outage is None or outage.failures == 1))

        def on_recovered(outage) -> None:
            if not loop.stopped.is_set():
                self.post_message(AlertsResumed(outage))

        def on_checked(found: bool, error: Exception | None) -> None:
            # An error the outage's first toast already shows is not said twice.
            outage = loop.poller.outage if loop.poller is not None else None
            said = error is not None and (outage is None or outage.failures == 1)
            self.post_message(AlertsChecked(loop, found, None if said else error, said))

        loop.run(on_news, on_error, on_recovered, on_checked)

    def poll_now(self) -> None:
        if self.alert_loop is None:
            self.notify("new-report alerts are off (no security_list, or [alerts] poll_seconds = 0)",
                        title="Alerts", markup=False)
            return
        self.alert_loop.poll_now()

    def on_alerts_checked(self, message: AlertsChecked) -> None:
        """Ctrl+n's poll: what it found is announced now, not after the notice gap; nothing new,
        or why it could not check, is said (issue 35: the key showed nothing)."""
        loop = self.alert_loop
        if loop is None or message.loop is not loop:
            return
        where = inert(loop.list_name or "the list")
        if message.error is not None:
            self.notify(f"checked {where}: could not check: {inert(scrub(str(message.error)))}", title="Alerts",
                        severity="warning", markup=False)
        elif message.found:
            if self._alert_timer is not None:  # held for the gap between notices: asked for, it shows now
                self._alert_timer.stop()
                self._announce_alerts()
        elif not message.said:
            self.notify(f"checked {where}: nothing new", title="Alerts", markup=False)

    def _alert_list(self) -> str | None:
        loop = self.alert_loop
        return loop.list_name if loop is not None else None

    def on_alerts_found(self, message: AlertsFound) -> None:
        """News from one poll: applied to the list at once, announced coalesced (at most one
        notification every ``alert_notice_seconds``), acknowledged when announced."""
        if self._listing.defer(self.on_alerts_found, message):
            return
        loop = self.alert_loop
        if loop is None or message.loop is not loop:  # from a stopped loop
            return
        outcome = loop.poller.fresh(message.outcome)  # less what an announcement acknowledged meanwhile
        self._alert_unacked.append(outcome)
        for t in outcome.new_threads:
            key = str(t.thread_id)
            self._alert_new[key] = t
            self._alert_updated.pop(key, None)
        for t in outcome.updated_threads:
            key = str(t.thread_id)
            if key not in self._alert_new:
                self._alert_updated[key] = t
        news = list(outcome.new_threads) + list(outcome.updated_threads)
        self._alert_marks |= {str(t.thread_id) for t in news}
        if news and _same_name(message.list_name, self._listing.current_list):
            if self._listing_on_its_way():  # kept for it (else held for the whole storm, issue 39)
                for t in news:
                    self._alert_live[str(t.thread_id)] = t
            self._apply_news(news)
        wait = self._alert_last_notice + area.shell(self).alert_notice_seconds - time.monotonic()
        if wait <= 0:
            self._announce_alerts()
        elif self._alert_timer is None:
            self._alert_timer = self.set_timer(wait, self._announce_alerts)

    def _apply_news(self, news: list[ThreadSummary]) -> None:
        """Insert, move and update the rows the news is about, keeping the user's place."""
        pane = self._listing.threads
        listed = list_rows(pane.base_rows) if pane.base_rows is not None else None
        if listed is None:
            return  # nothing listed yet, or rows not all at hand: the listing on its way brings them
        pane.update_rows(self.mark(merged_rows(listed, news)))

    def _announce_alerts(self) -> None:
        """One notification for everything since the last one; its news is acknowledged now."""
        self._alert_timer = None
        loop = self.alert_loop
        new, updated, outcomes = self._alert_new, self._alert_updated, self._alert_unacked
        self._alert_new, self._alert_updated, self._alert_unacked = {}, {}, []
        if loop is None or not outcomes:
            return
        if new or updated:
            lines = [inert(t.subject or "(no subject)") for t in list(new.values())[:5]]
            if len(new) > 5:
                lines.append(f"… and {len(new) - 5} more")
            if updated:
                lines.append(f"{len(updated)} thread{'s' if len(updated) != 1 else ''} with new mail")
            count = len(new)
            title = f"{count} new report{'s' if count != 1 else ''}" if count else "New mail"
            area.shell(self).show_alert_notice("\n".join(lines), title)
            self._alert_last_notice = time.monotonic()
        for outcome in outcomes:
            loop.poller.acknowledge(outcome, save=False)  # in memory now: the next poll builds on it
        self._save_alert_cursor(loop)

    def on_alerts_failed(self, message: AlertsFailed) -> None:
        """Every failed poll goes to the error list; the first of an outage is also said on
        screen (the loop keeps polling and says when it works again)."""
        if self.alert_loop is None:
            return
        error = message.error
        area.shell(self).errors.append(ErrorRecord("Checking for new reports failed", scrub(str(error)), "alerts",
                                                    "", "", ""))
        if message.first:
            self.notify(f"{inert(scrub(str(error)))}\nStill checking; you will see when it works again.",
                        title="New-report alerts paused", severity="warning", timeout=15, markup=False)

    def on_alerts_resumed(self, message: AlertsResumed) -> None:
        if self.alert_loop is None:
            return
        outage = message.outage
        polls = f"{outage.failures} failed check{'s' if outage.failures != 1 else ''}"
        self.notify(f"Checking for new reports works again after {polls} ({outage.seconds:.0f} s); "
                    "what arrived meanwhile is shown now.", title="New-report alerts resumed", timeout=15,
                    markup=False)

    # -- the thread list ----------------------------------------------------------------
    def mark(self, rows: ThreadRows) -> ThreadRows:
        if not self._alert_marks:
            return rows
        made = self._marked_rows_made
        if len(made) > MARKED_ROWS_KEPT:  # rows painted long ago: made again when next painted
            made = self._marked_rows_made = {}
        return MarkedRows(rows, set(self._alert_marks), made)

    def forget_mark(self, summary: ThreadSummary) -> None:
        """The thread was opened: its row is no longer marked as news."""
        self._alert_marks.discard(str(summary.thread_id))

    def with_news(self, rows: ThreadRows, list_name: str | None) -> ThreadRows:
        """A listing that was on its way while news arrived, with that news merged in."""
        if self._alert_live and _same_name(list_name, self._alert_list()):
            items = plain_rows(rows)
            if items is not None:
                return ListRows(merge_news(items, self._alert_live.values()))
        return rows

    def forget_news(self, whole: int | None = None) -> None:
        """The news kept for a listing on its way is not needed (any more); ``whole``: the
        request whose whole rows are now shown (no listing is on its way until the next)."""
        self._alert_live = {}
        self._alert_whole = whole

    def _listing_on_its_way(self) -> bool:
        """A listing was asked for after the last whole one was shown (or none was yet)."""
        return self._alert_whole is None or not self._listing.is_current("threads", self._alert_whole)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker of the alerts raised: the app's error list has it (as the screen's do)."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            area.shell(self).report_error(f"Unexpected error in {event.worker.name or 'a background task'}",
                                    event.worker.error)

    @work(thread=True, group="alerts-ack", exit_on_error=False)
    def _save_alert_cursor(self, loop: AlertLoop) -> None:
        if loop.stopped.is_set():
            return  # the loop writes it as it ends (after its last poll): once, not racing that poll
        loop.poller.save()


def _same_name(a: str | None, b: str | None) -> bool:
    return (a or "").lower() == (b or "").lower()
