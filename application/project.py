"""The opened project: project.md, its mail sources, its security CC and its tracker.

One :class:`Project` is what a front end holds while it works on a project. It reads
threads and runs mail operations through the resolution rule, opens the tracker once, and
hands the flows what they need. It does no locking and no threading: the TUI's session
serialises the calls it makes from worker threads; the CLI makes one call at a time.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mailtriage.application.errors import UsageError
from mailtriage.application.operations import OpArgs, limitable, operation_call
from mailtriage.application.window import parse_since
from mailtriage.backends.contract import ALL_OPS, Op, ThreadId
from mailtriage.backends.errors import MandatoryBackendUnavailable, SignInNeeded
from mailtriage.backends.registry import Dispatch, SourceSet
from mailtriage.backends.security_cc import CcResolution, configured_address, resolve_security_cc
from mailtriage.core.collector import collector_paused
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.projectconfig import ConfigError, ProjectConfig, load_project
from mailtriage.application.location import project_dir  # noqa: F401 (re-exported: its old home)

if TYPE_CHECKING:
    from mailtriage.application.crypto import PgpSupport
    from mailtriage.trackers.contract import Tracker



@frozen_dataclass
class ListEntry:
    """One list a front end offers to read: its label, its address (None: not configured) and a note."""

    label: str
    list_name: str | None
    note: str = ""


class Project:
    """An open project. Build it with :meth:`open` (or from a loaded config and source set)."""

    def __init__(self, config: ProjectConfig, sources: SourceSet, *, user_settings: Any | None = None) -> None:
        self.config = config
        self.sources = sources
        self.tracker: Tracker | None = None
        self._user_settings = user_settings
        #: Set before the first OpenPGP use (the app): gpg never starts a terminal pinentry.
        self.pgp_quiet_pinentry = False
        self._pgp: PgpSupport | None = None
        self._pgp_lock = threading.Lock()
        # OpenPGP on every read thread (never on a listing).
        sources.thread_opener = lambda thread: self.pgp.open_thread(thread)

    @property
    def pgp(self) -> PgpSupport:
        """The run's OpenPGP (built on first use); ``pgp.decrypt = False``: --no-decrypt."""
        support = self._pgp
        if support is None:
            # lazy: OpenPGP and the MIME code it needs load with the first thread read, not
            # with the project (about 25 ms of the app's start, python -X importtime)
            from mailtriage.application.crypto import PgpSupport

            with self._pgp_lock:  # one per project, however many reads ask first
                if self._pgp is None:
                    made = PgpSupport(self._user_settings)
                    made.quiet_pinentry = self.pgp_quiet_pinentry
                    self._pgp = made
                support = self._pgp
        return support

    @classmethod
    def open(cls, directory: str | os.PathLike, *, user_settings: Any = None) -> "Project":
        """Load project.md from ``directory`` and build its mail sources.

        ``user_settings`` (the settings file) is handed to sources that read an
        ``[accounts.<id>]`` table.

        Raises:
            ConfigError: project.md is missing or invalid (the error names file and key).
        """
        # The backends' modules load here (classes, functions, patterns: all kept): the collector
        # would walk the new objects a dozen times and free nothing (3-4 ms of an IMAP open).
        with collector_paused():
            config = load_project(directory)
            sources = SourceSet(config, user_settings)
        return cls(config, sources, user_settings=user_settings)

    @staticmethod
    def load_config(directory: str | os.PathLike) -> ProjectConfig:
        """project.md alone, for commands that need no mail source."""
        return load_project(directory)

    # -- what the project says ----------------------------------------------------
    @property
    def title(self) -> str:
        return self.config.title

    def security_cc(self) -> CcResolution:
        return resolve_security_cc(self.config)

    def security_list(self) -> str | None:
        return configured_address(self.config.get("security_list"))

    def list_name(self, given: str | None = None) -> str | None:
        """``given``, or the configured ``security_list`` as written."""
        return given or self.config.get("security_list")

    def lists(self) -> list[ListEntry]:
        """The security list first; then the lists the configured archives say they hold.

        Without ``security_list`` the first entry is a disabled note (the contract skips a
        list read with no configured list); an archive's own ``list`` setting stays
        selectable, since it names what that archive holds, not a stand-in for the list.
        """
        config = self.config
        entries: list[ListEntry] = []
        address = self.security_list()
        if address:
            entries.append(ListEntry(address, address, "security_list"))
        else:
            entries.append(ListEntry("(no security list)", None, "security_list is not configured in project.md"))
        seen = {address.lower()} if address else set()
        for entry in config.mail_sources:
            archive_list = config.source_settings(entry.name).get("list")
            if isinstance(archive_list, str) and archive_list.strip() and archive_list.strip().lower() not in seen:
                seen.add(archive_list.strip().lower())
                entries.append(ListEntry(archive_list.strip(), archive_list.strip(), f"the list {entry.name} holds"))
        return entries

    def since(self, text: str | None = None, *, label: str = "since") -> datetime:
        """The window ``text`` names, or the configured one (see :mod:`mailtriage.application.window`)."""
        return parse_since(text, self.config, label=label)

    # -- the mail sources ------------------------------------------------------------
    def thread_id(self, text: str | None, backend: str | None = None) -> ThreadId:
        """``KIND:VALUE`` read as a thread id; a bare value takes ``backend``'s kind.

        Raises:
            UsageError: the text is empty or not a thread id.
        """
        if not text or not text.strip():
            raise UsageError("this operation needs a thread id (KIND:VALUE, e.g. mbox:<root@example.org>)")
        default_kind = None
        if backend and backend in self.sources.backends:
            default_kind = self.sources.backends[backend].thread_id_kind
        try:
            return ThreadId.parse(text.strip(), default_kind)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc

    def thread_id_for(self, text: str | None, op: Op) -> ThreadId:
        """A thread id whose bare form takes the kind of the backend that resolves ``op``."""
        return self.thread_id(text, self.sources.resolve(op).chosen)

    def check_sources(self):
        """Each backend's row of the capability matrix, the resolution per op, and the
        error that refuses runs (a mandatory backend down, its configuration broken) or None."""
        matrix = self.sources.matrix()
        resolutions = {op: self.sources.resolve(op) for op in ALL_OPS}
        problem = None
        try:
            self.sources.preflight()
        except (MandatoryBackendUnavailable, ConfigError, SignInNeeded) as exc:
            problem = exc
        return matrix, resolutions, problem

    def mandatory_config_error(self) -> ConfigError | None:
        """The configuration error of the first mandatory backend whose configuration is broken."""
        errors = (self.sources.availability.config_error(e.name) for e in self.sources.entries if e.mandatory)
        return next((e for e in errors if e is not None), None)

    def run(self, op: Op, args: OpArgs = OpArgs(), *, backend: str | None = None) -> Dispatch:
        """Run one operation through the resolution rule (or on the backend named).

        Raises:
            MandatoryBackendUnavailable, NoBackendAvailable, and the backend's errors.
        """
        return self.sources.dispatch(op, operation_call(op, args), backend=backend or None)

    def list_threads(self, list_name: str | None, since: datetime | None = None, *,
                     limit: int | None = None) -> Dispatch:
        """``list_recent_threads`` on ``list_name`` since ``since`` (the configured window when None)."""
        window = since if since is not None else self.since()
        return self.run(Op.LIST_RECENT_THREADS, OpArgs(list_name=list_name, since=window, limit=limit))

    def offline_threads(self, list_name: str | None, *, limit: int | None = None,
                        local: bool = True) -> tuple[Dispatch, bool] | None:
        """The newest threads of ``list_name`` (the configured window) read without asking a
        server, and whether they are stale; None when there is no such answer. Stale rows
        come from the listing backend's summary cache (:meth:`list_threads` then asks the
        server and reconciles); with ``local``, a project whose listing and mandatory
        backends are local archives lists for real. See ``SourceSet.offline_listing``."""
        return self.sources.offline_listing(list_name, self.since(), limit=limit, local=local)

    def read_thread(self, thread_id: ThreadId, *, backend: str | None = None) -> Dispatch:
        return self.run(Op.READ_THREAD, OpArgs(thread_id=thread_id), backend=backend)

    def thread_url(self, thread_id: ThreadId) -> Dispatch:
        return self.run(Op.THREAD_URL, OpArgs(thread_id=thread_id))

    def listing_can_start_early(self) -> bool:
        """See ``SourceSet.listing_can_start_early``."""
        return self.sources.listing_can_start_early()

    def reading_can_start_early(self) -> bool:
        """See ``SourceSet.reading_can_start_early``."""
        return self.sources.reading_can_start_early()

    def prepare_reading(self, *, open_message: bool = False) -> None:
        """See ``SourceSet.prepare_reading``."""
        self.sources.prepare_reading(open_message=open_message)

    def listing_can_be_limited(self) -> bool:
        """True when the backend that lists threads can return the newest ones first, fast."""
        chosen = self.sources.resolve(Op.LIST_RECENT_THREADS).chosen
        return bool(chosen) and limitable(self.sources.backends[chosen])

    def forget_availability(self) -> None:
        self.sources.availability.forget()

    # -- the tracker ------------------------------------------------------------------
    def open_tracker(self) -> Tracker:
        """The project's tracker (``tracker.platform``), built once.

        Raises:
            ConfigError: the tracker settings are incomplete (names file and key).
            TrackerError: the tracker cannot be opened.
        """
        if self.tracker is None:
            # Lazy: the trackers' contract, fields and registry load when a tracker is first
            # opened, not with every project (10-20 ms of the app's start, python -X importtime).
            from mailtriage.trackers.registry import open_tracker

            self.tracker = open_tracker(self.config)
        return self.tracker

    def close_tracker(self) -> None:
        tracker, self.tracker = self.tracker, None
        if tracker is not None:
            tracker.close_backend()

    def close(self) -> None:
        """Close the mail sources, then the tracker."""
        try:
            self.sources.close()
        finally:
            self.close_tracker()


def flush_listing_caches() -> None:
    """Write every listing cache this process still waits to write.

    The head start's child ends with ``os._exit`` (tui/head_start.py), so the caches' own
    ``atexit`` handler never runs there: it calls this. Only IMAP sources keep such a cache
    today; the front end need not know which backend does."""
    from mailtriage.backends.imap import summary_cache  # why: the child's end only; the IMAP listing loaded it

    summary_cache.flush_all()
