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
from mailtriage.tui.session_compose import ComposeCalls
from mailtriage.tui.session_lock import SessionLock, take_or_abort
from mailtriage.tui.session_queue import QueueCalls

if TYPE_CHECKING:
    from mailtriage.application import CcResolution, ListEntry, Mailboxes, Op, Project, SourceSet, Thread, ThreadId
    from mailtriage.core.projectconfig import ProjectConfig

__all__ = ["Session"]

# The application's names are read as ``application.X`` when first used: a flow, its
# workflows and the mailbox adapters load in the worker that needs them, not while the
# app starts (python -X importtime: about a fifth of the app's import time otherwise).


class Session(ComposeCalls, QueueCalls):
    def __init__(self, project_dir: Path, *, demo: bool, settings: UserSettings) -> None:
        self.project_dir = Path(project_dir)
        self.demo = demo
        if demo:
            # lazy: the demo's settings (its personal Maildir account) load with a demo run only
            from mailtriage.demo.workspace import demo_settings

            settings = demo_settings(settings, self.project_dir)
        self.settings = settings
        self.project: Project | None = None
        self.config: ProjectConfig | None = None
        self.sources: SourceSet | None = None
        self._lock = SessionLock()
        self._tracker_lock = threading.RLock()
        self._tracker_stale = False  # R asked for the tracker to be opened again
        # The personal accounts' mailboxes are connections of their own: opening an account
        # or a folder never waits behind the project's listing (a whole 30-day window).
        self._mailbox_lock = threading.RLock()
        self.cc: CcResolution | None = None  # once opened
        self.tracker_description = ""
        self._opened_mailboxes: Mailboxes | None = None

    # -- opening ---------------------------------------------------------
    def open(self) -> None:
        """Load project.md and build the mail sources.

        Raises:
            ConfigError: project.md is missing or invalid (the error names file and key).
        """
        # The lock itself, past its gate: the calls waiting at the gate go on once this ends.
        try:
            with self._lock.lock:
                project = application.Project.open(self.project_dir, user_settings=self.settings)
                project.pgp_quiet_pinentry = True  # no terminal pinentry behind the app: unlock on request
                self.project, self.config, self.sources = project, project.config, project.sources
                self.cc = project.security_cc()
        finally:
            self._lock.open_gate()

    def open_later(self) -> None:
        """The project opens on a worker once the first frame is drawn (the head start came
        from the forked child): until :meth:`open` ends, calls that need it wait."""
        self._lock.close_until_opened()

    @property
    def opened(self) -> Project:
        """The project, for a call made once it is open (the lock waits for :meth:`open`)."""
        if self.project is None:
            raise RuntimeError(f"the project {self.project_dir} is not open")
        return self.project

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
            return self.opened.check_sources()

    def forget_availability(self) -> None:
        with self._lock:
            if self.project is not None:
                self.project.forget_availability()

    def forget_tracker(self) -> None:
        """R: the tracker is opened again on its next use, so a descriptor or a setting fixed
        meanwhile is read anew (not the one cached when it was first opened). Never waits."""
        self._tracker_stale = True

    # -- operations (blocking) ---------------------------------------------
    def list_threads(self, list_name: str | None, *, limit: int | None = None):
        """Dispatch ``list_recent_threads``; returns the registry's Dispatch.

        ``limit`` asks for the newest threads only, from a backend that declares a listing
        limit (IMAP walks the folder newest first and stops early); other backends ignore
        it and return everything.

        Raises:
            MandatoryBackendUnavailable, NoBackendAvailable, and the backend's errors.
        """
        with self._lock:  # the window too: a session that opens later (head start) has no config yet
            return self.opened.list_threads(list_name, self.since(), limit=limit)

    def offline_threads(self, list_name: str | None, *, limit: int | None = None, local: bool = True):
        """Rows read without asking a server, and whether they are stale, or None: see
        :meth:`Project.offline_threads`."""
        with self._lock:
            return self.opened.offline_threads(list_name, limit=limit, local=local)

    def listing_can_start_early(self) -> bool:
        """Whether the start-up's helper process may list the first list (tui/head_start.py)."""
        with self._lock:
            return self.opened.listing_can_start_early()

    def listing_can_be_limited(self) -> bool:
        """True when the backend that lists threads can return the newest ones first, fast."""
        with self._lock:
            return self.opened.listing_can_be_limited()

    def read_thread(self, thread_id: ThreadId):
        with self._lock.urgently():  # the user waits on it: before a listing's next part
            return self.opened.read_thread(thread_id)

    def thread_url(self, thread_id: ThreadId):
        with self._lock:
            return self.opened.thread_url(thread_id)

    def propose_reply(self, thread: Thread, body: str, *, allow_clear: bool = False):
        """``allow_clear``: the user chose to draft in clear a reply to an encrypted report."""
        with self._lock:
            return application.ReplyFlow(self.opened, self.settings).propose(thread, body, allow_clear=allow_clear)

    def pgp_needs_passphrase(self, thread: Thread) -> bool:
        return self.project is not None and self.project.pgp.needs_passphrase(thread)

    def pgp_loopback(self) -> bool:
        """The user opted in to typing the passphrase in the app (``[pgp] pinentry = "loopback"``)."""
        return self.opened.pgp.pinentry == "loopback"

    def pgp_unlock(self, thread: Thread, *, passphrase: str | None = None, tty: str | None = None) -> str | None:
        """Unlock the key the thread needs; None when done, else why not."""
        with self._lock:
            return self.opened.pgp.unlock(thread, passphrase=passphrase, tty=tty)

    def propose_key_import(self, thread: Thread):
        """Import a key the thread offers (OpenPGP), after confirmation."""
        with self._lock:
            return application.KeyImportFlow(self.opened).propose(thread)

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
        project = self.opened

        def op_args() -> application.OpArgs:
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
            return application.ImportFlow(self.opened).propose(thread_id, thread=thread,
                                                                 sender_name=self.sender_name())

    def propose_imports(self, thread_ids):
        """ONE proposal importing every thread of ``thread_ids`` (tagged rows), one import each."""
        self.open_tracker()
        with self._lock, self._tracker_lock:
            return application.ImportFlow(self.project).propose_many(thread_ids, sender_name=self.sender_name())

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
            return application.PublishFlow(tracker, self.opened.config).needs_publish()

    # -- the triage overview (blocking) ------------------------------------------
    def thread_statuses(self, thread_ids: list[ThreadId]):
        """Filed / draft pending / replied of a screen of threads, asked of the backends at
        once (the tracker only once it is open)."""
        since = self.since()
        with self._lock, self._tracker_lock:
            return application.thread_statuses(self.opened, thread_ids, since, tracker=self.tracker)

    def thread_issue(self, thread_id: ThreadId) -> str | None:
        """The tracker issue whose rollup names the thread (opens the tracker)."""
        tracker = self.open_tracker()
        with self._tracker_lock:
            return application.filed_issue(tracker, thread_id)

    def issue_thread(self, issue_id: str):
        """The thread an issue's rollup names, or None (opens the tracker)."""
        tracker = self.open_tracker()
        with self._tracker_lock:
            return application.issue_thread(tracker, issue_id)

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
        self._lock.open_gate()  # never opened (the app ended first): nothing waits for it
        # A call waiting on a server (a slow or silent one) does not hold the quit back until
        # its timeout: its connections are ended under it, so it fails and lets go.
        if take_or_abort(self._lock.lock, self.sources):
            try:
                if self.sources is not None:
                    self.sources.close()
            finally:
                self._lock.lock.release()
        # Else a backend with nothing to end still waits: its sockets go with the process.
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

    def account_order(self, account_id: str, folder_id: str, sort: str | None, reverse: bool, threads: bool):
        """Every message ID of a folder in the server's order (issue 35): a FolderOrder.
        Raises NotSupported where the server cannot sort or thread."""
        with self._mailbox_lock:
            return self._mailboxes.order(account_id, folder_id, sort, reverse, threads)

    def account_unread_ids(self, account_id: str, folder_id: str):
        """The IDs of a folder's unread messages (the server's search): a FolderOrder."""
        with self._mailbox_lock:
            return self._mailboxes.unread_ids(account_id, folder_id)

    def account_headers(self, account_id: str, message_ids):
        """The headers of ``message_ids``, in that order (one page of an order)."""
        with self._mailbox_lock:
            return self._mailboxes.headers(account_id, message_ids)

    def account_message(self, account_id: str, message_id: str):
        """One message, read without setting \\Seen (the adapter fetches BODY.PEEK)."""
        with self._mailbox_lock:
            return self._mailboxes.message(account_id, message_id)

    def attachments(self, thread: Thread, *, backend: str | None = None, account_id: str | None = None):
        """The attachments of ``thread`` as ``backend`` read it (or, with ``account_id``, as that
        personal account's mailbox did): an AttachmentSet whose backend calls take this
        session's lock. No network call here; the bytes are read when asked for.

        Raises:
            NotSupported: the backend cannot read message parts (its declared features).
        """
        if account_id is not None:  # the account's own connection, under the mailboxes' lock
            with self._mailbox_lock:
                found = application.attachments_for_mailbox(self._mailboxes, account_id, thread)
            found.guard = self._mailbox_lock
            return found
        with self._lock:
            found = application.attachments_for_source(self.project, thread, backend)
        found.guard = self._lock
        return found

    def raw_message(self, message, *, backend: str | None = None, account_id: str | None = None) -> bytes:
        """``message`` as its bytes came (full headers, undecoded body), read through ``backend``
        (a project source) or the personal account ``account_id``; held in memory only.

        Raises:
            NotSupported: the backend keeps no raw message, or none read this one.
        """
        if account_id is not None:
            with self._mailbox_lock:
                return application.raw_for_mailbox(self._mailboxes, account_id, message.backend_ref or "")
        with self._lock:
            return application.raw_for_source(self.opened, backend, message.backend_ref)

    def attachment_settings(self) -> tuple[str | None, str]:
        """``attachment_command`` (None: nothing is ever opened outside the app) and the folder
        the save dialog offers first (``attachment_folder``, default ``~/Downloads`` when it
        exists, else the home folder), from the user settings."""
        command = self.settings.data.get("attachment_command")
        folder = self.settings.data.get("attachment_folder")
        if not isinstance(folder, str) or not folder.strip():
            downloads = Path.home() / "Downloads"
            folder = str(downloads) if downloads.is_dir() else str(Path.home())
        return (command if isinstance(command, (str, list)) and command else None), folder

    def propose_organize(self, account_id: str, headers, action: str, folder_id: str | None = None):
        """A flag/move proposal for ``headers``, one message or a tagged batch (writes nothing)."""
        with self._mailbox_lock:
            return application.OrganizeFlow(self._mailboxes.get(account_id)).propose(headers, action,
                                                                                     folder_id=folder_id)

    # -- search (blocking) ----------------------------------------------------------
    def can_search_sources(self) -> bool:
        """True when the backend that lists the threads declares a server search."""
        with self._lock:
            return self.project is not None and application.source_can_search(self.project)

    def can_search_account(self, account_id: str) -> bool:
        with self._mailbox_lock:
            return bool(self._mailboxes.get(account_id).server_search)

    def search_sources(self, query: str, list_name: str | None, *, page: int = 0, page_size: int = 50):
        """One page of the server search of the listed backend (a SearchResult of thread rows).

        Raises:
            ValueError: the query cannot be searched (empty, a NUL, too long).
            MandatoryBackendUnavailable, NotSupported, and the backend's errors.
        """
        request = _value_error(lambda: application.search_request(query, list_name=list_name, page=page,
                                                                  page_size=page_size))
        with self._lock:
            return application.search_project(self.project, request)

    def search_account(self, account_id: str, folder_id: str | None, query: str, *, page: int = 0,
                       page_size: int = 50):
        """One page of the server search of an account's folder (a SearchResult of MailHeaders)."""
        request = _value_error(lambda: application.search_request(query, folder=folder_id, page=page,
                                                                  page_size=page_size))
        with self._mailbox_lock:
            return application.search_mailbox(self._mailboxes.get(account_id), request)

    def close_mailboxes(self) -> None:
        if not take_or_abort(self._mailbox_lock, self._opened_mailboxes):  # as close() does
            return
        try:
            if self._opened_mailboxes is not None:
                self._opened_mailboxes.close()
        finally:
            self._mailbox_lock.release()

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
        settings = self.settings

        def make_poller():  # on the loop's worker thread (the flows load there, not at start-up)
            flow = application.PollFlow.for_alerts(config, settings)
            return flow.poller if flow is not None else None

        return AlertLoop(make_poller, interval, list_name)


def _value_error(read):
    """``read()``, with the application's UsageError raised as the ValueError the UI shows."""
    try:
        return read()
    except application.UsageError as exc:
        raise ValueError(str(exc)) from exc
