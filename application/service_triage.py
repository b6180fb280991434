"""The triage side of the application service: the tracker, the flows that write through it,
the team's queue, new-report polls and the feedback sweep.

A part of :class:`mailtriage.application.service.Service` (its base class), in a module of its
own so each stays readable: the attributes below are the service's (set by its ``__init__``),
and these methods take its locks as the rest do. The command line and the app call the same
methods (issue 36 §1): a front end never builds a flow itself (tests/application/test_facade.py).
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, cast

from mailtriage.application.errors import UsageError
from mailtriage.application.service_lock import ServiceLock
from mailtriage.core.errors import ConfigError
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.settings import UserSettings

if TYPE_CHECKING:
    from mailtriage.application.flows.alerts import NewReportPoller, PollFlow, PollOutcome
    from mailtriage.application.flows.proposals import Proposal
    from mailtriage.application.flows.publish import PublishFlow
    from mailtriage.application.project import Project
    from mailtriage.application.queue import Queue, QueueState
    from mailtriage.backends.contract import Thread, ThreadId
    from mailtriage.core.projectconfig import ProjectConfig

__all__ = ["AlertWatch", "TRACKER_CALLS", "TriageSide"]

#: The tracker contract's calls the command line makes by name (:meth:`TriageSide.tracker_call`).
TRACKER_CALLS = frozenset({
    "view", "list", "labels", "field_get", "create", "edit", "field_set", "comment", "close", "reopen",
    "rollup_append", "rollup_amend_latest", "attach", "body", "review_state", "publish", "doctor", "init", "detect"})


@frozen_dataclass
class AlertWatch:
    """What a new-report poll loop needs (see :meth:`Service.alert_watch`): the seconds between
    polls, the list, and how to build the poller (mail sources of its own) on the loop's thread."""

    interval: float
    list_name: str
    make_poller: Callable[[], "NewReportPoller | None"]


class TriageSide:
    # The service's own state (application/service.py sets it).
    project_dir: Path
    demo: bool
    settings: UserSettings
    project: Project | None
    config: ProjectConfig | None
    tracker_description: str
    _lock: ServiceLock
    _tracker_lock: threading.RLock
    _tracker_stale: bool
    _polls: dict[str | None, PollFlow]

    @property
    def opened(self) -> Project:
        """The project, for a call made once it is open (the lock waits for :meth:`open`)."""
        if self.project is None:
            raise RuntimeError(f"the project {self.project_dir} is not open")
        return self.project

    @property
    def tracker(self):
        """The tracker once opened (None before)."""
        return self.project.tracker if self.project is not None else None

    # -- tracker (blocking) -----------------------------------------------------
    def open_tracker(self):
        """The project's tracker (``tracker.platform``), built once.

        With ``--demo`` it is the demo workspace's local-files tracker.

        Raises:
            ConfigError: the tracker settings are incomplete (names file and key).
            TrackerError: the tracker cannot be opened.
        """
        with self._tracker_lock:
            if self._tracker_stale:
                self._tracker_stale = False
                self.project.close_tracker()
            opened = self.project.tracker is not None
            tracker = self.project.open_tracker()
            if not opened:
                self.tracker_description = str(tracker.kind)
                if self.demo:
                    self.tracker_description += " (demo: a temporary git repository)"
            return tracker

    def _publish_flow(self) -> PublishFlow:
        """The publish review of the project's tracker (opens the tracker)."""
        from mailtriage.application.flows.publish import PublishFlow  # why: loads on first use, not at start-up
        return PublishFlow(self.open_tracker(), self.opened.config)

    def publish_offer(self) -> str | None:
        """None when the tracker keeps changes to publish (a flow's writes are then reviewed for
        publishing), else why not (opens the tracker)."""
        flow = self._publish_flow()
        return None if flow.offered else flow.why_not_offered()

    # -- triage flows (blocking; each returns a Proposal, writes nothing) -----------
    def sender_name(self) -> str | None:
        name = self.settings.data.get("name")
        return name.strip() if isinstance(name, str) and name.strip() else None

    def propose_import(self, thread_id: ThreadId, thread: Thread | None = None, *, sender_name: str | None = None):
        """The import proposal (tracker issue, Import rollup entry, receipt draft), signed by
        ``sender_name`` (default: ``name`` of the user settings)."""
        from mailtriage.application.flows.importer import ImportFlow  # why: loads on first use, not at start-up
        self.open_tracker()
        with self._lock, self._tracker_lock:
            return ImportFlow(self.opened).propose(thread_id, thread=thread,
                                                   sender_name=sender_name or self.sender_name())

    def propose_imports(self, thread_ids):
        """ONE proposal importing every thread of ``thread_ids`` (tagged rows), one import each."""
        from mailtriage.application.flows.importer import ImportFlow  # why: loads on first use, not at start-up
        self.open_tracker()
        with self._lock, self._tracker_lock:
            return ImportFlow(self.project).propose_many(thread_ids, sender_name=self.sender_name())

    def propose_publish(self, message: str | None = None, *, written_only: bool = False) -> Proposal:
        """The publish review of a tracker that keeps changes to publish (files, diff, commit
        message; ``message`` instead of the proposed one). ``written_only``: of the files this
        run wrote alone, so a concurrent run's (perhaps half-written) import is never committed
        under this run's message."""
        flow = self._publish_flow()
        with self._tracker_lock:
            written = getattr(flow.tracker, "written_paths", None) if written_only else None
            return flow.propose(message, only=written() if written is not None else None)

    def propose_sync(self, issue_ids: Sequence[str] | None = None, *, add_labels: Iterable[tuple[str, str]] = (),
                     remove_labels: Iterable[tuple[str, str]] = (), close: Iterable[tuple[str, str]] = (),
                     reopen: Iterable[str] = ()) -> Proposal:
        """Sync entries for tracker issues whose threads have new mail (``issue_ids`` alone when
        given), with the label and state changes the user picked: (issue, label) and (issue,
        reason) pairs. Raises NotFound for a picked issue that is not there."""
        from mailtriage.application.flows.sync import SyncFlow  # why: loads on first use, not at start-up
        self.open_tracker()
        with self._lock, self._tracker_lock:
            flow = SyncFlow(self.opened)
            for issue, label in add_labels:
                flow.pick(issue).add_labels.append(label)
            for issue, label in remove_labels:
                flow.pick(issue).remove_labels.append(label)
            for issue, reason in close:
                flow.pick(issue).close = reason
            for issue in reopen:
                flow.pick(issue).reopen = True
            return flow.propose(issue_ids)

    def needs_publish(self) -> bool:
        """Whether an opened tracker holds changes not published yet (never opens it)."""
        from mailtriage.application.flows.publish import PublishFlow  # why: loads on first use, not at start-up
        with self._tracker_lock:
            tracker = self.tracker
            if tracker is None:
                return False
            return PublishFlow(tracker, self.opened.config).needs_publish()

    # -- the team's triage queue: claims and releases (blocking; tui/screens/queue.py) ---------
    def queue_now(self) -> datetime:
        """The instant the queue is measured at: now, or the demo's pinned now (``mailtriage.demo``)."""
        if self.demo:
            from mailtriage.demo import demo_now  # why: the demo's clock loads with a demo run only

            return demo_now()
        return datetime.now(timezone.utc)

    def queue(self, now: datetime, *, list_name: str | None = None, since: datetime | None = None,
              state: QueueState | None = None, owner: str | None = None, keep_records: bool = True) -> Queue:
        """The queue of the project's list (or ``list_name``) in its window (or since ``since``) at
        ``now``, with only the rows in ``state`` or held by ``owner`` when given (reads the list and
        the tracker; a tracker that cannot be opened is a warning of the queue, not a failure).
        ``keep_records``: False when no second queue follows (the command line's one)."""
        from mailtriage.application.queue import build_queue  # why: loads on first use, not at start-up
        with self._lock, self._tracker_lock:
            return build_queue(self.opened, now=now, list_name=list_name, since=since, state=state, owner=owner,
                               keep_records=keep_records)

    def queue_user(self) -> str:
        """Who claims here: ``tracker.user``, else the name the tracker writes as (as the CLI);
        "" when neither can be told (no tracker)."""
        configured = self.config.get("tracker.user") if self.config is not None else None
        if configured:
            return str(configured)
        tracker = self.project.tracker if self.project is not None else None
        with self._tracker_lock:
            return tracker.default_user() if tracker is not None else ""

    def pull_tracker(self) -> dict[str, Any]:
        """Bring a local-files tracker's working copy up to date (fetch, fast-forward; svn update),
        so the queue shows the colleagues' claims: ``{"synced": bool, "detail": words}``."""
        from mailtriage.application.queue import sync_tracker  # why: loads on first use, not at start-up
        tracker = self.open_tracker()
        with self._tracker_lock:
            return sync_tracker(tracker)

    def queue_pull(self) -> str:
        """:meth:`pull_tracker`, in words (the queue screen's note)."""
        return str(self.pull_tracker()["detail"])

    def propose_claim(self, issue: str, who: str | None = None) -> Proposal:
        """Make ``who`` (default: this user) the owner (assignee) of ``issue``: a proposal, nothing
        written yet (blocked, with ``facts["holder"]``, when someone else holds it)."""
        from mailtriage.application.queue import propose_claim  # why: loads on first use, not at start-up
        tracker = self.open_tracker()
        with self._tracker_lock:
            return propose_claim(tracker, issue, who, config=self.config)

    def propose_release(self, issue: str, who: str | None = None) -> Proposal:
        """Remove ``who`` (default: this user) from the assignees of ``issue``: a proposal, nothing written yet."""
        from mailtriage.application.queue import propose_release  # why: loads on first use, not at start-up
        tracker = self.open_tracker()
        with self._tracker_lock:
            return propose_release(tracker, issue, who, config=self.config)

    # -- the tracker's issues and the threads they name (blocking) ----------------
    def thread_issue(self, thread_id: ThreadId) -> str | None:
        """The tracker issue whose rollup names the thread (opens the tracker)."""
        from mailtriage.application.overview import filed_issue  # why: loads on first use, not at start-up
        tracker = self.open_tracker()
        with self._tracker_lock:
            return filed_issue(tracker, thread_id)

    def issue_thread(self, issue_id: str):
        """The thread an issue's rollup names, or None (opens the tracker)."""
        from mailtriage.application.overview import issue_thread  # why: loads on first use, not at start-up
        tracker = self.open_tracker()
        with self._tracker_lock:
            return issue_thread(tracker, issue_id)

    def tracker_issues(self, state: str = "all") -> tuple[list[dict], list[str]]:
        """Issues newest-updated first and the problems met while listing (malformed files)."""
        tracker = self.open_tracker()
        with self._tracker_lock:
            result = tracker.list(state=state, limit=500)
        return list(result.items), list(result.problems)

    def tracker_issue(self, issue_id: str) -> dict:
        tracker = self.open_tracker()
        with self._tracker_lock:
            return tracker.view(issue_id, comments=True)

    # -- the tracker contract by hand (the command line's ``mailtriage tracker``) -------------
    _lone_tracker: Any = None  # opened from project.md alone (tracker_call on a service not opened)
    _lone_config: ProjectConfig | None = None

    def project_setting(self, key: str) -> Any:
        """A value of project.md (``tracker.prefix``), read without building the mail sources.

        Raises:
            ConfigError: project.md is missing or invalid.
        """
        return self._tracker_config().get(key)

    def _tracker_config(self) -> ProjectConfig:
        if self.config is not None:
            return self.config
        if self._lone_config is None:
            from mailtriage.core.projectconfig import load_project  # why: loads on first use, not at start-up
            self._lone_config = load_project(self.project_dir)
        return self._lone_config

    def _contract_tracker(self):
        """The project's tracker once the project is open; else one opened from project.md alone:
        the tracker command builds no mail source."""
        if self.project is not None:
            return self.open_tracker()
        with self._tracker_lock:
            if self._lone_tracker is None:
                from mailtriage.trackers.registry import open_tracker  # why: loads on first use, not at start-up
                self._lone_tracker = open_tracker(self._tracker_config())
            return self._lone_tracker

    def tracker_call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """One call of the tracker contract by its name (``view``, ``create``, ``publish``, …; see
        :data:`TRACKER_CALLS`), under the tracker's lock.

        Raises:
            ConfigError, TrackerError: the tracker cannot be opened, or the call failed.
        """
        if name not in TRACKER_CALLS:
            raise ValueError(f"{name} is not a call of the tracker contract")
        tracker = self._contract_tracker()
        with self._tracker_lock:
            return getattr(tracker, name)(*args, **kwargs)

    def tracker_kind(self) -> tuple[str, bool]:
        """The tracker's kind and whether it is set up locally (``init``, ``detect``: local-files)."""
        tracker = self._contract_tracker()
        return str(tracker.kind), bool(tracker.features.set_up_locally)

    def tracker_notices(self) -> list[str]:
        """What an opened tracker noticed on the way (a repository that moved): never opens one."""
        tracker = self._lone_tracker if self.project is None else self.project.tracker
        return list(getattr(tracker, "notices", ()))

    def close_lone_tracker(self) -> None:
        """Close the tracker :meth:`tracker_call` opened from project.md alone (if any)."""
        with self._tracker_lock:
            tracker, self._lone_tracker = self._lone_tracker, None
        if tracker is not None:
            tracker.close_backend()

    # -- new-report alerts ----------------------------------------------------
    def poll_interval(self, override: float | None = None) -> float:
        """Seconds between new-report polls, for the app's alerts and ``mailtriage poll --watch``
        alike: ``override`` (the command line's ``--interval``), else the user setting ``[alerts]
        poll_seconds``, which wins over the project's ``alerts.poll_seconds`` (default 120). 0
        (the user setting) turns polling off.

        Raises:
            UsageError: ``override`` is not a positive number of seconds.
            ConfigError: either setting is not a number of seconds (names the file and key).
        """
        from mailtriage.application.flows.alerts import poll_seconds  # why: loads on first use, not at start-up
        if override is not None:
            if override < 0.01:
                raise UsageError("--interval must be a positive number of seconds")
            return override
        self.settings.require()  # a broken settings file: its poll_seconds is unknown (0 turns polling off)
        table = self.settings.data.get("alerts")
        if isinstance(table, dict) and "poll_seconds" in table:
            value = table["poll_seconds"]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or 0 < value < 1:
                raise ConfigError(self.settings.path, "alerts.poll_seconds",
                                  f"must be a number of seconds (0 turns polling off, else at least 1), not {value!r}",
                                  "e.g. 120")
            return float(value)
        return poll_seconds(self.opened.config)

    def alert_watch(self) -> AlertWatch | None:
        """What the app's new-report poll loop needs, or None when polling is off (no
        ``security_list``, or ``[alerts] poll_seconds = 0``). The poller gets mail sources of its
        own (an IMAP IDLE connection serves nothing else), built by ``make_poller`` on the
        loop's worker thread.

        Raises:
            ConfigError: ``alerts.poll_seconds`` is invalid (project.md or the settings file).
        """
        from mailtriage.backends.security_cc import configured_address  # why: loads on first use, not at start-up
        config = self.config
        if config is None:
            return None
        interval = self.poll_interval()
        if not interval:
            return None
        list_name = configured_address(config.get("security_list"))
        if not list_name:
            return None
        settings = self.settings

        def make_poller():  # on the loop's worker thread (the flows load there, not at start-up)
            from mailtriage.application.flows.alerts import PollFlow  # why: on the poll worker, after the first paint
            flow = PollFlow.for_alerts(config, settings)
            return flow.poller if flow is not None else None

        return AlertWatch(interval, list_name, make_poller)

    def poll(self, list_name: str | None = None) -> PollOutcome:
        """One poll of the security list (or ``list_name``) on the project's sources: the threads
        new since the acknowledged cursor (the first poll sets a silent baseline); saves nothing:
        :meth:`acknowledge_poll` once they were shown.

        Raises MandatoryBackendUnavailable, NoBackendAvailable and the backend's errors."""
        with self._lock:
            return self._poll_flow(list_name).poll()

    def acknowledge_poll(self, outcome: PollOutcome, list_name: str | None = None) -> None:
        """The outcome of a poll of ``list_name`` was shown: only now its cursor moves (a file of the
        data folder: raises OSError when it cannot be written)."""
        self._poll_flow(list_name).acknowledge(outcome)

    def watch_polls(self, on_news: Callable[[PollOutcome], Any], *, interval: float, list_name: str | None = None,
                    on_error: Callable[[Exception, float], Any] | None = None,
                    on_recovered: Callable[[Any], Any] | None = None, stop: threading.Event | None = None) -> int:
        """Poll every ``interval`` seconds until ``stop`` (the command line's ``poll --watch``):
        news to ``on_news``, which acknowledges it (:meth:`acknowledge_poll`); a failed poll to
        ``on_error`` with the seconds until the next try (sooner during an outage). Each poll
        takes the service's lock, as every call into the project's sources."""
        from mailtriage.application.flows.alerts import run_poll_loop  # why: loads on first use, not at start-up
        flow = self._poll_flow(list_name)

        def failed(exc: Exception) -> None:
            if on_error is not None:
                on_error(exc, flow.poller.pause_seconds(interval))

        return run_poll_loop(cast("NewReportPoller", _Guarded(flow.poller, self._lock)), on_news, stop=stop or threading.Event(),
                             interval=interval, on_error=failed, on_recovered=on_recovered)

    def polled_list(self, list_name: str | None = None) -> str | None:
        """The list a poll reads: ``list_name``, else the configured security list."""
        return self._poll_flow(list_name).list_name

    def _poll_flow(self, list_name: str | None) -> PollFlow:
        from mailtriage.application.flows.alerts import PollFlow  # why: loads on first use, not at start-up
        with self._lock:
            if list_name not in self._polls:
                self._polls[list_name] = PollFlow(self.opened.sources, list_name=list_name)
            return self._polls[list_name]

    # -- the feedback sweep (reads only; no project needed) ---------------------------------
    def sweep(self, source: str, cursor: str, entry: str, *, cap: int | None = None,
              ack_keyword: str | None = None, closeout_keyword: str | None = None):
        """The read-only feedback sweep of ``source`` (an account's folder, or an archive) since
        ``cursor``, with ``sweep.internal_domains`` of the project when there is one. Needs no
        opened project.

        Raises:
            UsageError: a source, cursor, keyword, cap or entry that cannot be used.
            ConfigError: ``sweep.internal_domains`` is not a list of domains.
        """
        from mailtriage.application.flows.sweep import SweepFlow  # why: loads on first use, not at start-up
        request = SweepFlow.request(source, cursor, entry, cap=cap, ack_keyword=ack_keyword,
                                    closeout_keyword=closeout_keyword)
        return SweepFlow.run(request, SweepFlow.internal_domains(self.project_dir))


class _Guarded:
    """A poller whose polls take the service's lock (the loop's other calls need none: they read
    the poller's own state or wait)."""

    def __init__(self, poller: NewReportPoller, lock: ServiceLock) -> None:
        self._poller, self._lock = poller, lock

    def poll(self) -> PollOutcome:
        with self._lock:
            return self._poller.poll()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._poller, name)
