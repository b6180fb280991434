"""The mail side of the application service: the project's sources as both front ends ask them,
the listing window, thread ids, the mandatory rule, one contract operation by hand.

A part of :class:`mailtriage.application.service.Service` (between it and
:class:`~mailtriage.application.service_triage.TriageSide`), in a module of its own so each
stays readable: the attributes are the service's (set by its ``__init__``), and every call that
reaches a backend takes the service's backend lock. The command line's ``sources``, ``list`` and
``mail`` commands call these methods, as the app does: no front end holds the project itself
(tests/application/test_facade.py).

Errors: the command line's arguments are read with ``UsageError`` (exit 2, its message as it
is); the app's backend console calls :meth:`MailSide.run_op`, which raises the same problems as
``ValueError``, the message unchanged.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mailtriage.application.errors import UsageError
from mailtriage.application.service_triage import TriageSide
from mailtriage.core.lean_dataclass import frozen_dataclass

if TYPE_CHECKING:
    from mailtriage.application.list_read import NoList
    from mailtriage.application.operations import OpArgs
    from mailtriage.backends.contract import Op, ThreadId
    from mailtriage.backends.registry import Resolution, SourceSet
    from mailtriage.backends.security_cc import CcResolution
    from mailtriage.core.errors import ConfigError

__all__ = ["MailSide", "SourcesReport"]


@frozen_dataclass
class SourcesReport:
    """What ``mailtriage sources`` shows (see :meth:`MailSide.sources_report`)."""

    title: str
    file: Path  # project.md
    matrix: list[dict[str, Any]]
    #: Op value -> the backend the resolution rule picks, in the contract's order.
    resolutions: dict[str, "Resolution"]
    #: Why runs are refused (a mandatory backend down), or None.
    abort: "Resolution | None"
    security_cc: "CcResolution"
    #: The configuration error of a mandatory backend, or None.
    config_error: "ConfigError | None"


class MailSide(TriageSide):
    sources: SourceSet | None

    # -- what the command line gives (no backend call) -------------------------------
    @property
    def project_title(self) -> str:
        """The title project.md gives, as written (may be empty: ``Service.title`` then names the folder)."""
        return self.opened.title

    def since(self) -> datetime:
        """Start of the listing window: ``import.since`` or ``import.since_days`` (default 30)."""
        from mailtriage.application.window import configured_since  # why: loads on first use, not at start-up
        return _value_error(lambda: configured_since(self.config))

    def since_arg(self, text: str | None, *, label: str = "--since") -> datetime:
        """The window ``text`` names (ISO date/instant or Nd), or the configured one when None.

        Raises:
            UsageError: ``text`` cannot be read (the message names ``label``).
        """
        from mailtriage.application.window import parse_since  # why: loads on first use, not at start-up
        return parse_since(text, self.config, label=label)

    def list_name(self, given: str | None = None) -> str | None:
        """``given`` (``--list``), or the configured ``security_list`` as written."""
        return self.opened.list_name(given)

    def thread_id(self, text: str | None, backend: str | None = None) -> ThreadId:
        """``KIND:VALUE`` read as a thread id; a bare value takes ``backend``'s kind.

        Raises:
            UsageError: the text is empty or not a thread id.
        """
        return self.opened.thread_id(text, backend)

    def thread_id_for(self, text: str | None, op: Op) -> ThreadId:
        """A thread id whose bare form takes the kind of the backend that resolves ``op``."""
        with self._lock:  # the resolution may check a backend's availability
            return self.opened.thread_id_for(text, op)

    def unconfigured_list(self, given: str | None) -> NoList | None:
        """None when a read of the list has one (``given``, else ``security_list``), else the
        warning, and whether the run stops (a mandatory backend would read the whole folder)."""
        from mailtriage.application.list_read import unconfigured_list  # why: loads on first use, not at start-up
        return unconfigured_list(self.opened.sources, given)

    # -- the sources: availability, resolution, the mandatory rule ---------------------
    def check_sources(self):
        """Availability of each backend (cached per run), resolution per op, and the
        MandatoryBackendUnavailable error when a mandatory backend is down (else None)."""
        with self._lock:
            return self.opened.check_sources()

    def resolution(self, op: Op) -> "Resolution":
        """Which backend serves ``op`` (a failure names it). Under the lock: a forgotten availability
        is checked again, a login on the connection the other calls use."""
        with self._lock:
            return self.opened.sources.resolve(op)

    def mandatory_abort(self, op: Op) -> "Resolution | None":
        """The mandatory rule, checked at the start of a run: why ``op`` must not run (a
        mandatory backend is down), else None."""
        with self._lock:
            return self.opened.sources.mandatory_abort(op)

    def preflight(self) -> None:
        """The mandatory rule for a whole run. Raises MandatoryBackendUnavailable (or the
        ConfigError of a mandatory backend)."""
        with self._lock:
            self.opened.sources.preflight()

    def sources_report(self) -> SourcesReport:
        """The capability matrix, the resolution of every op, why runs are refused and a
        mandatory backend's configuration error: shown whole, as a diagnosis."""
        from mailtriage.backends.contract import ALL_OPS  # why: loads on first use, not at start-up
        with self._lock:
            project = self.opened
            sources = project.sources
            matrix = sources.matrix()
            resolutions = {op.value: sources.resolve(op) for op in ALL_OPS}
            return SourcesReport(project.config.title, project.config.file, matrix, resolutions,
                                 sources.mandatory_abort(ALL_OPS[0]), project.security_cc(),
                                 project.mandatory_config_error())

    def keep_encrypted(self) -> None:
        """OpenPGP messages are read as they came (the command line's ``--no-decrypt``): each
        message's crypto field still says it is encrypted."""
        self.opened.pgp.decrypt = False

    # -- operations (blocking) ---------------------------------------------
    def list_threads(self, list_name: str | None, *, since: datetime | None = None, limit: int | None = None):
        """Dispatch ``list_recent_threads`` since ``since`` (default: the configured window);
        returns the registry's Dispatch.

        ``limit`` asks for the newest threads only, from a backend that declares a listing
        limit (IMAP walks the folder newest first and stops early); other backends ignore
        it and return everything.

        Raises:
            MandatoryBackendUnavailable, NoBackendAvailable, and the backend's errors.
        """
        with self._lock:  # the window too: a service that opens later (head start) has no config yet
            return self.opened.list_threads(list_name, since if since is not None else self.since(), limit=limit)

    def read_thread(self, thread_id: ThreadId, *, backend: str | None = None, urgent: bool = True):
        """``backend``: that configured backend instead of the resolved one. ``urgent``: the user
        waits on it (before a listing's next part); not so a read ahead."""
        with self._lock.urgently() if urgent else self._lock:
            return self.opened.read_thread(thread_id, backend=backend)

    def thread_url(self, thread_id: ThreadId):
        with self._lock:
            return self.opened.thread_url(thread_id)

    def op_args(self, op: Op, args: dict[str, Any], backend: str | None = None, *, label: str = "since") -> OpArgs:
        """The arguments of one contract op, read from ``args`` (``list``, ``since``,
        ``thread_id``; text as typed).

        Raises:
            UsageError: the thread id or the window cannot be read, or the op is create_draft.
        """
        from mailtriage.application.operations import OpArgs  # why: loads on first use, not at start-up
        from mailtriage.backends.contract import Op  # why: loads on first use, not at start-up
        project = self.opened
        if op is Op.LIST_RECENT_THREADS:
            return OpArgs(list_name=project.list_name(args.get("list")),
                          since=project.since(args.get("since"), label=label))
        if op is Op.CREATE_DRAFT:
            raise UsageError("create_draft is proposed and confirmed from a thread (press r), never run blind")
        thread_id = project.thread_id(args.get("thread_id"), backend)
        if op is Op.LIST_SENT_SINCE:
            return OpArgs(thread_id=thread_id, since=project.since(args.get("since"), label=label))
        return OpArgs(thread_id=thread_id)

    def run(self, op: Op, op_args: OpArgs, *, backend: str | None = None):
        """Run one contract op through the resolution rule (or on ``backend``): a Dispatch.

        Raises:
            MandatoryBackendUnavailable, NoBackendAvailable, and the backend's errors.
        """
        with self._lock:
            return self.opened.run(op, op_args, backend=backend or None)

    def run_op(self, op: Op, backend: str | None, args: dict[str, Any]):
        """Run one contract op by hand (backend console). ``backend`` None: resolved.

        Raises:
            ValueError: the thread id or the window cannot be read, or the op is create_draft.
        """
        return self.run(op, _value_error(lambda: self.op_args(op, args, backend)), backend=backend)


def _value_error(read):
    """``read()``, with the application's UsageError raised as the ValueError the UI shows."""
    try:
        return read()
    except UsageError as exc:
        raise ValueError(str(exc)) from exc
