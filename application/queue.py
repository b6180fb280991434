"""The team's triage queue: every report of the window with its state, age, owner and deadlines.

The state a security team shares lives where it already shares it: the list mailbox and the
tracker. Nothing here keeps a server, a lock or a file of its own:

* **state**, derived from mail and tracker (:class:`QueueState`): ``new`` (no team reply),
  ``acknowledged`` (a message of the team on the thread, a colleague's reply found in the list
  archive included, or a draft of ours pending), ``imported`` (a tracker issue holds the
  thread), ``in_progress`` (the issue has an assignee or an in-progress label),
  ``fixed`` (a fix or CVE label the project declares), ``closed`` (issue closed or disclosed);
* **owner**: the tracker issue's assignee (local-files ``assignees``, GitHub and Jira);
* **deadlines**: a first-response target ``queue.first_response_days`` after the reporter's
  oldest unanswered message, and a disclosure date from the issue's ``### Disclosure date``
  field, else ``queue.disclosure_days`` after the report was opened;
* **order**: what needs a human first (:attr:`QueueRow.sort_key`).

The clock is injected (``now``): nothing here reads the wall clock, so a test or a
front end decides what "overdue" means at which instant.

Claim and release are proposals (:func:`propose_claim`, :func:`propose_release`), written
with the tracker contract's ``edit --add-assignee/--remove-assignee``. A claim that races
another triager's is decided by the tracker: on local files a rejected push re-reads (pull)
and asks again; GitHub and Jira read the issue back. The loser is told who holds it
(:class:`ClaimLost`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Mapping

from mailtriage.backends.contract import ThreadId
from mailtriage.workflows.proposals import Proposal


class QueueState(str, enum.Enum):
    """Where a report stands, derived from mail and tracker (the value is the JSON and CLI word)."""

    NEW = "new"  # no message of the team on the thread, no draft of ours
    ACKNOWLEDGED = "acknowledged"  # the team wrote (receipt or reply), or a draft of ours is pending
    IMPORTED = "imported"  # a tracker issue holds the thread
    IN_PROGRESS = "in_progress"  # the issue has an assignee or an in-progress label
    FIXED = "fixed"  # a fix or CVE label (queue.fixed_labels) is on the issue
    CLOSED = "closed"  # the issue is closed, or a disclosed label (queue.closed_labels) is on it


class Breach(str, enum.Enum):
    """A deadline that is past at the queue's ``now``."""

    FIRST_RESPONSE = "first_response"  # the reporter waits longer than queue.first_response_days
    DISCLOSURE = "disclosure"  # the disclosure date is past and the report is not closed


@dataclass(frozen=True)
class QueueSettings:
    """What project.md says about the queue (``queue.*``), with its defaults."""

    first_response_days: int = 2  # queue.first_response_days
    disclosure_days: int = 90  # queue.disclosure_days
    team: tuple[str, ...] = ()  # addresses of the team: queue.team, the list's own address, our identity
    team_domain: str = ""  # the security list's domain: a sender of it (or a parent) is the team
    in_progress_labels: tuple[str, ...] = ("in progress", "in-progress")  # queue.in_progress_labels
    fixed_labels: tuple[str, ...] = ("fixed", "cve assigned", "cve-assigned")  # queue.fixed_labels
    closed_labels: tuple[str, ...] = ("disclosed",)  # queue.closed_labels


@dataclass(frozen=True)
class MailFact:
    """One message of a report thread, as the queue needs it (no body)."""

    sender: str  # the From address, as the message says (raw)
    date: datetime | None  # its Date (aware); None: undated (ignored for ages)


@dataclass(frozen=True)
class ThreadFacts:
    """A report thread of the window: what the mail says about it."""

    thread_id: ThreadId
    subject: str  # raw; front ends sanitise
    messages: tuple[MailFact, ...]  # in thread order; the first is the report
    drafts: int | None = None  # drafts of ours pending on it (None: cannot be told)


@dataclass(frozen=True)
class IssueFacts:
    """The tracker issue that holds a thread: what the tracker says about it."""

    id: str  # "SEC-0003", "owner/repo#12", "SEC-12"
    url: str
    state: str  # "open" or "closed"
    labels: tuple[str, ...] = ()
    assignees: tuple[str, ...] = ()  # in the tracker's order; the first is the owner
    disclosure: datetime | None = None  # the issue's own "### Disclosure date" field
    first_response: datetime | None = None  # the issue's own "### First response due" field


@dataclass(frozen=True)
class QueueRow:
    """One report of the queue. Text fields are raw: the front ends sanitise them."""

    thread_id: ThreadId
    subject: str
    reporter: str  # the report's From address (raw)
    state: QueueState
    opened: datetime | None  # the report's date
    last_reporter_message: datetime | None  # the reporter's newest message
    unanswered_since: datetime | None  # the reporter's oldest message no team message followed; None: answered
    owner: str | None  # the issue's (first) assignee; None: nobody holds it
    issue: str | None  # the tracker issue's ID; None: not imported
    issue_url: str | None
    first_response_due: datetime | None  # unanswered_since + first_response_days (or the issue's field)
    disclosure_due: datetime | None  # the issue's disclosure date, else opened + disclosure_days
    breaches: tuple[Breach, ...] = ()  # which deadlines are past at the queue's ``now``
    sort_key: tuple = ()  # "needs a human first": sort ascending

    def to_json(self) -> dict[str, Any]:
        """JSON-ready, raw text (the CLI passes it through the sanitising module)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Queue:
    """The queue at ``now``: rows sorted by what needs a human first, and what could not be told."""

    rows: tuple[QueueRow, ...]
    now: datetime
    warnings: tuple[str, ...] = ()

    def filtered(self, *, state: QueueState | None = None, owner: str | None = None) -> "Queue":
        """Rows of one state and/or one owner (``owner=""``: nobody's)."""
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError


class ClaimLost(Exception):
    """A claim another triager won: ``holder`` holds the issue (the message says so)."""

    def __init__(self, issue: str, holder: str) -> None:
        super().__init__(f"{issue} is held by {holder}")
        self.issue = issue
        self.holder = holder


def queue_settings(config: Any) -> QueueSettings:
    """``queue.*`` of project.md (validated by core.projectconfig) with the defaults."""
    raise NotImplementedError


def derive_queue(threads: Iterable[ThreadFacts], issues: Mapping[ThreadId, IssueFacts], settings: QueueSettings,
                 now: datetime, *, warnings: Iterable[str] = ()) -> Queue:
    """The queue of ``threads`` with the issue of each (``issues``, by thread) at ``now``. Pure."""
    raise NotImplementedError


def build_queue(project: Any, *, now: datetime, list_name: str | None = None, since: datetime | None = None,
                state: QueueState | None = None, owner: str | None = None) -> Queue:
    """The queue of the project's list in its window (``since``: the configured one), read
    through the project's sources and tracker, filtered by ``state`` and ``owner``.

    Example: ``build_queue(project, now=datetime.now(timezone.utc), state=QueueState.NEW)``
    """
    raise NotImplementedError


def propose_claim(tracker: Any, issue: str, who: str) -> Proposal:
    """The proposal that makes ``who`` the owner (assignee) of ``issue``; writes nothing.

    Blocked when someone else holds it already (``facts["holder"]``). Applied, its write raises
    :class:`ClaimLost` when another triager won the race (the tracker decides)."""
    raise NotImplementedError


def propose_release(tracker: Any, issue: str, who: str) -> Proposal:
    """The proposal that removes ``who`` from the assignees of ``issue``; empty when ``who``
    does not hold it."""
    raise NotImplementedError


def sync_tracker(tracker: Any) -> dict[str, Any]:
    """Bring a local-files working copy up to date with its remote (fetch, fast-forward);
    nothing to do for a server tracker. Returns {"synced": bool, "detail": str}."""
    raise NotImplementedError


__all__ = ["Breach", "ClaimLost", "IssueFacts", "MailFact", "Queue", "QueueRow", "QueueSettings", "QueueState",
           "ThreadFacts", "build_queue", "derive_queue", "propose_claim", "propose_release", "queue_settings",
           "sync_tracker"]
