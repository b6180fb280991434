"""The triage queue (issue 37): every report of the window with its state, age, owner and deadlines.

``Q`` on the main screen opens it. The queue is read on a worker (the list and the tracker,
``session.queue``) at the instant the session names (the demo pins one, so its queue never
ages) and comes sorted by what needs a human first. Filters by state (``s``) and owner
(``o``) work on what was read, without reading again. ``Enter`` goes back to the main screen
and reads the thread there; ``c`` / ``u`` claim and release the report's tracker issue through
the usual proposal dialog: nothing is written before the user confirms, and a claim another
triager won says who holds the issue.

Every string from mail or the tracker (subjects, addresses, owners, issue IDs, warnings) goes
through :mod:`mailtriage.tui.sanitize`. A breach is marked with ``⚠`` and words, never by
colour alone.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Callable, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

import mailtriage.application as application
from mailtriage.core.lean_dataclass import lean_dataclass as message
from mailtriage.tui import bindings
from mailtriage.tui.app import MailTriageApp
from mailtriage.tui.footer import KeyFooter
from mailtriage.tui.messages import ThreadOfIssueFound, WorkFailed
from mailtriage.tui.sanitize import inert, inert_text

if TYPE_CHECKING:
    from mailtriage.application import ApplyReport, Proposal
    from mailtriage.application.queue import Queue, QueueRow, QueueState

#: The state column's words: short at 80 columns, the state's own name when wide.
STATE_SHORT = {"new": "new", "acknowledged": "ack'd", "imported": "imported", "in_progress": "in prog",
               "fixed": "fixed", "closed": "closed", "automated": "auto", "unknown": "unknown"}
STATE_LONG = {"in_progress": "in progress"}
#: What a breach is called in the detail lines.
BREACH_WORDS = {"first_response": "first response overdue", "disclosure": "disclosure date passed"}
#: From this width the table also shows the issue and the reporter.
WIDE = 120
#: A disclosure this close (days) is shown with a ``!`` even before it passes.
NEAR_DAYS = 7


@message
class QueueLoaded(Message):
    """The queue was read (``me``: who claims here)."""

    request: int
    queue: Queue
    me: str


@message
class QueueFailed(WorkFailed):
    area: ClassVar[str] = "queue"


@message
class QueueProposalReady(Message):
    """A claim or release proposal, built; nothing written yet."""

    proposal: Proposal


@message
class QueuePulled(Message):
    """The tracker's working copy was brought up to date (``detail``: what was done)."""

    detail: str


@message
class QueueWritten(Message):
    """A confirmed claim or release was applied (``report`` says what was written or why not)."""

    proposal: Proposal
    report: ApplyReport


def span(delta: timedelta) -> str:
    """A duration in a few characters: ``5h``, ``12d`` (``application.queue_span``, the rule
    ``mailtriage queue`` shows ages by too)."""
    return application.queue_span(delta)


def due_cell(row: QueueRow, now: datetime) -> Text:
    """The deadline that matters next: ``⚠ reply +5d`` (five days late), ``reply in 2d``,
    ``disc. in 3d`` (disclosure), ``⚠ disc. +2d``; a passed one in words and ``⚠``, not colour alone."""
    breaches = {b.value for b in row.breaches}
    if "first_response" in breaches and row.first_response_due is not None:
        return Text(f"⚠ reply +{span(now - row.first_response_due)}", "bold")
    if "disclosure" in breaches and row.disclosure_due is not None:
        return Text(f"⚠ disc. +{span(now - row.disclosure_due)}", "bold")
    if row.unanswered_since is not None and row.first_response_due is not None:
        return Text(f"reply in {span(row.first_response_due - now)}")
    if row.state.value != "closed" and row.disclosure_due is not None:
        near = row.disclosure_due - now <= timedelta(days=NEAR_DAYS)
        return Text(f"disc. in {span(row.disclosure_due - now)}{'!' if near else ''}", "bold" if near else "")
    return Text("")


def detail_text(row: QueueRow, now: datetime) -> Text:
    """The row under the cursor in words: subject, issue and owner, dates and deadlines."""
    out = inert_text(row.subject, style="bold")
    out.append("\n")
    out.append_text(inert_text(row.issue or "not imported"))
    out.append(" · owner ")
    out.append_text(inert_text(row.owner) if row.owner else Text("nobody"))
    out.append(" · from ")
    out.append_text(inert_text(row.reporter))
    out.append("\n")
    if row.breaches:  # first: never the part a narrow screen cuts
        out.append("⚠ " + ", ".join(BREACH_WORDS.get(b.value, b.value) for b in row.breaches) + " · ", "bold")
    parts = []
    if row.automated:
        parts.append(f"not a report ({row.automated})")
    if row.opened is not None:
        parts.append(f"opened {row.opened:%Y-%m-%d} ({span(now - row.opened)} ago)")
    if row.unanswered_since is not None:
        parts.append(f"waiting {span(now - row.unanswered_since)} for the team")
    if row.first_response_due is not None and row.unanswered_since is not None:
        parts.append(f"reply due {row.first_response_due:%Y-%m-%d}")
    if row.disclosure_due is not None and row.state.value != "closed":
        parts.append(f"disclosure {row.disclosure_due:%Y-%m-%d}")
    out.append(" · ".join(parts))
    return out


class QueueTable(DataTable):
    """The queue's rows (one per report)."""


class QueueScreen(Screen, bindings.KeyContext):
    key_context = "QueueScreen"
    BINDINGS = bindings.QUEUE  # type: ignore[assignment]  # a list of Binding, which Screen declares wider
    DEFAULT_CSS = """
    QueueScreen #queue-status { height: 1; padding: 0 1; background: $boost; }
    QueueScreen QueueTable { height: 1fr; }
    QueueScreen #queue-detail { height: 4; padding: 0 1; border-top: solid $primary-darken-2; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.queue: Queue | None = None
        self.rows: list[QueueRow] = []
        self.me = ""
        self.state_filter: QueueState | None = None
        #: None: everybody's; "": nobody's; else that owner's.
        self.owner_filter: str | None = None
        self._request = 0
        self.wrote = False  # a claim or release was written: the main screen lists the tracker again

    @property
    def shell(self) -> MailTriageApp:
        app = self.app
        assert isinstance(app, MailTriageApp)
        return app

    def compose(self) -> ComposeResult:
        yield Header(icon="✉")
        yield Static(id="queue-status")
        yield QueueTable(id="queue-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="queue-detail")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.title = "Triage queue"
        self.query_one(QueueTable).focus()
        self.load()

    def on_resize(self) -> None:
        if self.queue is not None:
            self.show()

    # -- reading the queue (a worker: the UI never waits on the list or the tracker) ---------
    def load(self) -> None:
        self._request += 1
        self.query_one(QueueTable).loading = True
        self.query_one("#queue-status", Static).update(Text("reading the list and the tracker …", "italic"))
        self._load(self._request)

    @work(thread=True, exclusive=True, group="queue", exit_on_error=False)
    def _load(self, request: int) -> None:
        session = self.shell.session
        try:
            queue = session.queue(session.queue_now())
            me = session.queue_user()
        except Exception as exc:
            self.post_message(QueueFailed(request, "Reading the queue failed", exc))
            return
        self.post_message(QueueLoaded(request, queue, me))

    def on_queue_loaded(self, message: QueueLoaded) -> None:
        if message.request != self._request:
            return
        self.queue, self.me = message.queue, message.me
        self.query_one(QueueTable).loading = False
        self.show()
        warnings = message.queue.warnings
        if warnings:  # the first, and how many more: one toast, however many threads could not be read
            more = f" (and {len(warnings) - 1} more)" if len(warnings) > 1 else ""
            self.notify(inert(warnings[0]) + more, title="Queue", severity="warning", markup=False)

    def on_queue_failed(self, message: QueueFailed) -> None:
        if message.request != self._request:
            return
        self.query_one(QueueTable).loading = False
        self.query_one("#queue-status", Static).update(Text("the queue could not be read — R reads it again"))
        self.shell.report_error(message.title, message.error, where="queue")

    # -- showing it ------------------------------------------------------------------------
    def show(self, keep: object | None = None) -> None:
        """Fill the table with the filtered rows, the cursor on the thread ``keep`` (else where it was)."""
        queue = self.queue
        if queue is None:
            return
        table = self.query_one(QueueTable)
        current = self.current
        keep = keep if keep is not None else (current.thread_id if current is not None else None)
        shown = queue.filtered(state=self.state_filter, owner=self.owner_filter)
        self.rows = list(shown.rows)
        wide = self.size.width >= WIDE
        table.clear(columns=True)
        widths = [("State", 12 if wide else 8), ("Age", 4), ("Waits", 5), ("Owner", 12 if wide else 10),
                  ("Due", 13)]
        if wide:
            widths += [("Issue", 9), ("Reporter", 24)]
        used = sum(w for _, w in widths) + 2 * (len(widths) + 1) + 2
        for label, width in [*widths, ("Subject", max(12, self.size.width - used))]:
            table.add_column(label, width=width, key=label)
        now = queue.now
        for index, row in enumerate(self.rows):
            state = STATE_LONG.get(row.state.value, row.state.value) if wide else STATE_SHORT[row.state.value]
            waits = span(now - row.unanswered_since) if row.unanswered_since is not None else "–"
            cells = [Text(state), Text(span(now - row.opened) if row.opened else "?"), Text(waits),
                     inert_text(row.owner) if row.owner else Text("–", "dim"), due_cell(row, now)]
            if wide:
                cells += [inert_text(row.issue or ""), inert_text(row.reporter)]
            table.add_row(*cells, inert_text(row.subject), key=str(index))
        target = next((i for i, row in enumerate(self.rows) if row.thread_id == keep), 0)
        if self.rows:
            table.move_cursor(row=target, animate=False)
        self._status(queue, shown)
        self._detail()
        self.refresh_bindings()  # a (All) follows the filters

    def _status(self, queue: Queue, shown: Queue) -> None:
        overdue = sum(1 for row in shown.rows if row.breaches)
        state = self.state_filter.value if self.state_filter is not None else "all"
        owner = {None: "all", "": "nobody"}.get(self.owner_filter, self.owner_filter)
        text = Text.assemble(f"{len(shown.rows)}/{len(queue.rows)} reports",
                             (f" · ⚠ {overdue} overdue" if overdue else ""),
                             f" · {queue.now:%Y-%m-%d %H:%M %Z}",
                             " · state ", (state, "bold"), " · owner ")
        text.append_text(inert_text(owner or "", style="bold"))
        self.query_one("#queue-status", Static).update(text)

    @property
    def current(self) -> QueueRow | None:
        table = self.query_one(QueueTable)
        if not self.rows or not 0 <= table.cursor_row < len(self.rows):
            return None
        return self.rows[table.cursor_row]

    def _detail(self) -> None:
        row, queue = self.current, self.queue
        detail = self.query_one("#queue-detail", Static)
        if row is None or queue is None:
            detail.update(Text("No report matches the filter (a shows all)." if queue else ""))
            return
        detail.update(detail_text(row, queue.now))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail()

    # -- keys --------------------------------------------------------------------------------
    def action_back(self) -> None:
        self.dismiss(self.wrote)

    def action_cursor_down(self) -> None:
        self.query_one(QueueTable).action_cursor_down()

    def action_cursor_up(self) -> None:
        self.query_one(QueueTable).action_cursor_up()

    def action_cursor_first(self) -> None:
        self.query_one(QueueTable).move_cursor(row=0)

    def action_cursor_last(self) -> None:
        table = self.query_one(QueueTable)
        table.move_cursor(row=max(table.row_count - 1, 0))

    def action_reload(self) -> None:
        self.load()

    def action_pull(self) -> None:
        self.query_one("#queue-status", Static).update(Text("pulling the tracker …", "italic"))
        self._pull()

    @work(thread=True, exclusive=True, group="queue-pull", exit_on_error=False)
    def _pull(self) -> None:
        try:
            detail = self.shell.session.queue_pull()
        except Exception as exc:
            self.post_message(QueueFailed(self._request, "Pulling the tracker failed", exc))
            return
        self.post_message(QueuePulled(detail))

    def on_queue_pulled(self, message: QueuePulled) -> None:
        self.notify(inert(message.detail), title="Tracker", markup=False, timeout=5)
        self.load()

    def action_filter_state(self) -> None:
        states: list[QueueState | None] = [None, *application.QueueState]
        self.state_filter = states[(states.index(self.state_filter) + 1) % len(states)]
        self.show()

    def action_filter_owner(self) -> None:
        owners: list[str | None] = [None, *([self.me] if self.me else []), ""]
        for row in self.queue.rows if self.queue is not None else ():
            if row.owner and row.owner not in owners:
                owners.append(row.owner)
        index = owners.index(self.owner_filter) if self.owner_filter in owners else 0
        self.owner_filter = owners[(index + 1) % len(owners)]
        self.show()

    def action_filter_clear(self) -> None:
        self.state_filter = self.owner_filter = None
        self.show()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "filter_clear":  # a (All) only when a filter is on: it changes nothing otherwise
            return self.state_filter is not None or self.owner_filter is not None
        return True

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_read()

    def action_read(self) -> None:
        """Back to the main screen, reading the thread (its row in the list when listed)."""
        row, main = self.current, self.shell.main
        if row is None or main is None:
            return
        self.dismiss(self.wrote)
        main.post_message(ThreadOfIssueFound(main.new_request("jump"), row.issue or "", row.thread_id))

    # -- claim and release: a proposal, confirmed in the proposal dialog ---------------------------
    def action_claim(self) -> None:
        self._propose("claim", self.shell.session.propose_claim)

    def action_release(self) -> None:
        self._propose("release", self.shell.session.propose_release)

    def _propose(self, what: str, build: Callable[[str], Proposal]) -> None:
        row = self.current
        if row is None:
            return
        if row.issue is None:
            self.notify(f"Nothing to {what}: the report is not imported (i on the main screen imports it; "
                        "the owner is the tracker issue's assignee).", severity="warning", markup=False)
            return
        self._build(what, build, row.issue)

    @work(thread=True, exclusive=True, group="queue-proposal", exit_on_error=False)
    def _build(self, what: str, build: Callable[[str], Proposal], issue: str) -> None:
        try:
            proposal = build(issue)
        except Exception as exc:
            self.post_message(QueueFailed(self._request, f"Preparing the {what} of {inert(issue)} failed", exc))
            return
        self.post_message(QueueProposalReady(proposal))

    def on_queue_proposal_ready(self, message: QueueProposalReady) -> None:
        from mailtriage.tui.dialogs.proposal import ProposalDialog  # why: dialogs load on first use

        proposal = message.proposal
        if proposal.empty and not proposal.blocked:  # yours already, not yours to release: said, not asked
            self.notify(inert("; ".join(proposal.notes) or proposal.title), title=inert(proposal.title),
                        severity="information", markup=False, timeout=10)
            return
        # a claim of an issue another triager holds is blocked: the dialog says why, as for every refusal

        def decided(confirmed: bool | None) -> None:
            if confirmed:
                self.notify("writing …", markup=False, timeout=3)
                self._apply(proposal)
            else:
                self.notify("Cancelled: nothing was written.", markup=False)

        self.app.push_screen(ProposalDialog(proposal, cursor_blink=self.shell.cursor_blink), decided)

    @work(thread=True, group="queue-apply", exit_on_error=False)
    def _apply(self, proposal: Proposal) -> None:
        try:
            report = self.shell.session.apply(proposal)
        except Exception as exc:
            self.post_message(QueueFailed(self._request, "Writing failed", exc))
            return
        self.post_message(QueueWritten(proposal, report))

    def on_queue_written(self, message: QueueWritten) -> None:
        report = message.report
        self.wrote = self.wrote or bool(report.written)
        if report.failed is None:
            self.notify(inert(report.describe()), title="Written", markup=False)
        else:
            # A claim another triager won: the tracker's answer says who holds the issue.
            self.notify(inert(report.failed[1]), title="Not written", severity="warning", markup=False, timeout=10)
        self.load()
