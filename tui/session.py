"""The open project of one app run: configuration, mail sources and user settings.

Everything here that touches a backend blocks, so it is called from worker threads
only. Calls into the backends go through one lock: a backend object (an IMAP
connection, say) serves one call at a time, and a superseded request simply finishes
and is ignored by the UI.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from mailtriage.backends.contract import ALL_OPS, Op, Thread, ThreadId
from mailtriage.core.settings import UserSettings



@dataclass(frozen=True)
class ListEntry:
    """One entry of the lists pane."""

    label: str
    list_name: str | None
    note: str = ""


class Session:
    def __init__(self, project_dir: Path, *, demo: bool, settings: UserSettings) -> None:
        self.project_dir = Path(project_dir)
        self.demo = demo
        self.settings = settings
        self.config = None
        self.sources = None
        self._lock = threading.RLock()
        self._tracker_lock = threading.RLock()
        self.cc = None  # CcResolution, once opened
        self.tracker = None
        self.tracker_description = ""

    # -- opening ---------------------------------------------------------
    def open(self) -> None:
        """Load project.md and build the mail sources.

        Raises:
            ConfigError: project.md is missing or invalid (the error names file and key).
        """
        from mailtriage.backends.registry import SourceSet
        from mailtriage.backends.security_cc import resolve_security_cc
        from mailtriage.core.projectconfig import load_project

        config = load_project(self.project_dir)
        # Backends that need the user settings (an IMAP account) get the app's copy.
        sources = SourceSet(config, {"user_settings": self.settings, "demo": self.demo})
        with self._lock:
            self.config, self.sources = config, sources
            self.cc = resolve_security_cc(config)

    @property
    def is_open(self) -> bool:
        return self.sources is not None

    @property
    def title(self) -> str:
        if self.config is not None and self.config.title:
            return self.config.title
        return self.project_dir.name or str(self.project_dir)

    # -- what the panes show ------------------------------------------------
    def lists(self) -> list[ListEntry]:
        """The security list first; then the lists the configured archives say they hold.

        Without ``security_list`` the first entry is a disabled note (the contract skips a
        list read with no configured list); an archive's own ``list`` setting stays
        selectable, since it names what that archive holds, not a stand-in for the list.
        """
        from mailtriage.backends.security_cc import configured_address

        config = self.config
        entries: list[ListEntry] = []
        address = configured_address(config.get("security_list")) if config else None
        if address:
            entries.append(ListEntry(address, address, "security_list"))
        else:
            entries.append(ListEntry("(no security list)", None, "security_list is not configured in project.md"))
        seen = {address.lower()} if address else set()
        for entry in (config.mail_sources if config else []):
            archive_list = config.source_settings(entry.name).get("list")
            if isinstance(archive_list, str) and archive_list.strip() and archive_list.strip().lower() not in seen:
                seen.add(archive_list.strip().lower())
                entries.append(ListEntry(archive_list.strip(), archive_list.strip(), f"the list {entry.name} holds"))
        return entries

    def since(self) -> datetime:
        """Start of the listing window: ``import.since`` or ``import.since_days`` (default 30)."""
        configured = self.config.get("import.since") if self.config else None
        if isinstance(configured, datetime):
            return configured if configured.tzinfo else configured.replace(tzinfo=timezone.utc)
        if isinstance(configured, date):
            return datetime(configured.year, configured.month, configured.day, tzinfo=timezone.utc)
        if isinstance(configured, str) and configured.strip():
            text = configured.strip()
            if text.endswith("d") and text[:-1].isdigit():
                return datetime.now(timezone.utc) - timedelta(days=int(text[:-1]))
            value = datetime.fromisoformat(text)
            return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        days = int(self.config.get("import.since_days", 30)) if self.config else 30
        return datetime.now(timezone.utc) - timedelta(days=days)

    def check_sources(self):
        """Availability of each backend (cached per run), resolution per op, and the
        MandatoryBackendUnavailable error when a mandatory backend is down (else None)."""
        from mailtriage.backends.errors import MandatoryBackendUnavailable, SignInNeeded
        from mailtriage.core.projectconfig import ConfigError

        with self._lock:
            matrix = self.sources.matrix()
            resolutions = {op: self.sources.resolve(op) for op in ALL_OPS}
            problem = None
            try:
                self.sources.preflight()
            except (MandatoryBackendUnavailable, ConfigError, SignInNeeded) as exc:
                problem = exc
        return matrix, resolutions, problem

    def forget_availability(self) -> None:
        with self._lock:
            if self.sources is not None:
                self.sources.availability.forget()

    # -- operations (blocking) ---------------------------------------------
    def list_threads(self, list_name: str | None, *, limit: int | None = None):
        """Dispatch ``list_recent_threads``; returns the registry's Dispatch.

        ``limit`` asks for the newest threads only, from a backend whose listing takes
        a ``limit`` keyword (IMAP walks the folder newest first and stops early); other
        backends ignore it and return everything.

        Raises:
            MandatoryBackendUnavailable, NoBackendAvailable, and the backend's errors.
        """
        since = self.since()

        def call(backend):
            if limit and accepts_limit(backend):
                return backend.list_recent_threads(list_name, since, limit=limit)
            return backend.list_recent_threads(list_name, since)

        with self._lock:
            return self.sources.dispatch(Op.LIST_RECENT_THREADS, call)

    def listing_can_be_limited(self) -> bool:
        """True when the backend that lists threads can return the newest ones first, fast."""
        with self._lock:
            chosen = self.sources.resolve(Op.LIST_RECENT_THREADS).chosen
            return bool(chosen) and accepts_limit(self.sources.backends[chosen])

    def read_thread(self, thread_id: ThreadId):
        with self._lock:
            return self.sources.dispatch(Op.READ_THREAD, lambda b: b.read_thread(thread_id))

    def thread_url(self, thread_id: ThreadId):
        with self._lock:
            return self.sources.dispatch(Op.THREAD_URL, lambda b: b.thread_url(thread_id))

    def propose_reply(self, thread: Thread, body: str):
        from mailtriage.workflows.reply import propose_reply

        with self._lock:
            return propose_reply(self.sources, thread, body)

    def apply(self, proposal):
        with self._lock:
            return proposal.apply(confirmed=True)

    def run_op(self, op: Op, backend: str | None, args: dict[str, Any]):
        """Run one contract op by hand (backend console). ``backend`` None: resolved."""
        call: Callable
        if op is Op.LIST_RECENT_THREADS:
            list_name = args.get("list") or (self.config.get("security_list") if self.config else None)
            since = _parse_since(args.get("since")) or self.since()
            call = lambda b: b.list_recent_threads(list_name, since)  # noqa: E731
        elif op is Op.LIST_SENT_SINCE:
            tid = self._thread_id(args.get("thread_id"), backend)
            since = _parse_since(args.get("since")) or self.since()
            call = lambda b: b.list_sent_since(tid, since)  # noqa: E731
        elif op in (Op.READ_THREAD, Op.LIST_DRAFTS, Op.THREAD_URL):
            tid = self._thread_id(args.get("thread_id"), backend)
            method = op.value
            call = lambda b: getattr(b, method)(tid)  # noqa: E731
        else:
            raise ValueError("create_draft is proposed and confirmed from a thread (press r), never run blind")
        with self._lock:
            return self.sources.dispatch(op, call, backend=backend or None)

    def _thread_id(self, text: str | None, backend: str | None) -> ThreadId:
        if not text or not text.strip():
            raise ValueError("this operation needs a thread id (KIND:VALUE, e.g. mbox:<root@example.org>)")
        default_kind = None
        if backend and self.sources and backend in self.sources.backends:
            default_kind = self.sources.backends[backend].thread_id_kind
        return ThreadId.parse(text.strip(), default_kind)

    # -- tracker (blocking) -----------------------------------------------------
    def open_tracker(self):
        """The project's tracker (``tracker.platform``), built once.

        With ``--demo`` it is the demo workspace's local-files tracker (demo/workspace.py).

        Raises:
            ConfigError: the tracker settings are incomplete (names file and key).
            TrackerError: the tracker cannot be opened.
        """
        with self._tracker_lock:
            if self.tracker is None:
                from mailtriage.trackers.registry import open_tracker

                self.tracker = open_tracker(self.config)
                self.tracker_description = str(getattr(self.tracker, "kind", "tracker"))
                if self.demo:
                    self.tracker_description += " (demo: a temporary git repository)"
            return self.tracker

    # -- triage flows (blocking; each returns a Proposal, writes nothing) -----------
    def sender_name(self) -> str | None:
        name = self.settings.data.get("name")
        return name.strip() if isinstance(name, str) and name.strip() else None

    def propose_import(self, thread_id: ThreadId, thread: Thread | None = None):
        """The import proposal (tracker issue, Import rollup entry, receipt draft)."""
        from mailtriage.workflows.importer import propose_import

        tracker = self.open_tracker()
        with self._lock, self._tracker_lock:
            return propose_import(self.sources, tracker, thread_id, thread=thread, sender_name=self.sender_name())

    def propose_publish(self):
        """The publish review of a local-files tracker (files, diff, commit message)."""
        from mailtriage.workflows.publish import propose_publish

        tracker = self.open_tracker()
        with self._tracker_lock:
            return propose_publish(tracker, self.config)

    def propose_sync(self):
        """Sync entries for tracker issues whose threads have new mail."""
        from mailtriage.workflows.sync import collect_sync, propose_sync

        tracker = self.open_tracker()
        with self._lock, self._tracker_lock:
            items = collect_sync(self.sources, tracker)
            return propose_sync(tracker, items)

    def needs_publish(self) -> bool:
        with self._tracker_lock:
            tracker = self.tracker
            if tracker is None or not tracker.features.publishes_changes:
                return False
            return bool(tracker.pending().get("needs_publish"))

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
            closer = getattr(self.tracker, "close_backend", None)
            if callable(closer):
                try:
                    closer()
                except Exception:  # closing must never fail the app's exit
                    pass
            self.tracker = None
        self.close_mailboxes()

    # -- personal accounts (blocking; one adapter per account, one call at a time) ----
    def mailbox(self, account_id: str):
        """The account's mailbox adapter (``[accounts.<id>]``), opened once per run.

        Raises:
            ConfigError: the account's settings are invalid (names file and key).
            NotSupported: the account's kind has no mailbox adapter here.
        """
        from mailtriage.backends.errors import NotSupported

        with self._lock:
            boxes = getattr(self, "_mailboxes", None)
            if boxes is None:
                boxes = self._mailboxes = {}
            if account_id not in boxes:
                kind = str(self.settings.account(account_id).get("kind", "imap"))
                if kind != "imap":
                    raise NotSupported(account_id, "list", f"accounts of kind {kind!r} cannot be browsed yet")
                from mailtriage.backends.imap.account import load_account
                from mailtriage.backends.imap.adapter import ImapMailbox

                boxes[account_id] = ImapMailbox(load_account(account_id, self.settings))
            return boxes[account_id]

    def account_folders(self, account_id: str):
        """The account's folders (role, unread, total)."""
        with self._lock:
            return self.mailbox(account_id).list_folders()

    def account_page(self, account_id: str, folder_id: str, page: int, page_size: int):
        """One page (newest first) of a folder: a MailPage."""
        from mailtriage.backends.mailbox_contract import MailQuery

        with self._lock:
            return self.mailbox(account_id).list(MailQuery(folder=folder_id, page=page, page_size=page_size))

    def account_message(self, account_id: str, message_id: str):
        """One message, read without setting \\Seen (the adapter fetches BODY.PEEK)."""
        with self._lock:
            return self.mailbox(account_id).get(message_id)

    def propose_organize(self, account_id: str, headers, action: str):
        """A flag/move proposal for ``headers`` (writes nothing)."""
        from mailtriage.workflows.organize import propose_organize

        with self._lock:
            box = self.mailbox(account_id)
            folders = box.list_folders() if action in ("archive", "trash") else ()
            access = str(getattr(getattr(box, "account", None), "access", "read"))
            return propose_organize(box, headers, action, access=access, folders=folders)

    def close_mailboxes(self) -> None:
        with self._lock:
            boxes, self._mailboxes = getattr(self, "_mailboxes", None) or {}, {}
            for box in boxes.values():
                try:
                    box.close()
                except Exception:  # closing must never fail the app's exit
                    pass

    # -- new-report alerts ----------------------------------------------------
    def alert_loop(self):
        """The new-report poll loop (tui/alerts.py) with mail sources of its own, or None
        when polling is off (no ``security_list``, or ``[alerts] poll_seconds = 0``).

        Raises:
            ConfigError: ``alerts.poll_seconds`` is invalid (project.md or the settings file).
        """
        from mailtriage.backends.registry import SourceSet
        from mailtriage.backends.security_cc import configured_address
        from mailtriage.tui.alerts import AlertLoop, poll_interval
        from mailtriage.workflows.alerts import NewReportPoller

        config = self.config
        if config is None:
            return None
        interval = poll_interval(config, self.settings)
        list_name = configured_address(config.get("security_list"))
        if not interval or not list_name:
            return None
        sources = SourceSet(config, {"user_settings": self.settings, "demo": self.demo})
        return AlertLoop(NewReportPoller(sources, list_name=list_name), interval)


def accepts_limit(backend) -> bool:
    """Whether ``backend.list_recent_threads`` takes a ``limit`` keyword (an extension of the contract)."""
    return backend.features.listing_limit


def _parse_since(text: str | None) -> datetime | None:
    if not text or not text.strip():
        return None
    text = text.strip()
    if text.endswith("d") and text[:-1].isdigit():
        return datetime.now(timezone.utc) - timedelta(days=int(text[:-1]))
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
