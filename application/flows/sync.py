"""Sync: bring tracker issues up to date with the mail on their threads.

For each tracker issue linked to a thread (its ``Security mailing list thread`` field and
the ``Thread:`` line of its Import entry), read the thread and take the messages the status
rollup has not summarised yet: those no entry names in a ``Covers messages`` line, whatever
their Date says (a reply dated years ahead hides nothing, a late reply with an old Date is
still new). An entry written before that line existed covers by date, as it did: every
message dated up to its ``Covers mail up to`` (else the start of the latest entry's day).
For each issue with new mail, propose a ``Sync`` rollup entry that says who wrote what
(date, sender, the first words of the new text) and names the messages it covers.

Signals in the new mail — CVE IDs, credit wording, a CVE review, status words (fixed,
released, duplicate, not a vulnerability, …) — are *shown* to the triager next to the
entry. The code decides nothing from them: label and state changes are only those the
triager picks (:class:`Picks`), checked against the labels the project declares.

:func:`collect_sync` reads (it writes nothing to the tracker or the mail) and returns one
:class:`SyncItem` per issue, so the TUI can show them and let the triager pick;
:func:`propose_sync` turns items and picks into one proposal.

Its cost follows what changed, not the size of the tracker: on a local-files tracker each
issue's link and coverage come from a record refreshed by stat (an issue file is parsed
again only when it changed), and with a local archive a thread is read only when the
archive's listing shows mail past the issue's coverage. Both records are derived data
under the user's data folder; the items are those a read of every file and thread gives.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Sequence
from urllib.parse import unquote, urlsplit

from mailtriage.backends.contract import Message, Op, Thread, ThreadId, ThreadSummary
from mailtriage.backends.errors import MailError
from mailtriage.backends.registry import SourceSet
from mailtriage.core import private_files, settings
from mailtriage.core.errors import ConfigError
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.paths import private_dir
from mailtriage.trackers.contract import CLOSE_REASONS, EditRequest, Tracker, TrackerError, summary_json
from mailtriage.trackers.fields import get_field
from mailtriage.trackers.values import Existing, IssueSummary, WriteResult
from mailtriage.application.flows import linking
from mailtriage.application.flows.proposals import Field, Proposal, Write, WriteKind, in_tracker
from mailtriage.application.flows.text import display_address, excerpt, markdown_inert, one_line, plain_lines
from typing import Sequence
from mailtriage.application.flows.open_project import OpenProject


@dataclass
class Picks:
    """Label and state changes the triager picked for one issue."""

    add_labels: list[str] = field(default_factory=list)
    remove_labels: list[str] = field(default_factory=list)
    close: str | None = None  # completed | not-planned
    reopen: bool = False

    def empty(self) -> bool:
        return not (self.add_labels or self.remove_labels or self.close or self.reopen)


@dataclass
class SyncItem:
    """One tracker issue and what its thread says since the rollup's last word."""

    issue_id: str
    title: str
    state: str
    labels: list[str]
    link: str | None = None
    thread_id: ThreadId | None = None
    since: datetime | None = None
    since_source: str | None = None
    new_messages: list[Message] = field(default_factory=list)
    undated: int = 0
    signals: list[str] = field(default_factory=list)
    entry: str | None = None  # the proposed Sync entry body
    problem: str | None = None  # why this issue could not be synced
    reporter: str = field(default="", repr=False, compare=False)  # the thread's first sender, lower-cased

    def to_json(self) -> dict:
        return {
            "issue": self.issue_id, "title": self.title, "state": self.state, "labels": list(self.labels),
            "link": self.link, "thread_id": str(self.thread_id) if self.thread_id else None,
            "since": linking.iso_utc(self.since) if self.since else None, "since_source": self.since_source,
            "new_messages": [{"message_id": m.message_id, "from": m.sender.to_json(),
                              "date": m.date.isoformat() if m.date else None} for m in self.new_messages],
            "undated": self.undated, "signals": list(self.signals), "entry": self.entry, "problem": self.problem,
        }


# -- signals: shown to the triager, never acted upon --------------------------------------------

_CVE = re.compile(r"\bCVE-\d{4}-\d{4,7}\b", re.IGNORECASE)
_CREDIT = re.compile(r"\b(credit(ed|s)?|acknowledg\w*|thanks? to|reported by|discovered by|found by|finder)\b",
                     re.IGNORECASE)
_REVIEW = re.compile(r"\b(cve\b.{0,40}\breview\w*|review\w*.{0,40}\bcve)\b", re.IGNORECASE)
_STATUS = re.compile(
    r"\b(fix(ed|es)?|patch(ed|es)?|commit(ted)?|releas(e|ed|ing)|advisory|disclos\w*|embargo\w*|duplicate|"
    r"not a (security )?(issue|vulnerability|bug)|invalid|won'?t fix|reject\w*|cannot reproduce|reproduc\w*|"
    r"confirm(ed|s)?)\b", re.IGNORECASE)


def _new_text(message: Message) -> list[str]:
    """The lines the sender wrote (quoted lines and the signature left out)."""
    lines = []
    for line in plain_lines(message.body_text).split("\n"):
        if line in ("-- ", "--"):
            break
        if not line.lstrip().startswith(">") and line.strip():
            lines.append(line.strip())
    return lines


def signals_of(messages: Iterable[Message], reviewer: str | None = None) -> list[str]:
    """What a triager may want to act on, each with who wrote it and the line that says so."""
    found: list[str] = []

    def add(kind: str, who: str, line: str) -> None:
        text = f"{kind}: {who}: «{one_line(line, 160)}»"
        if text not in found:
            found.append(text)

    for message in messages:
        who = display_address(message.sender.name, message.sender.email)
        if reviewer and message.sender.email.lower() == reviewer.lower():
            add("CVE reviewer", who, excerpt(message.body_text, 160) or message.subject)
        for line in _new_text(message):
            for cve in dict.fromkeys(m.group(0).upper() for m in _CVE.finditer(line)):
                add(f"CVE {cve}", who, line)
            if _REVIEW.search(line):
                add("CVE review", who, line)
            if _CREDIT.search(line):
                add("credit", who, line)
            m = _STATUS.search(line)
            if m:
                add(f"status ({m.group(0).lower()})", who, line)
    return found


# -- reading --------------------------------------------------------------------------------------

def _thread_id_from_link(link: str | None, sources: SourceSet) -> ThreadId | None:
    """A thread ID from the recorded link when no rollup entry names one: ``kind:value``
    as recorded without ``thread_url``, or the Message-ID in an mbox ``file://…#<id>`` link."""
    if not link:
        return None
    text = link.strip()
    if text.startswith("file:"):
        fragment = unquote(urlsplit(text).fragment)
        if fragment.startswith("<") and fragment.endswith(">"):
            kinds = [b.thread_id_kind for b in sources.backends.values() if b.features.local_archive]
            return ThreadId(kinds[0] if kinds else "mbox", fragment)
        return None
    if "://" in text:
        return None
    try:
        return ThreadId.parse(text)
    except ValueError:
        return None


def _issue_list(tracker: Tracker, issue_ids: Sequence[str] | None
                ) -> tuple[list[IssueSummary], dict[str, tuple[int, int]] | None]:
    """The issues, with the listing's stat of each issue file (a local-files tracker's; None
    when the issues were viewed one by one)."""
    if issue_ids:
        out = []
        for issue_id in issue_ids:
            view = tracker.view(issue_id)
            out.append(summary_json(id=view["id"], title=view["title"], state=view["state"], labels=view["labels"],
                                    updated=view["updated"], url=view["url"]))
        return out, None
    listing = tracker.list(state="open")
    return listing.items, listing.file_stats


def collect_sync(sources: SourceSet, tracker: Tracker, issue_ids: Sequence[str] | None = None) -> list[SyncItem]:
    """Read every linked issue's thread; one item per issue (problems recorded per item).

    ``issue_ids`` limits the run (default: every open issue).

    The cost follows the threads that changed: on a whole-tracker run whose threads are
    read from a local archive, the archive is listed once and a thread is read only when
    the listing cannot show that reading it would add nothing (see :class:`_QuietThreads`).
    The items are the same either way.

    Raises the tracker's errors when the issues cannot be listed (NotFound for an
    unknown ``issue_ids`` entry) and MandatoryBackendUnavailable.
    """
    sources.preflight()
    reviewer = sources.config.get("security_inbox.foundation_security_address")
    items: list[SyncItem] = []
    linked: list[tuple[SyncItem, _Facts]] = []
    summaries, file_stats = _issue_list(tracker, issue_ids)
    known = _IssueFacts.of(tracker, file_stats)
    for summary in summaries:
        item = SyncItem(summary["id"], summary["title"], summary["state"], list(summary["labels"]))
        items.append(item)
        try:
            facts = known.get(item.issue_id) if known is not None else None
            if facts is None:
                facts = _read_facts(tracker, item.issue_id)
                if known is not None:
                    known.put(item.issue_id, facts)
        except TrackerError as exc:
            item.problem = f"cannot read {item.issue_id}: {exc}"
            continue
        item.link = facts.link
        if facts.problem:
            item.problem = facts.problem
            continue
        item.thread_id = facts.thread_id() or _thread_id_from_link(item.link, sources)
        if item.thread_id is None:
            item.problem = (f"{item.issue_id} is not linked to a thread mailtriage can read "
                            f"({'no link' if not item.link else 'link ' + one_line(item.link, 120)})")
            continue
        linked.append((item, facts))
    if known is not None:
        known.save()
    quiet = _QuietThreads.listed(sources, tracker) if not issue_ids and linked else None
    heads = _server_heads(sources, linked) if not issue_ids and linked and quiet is None else {}
    for item, facts in linked:
        tid = item.thread_id
        assert tid is not None
        since, since_source = facts.covered[0], facts.source
        undated = quiet.undated_if_quiet(tid, facts) if quiet is not None else None
        if undated is None and tid in heads:
            undated = _undated_if_nothing_new(heads[tid], facts)
        if undated is not None:
            # The thread is as it was when a read under this same coverage found nothing new
            # (or its messages' IDs and dates, read with every other thread's, show none):
            # the read would add no message, and the undated ones are counted as it counted them.
            item.since, item.since_source, item.undated = since, since_source, undated
            continue
        try:
            thread: Thread = linking.dispatch_thread_op(sources, Op.READ_THREAD, tid,
                                                        lambda b: b.read_thread(tid)).value
        except MailError as exc:
            item.problem = f"cannot read thread {tid} of {item.issue_id}: {exc}"
            continue
        item.since, item.since_source = since, since_source
        seen = frozenset(facts.seen)
        for message in thread.messages:
            if message.date is None:
                item.undated += 1
                continue
            if linking.message_key(message.message_id) not in seen and \
                    not linking.covered_by_date(message.date, facts.covered):
                item.new_messages.append(message)
        if quiet is not None:
            quiet.remember(tid, thread, item.undated, facts, bool(item.new_messages))
        if item.new_messages:
            item.reporter = thread.messages[0].sender.email.lower() if thread.messages else ""
            item.signals = signals_of(item.new_messages, reviewer if isinstance(reviewer, str) else None)
            item.entry = sync_entry(item, item.reporter)
    if quiet is not None:
        quiet.save()
    return items


def _server_heads(sources: SourceSet, linked: list[tuple[SyncItem, "_Facts"]]) -> dict[ThreadId, tuple]:
    """The Message-ID and Date of each message of the linked threads, read at once by a
    server source that offers it (IMAP: from one listing of the whole folder, issue 39),
    so a thread is read whole only when it may hold new mail. {} when the source cannot
    (every thread is then read, as before)."""
    res = sources.resolve(Op.READ_THREAD)
    if not res.chosen:
        return {}
    backend = sources.backends[res.chosen]
    heads_of = getattr(backend, "thread_heads", None)  # an optional hook of server sources
    if heads_of is None or backend.features.local_archive or not backend.supports(Op.LIST_RECENT_THREADS):
        return {}
    own = backend.own_kinds()
    wanted = [item.thread_id for item, _ in linked if item.thread_id is not None and item.thread_id.kind in own]
    if not wanted:
        return {}
    try:
        sources.dispatch(Op.LIST_RECENT_THREADS, lambda b: b.list_recent_threads(None, _EVERYTHING),
                         backend=backend.name)
        return heads_of(wanted)
    except MailError:
        return {}  # each thread is read, and its problem kept


def _undated_if_nothing_new(heads: Iterable, facts: "_Facts") -> int | None:
    """The undated count when none of a thread's messages (their IDs and dates) is new for
    ``facts``, by the rule a read applies; None when one is (the thread is then read)."""
    undated = 0
    seen = frozenset(facts.seen)
    for head in heads:
        if head.date is None:
            undated += 1
        elif linking.message_key(head.message_id) not in seen and not linking.covered_by_date(head.date,
                                                                                              facts.covered):
            return None
    return undated


@frozen_dataclass
class _Facts:
    """What sync needs of an issue file: its thread link and what its status rollup says."""

    link: str | None
    thread_text: str | None  # the thread reference the rollup names, as written (parsed on use)
    covered: tuple[datetime | None, bool, str | None]  # RollupState.covered_until()
    problem: str | None
    seen: tuple[str, ...] = ()  # RollupState.seen(), sorted
    source: str | None = None  # which entry says what is covered, for people

    def thread_id(self) -> ThreadId | None:
        return ThreadId.parse(self.thread_text) if self.thread_text is not None else None

    def coverage_token(self) -> str:
        """Changes whenever what the rollup covers changes."""
        since, strict, _ = self.covered
        text = f"{since.isoformat() if since else ''}|{strict}|{' '.join(self.seen)}"
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def to_json(self) -> list:
        since, strict, source = self.covered
        return [self.link, self.thread_text, since.isoformat() if since else None, strict, source, self.problem,
                list(self.seen), self.source]

    @classmethod
    def from_json(cls, data: list) -> "_Facts":
        link, thread_text, since, strict, source, problem, seen, described = data
        return cls(link, thread_text, (datetime.fromisoformat(since) if since else None, bool(strict), source),
                   problem, tuple(str(k) for k in seen), described)


def _read_facts(tracker: Tracker, issue_id: str) -> _Facts:
    """Read through the tracker (raises its errors)."""
    if tracker.features.bodies_as_stored:
        # One read of the issue file gives both (its body is stored as written).
        view = tracker.view(issue_id, comments=True)
        link = get_field(view["body"] or "", linking.THREAD_FIELD, tracker.field_syntax)
        rollup = linking.rollup_state_of(view, issue_id)
    else:
        link = tracker.field_get(issue_id, linking.THREAD_FIELD)["value"]
        rollup = linking.rollup_state(tracker, issue_id)
    if rollup.problem:
        return _Facts(link, None, (None, False, None), rollup.problem)
    covered, seen = rollup.covered_until(), tuple(sorted(rollup.seen()))
    return _Facts(link, rollup.thread_text(), covered, None, seen, rollup.seen_source() if seen else covered[2])


_FACTS_VERSION = 2  # 2: the messages the rollup names (Covers messages)


class _IssueFacts:
    """The sync facts of a local-files tracker's issue files, refreshed by stat.

    Derived data, never a source of truth (like the thread index): a fact is reused only
    while its file keeps the size and modification time it had when the tracker read it,
    and is a plain regular file (a symlinked issue file goes through the tracker, which
    refuses it); anything else is read through the tracker as before. Kept under
    ``core.settings.data_dir()/sync-issues/`` (links, thread references, coverage dates).
    The stats are those the tracker's listing took (``ListResult.file_stats``, before it read
    any file), else one pass over the folder here.
    """

    def __init__(self, root: Path, path: Path | None, stats: dict[str, tuple[int, int]] | None = None) -> None:
        self.root = root
        self.path = path
        self.facts: dict[str, list] = {}
        self.changed = False
        self.stats: dict[str, tuple[int, int]] = {}
        if path is not None:
            try:
                data = json.loads(private_files.read_text(path))
                if isinstance(data, dict) and data.get("v") == _FACTS_VERSION and isinstance(data.get("files"), dict):
                    self.facts = data["files"]
            except (OSError, ValueError, UnicodeDecodeError, ConfigError):
                pass  # (also when another user could have planted it: rebuilt)
        if stats is not None:
            self.stats = dict(stats)
            return
        try:
            with os.scandir(root) as it:
                for entry in it:
                    if entry.name.endswith(".md") and entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        self.stats[entry.name] = (st.st_mtime_ns, st.st_size)
        except OSError:
            self.stats = {}

    @classmethod
    def of(cls, tracker: Tracker, stats: dict[str, tuple[int, int]] | None = None) -> "_IssueFacts | None":
        if not (tracker.features.local_issue_files and tracker.features.bodies_as_stored):
            return None
        try:
            root = Path(tracker.root).resolve()
            digest = hashlib.sha256(str(root).encode()).hexdigest()[:20]
            path: Path | None = settings.data_dir() / "sync-issues" / f"{digest}.json"
        except Exception:  # no data dir: read through the tracker
            return None
        return cls(root, path, stats)

    def get(self, issue_id: str) -> _Facts | None:
        name = issue_id + ".md"
        stat = self.stats.get(name)
        known = self.facts.get(name)
        if stat is None or not known or known[:2] != list(stat):
            return None
        try:
            return _Facts.from_json(known[2])
        except (TypeError, ValueError):
            return None

    def put(self, issue_id: str, facts: _Facts) -> None:
        name = issue_id + ".md"
        stat = self.stats.get(name)
        if stat is None:
            return
        # The stat was taken before the read: a file written meanwhile is stale here and
        # is read again next time (its stat will differ).
        self.facts[name] = [stat[0], stat[1], facts.to_json()]
        self.changed = True

    def save(self) -> None:
        if self.path is None or not self.changed:
            return
        files = {name: f for name, f in self.facts.items() if name in self.stats}
        try:
            private_files.write_atomic(self.path, json.dumps({"v": _FACTS_VERSION, "files": files},
                                                             separators=(",", ":")).encode("utf-8"))
        except (OSError, ConfigError):  # (a folder another user could write is not written)
            pass


_EVERYTHING = datetime.min.replace(tzinfo=timezone.utc)  # a listing "since" that keeps every dated thread
_READS_VERSION = 2  # 2: a read is kept only when it found nothing new, with its coverage


class _QuietThreads:
    """Which linked threads a sync need not read: their archive listing shows nothing newer
    than the issue's coverage.

    Taken only where skipping the read is exactly equivalent:

    - the backend that would read the threads keeps a local archive (its listing covers
      every thread a read can reach) and lists; the listing is of *every* thread, so a
      thread that is gone from the archive is not listed and is read (its problem kept);
    - the issue names the thread in that backend's own shape, listed exactly once (a
      reference to a reply, or of another shape, is resolved by a read as before);
    - the thread's summary carries no note and no date marker (no message dated by the
      archive's delivery time instead of its Date header, no odd date);
    - a full read of it found nothing new under the very coverage the rollup has now,
      and the listing still shows the message count and last activity of that read (a
      late reply with an old Date moves the count; a message with no date at all moves
      neither the listing's date nor its notes, but it counts). The undated messages
      are counted as that read counted them.

    The record of those reads is derived data kept under ``core.settings.data_dir()``
    (thread references, counts and dates; no content); losing it only costs a full read.
    """

    def __init__(self, backend: str, summaries: dict[ThreadId, ThreadSummary], own_kinds: tuple[str, ...],
                 path: Path | None) -> None:
        self.backend = backend
        self.summaries = summaries
        self.own_kinds = own_kinds
        self.path = path
        self.reads: dict[str, list] = {}
        self.changed = False
        if path is not None:
            try:
                data = json.loads(private_files.read_text(path))
                if isinstance(data, dict) and data.get("v") == _READS_VERSION and isinstance(data.get("reads"), dict):
                    self.reads = data["reads"]
            except (OSError, ValueError, UnicodeDecodeError, ConfigError):
                pass  # (also when another user could have planted it: rebuilt)

    @classmethod
    def listed(cls, sources: SourceSet, tracker: Tracker) -> "_QuietThreads | None":
        """The listing of the backend that reads threads, or None (then every thread is read)."""
        res = sources.resolve(Op.READ_THREAD)
        if not res.chosen:
            return None
        backend = sources.backends[res.chosen]
        if not backend.features.local_archive or not backend.supports(Op.LIST_RECENT_THREADS):
            return None
        try:
            listing = sources.dispatch(Op.LIST_RECENT_THREADS, lambda b: b.list_recent_threads(None, _EVERYTHING),
                                       backend=backend.name).value
        except MailError:
            return None
        summaries: dict[ThreadId, ThreadSummary] = {}
        twice: set[ThreadId] = set()
        for summary in listing:
            if summary.thread_id in summaries:
                twice.add(summary.thread_id)
            summaries[summary.thread_id] = summary
        for tid in twice:
            del summaries[tid]
        try:
            digest = hashlib.sha256(f"{Path(tracker.root).resolve()}\0{backend.name}".encode()).hexdigest()[:20]
            path: Path | None = settings.data_dir() / "sync-reads" / f"{digest}.json"
        except Exception:  # no data dir (or a tracker without a folder): nothing is remembered
            path = None
        return cls(backend.name, summaries, tuple(backend.own_kinds()), path)

    def _summary(self, tid: ThreadId) -> ThreadSummary | None:
        if tid.kind not in self.own_kinds:
            return None
        summary = self.summaries.get(tid)
        if summary is None or summary.notes or summary.date_marker or summary.last_activity is None:
            return None
        return summary

    def undated_if_quiet(self, tid: ThreadId, facts: _Facts) -> int | None:
        """The undated count of a thread with nothing new for ``facts``; None when it must be read."""
        summary = self._summary(tid)
        if summary is None:
            return None
        last = summary.last_activity
        assert last is not None
        known = self.reads.get(str(tid))
        if not known or known[:2] != [summary.message_count, last.isoformat()] or known[3:] != [facts.coverage_token()]:
            return None
        return int(known[2])

    def remember(self, tid: ThreadId, thread: Thread, undated: int, facts: _Facts, found_new: bool) -> None:
        summary = self._summary(tid)
        if found_new or summary is None or summary.message_count != len(thread.messages):
            if self.reads.pop(str(tid), None) is not None:
                self.changed = True
            return
        assert summary.last_activity is not None
        record = [summary.message_count, summary.last_activity.isoformat(), undated, facts.coverage_token()]
        if self.reads.get(str(tid)) != record:
            self.reads[str(tid)] = record
            self.changed = True

    def save(self) -> None:
        if self.path is None or not self.changed:
            return
        try:
            private_files.write_atomic(self.path, json.dumps({"v": _READS_VERSION, "reads": self.reads},
                                                             separators=(",", ":")).encode("utf-8"))
        except (OSError, ConfigError):  # (a folder another user could write is not written)
            pass  # not remembered: the next sync reads these threads again


def sync_entry(item: SyncItem, reporter: str, messages: Sequence[Message] | None = None) -> str:
    """The Sync entry body: one line per new message (when, who, the first words), then the
    lines that say what it covers (``Covers messages`` names each one)."""
    messages = item.new_messages if messages is None else messages
    since = (f"since {linking.iso_utc(item.since)}" if item.since else
             f"since {item.since_source}" if item.since_source else "in the thread")
    lines = [f"{len(messages)} new message{'s' if len(messages) != 1 else ''} {since}:"]
    for m in messages:
        who = markdown_inert(display_address(m.sender.name, m.sender.email))
        role = " (reporter)" if m.sender.email.lower() == reporter else ""
        role += " (encrypted mail)" if m.crypto is not None and m.crypto.encrypted else ""
        words = markdown_inert(excerpt(m.body_text, 200)) or "(no text)"
        when = m.date.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        lines.append(f"- {when} · {who}{role}: {words}")
    newest = max(m.date for m in messages)
    lines += [linking.thread_line(item.thread_id), linking.covers_line(newest),
              linking.seen_line(m.message_id for m in messages)]
    return "\n".join(lines)


# -- proposing ---------------------------------------------------------------------------------------

def propose_sync(tracker: Tracker, items: Sequence[SyncItem], picks: dict[str, Picks] | None = None, *,
                 user: str | None = None) -> Proposal:
    """Sync entries for the items with new mail, then the picked label/state changes."""
    proposal = Proposal("Sync tracker issues with their threads")
    picks = dict(picks or {})
    declared = tracker.policy.labels or ()
    proposal.facts["items"] = [i.to_json() for i in items]
    proposal.facts["declared_labels"] = list(declared)
    tracker_name = f"tracker:{tracker.kind}"
    known = {i.issue_id: i for i in items}
    for item in items:
        if item.problem:
            proposal.notes.append(item.problem)
            continue
        if item.undated:
            proposal.notes.append(f"{item.issue_id}: {item.undated} undated "
                                  + ("message is" if item.undated == 1 else "messages are") + " not summarised")
        if not item.new_messages:
            proposal.notes.append(f"{item.issue_id}: no new mail since {item.since_source or 'the import'}")
            continue
        if any(m.crypto is not None and m.crypto.encrypted for m in item.new_messages):
            proposal.warnings.append(f"{item.issue_id}: new mail was ENCRYPTED: the first words of its decrypted "
                                     "text go into the Sync entry, which the tracker writes only when it is "
                                     "access-restricted")
            proposal.facts.setdefault("from_encrypted_mail", []).append(item.issue_id)
        proposal.writes.append(_entry_write(tracker, item, tracker_name, user))
    for issue_id, pick in picks.items():
        if issue_id not in known:
            proposal.warnings.append(f"picks for {issue_id} ignored: it is not part of this sync")
            continue
        proposal.writes += _pick_writes(tracker, known[issue_id], pick, declared, tracker_name, proposal)
    if proposal.empty:
        proposal.notes.append("nothing to write: no issue has new mail and nothing was picked")
    return proposal


def _one_writer(tracker: Tracker, issue_id: str):
    """This user's processes check and append one issue's Sync entry one at a time: the
    check reads the rollup, the append writes it, and two runs between the two would both
    write the same mail. An flock on a file in the private data folder (no content)."""
    where = f"{tracker.kind}\0{getattr(tracker, 'root', '')}\0{issue_id}"
    try:
        folder = private_dir(private_dir(settings.data_dir()) / "sync-locks")
    except Exception:  # UnsafePath, OSError: no usable data folder, unserialised as before
        return nullcontext(False)
    return private_files.exclusive(folder / f"{hashlib.sha256(where.encode()).hexdigest()[:20]}.lock")


def _entry_write(tracker: Tracker, item: SyncItem, tracker_name: str, user: str | None) -> Write:
    def append(write: Write) -> WriteResult | Existing:
        with _one_writer(tracker, item.issue_id):
            return _append_unseen(write)

    def _append_unseen(write: Write) -> WriteResult | Existing:
        # Another run may have synced some of this mail meanwhile: never a message twice.
        rollup = linking.rollup_state(tracker, item.issue_id)
        left = [m for m in item.new_messages if not rollup.covers(m.message_id, m.date)]
        if not left:
            return {"id": item.issue_id, "existing": True}
        edited = write.body is not None and write.body.strip() and write.body != item.entry
        if len(left) < len(item.new_messages):
            if edited:
                raise TrackerError(f"another sync summarised {len(item.new_messages) - len(left)} of these messages "
                                   f"on {item.issue_id} meanwhile; your edited entry was not written (run sync again)")
            reporter = item.reporter
            return tracker.rollup_append(item.issue_id, linking.SYNC_ACTION, sync_entry(item, reporter, left),
                                         user=user)
        body = write.body if edited else item.entry
        covers = linking.seen_line(m.message_id for m in item.new_messages)
        if covers not in body.splitlines():
            body = body.rstrip("\n") + "\n" + covers  # an edit never drops what the entry covers
        return tracker.rollup_append(item.issue_id, linking.SYNC_ACTION, body, user=user)

    fields = [Field("Issue", f"{item.issue_id} · {one_line(item.title, 120)} · {item.state}"
                    + (f" · {', '.join(item.labels)}" if item.labels else "")),
              Field("Signals (yours to judge)", "\n".join(item.signals) or "(none found)", multiline=True),
              Field("Entry", item.entry or "", multiline=True)]
    return Write(WriteKind.TRACKER, tracker_name, f"status rollup entry {linking.SYNC_ACTION} on {item.issue_id}",
                 fields, append, editable_body=True, body=item.entry,
                 label=f"Add {linking.SYNC_ACTION} entry to {item.issue_id}", where=in_tracker(tracker))


def _pick_writes(tracker: Tracker, item: SyncItem, pick: Picks, declared: Sequence[str], tracker_name: str,
                 proposal: Proposal) -> list[Write]:
    """Writes for what the triager picked; a pick that would change nothing is noted, not written."""
    issue_id = item.issue_id
    writes: list[Write] = []
    add = []
    for label in pick.add_labels:
        if label not in declared:
            proposal.warnings.append(f"label {label!r} for {issue_id} left out: tracker.labels does not declare it")
        elif label in item.labels:
            proposal.notes.append(f"{issue_id} already has the label {label!r}")
        elif label not in add:
            add.append(label)
    remove = []
    for label in pick.remove_labels:
        if label not in item.labels:
            proposal.notes.append(f"{issue_id} has no label {label!r} to remove")
        elif label not in remove:
            remove.append(label)
    if add or remove:
        change = ", ".join([f"+{x}" for x in add] + [f"-{x}" for x in remove])
        writes.append(Write(
            WriteKind.TRACKER, tracker_name, f"labels of {issue_id}: {change}",
            [Field("Add labels", ", ".join(add) or "(none)"), Field("Remove labels", ", ".join(remove) or "(none)")],
            lambda w, a=tuple(add), r=tuple(remove): tracker.edit(issue_id, EditRequest(add_labels=list(a),
                                                                                        remove_labels=list(r))),
            label=f"Change labels of {issue_id}", where=in_tracker(tracker)))
    if pick.close:
        if pick.close not in CLOSE_REASONS:
            proposal.warnings.append(f"close reason {pick.close!r} for {issue_id} left out "
                                     f"(valid: {', '.join(CLOSE_REASONS)})")
        elif item.state == "closed":
            proposal.notes.append(f"{issue_id} is already closed")
        else:
            writes.append(Write(WriteKind.TRACKER, tracker_name, f"close {issue_id} ({pick.close})",
                                [Field("Reason", pick.close)],
                                lambda w, reason=pick.close: tracker.close(issue_id, reason),
                                label=f"Close {issue_id}", where=in_tracker(tracker)))
    if pick.reopen:
        if item.state == "open":
            proposal.notes.append(f"{issue_id} is already open")
        else:
            writes.append(Write(WriteKind.TRACKER, tracker_name, f"reopen {issue_id}", [],
                                lambda w: tracker.reopen(issue_id),
                                label=f"Reopen {issue_id}", where=in_tracker(tracker)))
    return writes


class SyncFlow:
    """Sync rollup entries for tracker issues whose threads have new mail, with the label
    and state changes the user picked."""

    def __init__(self, project: OpenProject) -> None:
        self.project = project
        self.picks: dict[str, Picks] = {}

    def pick(self, issue: str) -> Picks:
        """The picks of ``issue`` under its canonical id (3, SEC-3 and SEC-0003 name one issue)."""
        canonical = self.project.open_tracker().view(issue)["id"]
        return self.picks.setdefault(canonical, Picks())

    def propose(self, issue_ids: Sequence[str] | None = None) -> Proposal:
        """For ``issue_ids`` (all open issues linked to threads when None); picked issues take
        part even when they are closed (a reopen, say)."""
        tracker = self.project.open_tracker()
        ids = list(dict.fromkeys(issue_ids or [])) or None
        if ids is None and self.picks:
            open_ids = [i["id"] for i in tracker.list(state="open").items]
            ids = list(dict.fromkeys(open_ids + list(self.picks)))
        items = collect_sync(self.project.sources, tracker, ids)
        return propose_sync(tracker, items, self.picks)
