"""The team's triage queue: every report of the window with its state, age, owner and deadlines.

The state a security team shares lives where it already shares it: the list mailbox and the
tracker. Nothing here keeps a server or a lock of its own; the only file is derived data (what
was read of each thread and issue file, application/queue_records.py), rebuilt when missing:

* **state**, derived from mail and tracker (:class:`QueueState`): ``new`` (no team reply),
  ``acknowledged`` (a message of the team on the thread, a colleague's reply found in the list
  archive included, or a draft of ours pending), ``imported`` (a tracker issue holds the
  thread), ``in_progress`` (the issue has an assignee or an in-progress label),
  ``fixed`` (a label of ``queue.fixed_labels``, or a CVE ID in the issue's ``### CVE`` field),
  ``closed`` (issue closed, or a label of ``queue.closed_labels``: disclosed);
* **owner**: the tracker issue's assignee (local-files ``assignees``, GitHub and Jira);
* **deadlines**: a first-response target ``queue.first_response_days`` after the reporter's
  oldest unanswered message while no team message exists (a follow-up after a team reply is
  shown as waiting, ``unanswered_since``, and sorted ahead, but is no first-response breach;
  on a fixed or closed report it does not sort ahead: a closing "thanks" needs nobody), and a disclosure date from the issue's ``### Disclosure date``
  field, else ``queue.disclosure_days`` after the report was opened;
* **order**: what needs a human first (:attr:`QueueRow.sort_key`).

The clock is injected (``now``): nothing here reads the wall clock, so a test or a
front end decides what "overdue" means at which instant.

Claim and release are proposals (:func:`propose_claim`, :func:`propose_release`), written
with the tracker contract's ``edit --add-assignee/--remove-assignee``. A claim that races
another triager's is decided by the tracker: on local files a rejected push re-reads (pull)
and asks again; GitHub reads the issue back; Jira reads its change history (the first claim
of the free issue holds it, :func:`_first_claimant`). The loser is told who holds it
(:class:`ClaimLost`).
"""

from __future__ import annotations

import enum
import os
import random
import re
import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from mailtriage.application import queue_records as records

from mailtriage.backends.contract import Op, Thread, ThreadId
from mailtriage.backends.errors import BackendFailure, NoBackendAvailable, NotSupported, Unavailable
from mailtriage.backends.security_cc import configured_address
from mailtriage.core.collector import collector_paused
from mailtriage.core.errors import ConfigError
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.trackers import fields as fieldsmod
from mailtriage.trackers import vcs
from mailtriage.trackers.contract import EditRequest, Tracker
from mailtriage.trackers.errors import BackendError, NotFound, Refused, TrackerError
from mailtriage.trackers.values import IssueView
from mailtriage.application.flows import linking, sweep
from mailtriage.application.flows.errors import ApplicationError
from mailtriage.application.flows.proposals import BlockedBy, Field, Proposal, Write, WriteKind
from mailtriage.application.flows.publish import attribution
from mailtriage.application.flows.threadindex import thread_key

#: The issue's own deadline fields (``### Disclosure date``, ``### First response due``).
DISCLOSURE_FIELD = "Disclosure date"
CVE_FIELD = "CVE"
_CVE_ID = re.compile(r"\bCVE-\d{4}-\d{4,}\b")
FIRST_RESPONSE_FIELD = "First response due"
DEFAULT_FIRST_RESPONSE_DAYS = 2
DEFAULT_DISCLOSURE_DAYS = 90
MAX_DAYS = 3650  # a queue deadline of more than ten years is a typo (and would overflow a date)


class QueueState(str, enum.Enum):
    """Where a report stands, derived from mail and tracker (the value is the JSON and CLI word)."""

    NEW = "new"  # no message of the team on the thread, no draft of ours
    ACKNOWLEDGED = "acknowledged"  # the team wrote (receipt or reply), or a draft of ours is pending
    IMPORTED = "imported"  # a tracker issue holds the thread
    IN_PROGRESS = "in_progress"  # the issue has an assignee or an in-progress label
    FIXED = "fixed"  # a fix or CVE label (queue.fixed_labels) is on the issue, or a CVE ID in its CVE field
    CLOSED = "closed"  # the issue is closed, or a disclosed label (queue.closed_labels) is on it
    AUTOMATED = "automated"  # not a report: a bounce, an auto-reply, a notification, spam or a thread the team started (no issue holds it)
    UNKNOWN = "unknown"  # the tracker could not be asked: whether an issue holds it (and whose) is not known


class Breach(str, enum.Enum):
    """A deadline that is past at the queue's ``now``."""

    FIRST_RESPONSE = "first_response"  # no team message yet, longer than queue.first_response_days after the report
    DISCLOSURE = "disclosure"  # the disclosure date is past and the report is not closed


@dataclass(frozen=True)  # init=False fields: frozen_dataclass hands it to @dataclass anyway
class QueueSettings:
    """What project.md says about the queue (``queue.*``), with its defaults."""

    first_response_days: int = DEFAULT_FIRST_RESPONSE_DAYS  # queue.first_response_days
    disclosure_days: int = DEFAULT_DISCLOSURE_DAYS  # queue.disclosure_days
    team: tuple[str, ...] = ()  # addresses of the team (lower case): queue.team and the list's own address
    team_domain: str = ""  # the security list's domain: a sender of it (or of a parent) is the team
    team_domains: tuple[str, ...] = ()  # queue.team entries that are domains (example.org, @example.org)
    #: the security list's own address: its replies are the team's, but a thread it starts is no
    #: proof the team did (DMARC munging: "Alice via security" <security@...>, a forwarded report)
    list_address: str = ""
    in_progress_labels: tuple[str, ...] = ("in progress", "in-progress")  # queue.in_progress_labels
    fixed_labels: tuple[str, ...] = ("fixed", "cve assigned", "cve-assigned")  # queue.fixed_labels
    closed_labels: tuple[str, ...] = ("disclosed",)  # queue.closed_labels

    # the label checks of every row, as sets made once (lower case: labels compare without case)
    in_progress_set: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)
    fixed_set: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)
    closed_set: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "in_progress_set", frozenset(x.lower() for x in self.in_progress_labels))
        object.__setattr__(self, "fixed_set", frozenset(x.lower() for x in self.fixed_labels))
        object.__setattr__(self, "closed_set", frozenset(x.lower() for x in self.closed_labels))

    def names(self, address: str) -> bool:
        """A sender the settings name as the team: an address of ``queue.team``, or of a whole
        domain ``queue.team`` lists; not merely of the list's domain (a colleague may report a bug
        to the list like anyone), nor the list's own address (a list that rewrites a reporter's
        From for DMARC sends her report as itself)."""
        address = address.strip().lower()
        if not address or address == self.list_address:
            return False
        return address in self.team or address.rpartition("@")[2] in self.team_domains

    def is_team(self, address: str, reporter: str) -> bool:
        """A sender of the team: listed in ``team``, or of the list's domain (or a parent of it),
        never the reporter themself."""
        address = address.strip().lower()
        if not address or address == reporter:
            return False
        if address in self.team:
            return True
        own = address.rpartition("@")[2]
        if own in self.team_domains:
            return True
        domain = self.team_domain
        return bool(domain and own and (own == domain or domain.endswith("." + own)))


@frozen_dataclass
class MailFact:
    """One message of a report thread, as the queue needs it (no body)."""

    sender: str  # the From address, as the message says (raw)
    date: datetime | None  # its Date (aware); None: undated (ignored for ages)


@frozen_dataclass
class ThreadFacts:
    """A report thread of the window: what the mail says about it."""

    thread_id: ThreadId
    subject: str  # raw; front ends sanitise
    messages: tuple[MailFact, ...]  # in thread order; the first is the report
    drafts: int | None = None  # drafts of ours pending on it (None: cannot be told)
    automated: str | None = None  # why its first message is no report (automated_reason), None: a person's


@frozen_dataclass
class IssueFacts:
    """The tracker issue that holds a thread: what the tracker says about it."""

    id: str  # "SEC-0003", "owner/repo#12", "SEC-12"
    url: str
    state: str  # "open" or "closed"
    labels: tuple[str, ...] = ()
    assignees: tuple[str, ...] = ()  # in the tracker's order; the first is the owner
    disclosure: datetime | None = None  # the issue's own "### Disclosure date" field
    first_response: datetime | None = None  # the issue's own "### First response due" field
    cve: str | None = None  # a CVE ID in the issue's "### CVE" field: counts as fixed (CVE assigned)
    unreadable: tuple[str, ...] = ()  # deadline fields whose text is no date: warned, and no deadline invented
    unknown: bool = False  # the tracker could not be asked (UNKNOWN_ISSUE): no state is derived from "no issue"


#: What stands for the issue of a thread when the tracker could not be asked (a server down).
UNKNOWN_ISSUE = IssueFacts("", "", "unknown", unknown=True)


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.astimezone(timezone.utc).replace(microsecond=0).isoformat()


@frozen_dataclass
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
    automated: str | None = None  # state automated: why the first message is no report ("bounce", "spam", ...)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready, raw text (the CLI passes it through the sanitising module)."""
        return {
            "thread_id": str(self.thread_id), "subject": self.subject, "reporter": self.reporter,
            "state": self.state.value, "opened": _iso(self.opened),
            "last_reporter_message": _iso(self.last_reporter_message),
            "unanswered_since": _iso(self.unanswered_since), "owner": self.owner, "issue": self.issue,
            "issue_url": self.issue_url, "first_response_due": _iso(self.first_response_due),
            "disclosure_due": _iso(self.disclosure_due), "breaches": [b.value for b in self.breaches],
            "automated": self.automated,
        }


@frozen_dataclass
class Queue:
    """The queue at ``now``: rows sorted by what needs a human first, and what could not be told."""

    rows: tuple[QueueRow, ...]
    now: datetime
    warnings: tuple[str, ...] = ()

    def filtered(self, *, state: QueueState | None = None, owner: str | None = None) -> "Queue":
        """Rows of one state and/or one owner (``owner=""``: nobody's)."""
        rows = self.rows
        if state is not None:
            rows = tuple(r for r in rows if r.state is state)
        if owner is not None:
            rows = tuple(r for r in rows if (r.owner or "") == owner)
        return replace(self, rows=rows)

    def to_json(self) -> dict[str, Any]:
        return {"now": _iso(self.now), "rows": [r.to_json() for r in self.rows], "warnings": list(self.warnings)}


class ClaimLost(ApplicationError):
    """A claim another triager won: ``holder`` holds the issue (the message says so)."""

    def __init__(self, issue: str, holder: str) -> None:
        super().__init__(f"{issue} is held by {holder}")
        self.issue = issue
        self.holder = holder


class ClaimUnsettled(ApplicationError):
    """A claim race whose undo did not land: ``first`` claimed ``issue`` first (the change
    history says so) but ``holder`` holds it now, and putting ``first`` back failed."""

    def __init__(self, issue: str, holder: str, first: str, detail: str) -> None:
        super().__init__(f"{issue} is held by {holder} now, but {first} claimed it first: putting {first} back "
                         f"failed ({detail}); the issue's owner is not settled. Check it, and assign it to "
                         f"{first} in the tracker (or claim again)")
        self.issue = issue
        self.holder = holder
        self.first = first


# -- settings ---------------------------------------------------------------------------


def _names(config: Any, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = config.get(key) if config is not None else None
    if value is None:
        return default
    if isinstance(value, str):
        value = [value]
    return tuple(str(v).strip().lower() for v in value)


def _days(config: Any, key: str, default: int) -> int:
    value = config.get(key) if config is not None else None
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_DAYS:
        raise ConfigError(config.file, key, f"is {value!r}", f"a whole number of days from 0 to {MAX_DAYS}, e.g. 7")
    return value


def queue_settings(config: Any) -> QueueSettings:
    """``queue.*`` of project.md (validated by core.projectconfig) with the defaults."""
    listed = configured_address(config.get("security_list")) if config is not None else None
    entries = _names(config, "queue.team", ())
    team = tuple(e for e in entries if "@" in e.lstrip("@"))
    domains = tuple(e.lstrip("@") for e in entries if "@" not in e.lstrip("@"))
    if listed:
        team = (*team, listed.lower())
    defaults = QueueSettings()
    return QueueSettings(
        first_response_days=_days(config, "queue.first_response_days", DEFAULT_FIRST_RESPONSE_DAYS),
        disclosure_days=_days(config, "queue.disclosure_days", DEFAULT_DISCLOSURE_DAYS),
        team=team,
        team_domains=domains,
        team_domain=listed.rpartition("@")[2].lower() if listed else "",
        list_address=listed.lower() if listed else "",
        in_progress_labels=_names(config, "queue.in_progress_labels", defaults.in_progress_labels),
        fixed_labels=_names(config, "queue.fixed_labels", defaults.fixed_labels),
        closed_labels=_names(config, "queue.closed_labels", defaults.closed_labels),
    )


# -- derivation (pure) -------------------------------------------------------------------

_ORDER = {s: i for i, s in enumerate(QueueState)}
_NEVER = float("inf")


def _state(thread: ThreadFacts, issue: IssueFacts | None, settings: QueueSettings, answered_by_team: bool
           ) -> QueueState:
    if issue is None and thread.automated:
        return QueueState.AUTOMATED
    if issue is None:
        return QueueState.ACKNOWLEDGED if answered_by_team or thread.drafts else QueueState.NEW
    labels = {label.lower() for label in issue.labels}
    if issue.state == "closed" or not labels.isdisjoint(settings.closed_set):
        return QueueState.CLOSED
    if issue.cve or not labels.isdisjoint(settings.fixed_set):
        return QueueState.FIXED
    if issue.assignees or not labels.isdisjoint(settings.in_progress_set):
        return QueueState.IN_PROGRESS
    return QueueState.IMPORTED


@frozen_dataclass
class MailState:
    """What the mail of one thread says, for a given team: all a row needs of its messages."""

    reporter: str  # the report's From address (raw)
    opened: datetime | None
    last_reporter_message: datetime | None
    unanswered_since: datetime | None
    team_wrote: bool


def mail_state(messages: tuple[MailFact, ...], settings: QueueSettings) -> MailState:
    """Who reported, when, and since when the reporter waits (their oldest message that no
    team message followed, in date order; undated messages count for "the team wrote" only)."""
    if not messages:
        return MailState("", None, None, None, False)
    reporter = messages[0].sender.strip().lower()
    team_wrote = any(settings.is_team(m.sender, reporter) for m in messages)
    waiting: datetime | None = None
    last_reporter: datetime | None = None
    dated = sorted((m for m in messages if m.date is not None), key=lambda m: m.date)  # type: ignore[arg-type,return-value]
    for message in dated:
        sender = message.sender.strip().lower()
        if sender == reporter:
            last_reporter = message.date
            if waiting is None:
                waiting = message.date
        elif team_wrote and settings.is_team(sender, reporter):
            waiting = None
    return MailState(messages[0].sender, messages[0].date, last_reporter, waiting, team_wrote)


#: Why a thread the team started is no report (:attr:`QueueRow.automated`).
TEAM_STARTED = "started by the team"


def derive_row(thread: ThreadFacts, issue: IssueFacts | None, settings: QueueSettings, now: datetime,
               mail: MailState | None = None) -> QueueRow:
    """One thread's row at ``now`` (``mail``: its :func:`mail_state`, when already known). Pure.

    A thread whose first message a named member of the team wrote (:meth:`QueueSettings.names`)
    is no report: ``automated`` (:data:`TEAM_STARTED`) unless an issue holds it, and owes no
    first response either way."""
    if mail is None:
        mail = mail_state(thread.messages, settings)
    if not thread.automated and settings.names(mail.reporter):
        thread = replace(thread, automated=TEAM_STARTED)
        mail = replace(mail, team_wrote=True, unanswered_since=None)  # held by an issue: nobody waits for us
    opened, waiting = mail.opened, mail.unanswered_since
    unknown = issue is not None and issue.unknown
    if unknown:
        issue = None
    # a bounce or spam owes no response even when the tracker cannot say whether an issue holds it
    state = (QueueState.AUTOMATED if unknown and thread.automated
             else QueueState.UNKNOWN if unknown else _state(thread, issue, settings, mail.team_wrote))
    automated = state is QueueState.AUTOMATED  # no report: nothing is due, listed last
    if automated:
        waiting = None
    first_due = None
    unreadable = issue.unreadable if issue else ()
    # the FIRST response: owed only while the team never wrote
    if waiting is not None and not mail.team_wrote and FIRST_RESPONSE_FIELD not in unreadable:
        first_due = (issue.first_response if issue and issue.first_response
                     else waiting + timedelta(days=settings.first_response_days))
    disclosure_due = (issue.disclosure if issue and issue.disclosure
                      else None if DISCLOSURE_FIELD in unreadable
                      else opened + timedelta(days=settings.disclosure_days) if opened and not automated else None)
    breaches = _breached(state, first_due, disclosure_due, now)
    owner = issue.assignees[0] if issue and issue.assignees else None
    dues = [d.timestamp() for d in (first_due, disclosure_due) if d is not None]
    settled = state in (QueueState.FIXED, QueueState.CLOSED)  # a reporter's "thanks" then needs nobody
    key = (
        automated,  # not a report: after everything else
        state is QueueState.CLOSED,  # closed last
        not breaches,  # a past deadline first
        settled,  # fixed after what is still open
        waiting is None or settled,  # then a reporter who waits (first response or a follow-up)
        owner is not None,  # then what nobody holds
        min(dues) if dues else _NEVER,  # the nearest deadline
        waiting.timestamp() if waiting else _NEVER,  # the longest wait
        _ORDER[state],
        opened.timestamp() if opened else _NEVER,
        str(thread.thread_id),
    )
    return QueueRow(thread.thread_id, thread.subject, mail.reporter, state, opened, mail.last_reporter_message,
                    waiting, owner, issue.id if issue else None, issue.url if issue else None,
                    first_due, disclosure_due, tuple(breaches), key, thread.automated if automated else None)


def queue_span(delta: timedelta) -> str:
    """A duration of the queue (an age, a wait, how late or how near a deadline is) in a few
    characters: whole hours under a day, else whole days, both rounded down (``23h``, ``1d``
    for 1 day 14 hours, ``12d``); a negative one is ``0h``. The one rule of the app's queue and
    ``mailtriage queue``, so the two never show one report's age differently."""
    seconds = max(0, int(delta.total_seconds()))
    return f"{seconds // 3600}h" if seconds < 86400 else f"{seconds // 86400}d"


def _breached(state: QueueState, first_due: datetime | None, disclosure_due: datetime | None,
              now: datetime) -> list[Breach]:
    breaches: list[Breach] = []
    if state is not QueueState.CLOSED:
        if first_due is not None and now > first_due:
            breaches.append(Breach.FIRST_RESPONSE)
        if disclosure_due is not None and now > disclosure_due:
            breaches.append(Breach.DISCLOSURE)
    return breaches


def _breaches(row: QueueRow, now: datetime) -> tuple[Breach, ...]:
    """The deadlines of ``row`` that are past at ``now``."""
    return tuple(_breached(row.state, row.first_response_due, row.disclosure_due, now))


def derive_queue(threads: Iterable[ThreadFacts], issues: Mapping[ThreadId, IssueFacts], settings: QueueSettings,
                 now: datetime, *, warnings: Iterable[str] = ()) -> Queue:
    """The queue of ``threads`` with the issue of each (``issues``, by thread) at ``now``. Pure."""
    return _queue([derive_row(t, issues.get(t.thread_id), settings, now) for t in threads], now, warnings)


def _queue(rows: list[QueueRow], now: datetime, warnings: Iterable[str]) -> Queue:
    rows.sort(key=lambda r: r.sort_key)
    return Queue(tuple(rows), now, tuple(warnings))


# -- reading mail and tracker ---------------------------------------------------------------


def thread_facts(thread: Thread, drafts: int | None = None) -> ThreadFacts:
    """The facts of a read thread."""
    return ThreadFacts(thread.thread_id, thread.subject,
                       tuple(MailFact(m.sender.email, m.date) for m in thread.messages), drafts,
                       automated_reason(thread.messages[0]) if thread.messages else None)


def automated_reason(message: Any) -> str | None:
    """Why a thread's first message is no report, else None: the feedback sweep's rules for
    automated mail (application/flows/sweep.py ``classify``: bounces, auto-replies, notifications,
    no-reply senders), and spam as the receiving server marked it (``X-Spam-Flag: YES``).
    ``Precedence: bulk`` on a message carrying ``List-Id`` is the mailing list's own header
    (ezmlm and Mailman add it to every message they relay), not the sender's: not counted."""
    if (message.header("X-Spam-Flag") or "").strip().lower() == "yes":
        return "spam"
    read: Any = _ListRelayed(message) if message.header("List-Id") else message  # the rules read header, sender, subject
    found = sweep.classify(read)
    return found[0] if found else None


class _ListRelayed:
    """A message a mailing list relayed, as the sweep's rules should read it: without the
    ``Precedence`` header the list itself adds."""

    def __init__(self, message: Any) -> None:
        self._message = message
        self.sender, self.subject = message.sender, message.subject

    def header(self, name: str) -> str | None:
        return None if name.lower() == "precedence" else self._message.header(name)


def _field_date(text: str | None) -> datetime | None:
    """The first line of a deadline field as an aware instant (a date is its midnight UTC);
    None when the field is empty.

    Raises ValueError: the text is no ISO 8601 date, or one that has no UTC instant (year 9999
    west of Greenwich)."""
    line = (text or "").strip().splitlines()[0].strip().strip("`") if (text or "").strip() else ""
    if not line:
        return None
    try:
        when = datetime.fromisoformat(line)
    except ValueError:
        day = date.fromisoformat(line[:10])
        when = datetime(day.year, day.month, day.day)
    when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    try:
        when.astimezone(timezone.utc)
    except OverflowError as exc:
        raise ValueError(f"{line!r} is out of range") from exc
    return when


def _deadline_fields(body: str, syntax: Any) -> tuple[datetime | None, datetime | None, tuple[str, ...]]:
    """The issue's disclosure and first-response dates, and the names of those that are no date."""
    got: list[datetime | None] = []
    unreadable: list[str] = []
    for name in (DISCLOSURE_FIELD, FIRST_RESPONSE_FIELD):
        try:
            got.append(_field_date(fieldsmod.get_field(body, name, syntax)))
        except ValueError:
            got.append(None)
            unreadable.append(name)
    return got[0], got[1], tuple(unreadable)


def issue_facts(tracker: Tracker, issue_id: str) -> IssueFacts:
    """What the queue needs of one issue: one ``view`` (its body read for the deadline fields).

    Raises NotFound, BackendError."""
    return _facts_of_view(tracker.view(issue_id), tracker.field_syntax)


def _drafts(project: Any, thread_id: ThreadId) -> int | None:
    try:
        got = linking.dispatch_thread_op(project.sources, Op.LIST_DRAFTS, thread_id,
                                         lambda b: b.list_drafts(thread_id))
    except (NotSupported, NoBackendAvailable, Unavailable, BackendFailure):
        return None  # cannot be told: the row says nothing of drafts
    return len(got.value)


def _thread_link(project: Any, thread_id: ThreadId) -> str:
    """What the import writes in the issue's thread field for this thread."""
    try:
        return str(project.thread_url(thread_id).value)
    except (NotSupported, NoBackendAvailable, Unavailable):
        return str(thread_id)


def _issue_of(tracker: Tracker, project: Any, thread_id: ThreadId) -> str | None:
    """The issue of a thread on a server tracker without ``changes``: its search, as the import finds it."""
    return linking.find_issue_for_thread(tracker, _thread_link(project, thread_id), thread_id)


_MESSAGE_ID = re.compile(r"<[^<>\s]+>")


def _facts_of_view(view: IssueView, syntax: Any) -> IssueFacts:
    body = view.get("body") or ""
    disclosure, first_response, unreadable = _deadline_fields(body, syntax)
    return IssueFacts(view["id"], view.get("url") or "", view.get("state") or "open", tuple(view.get("labels") or ()),
                      tuple(view.get("assignees") or ()), disclosure, first_response,
                      _cve(fieldsmod.get_field(body, CVE_FIELD, syntax)), unreadable)


def _cve(text: str | None) -> str | None:
    found = _CVE_ID.search(text or "")
    return found.group() if found else None


def _facts_json(facts: IssueFacts) -> dict:
    return {"id": facts.id, "url": facts.url, "state": facts.state, "labels": list(facts.labels),
            "assignees": list(facts.assignees), "disclosure": records.iso(facts.disclosure),
            "first_response": records.iso(facts.first_response), "cve": facts.cve,
            "unreadable": list(facts.unreadable)}


def _facts_from_json(data: dict) -> IssueFacts:
    return IssueFacts(data["id"], data["url"], data["state"], tuple(data["labels"]), tuple(data["assignees"]),
                      records.parse(data["disclosure"]), records.parse(data["first_response"]), data.get("cve"),
                      tuple(data.get("unreadable") or ()))


def _thread_keys(view: IssueView, syntax: Any) -> list[str]:
    """What names the issue's thread: its Import entry's ``Thread:`` line, and the Message-ID
    in the link of its thread field (the import writes both)."""
    keys = []
    named = linking.rollup_state_of(view, view["id"]).thread_id()
    if named is not None:
        keys.append(thread_key(named))
    link = fieldsmod.get_field(view.get("body") or "", linking.THREAD_FIELD, syntax) or ""
    keys += [f"root:{m}" for m in _MESSAGE_ID.findall(link)]
    return keys


def _link_keys(view: IssueView, syntax: Any) -> list[str]:
    """Each line of the issue's thread field as a key (``link:URL``), as the import's lookup
    compares them (application/flows/linking.py ``_same_link``)."""
    keys = []
    for line in (fieldsmod.get_field(view.get("body") or "", linking.THREAD_FIELD, syntax) or "").splitlines():
        line = line.strip().strip("`").strip()
        if line.startswith("<") and line.endswith(">"):
            line = line[1:-1].strip()
        if line:
            keys.append(f"link:{line}")
    return keys


def _number(issue_id: str) -> tuple[int, str]:
    found = re.search(r"\d+$", issue_id)
    return (int(found.group()) if found else 0, issue_id)


FULL_SWEEP_EVERY = timedelta(minutes=15)
"""How long the queue trusts ``changes(cursor)`` alone on a server tracker: it lists what
changed, never what left (a transferred, deleted or moved issue); a full sweep forgets those."""


def _server_issues(tracker: Tracker, kept: records.QueueRecords, now: datetime) -> dict[str, IssueFacts]:
    """Every issue's facts on a server tracker by what names its thread (the earliest issue
    first), kept in the records and brought up to date with the tracker's ``changes``: one
    conditional or ``updated >=`` request while nothing changed (never its search API). Every
    :data:`FULL_SWEEP_EVERY` (by ``now``) the issues are listed whole instead, which forgets
    the ones that left the tracker (``changes`` never lists those).

    Raises TrackerError (BackendError: the server cannot be asked)."""
    cursor, known = kept.server_issues()
    swept = kept.server_swept()
    if swept is None or now - swept >= FULL_SWEEP_EVERY:
        cursor = None  # a full sweep: every issue, and whatever was kept is forgotten
    changes = tracker.changes(cursor)
    if changes.issues or changes.complete or changes.cursor != cursor:
        known = {} if changes.complete else dict(known)
        for view in changes.issues:
            facts = _facts_of_view(view, tracker.field_syntax)
            known[view["id"]] = [_facts_json(facts),
                                 _thread_keys(view, tracker.field_syntax) + _link_keys(view, tracker.field_syntax)]
        kept.put_server(changes.cursor, known, now if changes.complete else None)
    by_key: dict[str, IssueFacts] = {}
    for issue_id in sorted(known, key=_number):
        entry = known[issue_id]
        facts = kept.made("server", issue_id, entry[0]) or kept.keep("server", issue_id, entry[0],
                                                                     _facts_from_json(entry[0]))
        for key in entry[1]:
            by_key.setdefault(key, facts)
    return by_key


def _local_issues(tracker: Any, kept: records.QueueRecords, warnings: list[str]) -> dict[str, IssueFacts]:
    """Every issue file's facts by what names its thread (the earliest issue first), each
    file read only when it changed since the records were made."""
    with os.scandir(tracker.root) as found:
        entries = sorted((e for e in found if records.ISSUE_FILE.match(e.name)), key=lambda e: e.name)
    checked = []
    for entry in entries:
        try:
            stat = entry.stat()
        except OSError:
            continue  # removed while listing
        checked.append((entry, stat, kept.issue(entry.name, stat)))
    names = tuple(entry.name for entry, _, _ in checked)
    last = kept.objects.get(("local issues", ""))
    if last is not None and last[0] == names and all(got is not None for _, _, got in checked):
        return last[1]  # the same files, none changed: the map made from them last time
    by_key: dict[str, IssueFacts] = {}
    for entry, stat, got in checked:
        if got is None:
            try:
                view = tracker.view(entry.name[: -len(".md")], comments=True)
            except TrackerError as exc:
                warnings.append(f"{entry.name}: cannot be read ({exc})")
                continue
            facts = _facts_of_view(view, tracker.field_syntax)
            keys = _thread_keys(view, tracker.field_syntax)
            kept.put_issue(entry.name, stat, _facts_json(facts), keys)
        else:
            facts = kept.made("issue", entry.name, got[0]) or kept.keep("issue", entry.name, got[0],
                                                                        _facts_from_json(got[0]))
            keys = got[1]
        for key in keys:
            by_key.setdefault(key, facts)
    kept.keep("local issues", "", names, by_key)
    return by_key


def _thread_of(project: Any, summary: Any, kept: records.QueueRecords,
               settings: QueueSettings) -> tuple[ThreadFacts, MailState, Any] | None:
    """A listed thread, its mail state and its record (None: read just now): from the records
    while its listing row is unchanged (the records hold the state, not the messages), else read."""
    key = str(summary.thread_id)
    got = kept.thread(key, summary.message_count, summary.last_activity)
    if got is not None:
        entry = got[1]
        made = kept.made("thread", key, entry)
        if made is None:
            reporter, opened, last, waiting, team_wrote, automated = entry
            made = kept.keep("thread", key, entry, (
                ThreadFacts(summary.thread_id, got[0], (), automated=automated),
                MailState(reporter, records.parse(opened), records.parse(last), records.parse(waiting), team_wrote)))
        return made[0], made[1], entry
    thread = project.read_thread(summary.thread_id).value
    if not thread.messages:
        return None
    facts = thread_facts(thread)
    mail = mail_state(facts.messages, settings)
    kept.put_thread(key, summary.message_count, summary.last_activity, thread.subject,
                    [mail.reporter, records.iso(mail.opened), records.iso(mail.last_reporter_message),
                     records.iso(mail.unanswered_since), mail.team_wrote, facts.automated])
    return facts, mail, None


def build_queue(project: Any, *, now: datetime, list_name: str | None = None, since: datetime | None = None,
                state: QueueState | None = None, owner: str | None = None, keep_records: bool = True) -> Queue:
    """The queue of the project's list in its window (``since``: the configured one), read
    through the project's sources and tracker, filtered by ``state`` and ``owner``.

    Blocking. One listing; a thread is read only when its listing row changed since the
    queue's records were made (application/queue_records.py), and the drafts of a thread are
    asked only while nobody of the team wrote on it and no issue holds it. On local files
    each issue file is read only when it changed; on a server tracker each thread's issue is
    looked up (a search) and viewed.

    ``keep_records``: keep what was made of the records (parsed facts, derived rows) in this
    process for its next queue (the app's ``R``, after a claim); a process that builds one
    queue and ends (the command line) passes False and makes nothing it will not print. The
    records file is saved either way.

    The cyclic garbage collector is paused while the queue is built from the list and a
    local-files tracker, or none (core/collector.py): a warm queue makes some 100,000 small objects that
    all live (rows, facts, dates) and no cycle, and the collector would walk them, and the
    listing's index, for nothing (a full collection or two per queue over 10,000 reports). Not
    with a server tracker: its requests may take minutes, and the app's other threads would run
    without the collector all that time.

    Example: ``build_queue(project, now=datetime.now(timezone.utc), state=QueueState.NEW)``

    Raises:
        MandatoryBackendUnavailable, and a backend's errors of the listing.
    """
    platform = project.config.get("tracker.platform")
    server_tracker = bool(platform) and platform != "local-files"  # GitHub, Jira: requests that may take minutes
    with nullcontext() if server_tracker else collector_paused():
        return _build_queue(project, now, list_name, since, keep_records).filtered(state=state, owner=owner)


def _build_queue(project: Any, now: datetime, list_name: str | None, since: datetime | None,
                 keep_records: bool) -> Queue:
    warnings: list[str] = []
    settings = queue_settings(project.config)
    listing = project.list_threads(project.list_name(list_name), since)
    tracker: Tracker | None = None
    if project.config.get("tracker.platform"):
        try:
            tracker = project.open_tracker()
        except (ConfigError, TrackerError) as exc:
            warnings.append(f"the tracker cannot be opened ({exc}): owners and issues are not shown")
    local = tracker is not None and tracker.features.local_issue_files
    kept = records.open_records(records.records_path(Path(project.config.file).parent,
                                                     tracker.root if local else None),  # type: ignore[union-attr]
                                settings.team + settings.team_domains + (settings.team_domain,))
    kept.keeping = keep_records
    if not keep_records:
        kept.objects.clear()
    try:
        rows = _rows(project, tracker, local, kept, settings, now, listing, warnings)
        kept.save()
    finally:
        records.release(kept)
    return _queue(rows, now, warnings)


def _rows(project: Any, tracker: Tracker | None, local: bool, kept: records.QueueRecords, settings: QueueSettings,
          now: datetime, listing: Any, warnings: list[str]) -> list[QueueRow]:
    by_key: dict[str, IssueFacts] = {}
    tracker_down = False
    if local:
        try:
            by_key = _local_issues(tracker, kept, warnings)
        except OSError as exc:
            warnings.append(f"the tracker folder cannot be read ({exc}): owners and issues are not shown")
    elif tracker is not None and tracker.features.changes_since:
        try:
            by_key = _server_issues(tracker, kept, now)
        except TrackerError as exc:
            # the server cannot be asked: one warning, and no thread is "new" for lack of an answer
            tracker_down = True
            warnings.append(f"the {tracker.kind} tracker cannot be asked ({exc}): issues and owners are not "
                            "known; those rows show as unknown")
    listed = local or (tracker is not None and tracker.features.changes_since)
    if kept.settings != settings:  # rows kept from a run under other settings (project.md changed) do not hold
        kept.forget("row")
        kept.settings = settings
    rows: list[QueueRow] = []
    for summary in listing.value or ():
        try:
            got = _thread_of(project, summary, kept, settings)
        except (NotSupported, NoBackendAvailable, Unavailable, BackendFailure) as exc:
            # one thread that cannot be read (gone, a lost connection) is a warning, not the queue's end
            warnings.append(f"{summary.thread_id}: not read ({exc})")
            continue
        if got is None:
            continue
        facts, mail, entry = got
        found: IssueFacts | None = None
        if tracker_down:
            found = UNKNOWN_ISSUE
        elif listed:
            tid = facts.thread_id
            found = by_key.get(thread_key(tid)) or (by_key.get(f"root:{tid.root}") if tid.root else None)
            if found is None and not local:
                found = by_key.get(f"link:{_thread_link(project, tid)}")
        elif tracker is not None:
            try:
                issue_id = _issue_of(tracker, project, facts.thread_id)
                found = issue_facts(tracker, issue_id) if issue_id else None
            except (NotFound, Refused) as exc:
                warnings.append(f"{facts.thread_id}: its tracker issue cannot be read ({exc})")
            except BackendError as exc:
                # the server cannot be asked: one warning, and no thread is "new" for lack of an answer
                tracker_down, found = True, UNKNOWN_ISSUE
                warnings.append(f"the {tracker.kind} tracker cannot be asked ({exc}): issues and owners are not "
                                "known; those rows show as unknown")
        if found is not None and found.unreadable:
            warnings.append(f"{found.id}: its {' and '.join(found.unreadable)} field is no date (write it as "
                            "2026-12-01 or 2026-12-01T17:00:00+00:00): no deadline is shown for it")
        if (found is None or found.unknown) and not mail.team_wrote and not facts.automated \
                and not settings.names(mail.reporter):  # a thread the team started owes no reply
            facts = replace(facts, drafts=_drafts(project, facts.thread_id))  # asked each time: no row kept
        elif entry is not None:
            # the same thread record and the same issue facts as last time: the row derived then
            # holds unless a deadline passed since (the only thing ``now`` changes)
            key = str(facts.thread_id)
            prior = kept.made("row", key, entry)
            if prior is not None and prior[0] is found and _breaches(prior[1], now) == prior[1].breaches:
                rows.append(prior[1])
                continue
            row = derive_row(facts, found, settings, now, mail)
            kept.keep("row", key, entry, (found, row))
            rows.append(row)
            continue
        rows.append(derive_row(facts, found, settings, now, mail))
    return rows


# -- claim and release ---------------------------------------------------------------------

#: How often a claim whose push was rejected (someone else pushed first) pulls and asks again.
PUSH_ATTEMPTS = 6
#: A server has no compare-and-swap on assignees: a claim reads the issue back, then once more
#: after this long (at least; twice the write's own time when that is longer).
SETTLE_SECONDS = 0.2
PUT_BACK_ATTEMPTS = 3  # a put-back of the first claimant: read, written, read back; sent again when it did not land


def _holders(tracker: Tracker, issue: str) -> tuple[str, list[str]]:
    view = tracker.view(issue)
    return view["id"], list(view.get("assignees") or [])


def _pull(wc: vcs.WorkingCopy, rel: str = ".", root: str | None = None) -> None:
    """git: fetch the upstream and fast-forward to it; svn: update ``rel``.

    A git fast-forward moves the whole checkout: it is refused (Refused, naming them) when it
    would change paths outside the tracker root ``root`` (default ``rel``), e.g. project.md or
    code of a bigger repository the tracker is a folder of; those are the user's to pull.

    Raises BackendError when the branch and its upstream diverged (local commits nobody
    pushed: the user's to push or rebase, never rewritten here) or when uncommitted local
    changes stand in the way (said so)."""
    if wc.kind == "svn":
        vcs.run(["svn", "update", "-q", "--non-interactive", "--", rel], wc.root)
        return
    if vcs.git_upstream(wc) is None:
        return
    vcs.run(["git", "fetch", "-q"], wc.root)
    scope = root if root is not None else rel
    if scope != ".":
        changed = vcs.run(["git", "diff", "--no-renames", "--name-only", "-z", "HEAD...@{u}"], wc.root).stdout.split("\0")
        outside = sorted(p for p in changed if p and not (p == scope or p.startswith(scope.rstrip("/") + "/")))
        if outside:
            raise Refused(f"the tracker's upstream also changes files outside the tracker folder {scope} "
                          f"({', '.join(outside[:5])}{' …' if len(outside) > 5 else ''}): nothing was pulled; "
                          f"review and pull them yourself ('git -C {wc.root} pull --ff-only'), then try again")
    merged = vcs.run(["git", "merge", "-q", "--ff-only", "@{u}"], wc.root, check=False)
    if merged.returncode != 0:
        detail = " / ".join((merged.stderr or merged.stdout).strip().splitlines()[-2:]) or "no output"
        behind = vcs.run(["git", "merge-base", "--is-ancestor", "HEAD", "@{u}"], wc.root, check=False)
        if behind.returncode == 0:  # a fast-forward was possible: the working tree stood in the way
            raise BackendError(f"the tracker's working copy cannot fast-forward to its upstream: uncommitted "
                               f"local changes would be overwritten ({detail}); commit, publish or undo them "
                               f"first ('git -C {wc.root} status')")
        raise BackendError(f"the tracker's working copy cannot fast-forward to its upstream ({detail}): push or "
                           f"rebase its local commits first ('git -C {wc.root} status')")


def _change(who: str, add: bool) -> EditRequest:
    return EditRequest(add_assignees=[who]) if add else EditRequest(remove_assignees=[who])


def _dirty(wc: vcs.WorkingCopy, rel: str) -> bool:
    if wc.kind == "svn":
        return bool(vcs.svn_status(wc, rel))
    return bool(vcs.git_changes(wc, rel))


def _git_head(wc: vcs.WorkingCopy) -> str | None:
    proc = vcs.run(["git", "rev-parse", "-q", "--verify", "HEAD"], wc.root, check=False)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def _unshown(wc: vcs.WorkingCopy, canonical: str, verb: str) -> str | None:
    """Why a claim of ``canonical`` may not push from ``wc``: the push carries every unpushed
    commit of the branch, and the proposal showed none of them (the publish review shows
    them). None when the branch has none."""
    unpushed = vcs.git_unpushed(wc)
    if not unpushed:
        return None
    named = "; ".join(f"{c['revision'][:12]} {c['subject']}" for c in unpushed[:5])
    return (f"{verb} of {canonical} refused: the branch has {len(unpushed)} unpushed commit{'s' if len(unpushed) != 1 else ''} its push "
            f"would publish unseen ({named}{' …' if len(unpushed) > 5 else ''}); review and push them "
            f"first ('mailtriage publish'), then {verb} again")


def _refuse_unshown(wc: vcs.WorkingCopy, canonical: str, verb: str) -> None:
    """At write time (commits made since the proposal was shown): refuse as the proposal would."""
    why = _unshown(wc, canonical, verb)
    if why:
        raise Refused(why)


def _unshown_before(tracker: Tracker, canonical: str, verb: str) -> str | None:
    """:func:`_unshown` for a proposal: a local-files tracker in a git working copy with a
    remote (a claim pushes there); None for any other tracker."""
    if not tracker.features.publishes_changes:
        return None
    wc = tracker.working_copy()  # type: ignore[attr-defined]
    if wc is None or wc.kind != "git" or not vcs.git_remotes(wc):
        return None
    return _unshown(wc, canonical, verb)


def _undo_git(wc: vcs.WorkingCopy, rel: str, before: str | None, made: str | None) -> None:
    """Put the working copy back as it was before the claim: drop exactly the claim's commit
    ``made`` (only when HEAD is that commit, right on top of ``before``) and restore the issue
    file alone; the index and working tree of every other path are left untouched."""
    if made:
        head = _git_head(wc)
        parent = vcs.run(["git", "rev-parse", "-q", "--verify", f"{made}~1"], wc.root, check=False).stdout.strip()
        if head != made or parent != before:
            raise BackendError(f"the claim's commit {made[:12]} is no longer the branch's tip; it stays, undo it "
                               f"yourself after review ('git -C {wc.root} log')")
        vcs.run(["git", "reset", "-q", "--soft", made + "~1"], wc.root)  # the branch only: index and files stay
    if before:
        vcs.run(["git", "checkout", "-q", before, "--", rel], wc.root)  # the issue file, index and working tree
    else:
        vcs.run(["git", "rm", "-q", "--cached", "--ignore-unmatch", "--", rel], wc.root, check=False)


def _write_local(tracker: Any, issue: str, who: str, *, add: bool, config: Any) -> dict:
    """An assignee change on local files: pull, check, write, commit and push (svn: update,
    check, write, commit); a rejected push (an out-of-date svn commit) undoes the local change,
    pulls and asks again: the remote decides who was first. Every failure leaves the working
    copy as it was before the claim (an interruption between the commit and its push leaves the
    claim's commit local: the next claim is refused and names it); a git branch with unpushed commits of the user's (its push
    would publish them unseen), or with remotes but no upstream, is refused before anything is written."""
    wc = tracker.working_copy()
    if wc is None:  # a tracker folder outside version control: the file is the truth
        canonical, holders = _holders(tracker, issue)
        others = [h for h in holders if h != who]
        if add and others:
            raise ClaimLost(canonical, others[0])
        if (who in holders) != add:
            tracker.edit(canonical, _change(who, add))
        return {"id": canonical, "assignees": _holders(tracker, canonical)[1]}
    git = wc.kind == "git"
    canonical = tracker.canonical_id(issue)
    rel = wc.rel(tracker.root / f"{canonical}.md")
    if _dirty(wc, rel):
        # the claim's commit would carry them: a claim publishes nothing it did not write
        raise Refused(f"{canonical} has changes that are not published ({rel}): publish or undo them "
                      "first ('mailtriage publish')")
    push = git and bool(vcs.git_remotes(wc))
    if push and vcs.git_upstream(wc) is None:
        raise Refused(f"claim of {canonical} refused: the claim needs an upstream (the branch has none, so a "
                      f"rejected push could not be re-read): set one first ('git -C {wc.root} push -u')")
    last = ""
    for _attempt in range(PUSH_ATTEMPTS):
        _pull(wc, rel, wc.rel(tracker.root))
        if push:
            _refuse_unshown(wc, canonical, "claim" if add else "release")
        canonical, holders = _holders(tracker, canonical)
        others = [h for h in holders if h != who]
        if add and others:
            raise ClaimLost(canonical, others[0])
        if (who in holders) == add:
            return {"id": canonical, "assignees": holders, "changed": False}
        before = _git_head(wc) if git else None
        verb = "claims" if add else "releases"
        try:
            tracker.edit(canonical, _change(who, add))
            result = tracker.publish(f"{canonical}: {who} {verb} it (queue)",
                                     attribution(config) if config is not None else [],
                                     push=push, only=[rel])
        except TrackerError as exc:
            partial = exc.partial if isinstance(exc.partial, dict) else {}  # on a failed push: what was committed
            if git:
                made = partial.get("revision") if partial.get("committed") else None
                _undo_git(wc, rel, before, made)
                if not made or not isinstance(exc, BackendError):
                    raise  # refused before the push (a hook, a guard): not a race, not retried
            else:
                changed = _dirty(wc, rel)
                if changed:
                    vcs.run(["svn", "revert", "-q", "--", rel], wc.root)  # out of date: update and ask again
                if not changed or not isinstance(exc, BackendError):
                    raise  # committed after all, or refused by a guard: not retried
            last = str(exc)
            # the remote took another push first: decide again on what it holds now
            time.sleep(random.uniform(0.01, 0.1))
            continue
        except BaseException:
            if git:
                if _git_head(wc) == before:  # nothing committed: the issue file alone is put back
                    _undo_git(wc, rel, before, None)
            else:
                vcs.run(["svn", "revert", "-q", "--", rel], wc.root, check=False)
            raise
        return {"id": canonical, "assignees": [*others, who] if add else others, "changed": True, **result}
    raise BackendError(f"{issue}: the remote refused the change {PUSH_ATTEMPTS} times ({last}); nothing of it "
                       "stays local. Try again")


def _write_server(tracker: Tracker, issue: str, who: str, *, add: bool) -> dict:
    """An assignee change on GitHub or Jira, decided after the write: by the server's record of
    assignee changes where it keeps one (Jira), else read back (the first assignee holds it)."""
    canonical, holders = _holders(tracker, issue)
    others = [h for h in holders if h != who]
    if add and others:
        # the holder read now may be a late claim not yet put back: the history names the first
        raise ClaimLost(canonical, _first_claimant(tracker, canonical) or others[0])
    if (who in holders) == add:
        return {"id": canonical, "assignees": holders, "changed": False}
    if not add:
        tracker.edit(canonical, EditRequest(remove_assignees=[who]))
        return {"id": canonical, "assignees": _holders(tracker, canonical)[1], "changed": True}
    started = time.monotonic()
    try:
        tracker.edit(canonical, EditRequest(add_assignees=[who]))
    except Refused as exc:
        # Jira refuses a second assignee: someone was faster between our read and our write
        _, holders = _holders(tracker, canonical)
        if holders and holders[0] != who:
            first = _first_claimant(tracker, canonical)
            raise ClaimLost(canonical, first or _settled_holder(tracker, canonical, SETTLE_SECONDS)) from exc
        raise
    first = _first_claimant(tracker, canonical)
    if first is not None:  # the server's own order decides: the first claim of the free issue holds it
        if first == who:
            # a late claim may have landed over ours already (its claimant may never put us back):
            # what the issue holds now is read, not assumed from the history
            _put_back(tracker, canonical, first, who)
            return {"id": canonical, "assignees": [who], "changed": True}
        _put_back(tracker, canonical, first, who)
        raise ClaimLost(canonical, first)
    settle = max(SETTLE_SECONDS, 2 * (time.monotonic() - started))
    for check in range(2):
        if check:
            time.sleep(settle)  # a write that read before ours lands within about one cycle of its own
        _, holders = _holders(tracker, canonical)
        if not holders or holders[0] != who:
            if who in holders:
                tracker.edit(canonical, EditRequest(remove_assignees=[who]))
            raise ClaimLost(canonical, _settled_holder(tracker, canonical, settle))
    return {"id": canonical, "assignees": holders, "changed": True}


def _put_back(tracker: Tracker, issue: str, first: str, who: str) -> None:
    """Make ``first`` (the first claimant by the change history) hold ``issue`` again when a
    later claim landed over hers: ``who`` is ours (the late one, or ``first`` herself). Each
    write is read back and sent once more when it did not land (a lost connection).

    Raises ClaimUnsettled: the issue is held by another claim than ``first``'s and could not
    be put back (its holder now is named)."""
    last = ""
    for attempt in range(PUT_BACK_ATTEMPTS):
        if attempt:
            time.sleep(random.uniform(0.5, 1.0) * SETTLE_SECONDS)  # let racing put-backs land first
        try:
            holders = _holders(tracker, issue)[1]
        except BackendError as exc:
            last = str(exc)
            continue
        if holders == [first]:
            return
        if who != first and holders and who not in holders:
            return  # another late claim landed over ours: its claimant puts the first one back
        try:
            tracker.edit(issue, EditRequest(add_assignees=[first], remove_assignees=list(holders)))
        except (Refused, BackendError) as exc:
            last = str(exc)  # Refused: yet another write landed between the read and ours; read again
    try:
        holders = _holders(tracker, issue)[1]
    except BackendError as exc:
        raise ClaimUnsettled(issue, "(cannot be read)", first, f"{last}; {exc}") from exc
    if holders == [first] or (who != first and holders and who not in holders):
        return
    raise ClaimUnsettled(issue, ", ".join(holders) or "nobody", first, last)


def _first_claimant(tracker: Tracker, issue: str) -> str | None:
    """Who claimed ``issue`` first since it was last free, from the server's record of its
    assignee changes in the order it applied them (Jira's change history:
    ``features.assignee_history``); None when the tracker keeps none, or the record does not
    reach back to when it was free. Every racer reads the same record, so all name the same
    holder, however late their own write landed."""
    if not tracker.features.assignee_history:
        return None
    first = None
    for before, after in tracker.assignee_changes(issue):
        if after is None:
            first = None  # released: free again
        elif before is None and first is None:
            first = after
    return first


def _settled_holder(tracker: Tracker, issue: str, settle: float) -> str:
    """Who holds ``issue`` once the racing writes have landed: the one a lost claim names.
    Read after a pause (a holder read at once may itself be overwritten: Jira keeps the last
    write), and again until two reads agree (a few times at most)."""
    seen = None
    for _ in range(4):
        time.sleep(settle)
        holders = _holders(tracker, issue)[1]
        holder = holders[0] if holders else "nobody (the assignment did not stay)"
        if holder == seen:
            return holder
        seen = holder
    return seen or "nobody"


def _assignee_proposal(tracker: Tracker, issue: str, who: str, *, add: bool, config: Any,
                       apply: Callable[[], dict]) -> Proposal:
    verb = "Claim" if add else "Release"
    canonical, holders = _holders(tracker, issue)
    proposal = Proposal(f"{verb} {canonical} for {who}" if add else f"Release {canonical} ({who})")
    proposal.facts.update(issue=canonical, who=who, assignees=holders)
    others = [h for h in holders if h != who]
    if add:
        tracker.policy.check_assignee(who)
        if others:
            proposal.facts["holder"] = others[0]
            return proposal.block(BlockedBy.HELD_BY_OTHER, f"{canonical} is held by {others[0]}: they release it "
                                  "first (or ask them to)")
        if who in holders:
            proposal.notes.append(f"{canonical} is yours already: nothing to write")
            return proposal
    elif who not in holders:
        proposal.notes.append(f"{who} does not hold {canonical}: nothing to release")
        return proposal
    unshown = _unshown_before(tracker, canonical, verb.lower())
    if unshown:  # shown before anyone confirms; the write checks again (commits made meanwhile)
        return proposal.block(BlockedBy.UNPUSHED_COMMITS, unshown)
    local = tracker.features.publishes_changes
    where = ("written to the issue file, committed and pushed (a rejected push pulls and asks again)" if local
             else f"written to the {tracker.kind} issue and read back")
    if add and not local:  # the compensating write is part of what the user confirms
        where += ("; if another triager claimed it first, this claim is undone"
                  + (" (the first claimant is put back as the assignee)" if tracker.features.assignee_history
                     else " (you are removed from the assignees)"))
    summary = f"{'assign' if add else 'unassign'} {canonical} {'to' if add else 'from'} {who}"

    def write(_write: Write) -> dict:
        try:
            return apply()
        except ClaimLost as exc:
            proposal.facts["lost_to"] = exc.holder  # the front end tells who holds it
            raise
        except ClaimUnsettled as exc:  # no "lost_to": nobody holds it settled (a failed write, not a lost race)
            proposal.facts["first_claimant"] = exc.first
            proposal.facts["held_now_by"] = exc.holder
            raise

    proposal.writes.append(Write(
        WriteKind.TRACKER, f"tracker:{tracker.kind}", summary,
        [Field("Issue", canonical), Field("Add assignee" if add else "Remove assignee", who),
         Field("Assignees now", ", ".join(holders) or "(none)")],
        write, label=f"{verb} the issue", where=where))
    proposal.recap.append(f"tracker → {tracker.kind}")
    return proposal


def _who(tracker: Tracker, who: str | None, config: Any) -> str:
    return who or (config.get("tracker.user") if config is not None else None) or tracker.default_user()


def propose_claim(tracker: Tracker, issue: str, who: str | None = None, *, config: Any = None) -> Proposal:
    """The proposal that makes ``who`` (default ``tracker.user``, else the tracker's user) the
    owner (assignee) of ``issue``; writes nothing.

    Blocked (``BlockedBy.HELD_BY_OTHER``, with ``facts["holder"]``) when someone else holds it already. Applied, its write
    raises :class:`ClaimLost` when another triager won the race (the tracker decides).

    Raises:
        Refused: ``who`` is not in ``tracker.assignees``; NotFound; BackendError.
    """
    who = _who(tracker, who, config)

    def apply() -> dict:
        if tracker.features.publishes_changes:
            return _write_local(tracker, issue, who, add=True, config=config)
        return _write_server(tracker, issue, who, add=True)

    return _assignee_proposal(tracker, issue, who, add=True, config=config, apply=apply)


def propose_release(tracker: Tracker, issue: str, who: str | None = None, *, config: Any = None) -> Proposal:
    """The proposal that removes ``who`` from the assignees of ``issue``; empty (with a note)
    when ``who`` does not hold it."""
    who = _who(tracker, who, config)

    def apply() -> dict:
        if tracker.features.publishes_changes:
            return _write_local(tracker, issue, who, add=False, config=config)
        return _write_server(tracker, issue, who, add=False)

    return _assignee_proposal(tracker, issue, who, add=False, config=config, apply=apply)


def sync_tracker(tracker: Tracker) -> dict[str, Any]:
    """Bring a local-files working copy up to date (git: fetch and fast-forward the upstream;
    svn: update the tracker folder); nothing to do for a server tracker. Returns {"synced": bool, "detail": str}.

    Raises BackendError (the fetch or the merge failed)."""
    if not tracker.features.publishes_changes:
        return {"synced": False, "detail": f"the {tracker.kind} tracker is read from its server"}
    wc = tracker.working_copy()  # type: ignore[attr-defined]
    if wc is None:
        return {"synced": False, "detail": "the tracker folder is not in a working copy"}
    if wc.kind == "git" and vcs.git_upstream(wc) is None:
        return {"synced": False, "detail": "the working copy has no upstream"}
    _pull(wc, wc.rel(tracker.root))  # type: ignore[attr-defined]
    return {"synced": True, "detail": "fetched and fast-forwarded" if wc.kind == "git" else "svn update"}
