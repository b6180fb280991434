"""Backend registry and the configured source set of a run.

Backends are imported lazily by kind so start-up only pays for what is configured.
A kind with no implementation in this build is present but *unavailable*, loudly:
there is no fake production backend.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from mailtriage.backends.contract import ALL_OPS, MailSource, Op, SourceOrigin, Thread
from mailtriage.backends.errors import (
    MailError,
    NotSupported,
    Unavailable,
)
from mailtriage.backends.resolution import (
    AvailabilityCache,
    Resolution,
    Step,
    _role_label,
    mandatory_preflight,
    preflight_resolution,
    resolution_order,
    resolve,
)
from mailtriage.core.projectconfig import ConfigError, MailSourceEntry, ProjectConfig
from mailtriage.core.trace import OPLOG

# kind -> "module:Class". Later issues add their backends here.
BACKEND_KINDS: dict[str, str] = {
    "mbox": "mailtriage.backends.mbox:MboxSource",
    "maildir": "mailtriage.backends.maildir:MaildirDraftsSource",
    "imap": "mailtriage.backends.imap.source:ImapSource",
    "mailman3": "mailtriage.backends.hyperkitty:HyperKittySource",
    "ponymail": "mailtriage.backends.ponymail:PonyMailSource",
    "gmail": "mailtriage.backends.gmail:GmailSource",
    "graph": "mailtriage.backends.microsoft:GraphSource",
    "microsoft": "mailtriage.backends.microsoft:GraphSource",
}

# Personal-account kind -> ("module:MailboxAdapterClass", "module:account_loader"): the
# accounts whose folders the app can browse and organize. The loader takes the account id
# and the user settings and returns the account object the adapter is built on.
MAILBOX_KINDS: dict[str, tuple[str, str]] = {
    "imap": ("mailtriage.backends.imap.adapter:ImapMailbox", "mailtriage.backends.imap.account:load_account"),
    "maildir": ("mailtriage.backends.maildir_account:MaildirMailbox",
                "mailtriage.backends.maildir_account:load_account"),
}

T = TypeVar("T")


class MissingBackend(MailSource):
    """Stands for a configured kind whose implementation is not in this build."""

    kind = "missing"
    thread_id_kind = "missing"
    capabilities = frozenset()

    def __init__(self, name: str, settings: dict[str, Any], kind: str, why: str) -> None:
        super().__init__(name, settings)
        self.kind = kind
        self.why = why

    def check_available(self) -> None:
        raise Unavailable(self.name, self.why)


def backend_class(kind: str) -> type[MailSource]:
    target = BACKEND_KINDS.get(kind)
    if target is None:
        raise KeyError(kind)
    return _load(target)


def build_backend(config: ProjectConfig, entry: MailSourceEntry, user_settings: Any = None) -> MailSource:
    """The backend of one ``mail_sources`` entry. ``user_settings`` (the settings file)
    holds the ``[accounts.<id>]`` tables an account-backed source reads."""
    kind = config.source_kind(entry)
    settings = config.source_settings(entry.name)
    origin = SourceOrigin(project_dir=Path(config.directory), notes=entry.notes, user_settings=user_settings)
    if kind not in BACKEND_KINDS:
        raise ConfigError(config.file, f"Mail sources {entry.name}", f"unknown backend kind {kind!r}",
                          ", ".join(sorted(BACKEND_KINDS)) + " (or set mail_sources.<name>.kind)")
    try:
        cls = backend_class(kind)
    except ImportError as exc:
        if exc.name and exc.name.startswith("mailtriage.backends"):
            return MissingBackend(entry.name, settings, kind,
                                  f"the {kind} backend is not part of this build of mailtriage")
        raise
    return cls(entry.name, settings, origin=origin)


def _load(target: str) -> Any:
    module_name, _, name = target.partition(":")
    return getattr(importlib.import_module(module_name), name)


def open_mailbox(account_id: str, settings: Any):
    """The mailbox adapter of the ``[accounts.<account_id>]`` table of ``settings``.

    Raises:
        ConfigError: the account's settings are invalid (names file and key).
        NotSupported: the account's kind has no mailbox adapter (see :data:`MAILBOX_KINDS`).
    """
    kind = str(settings.account(account_id).get("kind", "imap"))
    if kind not in MAILBOX_KINDS:
        raise NotSupported(account_id, "list", f"accounts of kind {kind!r} cannot be browsed yet")
    adapter, loader = MAILBOX_KINDS[kind]
    return _load(adapter)(_load(loader)(account_id, settings))


@dataclass
class Dispatch:
    """The value of one dispatched op with its resolution (what the recap shows)."""

    resolution: Resolution
    value: Any = None


class SourceSet:
    """The configured mail sources of one run: backends, availability and resolution."""

    def __init__(self, config: ProjectConfig, user_settings: Any = None, *,
                 backends: dict[str, MailSource] | None = None) -> None:
        """``backends`` supplies ready-made backends by name (an embedding caller, the
        contract suite's backend pairs); the other configured entries are built."""
        self.config = config
        self.entries = list(config.mail_sources)
        given = dict(backends or {})
        self.backends: dict[str, MailSource] = {
            e.name: given[e.name] if e.name in given else build_backend(config, e, user_settings) for e in self.entries}
        self.availability = AvailabilityCache(self.backends)
        # Run on every read thread (never on a listing): the application's OpenPGP step.
        self.thread_opener: Callable[[Thread], Thread] | None = None

    def resolve(self, op: Op) -> Resolution:
        return resolve(op, self.entries, self.backends, self.availability)

    def offline_listing(self, list_name: str | None, since: Any, *, limit: int | None = None,
                        local: bool = True) -> tuple[Dispatch, bool] | None:
        """The newest threads of ``list_name`` read without asking any server, and whether
        they are stale (from a summary cache); None when no such answer exists.

        The backend the resolution rule tries first for listing answers if it keeps a
        summary cache (``cached_recent_threads``: nothing is probed; the real listing then
        probes availability and reconciles the cache) or, with ``local``, if it reads a
        local archive and every mandatory backend does too (the ordinary dispatch: its
        availability checks read files, not servers).
        """
        op = Op.LIST_RECENT_THREADS
        for rule_step, entry in resolution_order(op, self.entries):
            backend = self.backends[entry.name]
            # Checked before supports(): a backend's capabilities may need its server (IMAP
            # asks for its Drafts folder), a cache never does.
            if backend.features.cached_listing or backend.supports(op):
                break
        else:
            return None
        if backend.features.cached_listing:
            with OPLOG.record(backend.name, "cached_recent_threads") as rec:
                value = backend.cached_recent_threads(list_name, since, limit=limit)
                rec.size = _size_of(value)
            if value is None:
                return None
            step = Step(entry.name, _role_label(entry), "chosen")  # its summary cache; the server is not asked
            return Dispatch(Resolution(op, entry.name, rule_step, (step,)), list(value)), True
        all_local = all(self.backends[e.name].features.local_archive for e in self.entries if e.mandatory)
        if local and backend.features.local_archive and all_local:
            args = {"limit": limit} if backend.features.listing_limit else {}
            return self.dispatch(op, lambda b: b.list_recent_threads(list_name, since, **args)), False
        return None

    def reading_can_start_early(self) -> bool:
        """Whether a thread may be read in another process of the app before this one is ready
        (start-up's read ahead of the first row, tui/head_start.py): every configured backend
        signs in without tokens (no token may be refreshed by two processes at once)."""
        return all(backend.signs_in_without_tokens for backend in self.backends.values())

    def prepare_reading(self, *, open_message: bool = False) -> None:
        """What a ``read_thread`` does before it reads, done now: the mandatory backends' and the
        chosen backend's availability (their sign-in), then the chosen backend's own preparation
        (``MailSource.prepare_read``; ``open_message``: its first message read too). Start-up's
        child runs it on a thread beside its head start (tui/head_start.py), only where
        :meth:`reading_can_start_early`; the app while it is idle. Raises what the read would."""
        self.preflight()
        res = self.resolve(Op.READ_THREAD)
        res.raise_if_unresolved()
        assert res.chosen is not None  # raise_if_unresolved raised otherwise
        self.backends[res.chosen].prepare_read(open_message=open_message)

    def listing_can_start_early(self) -> bool:
        """Whether the listing may start in another process of the app before this one is
        ready (the app's start-up, tui/head_start.py): the backend the resolution rule tries
        first for listing keeps a summary cache (what that process lists is written there for
        this one), and every configured backend signs in without tokens: that process's
        listing checks the mandatory backends and may fall back to others, and no token may
        be refreshed by two processes at once."""
        if not self.reading_can_start_early():
            return False
        op = Op.LIST_RECENT_THREADS
        for _rule_step, entry in resolution_order(op, self.entries):
            backend = self.backends[entry.name]
            if backend.features.cached_listing or backend.supports(op):  # as offline_listing
                return backend.features.cached_listing
        return False

    def preflight(self) -> None:
        mandatory_preflight(self.entries, self.availability)

    def dispatch(self, op: Op, call: Callable[[MailSource], T], *, backend: str | None = None) -> Dispatch:
        """Run ``call`` on the backend the resolution rule chooses (or the one named).

        Raises MandatoryBackendUnavailable / NoBackendAvailable when unresolved, and
        the backend's own errors otherwise. Every call is recorded in the op log.
        """
        # The mandatory rule: while a mandatory backend is unavailable the run is refused,
        # whatever op and whichever backend (checked once per run: availability is cached).
        self.preflight()
        if backend is not None:
            res = self.named(op, backend)
            chosen = self.backends[backend]
            if not chosen.supports(op):
                raise NotSupported(backend, op.value)
        else:
            res = self.resolve(op)
            res.raise_if_unresolved()
            chosen = self.backends[res.chosen]
        with OPLOG.record(chosen.name, op.value) as rec:
            try:
                value = call(chosen)
            except Unavailable:
                self.availability.forget(chosen.name)
                raise
            rec.size = _size_of(value)
        if op is Op.READ_THREAD and self.thread_opener is not None and isinstance(value, Thread):
            value = self.thread_opener(value)
        return Dispatch(res, value)

    def named(self, op: Op, backend: str) -> Resolution:
        """The recap of an op run on a backend named by the user (``--backend``)."""
        if backend not in self.backends:
            raise ConfigError(self.config.file, "backend", f"no configured backend named {backend!r}",
                              ", ".join(self.backends) or "(none configured)")
        entry = next(e for e in self.entries if e.name == backend)
        outcome = "chosen: named with --backend" if self.backends[backend].supports(op) else f"declines {op.value}"
        return Resolution(op, backend, None, (Step(backend, _role_label(entry), outcome),), named=True)

    def mandatory_abort(self, op: Op) -> Resolution | None:
        """The recap of a run refused at start because a mandatory backend is unavailable
        (every mandatory backend and its outcome), or None when the run may go on."""
        return preflight_resolution(op, self.entries, self.availability)

    def matrix(self) -> list[dict[str, Any]]:
        rows = []
        for entry in self.entries:
            backend = self.backends[entry.name]
            reason = self.availability.reason(entry.name)
            rows.append({
                "backend": entry.name,
                "kind": getattr(backend, "kind", "?"),
                "role": entry.role_text,
                "mandatory": entry.mandatory,
                "thread_id_kind": backend.thread_id_kind,
                "capabilities": {op.value: backend.supports(op) for op in ALL_OPS},
                "available": reason is None,
                "reason": reason,
                "problem": self.availability.problem(entry.name),  # configuration | credentials | unavailable
                "notes": entry.notes,
            })
        return rows

    def close(self) -> None:
        for backend in self.backends.values():
            try:
                backend.close()
            except MailError:
                pass

    def abort(self, opening_only: bool = False) -> None:
        """End every backend's connections at once, from another thread (see ``MailSource.abort``)."""
        for backend in self.backends.values():
            backend.abort(opening_only)


def _size_of(value: Any) -> int | None:
    if isinstance(value, (list, tuple)):
        return len(value)
    messages = getattr(value, "messages", None)
    if isinstance(messages, (list, tuple)):
        return len(messages)
    if isinstance(value, str):
        return len(value)
    return None
