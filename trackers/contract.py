"""The tracker contract: operations, errors, and the guards every backend shares.

A tracker backend (local-files, github, jira) subclasses :class:`Tracker` and fills in the
``_do_*`` hooks. The public methods here are the operations every tracker offers (view,
list, create, edit, fields, comments, close/reopen, the status rollup, attachments); they
validate their input and apply the guards that hold for every backend *before* a hook runs:

* titles are one validated line; rollup actions and users are one line;
* labels, milestones, assignees and close reasons must be values the project declares
  (:class:`Policy`); a backend never invents a label;
* ``field-get`` / ``field-set`` address ``### Heading`` sections (``fields.py``), and the status
  rollup keeps its one exact format, entry by entry (``rollup.py``).

Each public method returns the JSON-ready value the CLI prints: a ``TypedDict`` of
``values.py`` (a plain ``dict`` at run time), or a list of them. Errors are
:class:`TrackerError` subclasses: a usage error, not found, refused by a guard, a backend
failure. They say what went wrong; the command line decides the exit code by their type.

This module imports nothing from Textual, ``mailtriage.tui`` or ``mailtriage.backends``.
"""

from __future__ import annotations

import builtins
import getpass
import json
import random
import re
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Any, Callable, ClassVar, Iterable, Iterator, Sequence

from mailtriage.core.errors import ConfigError
from mailtriage.core.lazy_re import lazy
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.trackers import fields as fieldsmod
from mailtriage.trackers import rollup as rollupmod
from mailtriage.trackers.errors import (  # noqa: F401  (the contract's errors, importable from here too)
    BackendError,
    MalformedIssue,
    NotFound,
    Refused,
    TrackerError,
    UsageError,
)
from mailtriage.trackers.values import (  # noqa: F401  (the contract's values, importable from here too)
    AttachResult,
    Comment,
    CommentResult,
    Created,
    DoctorCheck,
    DoctorReport,
    Existing,
    FieldSetResult,
    FieldValue,
    IssueSummary,
    IssueView,
    Pending,
    PendingChange,
    PendingReview,
    PublishResult,
    StateResult,
    UnpushedCommit,
    WriteResult,
)

STATES = ("open", "closed", "all")
CLOSE_REASONS = ("completed", "not-planned")

# Operations that exist on GitHub through gh but have no counterpart here. The spec says
# they are refused by name on local-files and jira, never approximated.
REFUSED_OPS: dict[str, str] = {
    "milestone-list": "milestones are free values listed in project.md (tracker.milestones), not tracker objects",
    "milestone-create": "milestones are free values listed in project.md (tracker.milestones), not tracker objects",
    "milestone-close": "milestones are free values listed in project.md (tracker.milestones), not tracker objects",
    "collaborators": "the roster comes from release-trains.md, not from the tracker",
    "comment-update": "comments are not edited; the status rollup is kept by rollup-append / rollup-amend-latest",
    "rollup-fold": "the rollup is kept by rollup-append; there are no legacy bot comments to fold",
    "board-*": "local-files and jira have no project board (tracker.project_board_enabled is false)",
}


# -- errors ---------------------------------------------------------------------------


class LostUpdate(TrackerError):
    """A rollup write that a concurrent writer undid (or a duplicate rollup it removed again);
    the contract retries it. Never leaves this module's retry loop."""


class _Recorded(Exception):
    """rollup_append(unless_action=…) found an entry with that action: nothing to append."""


class _Ended(Exception):
    """A rollup write's pause ended by abort() (the app quits)."""


class _AlreadyThere(Exception):
    """A retried rollup write found its entry already back in place."""


def refused_op(op: str, backend: str) -> Refused:
    """The refusal for an operation the spec refuses by name (``board-*`` included)."""
    key = "board-*" if op.startswith("board-") else op
    why = REFUSED_OPS.get(key, "it is not part of the tracker contract")
    return Refused(f"{op} is refused on the {backend} tracker: {why}")


# -- validated values -----------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f\x80-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]")
_USER = lazy(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$")
MAX_TITLE = 256


def validate_title(title: str) -> str:
    """One line of visible text. Raises UsageError for newlines, control or bidi characters."""
    if title is None:
        raise UsageError("a title is required")
    if "\n" in title or "\r" in title:
        raise UsageError("the title must be one line (it contains a line break)")
    bad = _CONTROL.search(title)
    if bad:
        raise UsageError(f"the title contains the control or invisible character U+{ord(bad.group()):04X}")
    if not title.strip():
        raise UsageError("the title is empty")
    if len(title) > MAX_TITLE:
        raise UsageError(f"the title is {len(title)} characters long (at most {MAX_TITLE})")
    return title.strip()


def validate_action(action: str) -> str:
    """A rollup action: one line without markup characters (it lands inside <summary>)."""
    if not action or not action.strip():
        raise UsageError("--action is empty")
    if "\n" in action or "\r" in action or _CONTROL.search(action):
        raise UsageError("--action must be one line of visible text")
    if any(c in action for c in "<>·"):
        raise UsageError("--action must not contain <, > or ·")
    return action.strip()


def validate_user(user: str) -> str:
    """A rollup user or comment author: a login, no spaces."""
    user = (user or "").strip().lstrip("@")
    if not _USER.match(user):
        raise UsageError(f"{user!r} is not a user name (letters, digits and . _ @ + -, no spaces)")
    return user


def parse_now(now: str | None) -> date:
    """``--now`` as ISO 8601 -> the UTC date of the rollup entry (today when None)."""
    if not now:
        return datetime.now(timezone.utc).date()
    try:
        when = datetime.fromisoformat(now.strip())
    except ValueError:
        try:
            return date.fromisoformat(now.strip())
        except ValueError as exc:
            raise UsageError(f"--now {now!r} is not an ISO 8601 date or time") from exc
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc)
    return when.date()


def parse_now_instant(now: str | None) -> str | None:
    """``--now`` as a UTC timestamp ``YYYY-MM-DDTHH:MM:SSZ`` (a bare date is its midnight UTC);
    None when not given. Raises UsageError like :func:`parse_now`."""
    if not now:
        return None
    parse_now(now)  # the same validation and message
    try:
        when = datetime.fromisoformat(now.strip())
    except ValueError:
        when = datetime.combine(date.fromisoformat(now.strip()), datetime.min.time())
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def require_id(issue_id: str | None) -> str:
    """The stripped issue ID; an empty one is a usage error (exit 2), not a refusal."""
    raw = (issue_id or "").strip()
    if not raw:
        raise UsageError("the issue ID is empty")
    return raw


def ascii_digits(text: str) -> bool:
    """True for 0-9 only: str.isdigit() and \\d also take full-width and other scripts' digits."""
    return bool(text) and text.isascii() and text.isdigit()


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the project's declared values ---------------------------------------------------


@frozen_dataclass
class Policy:
    """Values the project declares in project.md; every write is checked against them.

    ``None`` for a list means the project declares none, so no value is accepted.
    Close reasons default to the spec's two (completed, not-planned) when undeclared.
    """

    labels: tuple[str, ...] | None = None
    milestones: tuple[str, ...] | None = None
    assignees: tuple[str, ...] | None = None
    close_reasons: tuple[str, ...] = CLOSE_REASONS
    source: str = "project.md"

    @classmethod
    def from_config(cls, config: Any) -> "Policy":
        """Read ``tracker.labels``, ``tracker.milestones``, ``tracker.assignees``, ``tracker.close_reasons``.

        Raises ConfigError (from core.projectconfig) naming the key when a value is not a list.
        """
        def names(key: str) -> tuple[str, ...] | None:
            value = config.get(key)
            if value is None:
                return None
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not all(isinstance(v, (str, int)) for v in value):
                raise ConfigError(config.file, key, "must be a list of names", "a YAML list, e.g. [bug, security]")
            return tuple(str(v) for v in value)

        reasons = names("tracker.close_reasons")
        if reasons is not None:
            bad = [r for r in reasons if r not in CLOSE_REASONS]
            if bad:
                raise ConfigError(config.file, "tracker.close_reasons", f"unknown close reason(s) {', '.join(bad)}",
                                  ", ".join(CLOSE_REASONS))
        return cls(
            labels=names("tracker.labels"),
            milestones=names("tracker.milestones"),
            assignees=names("tracker.assignees"),
            close_reasons=reasons if reasons is not None else CLOSE_REASONS,
            source=str(config.file),
        )

    def _check(self, kind: str, key: str, value: str, declared: tuple[str, ...] | None) -> str:
        if declared is None:
            raise Refused(f"{kind} {value!r} refused: {self.source} declares no {key}")
        if value not in declared:
            raise Refused(f"{kind} {value!r} refused: it is not declared in {key} of {self.source} "
                          f"(declared: {', '.join(declared) or 'none'})")
        return value

    def check_label(self, label: str) -> str:
        return self._check("label", "tracker.labels", label, self.labels)

    def check_milestone(self, milestone: str) -> str:
        return self._check("milestone", "tracker.milestones", milestone, self.milestones)

    def check_assignee(self, user: str) -> str:
        return self._check("assignee", "tracker.assignees", user, self.assignees)

    def check_close_reason(self, reason: str) -> str:
        if reason not in CLOSE_REASONS:
            raise UsageError(f"--reason {reason!r}: valid reasons are {', '.join(CLOSE_REASONS)}")
        return self._check("close reason", "tracker.close_reasons", reason, self.close_reasons)


# -- requests and results --------------------------------------------------------------


@dataclass
class EditRequest:
    """What ``edit`` changes; empty fields leave the issue alone."""

    add_labels: list[str] = field(default_factory=list)
    remove_labels: list[str] = field(default_factory=list)
    add_assignees: list[str] = field(default_factory=list)
    remove_assignees: list[str] = field(default_factory=list)
    milestone: str | None = None
    clear_milestone: bool = False
    title: str | None = None
    body: str | None = None

    def is_empty(self) -> bool:
        return not (self.add_labels or self.remove_labels or self.add_assignees or self.remove_assignees
                    or self.milestone is not None or self.clear_milestone or self.title is not None
                    or self.body is not None)


@dataclass
class ListResult:
    """``list`` output plus per-item problems (malformed files) that did not stop the listing."""

    items: list[IssueSummary]
    problems: list[str] = field(default_factory=list)
    #: A local-files tracker's listing: ``{file name: (mtime_ns, size)}`` of every regular issue
    #: file it found, each stat taken before the file was read (None elsewhere). Sync compares
    #: its stat-refreshed record with these instead of a second pass over the folder.
    file_stats: dict[str, tuple[int, int]] | None = field(default=None, repr=False, compare=False)


@frozen_dataclass
class IssueChanges:
    """``changes(cursor)``: the issues updated since ``cursor`` (each a ``view`` without
    comments, body included), and the cursor to pass next time (opaque, JSON-ready).

    ``complete``: ``issues`` is every issue of the tracker (the cursor was None, or made for
    another tracker): whatever the caller kept from earlier calls is to be forgotten.
    An empty ``issues`` with the same cursor back means nothing changed (on GitHub a
    conditional request answered 304, which costs no rate limit)."""

    issues: list[IssueView]
    cursor: str
    complete: bool = False


def cursor_fields(text: str | None) -> dict:
    """What a tracker put in its ``changes`` cursor (JSON), or {} for none or one it cannot read
    (made by another version: the next call lists in full)."""
    try:
        got = json.loads(text) if text else {}
    except ValueError:
        return {}
    return got if isinstance(got, dict) else {}


def issue_json(*, id: str, title: str, state: str, labels: Sequence[str], assignees: Sequence[str],
               milestone: str | None, author: str | None, created: str | None, updated: str | None,
               body: str, url: str, comments: list[Comment] | None = None) -> IssueView:
    """The ``view`` shape of the spec: {id, title, state, labels, assignees, milestone, author,
    created, updated, body, url, comments?}."""
    out: IssueView = {
        "id": id, "title": title, "state": state, "labels": list(labels), "assignees": list(assignees),
        "milestone": milestone, "author": author, "created": created, "updated": updated,
        "body": body, "url": url,
    }
    if comments is not None:
        out["comments"] = comments
    return out


def summary_json(*, id: str, title: str, state: str, labels: Sequence[str], updated: str | None,
                 url: str) -> IssueSummary:
    """The ``list`` item shape: {id, title, state, labels, updated, url}."""
    return {"id": id, "title": title, "state": state, "labels": list(labels), "updated": updated, "url": url}


def comment_json(*, id: str, kind: str, author: str | None, created: str | None, updated: str | None,
                 body: str, url: str) -> Comment:
    return {"id": id, "kind": kind, "author": author, "created": created, "updated": updated,
            "body": body, "url": url}


def order_comments(comments: list[Comment]) -> list[Comment]:
    """The status rollup first (kind "rollup"), the other comments after it in their order."""
    rollups = [c for c in comments if c["kind"] == "rollup"][:1]
    return rollups + [c for c in comments if c not in rollups]


# -- the contract ---------------------------------------------------------------------


@frozen_dataclass
class TrackerFeatures:
    """What a tracker offers beyond the contract's operations: declared by each tracker
    class, never inferred from its ``kind``. Flows and front ends branch on these."""

    #: Writes land in a local working copy (git or svn) and reach others only when
    #: published (``pending()``/``publish``); False: every write goes straight to a server.
    publishes_changes: bool = False
    #: ``view`` returns each body exactly as stored, so a field and the rollup can be read
    #: from one view (no second read per issue).
    bodies_as_stored: bool = False
    #: Issues are files under ``root`` that a derived local index can follow (the thread
    #: index); False: lookups go through the tracker's own search.
    local_issue_files: bool = False
    #: The server's search lags behind writes (GitHub's by up to a minute): a lookup must
    #: also read the most recently updated issues.
    search_lags: bool = True
    #: The tracker is set up where it is kept: ``init`` lays out its folder and ``detect``
    #: infers the format of an existing one. False: it is set up on its server.
    set_up_locally: bool = False
    #: ``find_or_create`` holds a lock every process honours around the lookup and the create,
    #: so concurrent runs make one issue. False (a server): two runs can both create, and a
    #: flow re-checks after creating.
    locked_find_or_create: bool = False
    #: ``changes(cursor)`` answers what changed since the last call, cheaply (a conditional or
    #: ``updated >=`` request), so a caller can keep every issue's facts (the queue does).
    changes_since: bool = False
    #: ``assignee_changes(id)`` answers the issue's assignee changes in the order the server
    #: applied them (Jira's change history): a claim race is decided by who was first.
    assignee_history: bool = False


class Tracker:
    """Base class of every tracker backend.

    Subclasses set ``kind`` and implement the ``_do_*`` hooks. The public methods are the
    contract operations; each raises UsageError, NotFound, Refused or BackendError (see the
    module docstring for the exit codes) and returns a JSON-ready value.
    """

    kind: ClassVar[str] = "tracker"
    features: ClassVar[TrackerFeatures] = TrackerFeatures()
    #: The heading syntax stored bodies use (``fields.MARKDOWN`` or ``fields.JIRA_WIKI``).
    field_syntax: ClassVar[fieldsmod.Syntax] = fieldsmod.MARKDOWN

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = policy or Policy()
        self._rollup_when: str | None = None  # --now of the rollup write in progress
        #: Things the operator should know that are not errors (the CLI prints them on stderr).
        self.notices: list[str] = []
        self._ended = threading.Event()  # set by abort(): a rollup write's pauses end with it

    def notice(self, text: str) -> None:
        if text not in self.notices:
            self.notices.append(text)

    # ---- reads ----------------------------------------------------------------------
    def view(self, issue_id: str, comments: bool = False) -> IssueView:
        """Raises NotFound, Refused (an ID that escapes the tracker), BackendError."""
        return self._do_view(issue_id, comments)

    def list(self, state: str = "open", labels: Sequence[str] = (), search: str | None = None,
             limit: int | None = None) -> ListResult:
        """Issues newest-updated first. Raises UsageError (state, limit), BackendError."""
        if state not in STATES:
            raise UsageError(f"--state {state!r}: valid states are {', '.join(STATES)}")
        if limit is not None and limit < 1:
            raise UsageError("--limit must be at least 1")
        words = [w for w in (search or "").split() if w]
        if any(":" in w for w in words):
            raise UsageError("--search takes plain words (no qualifiers like label:x)")
        return self._do_list(state, list(labels), words, limit)

    def changes(self, cursor: str | None) -> IssueChanges:
        """The issues updated since ``cursor`` (None: all of them), declared with
        ``features.changes_since``. Raises Refused (a tracker without it), BackendError."""
        raise refused_op("changes", self.kind)

    def assignee_changes(self, issue_id: str) -> builtins.list[tuple[str | None, str | None]]:
        """The issue's assignee changes, oldest first, each (from, to) (None: nobody), declared
        with ``features.assignee_history``. Raises Refused (a tracker without it), NotFound,
        BackendError."""
        raise refused_op("assignee-changes", self.kind)

    def labels(self) -> builtins.list[str]:  # builtins: the class's own list() shadows the type
        """Labels in use. Raises BackendError."""
        return sorted(set(self._do_labels()))

    def body(self, issue_id: str) -> str:
        """The body as markdown with ``###`` field sections. Raises NotFound, BackendError."""
        return self._do_body(issue_id)

    def field_get(self, issue_id: str, heading: str) -> FieldValue:
        """{id, heading, value}; value is None when the section is missing. Raises NotFound."""
        heading = _validate_heading(heading)
        canonical, raw = self._raw_body(issue_id)
        value = fieldsmod.get_field(raw, heading, self.field_syntax)
        return {"id": canonical, "heading": heading, "value": value}

    # ---- writes ---------------------------------------------------------------------
    def create(self, title: str, body: str, labels: Sequence[str] = ()) -> WriteResult:
        """{id, url}. Raises UsageError (title), Refused (label, access guard), BackendError."""
        title = validate_title(title)
        labels = _dedupe(self.policy.check_label(label) for label in labels)
        self._check_body(body)
        return self._do_create(title, body, labels)

    def find_or_create(self, title: str, body: str, labels: Sequence[str],
                       find: Callable[[], str | None]) -> Existing | Created:
        """The issue ``find()`` names ({id, existing: True}), else a new one ({id, url, existing:
        False}). Atomic across processes only where ``features.locked_find_or_create`` says so."""
        found = find()
        if found:
            return {"id": found, "existing": True}
        made = self.create(title, body, labels)
        return {"id": made["id"], "url": made["url"], "existing": False}

    def edit(self, issue_id: str, change: EditRequest) -> WriteResult:
        """{id, url}. Raises UsageError (nothing to change, title), NotFound, Refused, BackendError."""
        if change.is_empty():
            raise UsageError("edit: nothing to change (give --add-label, --title, --body-file, …)")
        if change.milestone is not None and change.clear_milestone:
            raise UsageError("--milestone and --clear-milestone exclude each other")
        if change.title is not None:
            change.title = validate_title(change.title)
        if change.body is not None:
            self._check_body(change.body)
        change.add_labels = _dedupe(self.policy.check_label(x) for x in change.add_labels)
        change.add_assignees = _dedupe(self.policy.check_assignee(validate_user(x)) for x in change.add_assignees)
        change.remove_labels = _dedupe(change.remove_labels)
        change.remove_assignees = _dedupe(validate_user(x) for x in change.remove_assignees)
        both = set(change.add_labels) & set(change.remove_labels)
        if both:
            raise UsageError(f"label(s) {', '.join(sorted(both))} both added and removed")
        if change.milestone is not None:
            self.policy.check_milestone(change.milestone)
        return self._do_edit(issue_id, change)

    def field_set(self, issue_id: str, heading: str, value: str) -> FieldSetResult:
        """{id, heading, created}. Replaces the section's text, or appends the section at the
        end of the body when missing; every other byte of the body stays as it was."""
        heading = _validate_heading(heading)
        self._check_body(value)
        created: dict[str, bool] = {}

        def change(raw: str) -> str:
            new, was_created = fieldsmod.set_field(raw, heading, value, self.field_syntax)
            created["value"] = was_created
            return new

        canonical = self._mutate_body(issue_id, change)
        return {"id": canonical, "heading": heading, "created": created["value"]}

    def comment(self, issue_id: str, body: str, author: str | None = None) -> CommentResult:
        """{id, comment_id, url}. Raises UsageError (empty body), NotFound, Refused, BackendError."""
        if not body.strip():
            raise UsageError("the comment body is empty")
        self._check_body(body)
        if author is not None:
            author = validate_user(author)
        if rollupmod.is_rollup(body):
            raise Refused("the comment carries the status rollup marker; use rollup-append")
        return self._do_comment(issue_id, body, author)

    def close(self, issue_id: str, reason: str) -> StateResult:
        """{id, state}. Raises UsageError/Refused (reason), NotFound, BackendError."""
        self.policy.check_close_reason(reason)
        return self._do_close(issue_id, reason)

    def reopen(self, issue_id: str) -> StateResult:
        """{id, state}. Raises NotFound, Refused, BackendError."""
        return self._do_reopen(issue_id)

    def rollup_append(self, issue_id: str, action: str, entry_body: str, user: str | None = None,
                      now: str | None = None, unless_action: str | None = None) -> WriteResult | Existing:
        """{id, url}. Appends one entry at the bottom of the status rollup (created when missing).

        ``unless_action``: append nothing when an entry with that action is there already, as
        read by the write itself (under the tracker lock on local files); then {id, existing}."""
        action = validate_action(action)
        user = validate_user(user or self.default_user())
        day = parse_now(now)
        _check_entry_body(entry_body)
        self._check_body(entry_body)
        entry = rollupmod.Entry(day.isoformat(), user, action, entry_body)

        def change(text: str | None) -> str:
            if unless_action is not None and text is not None:
                try:
                    if any(e.action == unless_action for e in rollupmod.entries(text)):
                        raise _Recorded()
                except rollupmod.MalformedRollup:
                    pass  # append reports it
            with _rollup_errors(issue_id):
                return rollupmod.append(text, entry)

        # a backdated entry is a backdated comment where the backend keeps comment times (local-files)
        self._rollup_when = parse_now_instant(now)
        try:
            return self._rollup_write(issue_id, change)
        except _Recorded:
            return {"id": issue_id, "existing": True}
        finally:
            self._rollup_when = None

    def rollup_amend_latest(self, issue_id: str, action: str, entry_body: str) -> WriteResult:
        """{id, url}. Replaces the latest entry's body, keeping its date and user.

        Raises NotFound (no rollup), Refused (the latest entry's action is not ``action``).
        """
        action = validate_action(action)
        _check_entry_body(entry_body)
        self._check_body(entry_body)

        def change(text: str | None) -> str:
            if text is None:
                raise NotFound(f"{issue_id} has no status rollup to amend")
            with _rollup_errors(issue_id):
                return rollupmod.amend_latest(text, action, entry_body)

        return self._rollup_write(issue_id, change)

    # ---- rollup writes on servers without compare-and-swap -----------------------------
    #: GitHub and Jira let the last edit of a comment win; their backends set this so a
    #: rollup write is read back, checked once more after a pause, and redone when lost.
    verify_rollup_writes: ClassVar[bool] = False
    rollup_attempts: ClassVar[int] = 12
    rollup_min_settle: ClassVar[float] = 0.2

    def _rollup_write(self, issue_id: str, change: Callable[[str | None], str]) -> WriteResult:
        if not self.verify_rollup_writes:
            return self._mutate_rollup(issue_id, change)
        with self._ended_says_maybe_done(issue_id):
            return self._verified_rollup_write(issue_id, change)

    def _verified_rollup_write(self, issue_id: str, change: Callable[[str | None], str]) -> WriteResult:
        mine: rollupmod.Entry | None = None
        need = 0
        result: WriteResult | None = None

        def guarded(text: str | None) -> str:
            # on a retry, the text this write is based on may already hold the entry again
            if mine is not None and text is not None:
                try:
                    if rollupmod.entries(text).count(mine) >= need:
                        raise _AlreadyThere()
                except rollupmod.MalformedRollup:
                    pass
            return change(text)

        def kept() -> bool:
            text = self._read_rollup(issue_id)
            try:
                return text is not None and mine is not None and rollupmod.entries(text).count(mine) >= need
            except rollupmod.MalformedRollup:
                return False

        for _attempt in range(self.rollup_attempts):
            started = time.monotonic()
            # A lost write can come back: a writer that had read it saves it again. Writing it
            # once more would then record it twice, so a retry first looks whether it is there.
            if mine is None or not kept():
                try:
                    result, written = self._write_rollup(issue_id, guarded)
                except LostUpdate:
                    self._pause(random.uniform(0.01, 0.1))
                    continue
                except _AlreadyThere:
                    written = None
                if written is None:
                    pass  # our entry came back between the two reads: nothing to write
                else:
                    # Our change is the latest entry of what we wrote (append adds it at the bottom,
                    # amend rewrites the bottom one); it is kept while every copy of it is there.
                    parsed = rollupmod.entries(written)
                    mine, need = parsed[-1], parsed.count(parsed[-1])
                if not kept():
                    self._pause(random.uniform(0.01, 0.1))
                    continue
            # A writer that read before our write may still be about to save its older copy;
            # such a write lands within about one of its own read-and-write cycles, so look
            # again after twice ours.
            self._pause(max(self.rollup_min_settle, 2 * (time.monotonic() - started)))
            if kept() and result is not None:
                return result
            self._pause(random.uniform(0.01, 0.1))
        raise BackendError(f"{issue_id}: the status rollup kept changing under concurrent writers; the entry "
                           f"was not recorded after {self.rollup_attempts} attempts. Check the rollup, then retry")

    def _pause(self, seconds: float) -> None:
        """A rollup write's pause between its reads and writes, which abort() ends (the app quits)."""
        if self._ended.wait(seconds):
            raise _Ended()

    @contextmanager
    def _ended_says_maybe_done(self, issue_id: str) -> Iterator[None]:
        """A rollup write abort() ended, in a pause or a request: what it wrote may stand, so it
        is never said to be not done (a read-back cut after the write would say only "GET")."""
        try:
            yield
        except (_Ended, BackendError) as exc:
            if not self._ended.is_set():
                raise
            raise BackendError(f"{issue_id}: the status rollup write was ended (the app quits); "
                               "the server may have done it already") from exc

    def attach(self, issue_id: str, data: bytes, name: str) -> AttachResult:
        """{id, name, url}. Raises UsageError (name), NotFound, Refused, BackendError."""
        name = validate_attachment_name(name)
        return self._do_attach(issue_id, data, name)

    # ---- publishing (local-files) ----------------------------------------------------
    def pending(self, only: Sequence[str] | None = None) -> Pending:
        raise Refused(f"pending is local-files only; the {self.kind} tracker writes straight to the server")

    def review_state(self, only: Sequence[str] | None = None) -> PendingReview:
        """:meth:`pending` plus ``review``, each pending path's state (local-files only)."""
        raise Refused(f"pending is local-files only; the {self.kind} tracker writes straight to the server")

    def publish(self, message: str, trailers: Sequence[str] = (), push: bool = False, *,
                review: dict[str, str] | None = None, only: Sequence[str] | None = None) -> PublishResult:
        raise Refused(f"publish is local-files only; the {self.kind} tracker writes straight to the server")

    def doctor(self) -> DoctorReport:
        raise NotImplementedError

    def default_user(self) -> str:
        """Who a rollup entry names when --user is not given."""
        return getpass.getuser()

    def close_backend(self) -> None:
        """Release connections; safe to call twice."""

    def abort(self, opening_only: bool = False) -> None:
        """From another thread (the app quits): end the connections at once, so a call waiting
        on the server fails now (see ``MailSource.abort``), and a rollup write's pause ends
        (not for ``opening_only``: a write has its chance to finish first). Never raises;
        :meth:`close_backend` follows. A backend's own abort() calls this one too."""
        if not opening_only:
            self._ended.set()

    # ---- hooks ------------------------------------------------------------------------
    def _check_body(self, text: str) -> None:
        """Backends may refuse bodies they cannot store (e.g. reserved lines)."""
        if "\x00" in text:
            raise UsageError("the text contains a NUL byte")

    def _raw_body(self, issue_id: str) -> tuple[str, str]:
        """(canonical id, body as stored, in ``field_syntax``)."""
        raise NotImplementedError

    def _mutate_body(self, issue_id: str, change: Callable[[str], str]) -> str:
        """Apply ``change`` to the stored body (after the write guards); return the canonical id."""
        raise NotImplementedError

    def _mutate_rollup(self, issue_id: str, change: Callable[[str | None], str]) -> WriteResult:
        """Apply ``change`` to the rollup text (None when the issue has none); return {id, url}."""
        raise NotImplementedError

    def _write_rollup(self, issue_id: str, change: Callable[[str | None], str]) -> tuple[WriteResult, str]:
        """Like ``_mutate_rollup`` but also return the rollup text as the server stored it.
        Raises LostUpdate when this write created a second rollup (and removed it again)."""
        raise NotImplementedError

    def _read_rollup(self, issue_id: str) -> str | None:
        """The current status rollup text, or None when the issue has none."""
        raise NotImplementedError

    def _do_view(self, issue_id: str, comments: bool) -> IssueView:
        raise NotImplementedError

    def _do_list(self, state: str, labels: builtins.list[str], words: builtins.list[str],
                 limit: int | None) -> ListResult:
        raise NotImplementedError

    def _do_labels(self) -> Iterable[str]:
        raise NotImplementedError

    def _do_body(self, issue_id: str) -> str:
        return self._raw_body(issue_id)[1]

    def _do_create(self, title: str, body: str, labels: builtins.list[str]) -> WriteResult:
        raise NotImplementedError

    def _do_edit(self, issue_id: str, change: EditRequest) -> WriteResult:
        raise NotImplementedError

    def _do_comment(self, issue_id: str, body: str, author: str | None) -> CommentResult:
        raise NotImplementedError

    def _do_close(self, issue_id: str, reason: str) -> StateResult:
        raise NotImplementedError

    def _do_reopen(self, issue_id: str) -> StateResult:
        raise NotImplementedError

    def _do_attach(self, issue_id: str, data: bytes, name: str) -> AttachResult:
        raise NotImplementedError


def _check_entry_body(body: str) -> None:
    if not body.strip():
        raise UsageError("the entry body is empty")
    try:
        rollupmod.check_entry_body(body)
    except rollupmod.BadEntryBody as exc:
        raise UsageError(str(exc)) from exc


@contextmanager
def _rollup_errors(issue_id: str) -> Iterator[None]:
    """Rollup problems as contract errors: a mismatch or nothing to amend is a refusal."""
    try:
        yield
    except (rollupmod.ActionMismatch, rollupmod.NoEntry) as exc:
        raise Refused(f"{issue_id}: {exc}") from exc
    except rollupmod.MalformedRollup as exc:
        raise MalformedIssue(f"{issue_id} status rollup", f"{exc}; fix it by hand, nothing was rewritten") from exc


def _dedupe(values: Iterable[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _validate_heading(heading: str) -> str:
    heading = (heading or "").strip()
    if heading.startswith("#"):
        heading = heading.lstrip("#").strip()
    if not heading or "\n" in heading or "\r" in heading or _CONTROL.search(heading):
        raise UsageError("the heading must be one line of visible text")
    return heading


_ATTACHMENT_NAME = lazy(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")


def validate_attachment_name(name: str) -> str:
    """A plain file name: no path separators, no leading dot, no ``..``. Raises Refused."""
    if not name:
        raise UsageError("--name is required")
    if "/" in name or "\\" in name or name in (".", "..") or ".." in name or not _ATTACHMENT_NAME.match(name):
        raise Refused(f"attachment name {name!r} refused: use letters, digits and . _ + - "
                      "(no path separators, no leading dot, no '..')")
    return name
