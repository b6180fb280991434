"""One table from a mail-source operation to the backend call that runs it.

The CLI's ``mail`` command, the TUI's backend console and the panes all run an operation
through :func:`operation_call`; the arguments an operation needs travel in
:class:`OpArgs`. ``create_draft`` is not in the table: a draft is proposed, shown and
confirmed (the reply flow), never run blind.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable

from mailtriage.application.errors import UsageError
from mailtriage.backends.contract import MailSource, Op, ThreadId
from mailtriage.core.lean_dataclass import frozen_dataclass


@frozen_dataclass
class OpArgs:
    """What one operation is called with; each operation reads the fields it needs."""

    thread_id: ThreadId | None = None
    list_name: str | None = None
    since: datetime | None = None
    # Ask for the newest threads only; honoured by a backend that declares a listing limit.
    limit: int | None = None


def _list_recent_threads(backend: MailSource, a: OpArgs) -> Any:
    if a.limit and backend.features.listing_limit:
        return backend.list_recent_threads(a.list_name, a.since, limit=a.limit)
    return backend.list_recent_threads(a.list_name, a.since)


CALLS: dict[Op, Callable[[MailSource, OpArgs], Any]] = {
    Op.LIST_RECENT_THREADS: _list_recent_threads,
    Op.READ_THREAD: lambda backend, a: backend.read_thread(a.thread_id),
    Op.LIST_DRAFTS: lambda backend, a: backend.list_drafts(a.thread_id),
    Op.LIST_SENT_SINCE: lambda backend, a: backend.list_sent_since(a.thread_id, a.since),
    Op.THREAD_URL: lambda backend, a: backend.thread_url(a.thread_id),
}

NEEDS_THREAD = frozenset({Op.READ_THREAD, Op.LIST_DRAFTS, Op.LIST_SENT_SINCE, Op.THREAD_URL})


def operation_call(op: Op, args: OpArgs) -> Callable[[MailSource], Any]:
    """The call that runs ``op`` with ``args`` on whichever backend the resolution rule picks.

    Raises:
        UsageError: ``op`` is ``create_draft`` (proposed and confirmed, never run blind).
    """
    run = CALLS.get(op)
    if run is None:
        raise UsageError("create_draft is proposed and confirmed from a thread, never run blind")
    return lambda backend: run(backend, args)


def limitable(backend: MailSource) -> bool:
    """Whether ``backend``'s listing can return only the newest threads, fast (declared)."""
    return backend.features.listing_limit
