"""How a tracker issue is linked to a mail thread, and how a flow finds that link again.

The link is the ``### Security mailing list thread`` field of the issue body, holding the
URL that ``thread_url`` gave at import (the thread ID ``kind:value`` when no backend
serves ``thread_url``). That URL is the key: importing the same thread twice finds the
issue instead of creating a second one.

The ``Import`` and ``Sync`` status-rollup entries written by the flows also carry two
plain lines a person can read and a flow can parse:

    Thread: `mbox:<root@example.org>`
    Covers mail up to: 2026-09-04T10:00:00Z
    Covers messages: 3f0c1a2b4d5e6f70 9a8b7c6d5e4f3a2b

``Thread`` tells sync which thread to read (a URL does not always lead back to an ID)
and keeps two threads apart whose archive links coincide (a Pipermail month index).
``Covers messages`` names every message the entry summarised (a short digest of each
Message-ID, synthetic ones included: no sender text goes into the line): sync takes a
message as new exactly when no entry names it, whatever its Date says. ``Covers mail up
to`` is the newest Date an entry summarised, for a person; only an entry written before
``Covers messages`` existed counts by it (every message dated up to it is seen).
"""

from __future__ import annotations

import hashlib
import re
import time
from datetime import datetime, timezone
from typing import Any, Callable, Literal, TypedDict

from mailtriage.backends.contract import MailSource, Op, ThreadId
from mailtriage.backends.errors import NoBackendAvailable
from mailtriage.backends.registry import Dispatch, SourceSet
from mailtriage.core.lazy_re import lazy
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.trackers import rollup as rollupmod
from mailtriage.trackers.contract import NotFound, Tracker
from mailtriage.trackers.errors import BackendError, MalformedIssue, Refused
from mailtriage.trackers.values import Created, Existing, IssueSummary, IssueView
from mailtriage.application.flows.threadindex import for_root

THREAD_FIELD = "Security mailing list thread"
DEFAULT_FIELDS = (THREAD_FIELD, "Reporter", "Received", "Affected versions")
IMPORT_ACTION = "Import"
RECENT_CHECK = 30  # issues whose link is read directly on a server tracker (see find_issue_for_thread)
# An issue found on a server tracker and updated less than this many seconds ago (clocks may
# differ by minutes) may be a concurrent run's duplicate not yet folded: issues numbered
# before it are read too.
UNFOLDED_WINDOW = 900
SYNC_ACTION = "Sync"

# A code span whose fence is longer than any backtick run in the ID (CommonMark), so a
# backtick in a Message-ID cannot end it early; one space pads an ID touching a backtick.
_THREAD_LINE = re.compile(r"^Thread: (`+)(?!`)(.+?)(?<!`)\1\s*$", re.MULTILINE)
_COVERS_LINE = lazy(r"^Covers mail up to: (\S+)\s*$", re.MULTILINE)
_SEEN_LINE = lazy(r"^Covers messages:((?: +[0-9a-f]{16})*) *$", re.MULTILINE)


def declared_fields(config) -> list[str]:
    """The ``### Heading`` fields of a new issue, in order: ``tracker.fields`` when the
    project declares them (the thread field is always kept, first when missing)."""
    value = config.get("tracker.fields")
    if not isinstance(value, list) or not value:
        return list(DEFAULT_FIELDS)
    names = [str(v).strip() for v in value if str(v).strip()]
    if not any(n.lower() == THREAD_FIELD.lower() for n in names):
        names.insert(0, THREAD_FIELD)
    return names


def thread_line(thread_id: ThreadId) -> str:
    text = str(thread_id)
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"Thread: {fence}{pad}{text}{pad}{fence}"


def _thread_text(m: re.Match) -> str:
    text = m.group(2)
    if len(text) > 2 and text.startswith(" ") and text.endswith(" "):
        text = text[1:-1]
    return text


def covers_line(when: datetime) -> str:
    return f"Covers mail up to: {iso_utc(when)}"


def message_key(message_id: str) -> str:
    """The key of one message in a ``Covers messages`` line: 16 hex digits of its Message-ID's
    SHA-256 (the backends key a message without one by a stable synthetic ID)."""
    return hashlib.sha256(message_id.strip().encode("utf-8", "surrogateescape")).hexdigest()[:16]


def seen_line(message_ids) -> str:
    keys = list(dict.fromkeys(message_key(m) for m in message_ids))
    return "Covers messages:" + "".join(" " + k for k in keys)


def iso_utc(when: datetime) -> str:
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> datetime | None:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


# -- the rollup ------------------------------------------------------------------------------

@frozen_dataclass
class RollupState:
    """What the status rollup of an issue says (entries oldest first)."""

    entries: tuple[rollupmod.Entry, ...]
    problem: str | None = None  # the rollup could not be parsed (it is never rewritten then)

    @property
    def imported(self) -> bool:
        return any(e.action == IMPORT_ACTION for e in self.entries)

    @property
    def latest(self) -> rollupmod.Entry | None:
        return self.entries[-1] if self.entries else None

    def thread_id(self) -> ThreadId | None:
        """The thread an Import/Sync entry names (the newest naming one wins)."""
        for entry in reversed(self.entries):
            m = _THREAD_LINE.search(entry.body)
            if m:
                try:
                    return ThreadId.parse(_thread_text(m))
                except ValueError:
                    continue
        return None

    def thread_text(self) -> str | None:
        """The reference :meth:`thread_id` parses, as written (None when no entry names one)."""
        for entry in reversed(self.entries):
            m = _THREAD_LINE.search(entry.body)
            if m:
                text = _thread_text(m)
                try:
                    ThreadId.parse(text)
                except ValueError:
                    continue
                return text
        return None

    def seen(self) -> frozenset[str]:
        """The :func:`message_key` of every message an entry's ``Covers messages`` names."""
        keys: set[str] = set()
        for entry in self.entries:
            for m in _SEEN_LINE.finditer(entry.body):
                keys.update(m.group(1).split())
        return frozenset(keys)

    def seen_source(self) -> str | None:
        """Which entry last said what it covers (by ``Covers messages`` or a date), for people."""
        for entry in reversed(self.entries):
            if _SEEN_LINE.search(entry.body) or _COVERS_LINE.search(entry.body):
                return f"the {entry.action} entry of {entry.date}"
        return None

    def covered_until(self) -> tuple[datetime | None, bool, str | None]:
        """(instant, strict, source): what the entries written before ``Covers messages``
        existed cover by date, on top of :meth:`seen`.

        The newest ``Covers mail up to`` of an entry without a ``Covers messages`` line
        (strict: mail *after* it is new); else, when no entry says what it covers at all,
        the start of the latest entry's day (not strict, over-inclusive: that day's mail is
        shown again); else (None, False, None): only :meth:`seen` counts."""
        described = False
        for entry in reversed(self.entries):
            if _SEEN_LINE.search(entry.body):
                described = True
                continue
            m = _COVERS_LINE.search(entry.body)
            if m:
                when = parse_iso(m.group(1))
                if when:
                    return when, True, f"the {entry.action} entry of {entry.date}"
        if described:
            return None, False, None
        if self.latest is not None:
            try:
                day = datetime.fromisoformat(self.latest.date).replace(tzinfo=timezone.utc)
            except ValueError:
                return None, False, None
            return day, False, f"the start of {self.latest.date} (the latest entry records no time)"
        return None, False, None

    def covers(self, message_id: str, date: datetime | None) -> bool:
        """True when an entry already summarised this message: named by ``Covers messages``,
        or dated within what :meth:`covered_until` covers."""
        if message_key(message_id) in self.seen():
            return True
        return covered_by_date(date, self.covered_until())


def covered_by_date(date: datetime | None, covered: tuple[datetime | None, bool, str | None]) -> bool:
    """True when ``date`` is within a :meth:`RollupState.covered_until` coverage."""
    since, strict, _ = covered
    if date is None or since is None:
        return False
    when = date if date.tzinfo else date.replace(tzinfo=timezone.utc)
    return when <= since if strict else when < since


def rollup_state(tracker: Tracker, issue_id: str) -> RollupState:
    """Raises NotFound, BackendError (the tracker's errors)."""
    return rollup_state_of(tracker.view(issue_id, comments=True), issue_id)


def rollup_state_of(view: IssueView, issue_id: str) -> RollupState:
    """The rollup of an issue already viewed with its comments."""
    text = next((c.get("body") for c in view.get("comments") or [] if c.get("kind") == "rollup"), None)
    if not text:
        return RollupState(())
    try:
        return RollupState(tuple(rollupmod.entries(text)))
    except rollupmod.MalformedRollup as exc:
        return RollupState((), f"the status rollup of {issue_id} cannot be read ({exc}); fix it by hand")


# -- finding the issue of a thread --------------------------------------------------------------

def _same_link(value: str | None, key: str) -> bool:
    if not value:
        return False
    for line in value.splitlines():
        line = line.strip().strip("`").strip()
        if line.startswith("<") and line.endswith(">"):
            line = line[1:-1].strip()
        if line == key:
            return True
    return False


def _find_in_index(tracker: Tracker, key: str, thread_id: ThreadId | None) -> str | None:
    """find_issue_for_thread's checks, on the candidates of the thread index only."""
    if not tracker.root.is_dir():
        tracker.list(state="all", limit=1)  # the tracker's own error for a missing folder
    candidates = for_root(tracker.root).candidates(key, thread_id)
    by_thread = []
    for issue_id in candidates:
        try:
            value = tracker.field_get(issue_id, THREAD_FIELD)["value"]
        except NotFound:
            continue
        if not _same_link(value, key):
            by_thread.append(issue_id)
            continue
        if thread_id is not None:
            named = rollup_state(tracker, issue_id).thread_id()
            if named is not None and named.kind == thread_id.kind and named != thread_id:
                continue
        return issue_id
    if thread_id is not None:
        for issue_id in by_thread:
            if rollup_state(tracker, issue_id).thread_id() == thread_id:
                return issue_id
    return None


def _search_words(text: str) -> str:
    # --search takes plain words; ':' would read as a qualifier. Every word must occur,
    # and each piece of the key is a substring of the key, so the real issue is found.
    return " ".join(w for w in re.split(r"[\s:<>`]+", text) if w)


def find_issue_for_thread(tracker: Tracker, key: str, thread_id: ThreadId | None = None) -> str | None:
    """The ID of the issue whose thread field holds ``key`` (open or closed), or None.

    A candidate whose rollup names *another* thread of the same kind is not a match (two
    threads can share an archive link). When no issue holds the key and ``thread_id`` is
    given, an issue whose rollup names that thread is found too (its URL changed, e.g.
    an IMAP folder was reset).

    A local-files tracker answers from the thread index (:mod:`threadindex`): only the
    candidates it names are read, so the cost follows the issues that name the thread,
    not the size of the tracker.

    Raises the tracker's errors (BackendError, …): a lookup that cannot run must stop an
    import rather than risk a duplicate.
    """
    if tracker.features.local_issue_files:
        return _find_in_index(tracker, key, thread_id)
    item = _find_on_server(tracker, key, thread_id)
    if item is None:
        return None
    if tracker.features.locked_find_or_create or not _recently_updated(item):
        return item["id"]
    # A concurrent run may have made this issue as a duplicate and not folded it yet (a fold
    # follows its creation within seconds): the lowest-numbered issue holding the thread is
    # the one that fold keeps (find_or_create_issue).
    return _earliest_holding(tracker, key, item["id"], thread_id) or item["id"]


def _recently_updated(item: IssueSummary) -> bool:
    """Updated within UNFOLDED_WINDOW of now, or of no readable time (checked then)."""
    when = parse_iso(str(item.get("updated") or ""))
    return when is None or abs((datetime.now(timezone.utc) - when).total_seconds()) < UNFOLDED_WINDOW


def _find_on_server(tracker: Tracker, key: str, thread_id: ThreadId | None) -> IssueSummary | None:
    for item in tracker.list(state="all", search=_search_words(key), limit=50).items:
        try:
            value = tracker.field_get(item["id"], THREAD_FIELD)["value"]
        except NotFound:
            continue
        if not _same_link(value, key) or _names_another(tracker, item["id"], thread_id):
            continue
        return item
    if thread_id is not None:
        for item in tracker.list(state="all", search=_search_words(str(thread_id)), limit=50).items:
            if rollup_state(tracker, item["id"]).thread_id() == thread_id:
                return item
    if tracker.features.search_lags:
        # A server's search index lags (GitHub's by up to a minute) and splits URLs into
        # words its own way: also read the link of the most recently updated issues, where
        # an import made moments ago is.
        for item in tracker.list(state="all", limit=RECENT_CHECK).items:
            try:
                value = tracker.field_get(item["id"], THREAD_FIELD)["value"]
            except NotFound:
                continue
            if _same_link(value, key) and not _names_another(tracker, item["id"], thread_id):
                return item
    return None


def _names_another(tracker: Tracker, issue_id: str, thread_id: ThreadId | None) -> bool:
    """Whether the rollup of an issue holding the thread's link names another thread of the same
    kind (two threads can share an archive link): not the thread's issue. A rollup not written
    yet (a concurrent run's issue, just made) names none."""
    if thread_id is None:
        return False
    named = rollup_state(tracker, issue_id).thread_id()
    return named is not None and named.kind == thread_id.kind and named != thread_id


# -- creating the issue of a thread exactly once -------------------------------------------------

RECHECK_BEFORE = 20  # issues numbered just before a new one that the re-check reads directly


class Folded(TypedDict):
    """:func:`find_or_create_issue` created a duplicate of an issue a concurrent run made first
    and folded it into that one: {id (the one kept), existing: true, folded (the duplicate)}."""

    id: str
    existing: Literal[True]
    folded: str


def find_or_create_issue(tracker: Tracker, key: str, thread_id: ThreadId | None, title: str, body: str,
                         labels: list[str]) -> Existing | Created | Folded:
    """The issue of the thread ``key`` names, else a new one: {id, existing, folded?}.

    Local files: found or created under the tracker lock (one issue, whatever the number of
    processes). A server has no such lock and its search lags, so two runs can both find
    nothing and both create. After creating, the issues numbered just before ours are read
    directly (never through search): the lowest-numbered issue holding the thread is the
    one kept, and ours, when it is not that one, is folded into it (:func:`fold_duplicate`).
    Both runs apply the same rule, so exactly one issue stays. A read that fails there is
    tried again, then raises BackendError naming the issue made (``partial``): a failed read
    says nothing about an issue, and passed over it left a duplicate linked.
    """
    made = tracker.find_or_create(title, body, labels, lambda: find_issue_for_thread(tracker, key, thread_id))
    if made["existing"] is True or tracker.features.locked_find_or_create:
        return made
    try:
        keeper = _earliest_holding(tracker, key, made["id"], thread_id)
    except BackendError as exc:
        raise BackendError(f"{made['id']} was created, but the issues numbered before it could not be read to "
                           f"check whether a concurrent import of this thread created one first ({exc}); if "
                           f"one did, close {made['id']} as its duplicate", partial=made) from exc
    if keeper is None:
        return made
    fold_duplicate(tracker, made["id"], keeper)
    return {"id": keeper, "existing": True, "folded": made["id"]}


def _numbered_before(issue_id: str, count: int) -> list[str]:
    """``FOO-12`` → ``FOO-11``, ``FOO-10``, …; ``12`` → ``11``, … (nearest first)."""
    m = re.fullmatch(r"(.*?)(\d+)", issue_id)
    if not m:
        return []
    prefix, number = m.group(1), int(m.group(2))
    return [f"{prefix}{n}" for n in range(number - 1, max(0, number - 1 - count), -1)]


def _earliest_holding(tracker: Tracker, key: str, mine: str, thread_id: ThreadId | None = None) -> str | None:
    """The lowest-numbered issue before ``mine`` whose thread field holds ``key`` (and whose
    rollup names no other thread than ``thread_id``, :func:`_names_another`), read one by one
    (a direct read is current where search is not), or None.

    Raises BackendError when an issue cannot be read after RECHECK_READS tries."""
    found = None
    for issue_id in _numbered_before(mine, RECHECK_BEFORE):
        try:
            value = _thread_field(tracker, issue_id)
        except (NotFound, Refused, MalformedIssue):
            continue  # a gap: a deleted, hidden, moved or unreadable issue (ours is made: go on)
        if _same_link(value, key) and not _names_another_or_gone(tracker, issue_id, thread_id):
            found = issue_id
    return found


def _names_another_or_gone(tracker: Tracker, issue_id: str, thread_id: ThreadId | None) -> bool:
    """:func:`_names_another` for the re-check: an issue gone (or hidden) meanwhile is a gap, as
    its thread field's read would have been."""
    try:
        return _names_another(tracker, issue_id, thread_id)
    except (NotFound, Refused, MalformedIssue):
        return True


RECHECK_READS = 3  # tries of one direct read of the re-check before it gives up


def _thread_field(tracker: Tracker, issue_id: str) -> str | None:
    """The thread field of one issue, read directly. A read that fails (BackendError: a
    timeout on a loaded server, a dropped connection, a 5xx) says nothing about the issue:
    taken for a gap, it left a concurrent run's duplicate linked beside the issue it
    duplicates, with every run reporting success. Tried again, then raised."""
    for attempt in range(RECHECK_READS - 1):
        try:
            return tracker.field_get(issue_id, THREAD_FIELD)["value"]
        except BackendError:
            time.sleep(0.25 * 2 ** attempt)
    return tracker.field_get(issue_id, THREAD_FIELD)["value"]  # the last try raises


def fold_duplicate(tracker: Tracker, duplicate: str, keeper: str) -> None:
    """Fold an issue this run created twice: its thread field no longer names the thread (so
    no later lookup finds it), a comment says whose duplicate it is, and it is closed as not
    planned. Issues are never deleted: GitHub's REST API cannot, and Jira's DELETE needs a
    permission a triager rarely has; a closed, relinked issue loses nothing."""
    note = f"Duplicate of {keeper}: created by a concurrent import of the same thread; folded by mailtriage."
    tracker.field_set(duplicate, THREAD_FIELD, f"(duplicate of {keeper})")
    tracker.comment(duplicate, note)
    try:
        tracker.close(duplicate, "not-planned")
    except Exception as exc:  # the project may not declare the reason: the issue is unlinked already
        tracker.notice(f"{duplicate} (a duplicate of {keeper}) is unlinked but still open: {exc}")


# -- dispatching a thread op to a backend that reads that kind of ID ---------------------------

def _accepts(backend: MailSource, thread_id: ThreadId) -> bool:
    # Its own shape, or a reference whose root Message-ID it resolves (thread identity).
    return backend.accepts(thread_id)


def dispatch_thread_op(sources: SourceSet, op: Op, thread_id: ThreadId,
                       call: Callable[[MailSource], Any]) -> Dispatch:
    """Dispatch ``op`` by the resolution rule; when the chosen backend cannot read this
    reference (another shape without a root it can resolve), use the first configured,
    available backend that supports ``op`` and can.

    Raises MandatoryBackendUnavailable, NoBackendAvailable, and the backend's errors.
    """
    res = sources.resolve(op)
    if res.chosen and _accepts(sources.backends[res.chosen], thread_id):
        return sources.dispatch(op, call)
    for entry in sources.entries:
        backend = sources.backends[entry.name]
        if entry.role == "optional" or not backend.supports(op) or not _accepts(backend, thread_id):
            continue
        if sources.availability.reason(entry.name) is None:
            return sources.dispatch(op, call, backend=entry.name)
    if not res.chosen:
        res.raise_if_unresolved()
    raise NoBackendAvailable(f"{op.value} for a thread id of kind {thread_id.kind!r}")
