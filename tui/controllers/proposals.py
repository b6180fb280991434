"""Proposals controller: reply, import, publish and sync proposals, their confirmation and their writing.

Each flow is an entry of :data:`FLOWS`: how its proposal is built from the session, what
the reading pane says meanwhile and what a failure is titled. Nothing is written before
the user confirms the proposal dialog.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator

from textual import work
from textual.worker import get_current_worker

from mailtriage.tui.controllers.base import ControllerBase
from mailtriage.tui.controllers.compose import after_compose
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
    Flow("import-key", "reading the offered key …", "Preparing the key import failed", _build_key_import),
    Flow("import", "preparing the import proposal …", "Preparing the import failed", _build_import, "read_thread"),
    Flow("publish", "preparing the publish review …", "Preparing the publish review failed", _build_publish),
    Flow("sync", "collecting new mail on the tracker's threads …", "Preparing the sync failed", _build_sync),
)}


class ProposalsController(ControllerBase):
    #: The thread of the last reply asked for (the "draft in clear" choice starts it again).
    _reply_target: FlowTarget | None = None

    # -- intents from the panes (r, A, F, C: the compose controller) -------------------
    def on_thread_list_import_requested(self, message: ThreadList.ImportRequested) -> None:
        self.import_thread(message.summary)

    def on_thread_view_import_requested(self, message: ThreadView.ImportRequested) -> None:
        self.import_thread(None)

    def on_thread_view_key_import_requested(self, message: ThreadView.KeyImportRequested) -> None:
        target = self._target(None)
        if target.thread_id is None:
            self.notify("Open a thread first (Enter), then import its key with K.", severity="warning", markup=False)
            return
        self.start_flow("import-key", target)

    # -- starting a flow ------------------------------------------------------------------
    def _target(self, summary: ThreadSummary | None) -> FlowTarget:
        """The open thread (if it is ``summary``'s) and the thread id for a flow on ``summary``
        (None: the thread in the reading pane)."""
        thread = self.reader.thread
        if summary is not None and (thread is None or thread.thread_id != summary.thread_id):
            thread = None
        thread_id = summary.thread_id if summary is not None else (thread.thread_id if thread else None)
        return FlowTarget(thread, thread_id)

    def reply_to(self, summary: ThreadSummary | None) -> None:
        """Propose a reply draft on ``summary``'s thread (None: the thread in the reading pane)."""
        target = self._target(summary)
        if target.thread_id is None:
            self.notify("Open a thread first (Enter), then reply with r.", severity="warning", markup=False)
            return
        self._reply_target = target  # for the explicit "draft in clear" choice (OpenPGP)
        self.start_flow("reply", target)

    def import_thread(self, summary: ThreadSummary | None) -> None:
        """Propose importing ``summary``'s thread (None: the open one) into the tracker."""
        if isinstance(summary, MailboxRow) or (summary is None and self.reader.account_id is not None):
            self.notify("Import works on a project source's threads; this is a personal account's message.",
                        severity="warning", markup=False)
            return
        target = self._target(summary)
        if target.thread_id is None:
            self.notify("Open a thread first (Enter), then import it with i.", severity="warning", markup=False)
            return
        self.start_flow("import", target)

    def start_flow(self, name: str, target: FlowTarget | None = None) -> None:
        if self.when_open("flow", lambda: self.start_flow(name, target)):
            return
        flow = FLOWS[name]
        self.reader.show_status(f"{flow.status} (Esc cancels)")
        self._build_proposal(self.new_request("reply"), flow, target or FlowTarget())

    @work(thread=True, exclusive=True, group="reply", exit_on_error=False)
    def _build_proposal(self, request: int, flow: Flow, target: FlowTarget) -> None:
        worker = get_current_worker()
        session = self.session
        try:
            proposal = flow.build(session, target)
        except ConfigError as exc:
            self.post_message(ProposalFailed(request, flow.failure_title, exc))
            return
        except Exception as exc:
            resolution = self.resolve(flow.failure_op) if flow.failure_op else None
            self.post_message(ProposalFailed(request, flow.failure_title, exc, resolution))
            return
        if not worker.is_cancelled:
            self.post_message(ProposalReady(request, proposal, flow.name))

    def on_proposal_ready(self, message: ProposalReady) -> None:
        if not self.is_current("reply", message.request):
            return
        self.reader.restore_status()
        self.show_proposal(message.proposal, message.flow)

    def on_proposal_failed(self, message: ProposalFailed) -> None:
        if not self.accept_failure(self.on_proposal_failed, message):
            return
        self.reader.restore_status()
        self.report_failure(message)

    # -- confirming and writing -------------------------------------------------------------
    def show_proposal(self, proposal: Proposal, flow: str = "reply") -> None:
        # lazy: the proposal dialog is not on the first screen (tests/tui/test_startup_imports.py)
        from mailtriage.tui.dialogs.proposal import ProposalDialog
        from mailtriage.application import BlockedBy  # why: not on the first screen (test_startup_imports)

        if proposal.blocked is not None and proposal.blocked.reason is BlockedBy.ENCRYPTION:  # an encrypted report
            self._choose_clear_reply(proposal, flow)
            return
        if skips_confirmation(proposal, self.shell.settings):  # confirm_flag_changes = false
            self.notify(f"{proposal.title} (confirm_flag_changes = false: not asked)", markup=False, timeout=3)
            self._apply(proposal, flow)
            return

        def write_now() -> None:  # on the confirm key, before the dialog leaves (the dialog calls it)
            self._apply(proposal, flow)

        def decided(confirmed: bool | None) -> None:
            if confirmed:
                self.notify("writing …", markup=False, timeout=3)  # the write started on the key
            elif proposal.blocked and _keep_text(self, flow, f"Not written: {proposal.blocked.text}", None):
                return  # back to the compose dialog: what was written is kept, to change
            else:
                self.notify("Cancelled: nothing was written.", markup=False)

        self.app.push_screen(ProposalDialog(proposal, cursor_blink=self.shell.cursor_blink, on_confirm=write_now),
                             decided)

    def _choose_clear_reply(self, proposal: Proposal, flow: str = "reply") -> None:
        """An encrypted report whose reply cannot be encrypted: draft in clear only if chosen.
        A composed reply is proposed again as composed; the receipt flow starts again."""
        target = self._reply_target or self._target(None)

        def decided(clear: bool | None) -> None:
            again = IN_CLEAR.get(flow)
            if clear and again is not None:
                again(self, target)
            else:
                self.notify("Cancelled: nothing was written.", markup=False)

        # lazy: dialogs are not on the first screen (tests/tui/test_startup_imports.py)
        from mailtriage.tui.dialogs.clear_reply import ClearReplyDialog

        self.app.push_screen(ClearReplyDialog(proposal.blocked.text if proposal.blocked else ""), decided)

    @work(thread=True, group="apply", exit_on_error=False)
    def _apply(self, proposal: Proposal, flow: str = "reply") -> None:
        try:
            with write_first():
                report = self.session.apply(proposal)
        except Exception as exc:
            self.post_message(ApplyFailed(0, "Writing failed", exc))
            return
        self.post_message(ProposalApplied(proposal, report, flow))

    def on_apply_failed(self, message: ApplyFailed) -> None:
        if self.accept_failure(self.on_apply_failed, message):
            self.report_failure(message)

    def on_proposal_applied(self, message: ProposalApplied) -> None:
        report = message.report
        outdated = message.proposal.facts.get("review_outdated")
        if not report.ok and message.flow == "publish" and outdated:
            self._review_publish_again(outdated)
            return
        if report.failed is None:  # report.ok, said so the type checker sees failed is set below
            self.notify(report.describe(), title="Written", markup=False)
        else:
            # A batch says what it did message by message (each failed one with why).
            # lazy: the organize workflow loads with the first write, not at start-up
            from mailtriage.application import outcome_lines

            details = "\n".join([report.describe(), *outcome_lines(message.proposal)])
            self.shell.report_error("Writing failed", RuntimeError(report.failed[1]), where="apply",
                                    details=details)
        after = AFTER_APPLY.get(message.flow)
        if after is not None:
            after(self, report)
        if report.failed is not None:
            # Refused at confirm time (a send cap reached meanwhile, a server's no): the text stays.
            edited = next((w.body for w in message.proposal.writes if w.body is not None), None)
            _keep_text(self, message.flow, f"Not written: {report.failed[1]}", edited)
        # overview: the rows' marks (filed, draft pending) and the unpublished-changes mark
        self.threads.marks.forget()
        self.publish_mark.check()

    def _review_publish_again(self, differences: list[str]) -> None:
        """The working copy changed between the publish review and its confirmation: nothing
        was committed. Say what changed, then show the review as it is now and ask again."""
        shown = "; ".join(differences[:5]) + (" …" if len(differences) > 5 else "")
        self.notify(f"The tracker changed since the review ({inert(shown)}), so nothing was committed. "
                    "Here is the review as it is now: confirm it again.", severity="warning", markup=False,
                    timeout=12)
        self.publish_mark.check()
        self.offer_publish()

    def offer_publish(self) -> None:
        self._offer_publish(self.new_request("reply"))

    @work(thread=True, exclusive=True, group="reply", exit_on_error=False)
    def _offer_publish(self, request: int) -> None:
        try:
            if not self.session.needs_publish():
                return
            proposal = self.session.propose_publish()
        except Exception as exc:
            self.post_message(ProposalFailed(request, FLOWS["publish"].failure_title, exc))
            return
        self.post_message(ProposalReady(request, proposal, "publish"))


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


def _after_tracker_write(screen: ProposalsController, report: ApplyReport) -> None:
    """After an import or a sync: the tracker pane lists again, and publishing is offered."""
    if screen.has_class("-tracker"):
        screen.tracker.load()
    if report.written:
        # A local-files tracker publishes separately, after its own confirmation.
        screen.offer_publish()


def _after_organize(screen: ProposalsController, report: ApplyReport) -> None:
    screen.after_organize()


def _after_batch(screen: ProposalsController, report: ApplyReport) -> None:
    """A batch of tagged rows: its tags and the folder (organize), or the tracker (imports)."""
    proposal = screen.batches.proposal
    if proposal is not None and proposal.facts.get("flow") == "imports":
        _after_tracker_write(screen, report)
    screen.batches.after(report)


#: What follows a confirmed write, by flow (a flow not named here: nothing).
#: How a blocked reply to an encrypted report is proposed again in clear, once the user
#: chose that: the receipt flow starts over; a composed reply keeps what was composed.
IN_CLEAR: dict[str, Callable[[ProposalsController, FlowTarget], None]] = {
    "reply": lambda screen, target: screen.start_flow("reply-clear", target) if target.thread_id else None,
    "compose": lambda screen, target: screen.compose_again_in_clear(),
}

#: The flows whose text the user wrote comes back after a refusal (blocked, or refused at
#: confirm): the compose dialog opens again with it. Returns whether it did.
KEEPS_TEXT: dict[str, Callable[[ProposalsController, str, str | None], bool]] = {
    "compose": lambda screen, why, body: screen.compose_kept(why, body),
}


def _keep_text(screen: ProposalsController, flow: str, why: str, body: str | None) -> bool:
    keep = KEEPS_TEXT.get(flow)
    return keep is not None and keep(screen, why, body)


AFTER_APPLY: dict[str, Callable[[ProposalsController, ApplyReport], None]] = {
    "import": _after_tracker_write,
    "sync": _after_tracker_write,
    "organize": _after_organize,
    "batch": _after_batch,
    "compose": after_compose,
}
