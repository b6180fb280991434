"""The proposals: reply, import, key import, publish and sync proposals, their confirmation and their writing.

Each flow is an entry of :data:`FLOWS`: how its proposal is built from the session, what
the reading pane says meanwhile and what a failure is titled. Nothing is written before
the user confirms the proposal dialog.

A component the main screen holds (issue 36 §2): a hidden widget that runs its workers on
itself. The proposal dialog is shown for every proposal, whoever built it (a flow here,
compose, the accounts' flag and move, a batch); the screen hands their ``ProposalReady`` and
``ProposalFailed`` here (``TAKES``), and the writes' answers (``ProposalApplied``, ``ApplyFailed``) come to
this widget, which takes them. Its work is in the screen's groups: building is "reply" work
(Esc cancels it, a later proposal or compose supersedes it), the write "apply" work (a quit
while it runs asks first).
What follows a write is by flow (:data:`AFTER_APPLY`); what it asks of compose (a refused
reply kept, a reply drafted in clear) goes through :class:`ComposeView`.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Protocol

from textual.worker import get_current_worker

from mailtriage.tui.controllers.component import Component
from mailtriage.tui.mailbox_rows import MailboxRow
from mailtriage.tui.messages import ApplyFailed, ProposalApplied, ProposalFailed, ProposalReady
from mailtriage.tui.panes.reader import ThreadView
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.quick_flags import skips_confirmation
from mailtriage.tui.sanitize import inert
from mailtriage.application import Service
from mailtriage.core.projectconfig import ConfigError

if TYPE_CHECKING:
    from mailtriage.application import Thread, ThreadId, ThreadSummary
    from mailtriage.application import ApplyReport, Proposal
    from mailtriage.tui.controllers.base import ControllerBase


@dataclass(frozen=True)
class FlowTarget:
    """The thread a flow works on: the open one (``thread``) or only its id."""

    thread: Thread | None = None
    thread_id: ThreadId | None = None


@dataclass(frozen=True)
class Flow:
    """One proposal flow: ``build`` runs on a worker thread and writes nothing."""

    name: str
    status: str  # what the reading pane says while the proposal is built
    failure_title: str
    build: Callable[[Service, FlowTarget], Proposal]
    #: The op whose resolution a failure names (None: the flow is not about one op).
    failure_op: str | None = None
    #: An empty proposal (nothing to write, nothing blocked) is said in a toast, not shown in a
    #: dialog with nothing to confirm (the flows a key starts: K, i, P, S).
    said_when_empty: bool = False


def _build_reply(session: Service, target: FlowTarget, *, allow_clear: bool = False) -> Proposal:
    # lazy: the workflows (templates, proposals) load with the first proposal, not at start-up
    from mailtriage.application import receipt_body

    thread = target.thread
    if thread is None:
        thread = session.read_thread(target.thread_id).value
    rendered = receipt_body(session.config, thread, sender_name=session.sender_name())
    proposal = session.propose_reply(thread, rendered.text, allow_clear=allow_clear)
    if rendered.note:
        proposal.notes.append(rendered.note)
    return proposal


def _build_reply_clear(session: Service, target: FlowTarget) -> Proposal:
    """The reply the user chose to draft in clear (an encrypted report, no key to encrypt to)."""
    return _build_reply(session, target, allow_clear=True)


def _build_key_import(session: Service, target: FlowTarget) -> Proposal:
    thread = target.thread if target.thread is not None else session.read_thread(target.thread_id).value
    return session.propose_key_import(thread)


def _build_import(session: Service, target: FlowTarget) -> Proposal:
    return session.propose_import(target.thread_id, target.thread)


def _build_publish(session: Service, target: FlowTarget) -> Proposal:
    return session.propose_publish()


def _build_sync(session: Service, target: FlowTarget) -> Proposal:
    return session.propose_sync()


FLOWS: dict[str, Flow] = {flow.name: flow for flow in (
    Flow("reply", "preparing the reply proposal …", "Preparing the reply failed", _build_reply, "create_draft"),
    Flow("reply-clear", "preparing the reply proposal (in clear) …", "Preparing the reply failed", _build_reply_clear,
         "create_draft"),
    Flow("import-key", "reading the offered key …", "Preparing the key import failed", _build_key_import,
         said_when_empty=True),
    Flow("import", "preparing the import proposal …", "Preparing the import failed", _build_import, "read_thread",
         said_when_empty=True),
    Flow("publish", "preparing the publish review …", "Preparing the publish review failed", _build_publish,
         said_when_empty=True),
    Flow("sync", "collecting new mail on the tracker's threads …", "Preparing the sync failed", _build_sync,
         said_when_empty=True),
)}


class ComposeView(Protocol):
    """What the proposals ask of the Compose component: a composed reply refused comes back."""

    def compose_again_in_clear(self) -> None:
        """The last composed reply proposed again in clear (the user chose it)."""

    def compose_kept(self, why: str, body: str | None = None) -> bool:
        """The compose dialog again with what the user wrote, after a refusal."""


class Proposals(Component):
    """The proposal flows: their proposals built, confirmed and written, and what follows a write."""

    def __init__(self, screen: ControllerBase, compose: ComposeView,
                 after_compose: Callable[[ApplyReport], None]) -> None:
        #: The screen (``_screen``): the service, its "reply" requests, the reading pane's
        #: status, the failures' report, the components told after a write.
        super().__init__(screen, id="proposals")
        #: The Compose component (a composed reply refused or drafted in clear) and what
        #: follows its write (the draft's status, a personal folder listed again). Not
        #: ``compose``: a widget's ``compose`` yields its children.
        self.composer = compose
        self.after_compose = after_compose

    # -- requests from the panes (r, A, F, C: the Compose component's) ----------------------
    def on_thread_list_import_requested(self, message: ThreadList.ImportRequested) -> None:
        self.import_thread(message.summary)

    def on_thread_view_import_requested(self, _message: ThreadView.ImportRequested) -> None:
        self.import_thread(None)

    def on_thread_view_key_import_requested(self, _message: ThreadView.KeyImportRequested) -> None:
        """K in the reader: the key the open thread offers."""
        target = self._target(None)
        if target.thread_id is None:
            self._screen.notify("Open a thread first (Enter), then import its key with K.", severity="warning",
                                markup=False)
            return
        self.start_flow("import-key", target)

    # -- starting a flow ------------------------------------------------------------------
    def _target(self, summary: ThreadSummary | None) -> FlowTarget:
        """The open thread (if it is ``summary``'s) and the thread id for a flow on ``summary``
        (None: the thread in the reading pane)."""
        thread = self._screen.reader.thread
        if summary is not None and (thread is None or thread.thread_id != summary.thread_id):
            thread = None
        thread_id = summary.thread_id if summary is not None else (thread.thread_id if thread else None)
        return FlowTarget(thread, thread_id)

    def import_thread(self, summary: ThreadSummary | None) -> None:
        """Propose importing ``summary``'s thread (None: the open one) into the tracker."""
        if isinstance(summary, MailboxRow) or (summary is None and self._screen.reader.account_id is not None):
            self._screen.notify("Import works on a project source's threads; this is a personal account's message.",
                                severity="warning", markup=False)
            return
        target = self._target(summary)
        if target.thread_id is None:
            self._screen.notify("Open a thread first (Enter), then import it with i.", severity="warning",
                                markup=False)
            return
        self.start_flow("import", target)

    def start_flow(self, name: str, target: FlowTarget | None = None) -> None:
        screen = self._screen
        if screen.when_open("flow", lambda: self.start_flow(name, target)):
            return
        flow = FLOWS[name]
        screen.reader.show_status(f"{flow.status} (Esc cancels)")
        self._start(self._build_proposal, screen.new_request("reply"), flow, target or FlowTarget(), group="reply")

    def _build_proposal(self, request: int, flow: Flow, target: FlowTarget) -> None:
        worker = get_current_worker()
        screen = self._screen
        try:
            proposal = flow.build(screen.session, target)
        except ConfigError as exc:
            screen.post_message(ProposalFailed(request, flow.failure_title, exc))
            return
        except Exception as exc:
            resolution = screen.resolve(flow.failure_op) if flow.failure_op else None
            screen.post_message(ProposalFailed(request, flow.failure_title, exc, resolution))
            return
        if not worker.is_cancelled:
            screen.post_message(ProposalReady(request, proposal, flow.name))

    def on_proposal_ready(self, message: ProposalReady) -> None:
        """A proposal built (by a flow here, the Compose component or the accounts): the dialog."""
        if not self._screen.is_current("reply", message.request):
            return
        self._screen.reader.restore_status()
        self.show(message.proposal, message.flow)

    def on_proposal_failed(self, message: ProposalFailed) -> None:
        if not self._screen.accept_failure(self.on_proposal_failed, message):
            return
        self._screen.reader.restore_status()
        self._screen.report_failure(message)

    #: i on a row or the thread read, K, and the proposals the flows, Compose, Accounts and Batch
    #: post to the screen.
    TAKES = {
        ThreadList.ImportRequested: on_thread_list_import_requested,
        ThreadView.ImportRequested: on_thread_view_import_requested,
        ThreadView.KeyImportRequested: on_thread_view_key_import_requested,
        ProposalReady: on_proposal_ready,
        ProposalFailed: on_proposal_failed,
    }

    # -- confirming and writing -------------------------------------------------------------
    def show(self, proposal: Proposal, flow: str = "reply") -> None:
        """The proposal dialog, and the write once confirmed."""
        # lazy: the proposal dialog is not on the first screen (tests/tui/test_startup_imports.py)
        from mailtriage.tui.dialogs.proposal import ProposalDialog
        from mailtriage.application import BlockedBy  # why: not on the first screen (test_startup_imports)

        screen = self._screen
        if proposal.blocked is not None and proposal.blocked.reason is BlockedBy.ENCRYPTION:  # an encrypted report
            self._choose_clear_reply(proposal, flow)
            return
        entry = FLOWS.get(flow)
        if entry is not None and entry.said_when_empty and proposal.empty and not proposal.blocked \
                and not proposal.preview:
            # Nothing to confirm (K on a thread that offers no key, P with nothing to publish): said,
            # not asked, as the queue's claim does; the dialog had only a disabled Confirm (issue 35).
            # A composed reply keeps its review (the text the user wrote is the pending draft's).
            notes = proposal.notes[:5] + [f"… and {len(proposal.notes) - 5} more"] * (len(proposal.notes) > 5)
            screen.notify(inert("\n".join(notes) or "Nothing to write.", multiline=True), title=inert(proposal.title),
                          severity="information", markup=False, timeout=10)
            return
        if skips_confirmation(proposal, screen.shell.settings):  # confirm_flag_changes = false
            screen.notify(f"{proposal.title} (confirm_flag_changes = false: not asked)", markup=False, timeout=3)
            self._write(proposal, flow)
            return

        def write_now() -> None:  # on the confirm key, before the dialog leaves (the dialog calls it)
            self._write(proposal, flow)

        def decided(confirmed: bool | None) -> None:
            if confirmed:
                screen.notify("writing …", markup=False, timeout=3)  # the write started on the key
            elif proposal.blocked and _keep_text(self, flow, f"Not written: {proposal.blocked.text}", None):
                return  # back to the compose dialog: what was written is kept, to change
            else:
                screen.notify("Cancelled: nothing was written.", markup=False)

        screen.app.push_screen(ProposalDialog(proposal, cursor_blink=screen.shell.cursor_blink, on_confirm=write_now),
                               decided)

    def _choose_clear_reply(self, proposal: Proposal, flow: str = "reply") -> None:
        """An encrypted report whose reply cannot be encrypted: draft in clear only if chosen.
        A composed reply is proposed again as composed; the receipt flow starts again."""
        target = self._target(None)

        def decided(clear: bool | None) -> None:
            again = IN_CLEAR.get(flow)
            if clear and again is not None:
                again(self, target)
            else:
                self._screen.notify("Cancelled: nothing was written.", markup=False)

        # lazy: dialogs are not on the first screen (tests/tui/test_startup_imports.py)
        from mailtriage.tui.dialogs.clear_reply import ClearReplyDialog

        self._screen.app.push_screen(ClearReplyDialog(proposal.blocked.text if proposal.blocked else ""), decided)

    def _write(self, proposal: Proposal, flow: str = "reply") -> None:
        """The confirmed write, as the screen's "apply" work (a quit while it runs asks first)."""
        self._start(self._apply, proposal, flow, group="apply", exclusive=False)

    def _apply(self, proposal: Proposal, flow: str = "reply") -> None:
        screen = self._screen
        try:
            with write_first():
                report = screen.session.apply(proposal)
        except Exception as exc:
            self.post_message(ApplyFailed(0, "Writing failed", exc))
            return
        self.post_message(ProposalApplied(proposal, report, flow))

    def on_apply_failed(self, message: ApplyFailed) -> None:
        message.stop()  # this widget's own answer: the screen does not see it
        self.apply_failed(message)

    def on_proposal_applied(self, message: ProposalApplied) -> None:
        message.stop()
        self.applied(message)

    def apply_failed(self, message: ApplyFailed) -> None:
        if self._screen.accept_failure(self.apply_failed, message):
            self._screen.report_failure(message)

    def applied(self, message: ProposalApplied) -> None:
        """A confirmed write ended: say how, and what follows it (by flow)."""
        screen = self._screen
        report = message.report
        outdated = message.proposal.facts.get("review_outdated")
        if not report.ok and message.flow == "publish" and outdated:
            self._review_publish_again(outdated)
            return
        if report.failed is None:  # report.ok, said so the type checker sees failed is set below
            screen.notify(report.describe(), title="Written", markup=False)
        else:
            # A batch says what it did message by message (each failed one with why).
            # lazy: the organize workflow loads with the first write, not at start-up
            from mailtriage.application import outcome_lines

            details = "\n".join([report.describe(), *outcome_lines(message.proposal)])
            screen.shell.report_error("Writing failed", RuntimeError(report.failed[1]), where="apply",
                                      details=details)
        after = AFTER_APPLY.get(message.flow)
        if after is not None:
            after(self, report)
        if report.failed is not None:
            # Refused at confirm time (a send cap reached meanwhile, a server's no): the text stays.
            edited = next((w.body for w in message.proposal.writes if w.body is not None), None)
            _keep_text(self, message.flow, f"Not written: {report.failed[1]}", edited)
        # overview: the rows' marks (filed, draft pending) and the unpublished-changes mark
        screen.threads.marks.forget()
        screen.publish_mark.check()

    def _review_publish_again(self, differences: list[str]) -> None:
        """The working copy changed between the publish review and its confirmation: nothing
        was committed. Say what changed, then show the review as it is now and ask again."""
        shown = "; ".join(differences[:5]) + (" …" if len(differences) > 5 else "")
        self._screen.notify(f"The tracker changed since the review ({inert(shown)}), so nothing was committed. "
                            "Here is the review as it is now: confirm it again.", severity="warning", markup=False,
                            timeout=12)
        self._screen.publish_mark.check()
        self.offer_publish()

    def offer_publish(self) -> None:
        self._start(self._offer_publish, self._screen.new_request("reply"), group="reply")

    def _offer_publish(self, request: int) -> None:
        session = self._screen.session
        try:
            if not session.needs_publish():
                return
            proposal = session.propose_publish()
        except Exception as exc:
            self._screen.post_message(ProposalFailed(request, FLOWS["publish"].failure_title, exc))
            return
        self._screen.post_message(ProposalReady(request, proposal, "publish"))


#: The interpreter's switch interval while a confirmed write runs (seconds; Python's default is 0.005).
WRITE_SWITCH_INTERVAL = 0.0005
_writing = 0
_writing_lock = threading.Lock()
_switch_interval: list[float] = []


@contextmanager
def write_first() -> Iterator[None]:
    """While a confirmed write runs, its thread gets the GIL back within 0.5 ms of each answer
    from the server (issue 35). A thread that waited on a socket waits for the GIL too, up to
    the switch interval (5 ms) at each round trip while the UI thread repaints the screen the
    dialog left: four round trips of a 200-message flag took ~40 ms instead of ~20. Nested and
    concurrent writes share it; the interval is put back when the last one ends."""
    global _writing
    with _writing_lock:
        if _writing == 0:
            _switch_interval.append(sys.getswitchinterval())
            sys.setswitchinterval(min(WRITE_SWITCH_INTERVAL, _switch_interval[-1]))
        _writing += 1
    try:
        yield
    finally:
        with _writing_lock:
            _writing -= 1
            if _writing == 0:
                sys.setswitchinterval(_switch_interval.pop())


def _after_tracker_write(proposals: Proposals, report: ApplyReport) -> None:
    """After an import or a sync: the tracker pane lists again, and publishing is offered."""
    screen = proposals._screen
    if screen.has_class("-tracker"):
        screen.tracker.load()
    if report.written:
        # A local-files tracker publishes separately, after its own confirmation.
        proposals.offer_publish()


def _after_organize(proposals: Proposals, report: ApplyReport) -> None:
    proposals._screen.accounts.after_organize()


def _after_batch(proposals: Proposals, report: ApplyReport) -> None:
    """A batch of tagged rows: its tags and the folder (organize), or the tracker (imports)."""
    batches = proposals._screen.batches
    proposal = batches.proposal
    if proposal is not None and proposal.facts.get("flow") == "imports":
        _after_tracker_write(proposals, report)
    batches.after(report)


#: How a blocked reply to an encrypted report is proposed again in clear, once the user
#: chose that: the receipt flow starts over; a composed reply keeps what was composed.
IN_CLEAR: dict[str, Callable[[Proposals, FlowTarget], None]] = {
    "reply": lambda proposals, target: proposals.start_flow("reply-clear", target) if target.thread_id else None,
    "compose": lambda proposals, target: proposals.composer.compose_again_in_clear(),
}

#: The flows whose text the user wrote comes back after a refusal (blocked, or refused at
#: confirm): the compose dialog opens again with it. Returns whether it did.
KEEPS_TEXT: dict[str, Callable[[Proposals, str, str | None], bool]] = {
    "compose": lambda proposals, why, body: proposals.composer.compose_kept(why, body),
}


def _keep_text(proposals: Proposals, flow: str, why: str, body: str | None) -> bool:
    keep = KEEPS_TEXT.get(flow)
    return keep is not None and keep(proposals, why, body)


#: What follows a confirmed write, by flow (a flow not named here: nothing).
AFTER_APPLY: dict[str, Callable[[Proposals, ApplyReport], None]] = {
    "import": _after_tracker_write,
    "sync": _after_tracker_write,
    "organize": _after_organize,
    "batch": _after_batch,
    "compose": lambda proposals, report: proposals.after_compose(report),
}
