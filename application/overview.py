"""The triage overview of a thread: filed in the tracker, a draft pending, replied.

What the thread list shows beside each row on screen (``SEC-0003 ✎ ↩``), and the way
between a thread and its tracker issue. Each answer costs a few calls, so a front end
asks only for the rows on screen and keeps the answers:

* **filed**: the tracker issue whose status rollup names the thread, from the thread
  index of a tracker that keeps its issues as local files (``local_issue_files``): no
  issue file is read unless it names the thread. A server tracker would need a search
  per row, so it answers "unknown" here (the import still finds the issue).
* **draft pending**: ``list_drafts`` on the thread, through the resolution rule.
* **replied**: ``list_sent_since`` on the thread since the listing window's start.

:func:`thread_statuses` answers for a screen of rows at once: the chosen backend is asked
once per operation for all the threads it accepts (``list_drafts_of``/``list_sent_since_of``:
on IMAP one SELECT and one SEARCH of Drafts and of Sent, not a pair per row); a thread it
cannot read goes the per-thread way of :func:`thread_status`.

An operation no backend offers leaves that part unknown (``None``), never an error.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import Callable, Sequence

from mailtriage.application.project import Project
from mailtriage.backends.contract import Op, ThreadId
from mailtriage.backends.errors import BackendFailure, NoBackendAvailable, NotSupported, Unavailable
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.trackers.contract import Tracker
from mailtriage.trackers.errors import NotFound
from mailtriage.application.flows import linking
from mailtriage.application.flows.threadindex import thread_key


@frozen_dataclass
class ThreadStatus:
    """One thread's place in the triage: each part None when it cannot be told."""

    issue: str | None = None  # the tracker issue that holds it ("SEC-0003")
    drafts: int | None = None  # pending drafts on it
    replied: bool | None = None  # a reply of ours was sent since the window's start

    @property
    def words(self) -> list[str]:
        """What a person reads: "filed as SEC-0003", "draft pending", "replied"."""
        out = []
        if self.issue:
            out.append(f"filed as {self.issue}")
        if self.drafts:
            out.append("draft pending" if self.drafts == 1 else f"{self.drafts} drafts pending")
        if self.replied:
            out.append("replied")
        return out


def filed_issue(tracker: Tracker | None, thread_id: ThreadId) -> str | None:
    """The issue whose rollup names ``thread_id``, from the thread index; None when no
    issue does, or when the tracker is not one of local issue files (see the module)."""
    if tracker is None or not tracker.features.local_issue_files:
        return None
    return linking.find_issue_for_thread(tracker, thread_key(thread_id), thread_id)


def issue_thread(tracker: Tracker, issue_id: str) -> ThreadId | None:
    """The thread an issue's status rollup names (its Import entry), or None.

    Raises:
        NotFound: no such issue.
    """
    return linking.rollup_state(tracker, issue_id).thread_id()


def _count(project: Project, op: Op, thread_id: ThreadId, call) -> int | None:
    try:
        got = linking.dispatch_thread_op(project.sources, op, thread_id, call)
    except (NotSupported, NoBackendAvailable, Unavailable):
        return None
    return len(got.value)


def thread_status(project: Project, thread_id: ThreadId, since: datetime, *,
                  tracker: Tracker | None = None) -> ThreadStatus:
    """Filed, drafts pending and replied for one thread (blocking: a few backend calls).

    Raises:
        MandatoryBackendUnavailable, and a backend's errors other than "not offered".
    """
    try:
        issue = filed_issue(tracker, thread_id)
    except NotFound:
        issue = None
    drafts = _count(project, Op.LIST_DRAFTS, thread_id, lambda b: b.list_drafts(thread_id))
    sent = _count(project, Op.LIST_SENT_SINCE, thread_id, lambda b: b.list_sent_since(thread_id, since))
    return ThreadStatus(issue, drafts, None if sent is None else sent > 0)


def _counts(project: Project, op: Op, thread_ids: list[ThreadId], many: Callable, one: Callable,
            backend_lock: AbstractContextManager) -> dict[ThreadId, int | None]:
    """``op``'s answer's length per thread: one batched call on the chosen backend for the
    threads it accepts, the per-thread dispatch for the others. None: not told. Each backend
    call holds ``backend_lock`` for itself only."""
    out: dict[ThreadId, int | None] = {}
    with backend_lock:  # resolving asks the backends (an IMAP source's first capabilities: a SELECT)
        res = project.sources.resolve(op)
        chosen = project.sources.backends[res.chosen] if res.chosen else None
        batch = [t for t in thread_ids if chosen is not None and chosen.accepts(t)]
    if batch:
        try:
            with backend_lock:
                got = project.sources.dispatch(op, lambda b: many(b, batch)).value
        except (NotSupported, NoBackendAvailable, Unavailable, BackendFailure):
            got = {}  # a failed batch leaves this part unknown on every row, the other part told
        out.update({t: (len(got[t]) if t in got else None) for t in batch})
    for thread_id in thread_ids:
        if thread_id not in out:
            with backend_lock:
                out[thread_id] = _count(project, op, thread_id, lambda b, t=thread_id: one(b, t))
    return out


#: Threads looked up in the tracker under one hold of its lock (the thread index answers each
#: from memory; a chunk bounds how long another tracker call waits).
TRACKER_CHUNK = 50


def thread_statuses(project: Project, thread_ids: Sequence[ThreadId], since: datetime, *,
                    tracker: Tracker | None = None, backend_lock: AbstractContextManager | None = None,
                    tracker_lock: AbstractContextManager | None = None,
                    current_tracker: Callable[[], Tracker | None] | None = None) -> dict[ThreadId, ThreadStatus]:
    """:func:`thread_status` for the threads of a screen at once (blocking): drafts and
    sent are asked of the backend once each for all of them (see the module).

    ``backend_lock`` is held for each backend call and ``tracker_lock`` for each chunk of
    tracker lookups, never for the whole screen: a read the user waits on goes in between
    (both reusable context managers; none by default). ``current_tracker``, when given, is
    asked for the tracker under ``tracker_lock`` at each chunk (it may be reopened in between).

    Raises:
        MandatoryBackendUnavailable, and a backend's errors other than "not offered".
    """
    backend_lock = backend_lock if backend_lock is not None else nullcontext()
    tracker_lock = tracker_lock if tracker_lock is not None else nullcontext()
    wanted = list(dict.fromkeys(thread_ids))
    drafts = _counts(project, Op.LIST_DRAFTS, wanted, lambda b, ids: b.list_drafts_of(ids),
                     lambda b, t: b.list_drafts(t), backend_lock)
    sent = _counts(project, Op.LIST_SENT_SINCE, wanted, lambda b, ids: b.list_sent_since_of(ids, since),
                   lambda b, t: b.list_sent_since(t, since), backend_lock)
    issues: dict[ThreadId, str | None] = {}
    for start in range(0, len(wanted), TRACKER_CHUNK):
        with tracker_lock:
            now = current_tracker() if current_tracker is not None else tracker
            for thread_id in wanted[start:start + TRACKER_CHUNK]:
                try:
                    issues[thread_id] = filed_issue(now, thread_id)
                except NotFound:
                    issues[thread_id] = None
    out = {}
    for thread_id in wanted:
        replied = sent[thread_id]
        out[thread_id] = ThreadStatus(issues[thread_id], drafts[thread_id], None if replied is None else replied > 0)
    return out
