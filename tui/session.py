"""The open project of one app run, as the terminal UI uses it.

A thin shell over the application layer (:mod:`mailtriage.application`): the project, its
sources, the tracker, the personal mailboxes and the flows live there; this class adds
what the UI needs around them. Everything here that touches a backend blocks, so it is
called from worker threads only. Calls into the backends go through one lock: a backend
object (an IMAP connection, say) serves one call at a time, and a superseded request
simply finishes and is ignored by the UI. The tracker has a lock of its own, and so have
the personal accounts' mailboxes (connections of their own): opening an account never waits
for the project's listing.
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mailtriage.application as application
from mailtriage.core.settings import UserSettings
from mailtriage.tui.alerts import AlertLoop, poll_interval

if TYPE_CHECKING:
    from mailtriage.application import ListEntry, Mailboxes, Op, Project, Thread, ThreadId

__all__ = ["Session"]

# The application's names are read as ``application.X`` when first used: a flow, its
# workflows and the mailbox adapters load in the worker that needs them, not while the
# app starts (python -X importtime: about a fifth of the app's import time otherwise).


class Session:
    def __init__(self, project_dir: Path, *, demo: bool, settings: UserSettings) -> None:
        self.project_dir = Path(project_dir)
        self.demo = demo
        self.settings = settings
        self.project: Project | None = None
        self.config = None
        self.sources = None
        self._lock = threading.RLock()
        self._tracker_lock = threading.RLock()
        # The personal accounts' mailboxes are connections of their own: opening an account
        # or a folder never waits behind the project's listing (a whole 30-day window).
        self._mailbox_lock = threading.RLock()
        self.cc = None  # CcResolution, once opened
        self.tracker_description = ""
        self._opened_mailboxes: Mailboxes | None = None

    def _context(self) -> dict[str, Any]:
        # Backends that need the user settings (an IMAP account) get the app's copy.
        return {"user_settings": self.settings, "demo": self.demo}

    # -- opening ---------------------------------------------------------
    def open(self) -> None:
        """Load project.md and build the mail sources.

        Raises:
            ConfigError: project.md is missing or invalid (the error names file and key).
        """
        project = application.Project.open(self.project_dir, context=self._context())
        with self._lock:
            self.project, self.config, self.sources = project, project.config, project.sources
            self.cc = project.security_cc()

    @property
    def is_open(self) -> bool:
        return self.sources is not None

    @property
    def title(self) -> str:
        if self.config is not None and self.config.title:
            return self.config.title
        return self.project_dir.name or str(self.project_dir)

    @property
    def tracker(self):
        """The tracker once opened (None before)."""
        return self.project.tracker if self.project is not None else None

    # -- what the panes show ------------------------------------------------
    def lists(self) -> list["ListEntry"]:
        """The security list first; then the lists the configured archives say they hold."""
        if self.project is None:
            return [application.ListEntry("(no security list)", None, "security_list is not configured in project.md")]
        return self.project.lists()

    def since(self) -> datetime:
        """Start of the listing window: ``import.since`` or ``import.since_days`` (default 30)."""
        return _value_error(lambda: application.configured_since(self.config))

    def check_sources(self):
        """Availability of each backend (cached per run), resolution per op, and the
        MandatoryBackendUnavailable error when a mandatory backend is down (else None)."""
        with self._lock:
            return self.project.check_sources()

    def forget_availability(self) -> None:
        with self._lock:
            if self.project is not None:
                self.project.forget_availability()

    # -- operations (blocking) ---------------------------------------------
    def list_threads(self, list_name: str | None, *, limit: int | None = None):
        """Dispatch ``list_recent_threads``; returns the registry's Dispatch.

        ``limit`` asks for the newest threads only, from a backend that declares a listing
        limit (IMAP walks the folder newest first and stops early); other backends ignore
        it and return everything.

        Raises:
            MandatoryBackendUnavailable, NoBackendAvailable, and the backend's errors.
        """
        since = self.since()
        with self._lock:
            return self.project.list_threads(list_name, since, limit=limit)

    def listing_can_be_limited(self) -> bool:
        """True when the backend that lists threads can return the newest ones first, fast."""
        with self._lock:
            return self.project.listing_can_be_limited()

    def read_thread(self, thread_id: ThreadId):
        with self._lock:
            return self.project.read_thread(thread_id)

    def thread_url(self, thread_id: ThreadId):
        with self._lock:
            return self.project.thread_url(thread_id)

    def propose_reply(self, thread: Thread, body: str):
        with self._lock:
            return application.ReplyFlow(self.project).propose(thread, body)

    def apply(self, proposal):
        # A proposal may write through the project's sources or an account's mailbox (flag,
        # move): both locks, always in this order.
        with self._lock, self._mailbox_lock:
            return proposal.apply(confirmed=True)

    def run_op(self, op: Op, backend: str | None, args: dict[str, Any]):
        """Run one contract op by hand (backend console). ``backend`` None: resolved.

        Raises:
            ValueError: the thread id or the window cannot be read, or the op is create_draft.
        """
        project = self.project

        def op_args() -> OpArgs:
            if op is application.Op.LIST_RECENT_THREADS:
                return application.OpArgs(list_name=project.list_name(args.get("list")),
                                          since=project.since(args.get("since")))
            if op is application.Op.LIST_SENT_SINCE:
                tid = project.thread_id(args.get("thread_id"), backend)
                return application.OpArgs(thread_id=tid, since=project.since(args.get("since")))
            if op is application.Op.CREATE_DRAFT:
                raise ValueError("create_draft is proposed and confirmed from a thread (press r), never run blind")
            return application.OpArgs(thread_id=project.thread_id(args.get("thread_id"), backend))

        call_args = _value_error(op_args)
        with self._lock:
            return project.run(op, call_args, backend=backend or None)

    # -- tracker (blocking) -----------------------------------------------------
    def open_tracker(self):
        """The project's tracker (``tracker.platform``), built once.

        With ``--demo`` it is the demo workspace's local-files tracker.

        Raises:
            ConfigError: the tracker settings are incomplete (names file and key).
            TrackerError: the tracker cannot be opened.
        """
        with self._tracker_lock:
            opened = self.project.tracker is not None
            tracker = self.project.open_tracker()
            if not opened:
                self.tracker_description = str(tracker.kind)
                if self.demo:
                    self.tracker_description += " (demo: a temporary git repository)"
            return tracker

    def _publish_flow(self):
        return application.PublishFlow(self.open_tracker(), self.config)

    # -- triage flows (blocking; each returns a Proposal, writes nothing) -----------
    def sender_name(self) -> str | None:
        name = self.settings.data.get("name")
        return name.strip() if isinstance(name, str) and name.strip() else None

    def propose_import(self, thread_id: ThreadId, thread: Thread | None = None):
        """The import proposal (tracker issue, Import rollup entry, receipt draft)."""
        self.open_tracker()
        with self._lock, self._tracker_lock:
            return application.ImportFlow(self.project).propose(thread_id, thread=thread,
                                                                 sender_name=self.sender_name())

    def propose_publish(self):
        """The publish review of a tracker that keeps changes to publish (files, diff, commit message)."""
        flow = self._publish_flow()
        with self._tracker_lock:
            return flow.propose()

    def propose_sync(self):
        """Sync entries for tracker issues whose threads have new mail."""
        self.open_tracker()
        with self._lock, self._tracker_lock:
            return application.SyncFlow(self.project).propose()

    def needs_publish(self) -> bool:
        with self._tracker_lock:
            tracker = self.tracker
            if tracker is None:
                return False
            return application.PublishFlow(tracker, self.config).needs_publish()

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

    def close(self) -> None:
        with self._lock:
            if self.sources is not None:
                self.sources.close()
        with self._tracker_lock:
            if self.project is not None:
                try:
                    self.project.close_tracker()
                except Exception:  # closing must never fail the app's exit
                    pass
        self.close_mailboxes()

    # -- personal accounts (blocking; one adapter per account, one call at a time) ----
    @property
    def _mailboxes(self) -> "Mailboxes":
        if self._opened_mailboxes is None:
            self._opened_mailboxes = application.Mailboxes(self.settings)
        return self._opened_mailboxes

    def mailbox(self, account_id: str):
        """The account's mailbox adapter (``[accounts.<id>]``), opened once per run.

        Raises:
            ConfigError: the account's settings are invalid (names file and key).
            NotSupported: the account's kind has no mailbox adapter here.
        """
        with self._mailbox_lock:
            return self._mailboxes.get(account_id)

    def account_folders(self, account_id: str):
        """The account's folders (role, unread, total)."""
        with self._mailbox_lock:
            return self._mailboxes.folders(account_id)

    def account_page(self, account_id: str, folder_id: str, page: int, page_size: int):
        """One page (newest first) of a folder: a MailPage."""
        with self._mailbox_lock:
            return self._mailboxes.page(account_id, folder_id, page, page_size)

    def account_message(self, account_id: str, message_id: str):
        """One message, read without setting \\Seen (the adapter fetches BODY.PEEK)."""
        with self._mailbox_lock:
            return self._mailboxes.message(account_id, message_id)

    def propose_organize(self, account_id: str, headers, action: str):
        """A flag/move proposal for ``headers`` (writes nothing)."""
        with self._mailbox_lock:
            return application.OrganizeFlow(self._mailboxes.get(account_id)).propose(headers, action)

    def close_mailboxes(self) -> None:
        with self._mailbox_lock:
            if self._opened_mailboxes is not None:
                self._opened_mailboxes.close()

    # -- new-report alerts ----------------------------------------------------
    def alert_loop(self):
        """The new-report poll loop (tui/alerts.py) with mail sources of its own, or None
        when polling is off (no ``security_list``, or ``[alerts] poll_seconds = 0``).

        Raises:
            ConfigError: ``alerts.poll_seconds`` is invalid (project.md or the settings file).
        """
        config = self.config
        if config is None:
            return None
        interval = poll_interval(config, self.settings)
        if not interval:
            return None
        list_name = application.configured_address(config.get("security_list"))
        if not list_name:
            return None
        context = self._context()

        def make_poller():  # on the loop's worker thread (the flows load there, not at start-up)
            flow = application.PollFlow.for_alerts(config, context)
            return flow.poller if flow is not None else None

        return AlertLoop(make_poller, interval, list_name)


def _value_error(read):
    """``read()``, with the application's UsageError raised as the ValueError the UI shows."""
    try:
        return read()
    except application.UsageError as exc:
        raise ValueError(str(exc)) from exc
