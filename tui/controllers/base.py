"""What every controller of the main screen shares.

The main screen's work is an area's own (tui/panes/area.py: the tracker, lists and thread
panes run theirs) or a component's the screen holds (alerts, the banner, the
unpublished-changes mark, batch, the reader's h, |, e and u, the proposals, personal accounts,
compose, the listing, reading, the s jump, the search's hand-offs: tui/controllers/alerts.py,
banner.py, publish_mark.py, batch.py, keys.py, proposals.py, accounts.py, compose.py,
listing.py, reading.py, jump.py, search.py; issue 36 §2: no mixin is
left, tests/tui/test_areas.py). Each is a hidden widget (component.py) that runs its workers
on itself and takes their answers, and takes the Requests (tui/messages.py) it lists in
``TAKES``: the screen's one handler of them hands each on. This base of the main screen holds what the screen's work shares (the components', through the screen): the session,
request numbers (a newer request of a kind supersedes an older one), the deferral of
answers that arrive before the panes are mounted, and the reporting of a failed call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, TypeVar

from textual.screen import Screen
from textual.worker import Worker, WorkerState

from mailtriage.application import MandatoryBackendUnavailable, Op, UsageError
from mailtriage.core.secrets import scrub
from mailtriage.tui import typeahead
from mailtriage.tui.controllers.banner import Banner
from mailtriage.tui.controllers.component import Component
from mailtriage.tui.errors import is_connection_problem
from mailtriage.tui.messages import SessionFailed, WorkFailed
from mailtriage.tui.panes.area import Requests
from mailtriage.tui.panes.folders import FoldersPane
from mailtriage.tui.panes.reader import ReaderPane
from mailtriage.tui.panes.sources import SourcesPane
from mailtriage.tui.panes.threads import ThreadPane
from mailtriage.tui.panes.tracker import TrackerPane
from mailtriage.tui.sanitize import inert
from mailtriage.tui.textual_private import FrameAtIdle
from mailtriage.application import Service

if TYPE_CHECKING:
    from mailtriage.application import Resolution
    from mailtriage.tui.app import MailTriageApp
    from mailtriage.tui.controllers.accounts import Accounts
    from mailtriage.tui.controllers.alerts import Alerts
    from mailtriage.tui.controllers.batch import Batch
    from mailtriage.tui.controllers.compose import Compose
    from mailtriage.tui.controllers.listing import Listing
    from mailtriage.tui.controllers.proposals import Proposals
    from mailtriage.tui.controllers.publish_mark import PublishMark
    from mailtriage.tui.controllers.reading import Reading

#: What each key kept by ControllerBase.when_open does, as a notification names it.
KEPT_KEY_NAMES = {"compose": "the reply or new mail", "flow": "the reply, import or other proposal"}

M = TypeVar("M")
W = TypeVar("W", bound=WorkFailed)


class ControllerBase(FrameAtIdle, Screen):
    """The shared state and helpers of the main screen's controllers."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._requests = Requests()  # the screen's own kinds, numbered as an area numbers its own
        #: True once the panes are mounted; answers that come earlier wait in ``_deferred``.
        self.panes_ready = False
        self._deferred: list[tuple[Callable[..., None], object]] = []
        #: Keys that need the project, typed while it opens (r, i): acted on once it is open.
        self._after_open: dict[str, Callable[[], None]] = {}

    # -- the app and its session ------------------------------------------------
    @property
    def shell(self) -> MailTriageApp:
        """The app (lifecycle, settings, the error list)."""
        return self.app  # type: ignore[return-value]

    @property
    def session(self) -> Service:
        return self.shell.session

    def resolve(self, op_name: str) -> Resolution:
        """Which backend serves ``op_name`` (named in a failure's details). Blocks: a worker's."""
        return self.session.resolution(Op(op_name))

    # -- panes ---------------------------------------------------------------------
    @property
    def threads(self) -> ThreadPane:
        return self.query_one(ThreadPane)

    @property
    def reader(self) -> ReaderPane:
        return self.query_one(ReaderPane)

    @property
    def sources(self) -> SourcesPane:
        return self.query_one(SourcesPane)

    @property
    def folders(self) -> FoldersPane:
        return self.query_one(FoldersPane)

    @property
    def tracker(self) -> TrackerPane:
        return self.query_one(TrackerPane)

    @property
    def banner(self) -> Banner:
        return self.query_one(Banner)

    #: The components the screen holds (tui/controllers/alerts.py, publish_mark.py, batch.py,
    #: proposals.py, accounts.py, compose.py, listing.py, reading.py).
    alerts: Alerts
    publish_mark: PublishMark
    batches: Batch
    proposals: Proposals
    accounts: Accounts
    composing: Compose
    listing: Listing
    reading: Reading

    # -- requests ------------------------------------------------------------------
    def new_request(self, kind: str) -> int:
        return self._requests.new(kind)

    def is_current(self, kind: str, request: int) -> bool:
        return self._requests.is_current(kind, request)

    def thread_read_in_flight(self) -> bool:
        """A thread read of this screen is on its way (the alerts' poll waits for it)."""
        return any(worker.group == "reader" and self.owns(worker) and not worker.is_finished
                   for worker in self.workers)

    # -- the screen's work: its own workers and its components' ------------------------
    def owns(self, worker: Worker) -> bool:
        """``worker`` is this screen's work: run on the screen or on one of its components."""
        return worker.node is self or (isinstance(worker.node, Component) and worker.node.parent is self)

    def cancel_group(self, group: str) -> list[Worker]:
        """Cancel this screen's workers of ``group``, on the screen and on every component."""
        cancelled = [worker for worker in self.workers if worker.group == group and self.owns(worker)]
        for worker in cancelled:
            worker.cancel()
        return cancelled

    def worker_changed(self, worker: Worker) -> None:
        """A worker of this screen or a component changed state: one that raised goes to the
        app's error list; a thread read that ended lets the alerts' poll start if it waited."""
        self.alerts.reader_done(worker)
        if worker.is_finished:
            typeahead.worker_ended(self.app, worker)  # a dialog keys wait for that did not come
        if worker.state == WorkerState.ERROR and worker.error is not None:
            self.shell.report_error(f"Unexpected error in {worker.name or 'a background task'}", worker.error)

    def reader_leaves_source(self) -> None:
        """The list now shows another source: a read on its way is dropped and the reader is
        emptied, so no thread shows under a list it is not in."""
        self.new_request("reader")
        self.reader.show_nothing()

    # -- readiness -----------------------------------------------------------------
    def panes_mounted(self) -> None:
        """The panes are mounted: deliver what arrived before."""
        self.panes_ready = True
        deferred, self._deferred = self._deferred, []
        for handler, message in deferred:
            handler(message)

    def defer(self, handler: Callable[[M], None], message: M) -> bool:
        """True (and keep the message for later) when the panes are not mounted yet."""
        if self.panes_ready:
            return False
        self._deferred.append((handler, message))
        return True

    def when_open(self, key: str, action: Callable[[], None]) -> bool:
        """True (and ``action`` kept for when the project is open, the last one per ``key``)
        while it is not open: a key typed on the head start's rows before the app's own opening
        ends (it runs after the first frame; an Enter on the first row shows start-up's read ahead
        meanwhile) acts then. It was lost. When the opening fails, it is dropped
        (:meth:`on_session_failed`)."""
        if self.session.is_open:
            return False
        self._after_open[key] = action
        return True

    def project_opened(self) -> None:
        """The project is open: the keys kept by :meth:`when_open` act now, in the order typed."""
        kept, self._after_open = self._after_open, {}
        for action in kept.values():
            action()

    def on_session_failed(self, _message: SessionFailed) -> None:
        """The project did not open: the keys kept by :meth:`when_open` are dropped, and the user
        told. Kept, they acted after a later opening (the first-run screen's R, or d: another
        project), on rows of the session that failed. The message goes on to the app (the
        first-run screen)."""
        kept, self._after_open = self._after_open, {}
        if kept:
            what = " and ".join(KEPT_KEY_NAMES.get(key, key) for key in kept)
            self.notify(f"{what[:1].upper()}{what[1:]} typed while the project opened: not done, the project did "
                        "not open.", title="Start-up", severity="warning", markup=False)

    # -- failures ------------------------------------------------------------------
    def accept_failure(self, handler: Callable[[W], None], message: W) -> bool:
        """False when the failure waits for the panes, or answers a superseded request."""
        if self.defer(handler, message):
            return False
        return not (message.request and not self.is_current(message.area, message.request))

    @staticmethod
    def failure_text(message: WorkFailed) -> str:
        return scrub(message.details or str(message.error))

    def report_failure(self, message: WorkFailed) -> None:
        """The notification and error-list entry of a failed call; a backend that went away
        also makes the sources be checked again, so the sources pane shows it."""
        error = message.error
        if is_connection_problem(error):  # the mandatory backend unreachable on reconnecting too
            self.session.forget_availability()
            self.listing.recheck()  # every source checked again: the sources pane shows it
        if isinstance(error, UsageError):  # the request refused (L on mail from no list): why, not a failure
            self.shell.notify(inert(scrub(str(error))), severity="warning", markup=False)
            return
        if isinstance(error, (MandatoryBackendUnavailable, LookupError)):
            severity = "error" if isinstance(error, MandatoryBackendUnavailable) else "warning"
            self.shell.report_error(message.title, error, where=message.area, resolution=message.resolution,
                                    severity=severity)
            return
        self.shell.report_error(message.title, error, where=message.area, resolution=message.resolution)

    # -- what the alerts, the search and R read of the listing component ----------------
    @property
    def current_list(self) -> str | None:
        """The mailing list in the thread list (None: a personal account's folder, or none yet)."""
        return self.listing.current_list
