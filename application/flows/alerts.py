"""New-report alerts: poll the security list and tell the UI which threads are new.

The poll contract (email-adapter-contract.md, "polling cursors"), on top of the
mail-source contract's ``list_recent_threads``:

* the first poll — no cursor yet, or the cursor belongs to another backend or list —
  sets a **silent baseline**: it records the threads there are and reports none;
* a later poll reports the threads not seen before (``new_threads``: the alert) and the
  known threads with newer activity (``updated_threads``: the unread marker);
* :meth:`NewReportPoller.poll` never saves anything. The cursor it returns is persisted
  by :meth:`NewReportPoller.acknowledge`, which the caller (the TUI) calls only **after**
  it has shown the new threads. Until then every poll starts from the last acknowledged
  cursor and reports the same threads again: a crash between a poll and the screen loses
  no alert.

The cursor lives under ``core.settings.data_dir()/alerts/`` (one small JSON file per
project and list): thread IDs and their last activity, and when the last poll ran; never
subjects or bodies. The CLI ``poll`` and the app use the same poller and cursor.

:func:`run_poll_loop` runs polls every ``alerts.poll_seconds`` (project.md, default 120)
in the caller's thread (the TUI runs it in a worker); where the backend offers IMAP IDLE
(``wait_for_mail``) it waits on the server instead of sleeping, so mail shows up early: on
every folder that holds the list (each IMAP source's list folder, one connection each).
A poller should own its :class:`SourceSet`: an IDLE connection serves nothing else.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from mailtriage.backends.contract import Op, ThreadId, ThreadSummary
from mailtriage.backends.registry import SourceSet
from mailtriage.backends.resolution import resolution_order, retry_delay
from mailtriage.core import private_files, settings
from mailtriage.core.errors import ConfigError
from mailtriage.application.flows.linking import iso_utc, parse_iso
from mailtriage.backends.security_cc import configured_address
from mailtriage.core.projectconfig import ProjectConfig

DEFAULT_POLL_SECONDS = 120.0
# How far before the newest activity seen each poll looks again: mail whose Date header is
# older than its arrival (slow relays, clock skew) is still found.
LOOKBACK = timedelta(days=3)
# How long a thread stays in the cursor's "seen" set after its last activity.
RETENTION = timedelta(days=90)
# A local archive (mbox) lists by Date: it has no arrival time. Its polls look this far back,
# so a report held by moderation (or a skewed clock) for days is new when first seen; well
# inside RETENTION, so a thread the cursor forgot is never listed again.
DATED_LOOKBACK = timedelta(days=30)
CURSOR_VERSION = 2
IDLE_SLICE_SECONDS = 30.0
# At least this long between the starts of two polls woken early by IDLE: during a burst the
# server announces mail all the time, and back-to-back polls would list the same window ...
MIN_POLL_GAP_SECONDS = 2.0
# ... and at least this many times as long as the last poll took, so listing a window that a
# burst keeps growing uses at most about a fifth of the time (and of a core).
POLL_GAP_FACTOR = 4.0
# At least this often a poll judges every thread it lists (see NewReportPoller.poll): a safety
# net for the polls between, which judge only the threads whose summaries changed.
FULL_POLL_SECONDS = timedelta(minutes=10)
# Roots found on the list that a poller remembers (a storm's replies to old threads), at most.
FOUND_ROOTS_KEPT = 10_000
# Polls in a row whose lookup of a root failed before its reply to an older thread is taken for
# a new report (the backend cannot tell): until then it is judged again at the next poll.
LOOKUP_TRIES = 3


def poll_seconds(config) -> float:
    """``alerts.poll_seconds`` from project.md (default 120). Raises ConfigError when invalid."""
    value = config.get("alerts.poll_seconds", DEFAULT_POLL_SECONDS)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1:
        raise ConfigError(config.file, "alerts.poll_seconds", f"must be a number of seconds (at least 1), not {value!r}",
                          "e.g. 120")
    return float(value)


#: The journal of a cursor (CursorStore.append) is folded into its file once it holds this many
#: bytes, or as many as the file, whichever is more: writes stay bounded by what changed, amortized.
JOURNAL_MIN_BYTES = 64 * 1024


class CursorStore:
    """One cursor in one JSON file, replaced atomically, and a journal beside it
    (``<name>.changes``): one JSON line per acknowledgement, the keys it set or raised (issue
    39: a poller in a storm rewrote ~1 MB of cursor at each acknowledgement). Reading the cursor
    applies the journal's lines (each only raises, so their order does not matter; a line torn
    by a kill is skipped: what it acknowledged is reported again, as when a kill comes before
    the write); writing it whole empties the journal. Reading it, appending a line and writing
    the file whole take a lock (an flock on ``<name>.lock``, no content) and the whole write applies the
    journal as it is then: a line another process appended after this one read the cursor is
    kept, not emptied away (what it acknowledged would be reported again)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.journal = self.path.with_suffix(".changes")
        self.lock = self.path.with_suffix(".lock")
        self.problem: str | None = None  # why the stored cursor was unreadable (a new baseline follows)
        self.file_bytes = 0  # the size of the cursor file as last written or read
        self.journal_bytes = 0  # the size of the journal as last written or read
        # stamp() of the files as this store last read or wrote them whole, taken under the lock
        # (None: not read yet, or another process wrote since: the cursor is to be read anew).
        self.known: tuple | None = None

    @classmethod
    def for_list(cls, config, list_name: str | None) -> "CursorStore":
        key = hashlib.sha256(f"{Path(config.file).resolve()}\n{list_name or ''}".encode()).hexdigest()[:20]
        return cls(settings.data_dir() / "alerts" / f"{key}.json")

    def stamp(self) -> tuple | None:
        """What says the cursor changed on disk (another process wrote it): the file's inode,
        mtime and size, and the journal's mtime and size; None when there is no cursor file.
        The inode: a whole write is a new file (``write_atomic``), and mtimes move in clock ticks
        of some milliseconds, so two writes in one tick leave the same mtime. The journal only
        grows until a whole write removes it."""
        try:
            st = self.path.stat()
        except OSError:
            return None
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        try:
            journal = self.journal.stat()
        except OSError:
            return stamp + (None, None)
        return stamp + (journal.st_mtime_ns, journal.st_size)

    def load(self) -> dict | None:
        """The cursor with its journal applied, read under the lock: never between another
        process's whole write and its emptying of the journal (the old file, then no journal).
        ``known`` says what was read."""
        with self._locked():
            data = self._load()
            self.known = self.stamp()
            return data

    def _load(self) -> dict | None:
        try:
            text = private_files.read_text(self.path)  # the same rule as save's
            data = json.loads(text)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, UnicodeDecodeError, ConfigError) as exc:
            self.problem = f"the alert cursor {self.path} is unreadable ({exc}); a new silent baseline is set"
            return None
        if not isinstance(data, dict) or data.get("v") not in (1, CURSOR_VERSION) or not isinstance(data.get("seen"), dict):
            self.problem = f"the alert cursor {self.path} has an unknown shape; a new silent baseline is set"
            return None
        self.file_bytes = len(text)
        self._apply_journal(data)
        return data

    def _apply_journal(self, data: dict) -> None:
        try:
            text = private_files.read_text(self.journal)
        except FileNotFoundError:
            self.journal_bytes = 0
            return
        except (OSError, UnicodeDecodeError, ConfigError):  # what it acknowledged is reported again
            return
        self.journal_bytes = len(text)
        seen = data["seen"]
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:  # torn by a kill while it was appended
                continue
            if (not isinstance(entry, dict) or not isinstance(entry.get("seen"), dict)
                    or entry.get("backend") != data.get("backend") or entry.get("list") != data.get("list")):
                continue  # (another list's or backend's: the file was written whole meanwhile)
            for key, when in entry["seen"].items():
                if isinstance(key, str) and isinstance(when, str):
                    before = seen.get(key)
                    seen[key] = when if not isinstance(before, str) else _later(before, when)
            checked = entry.get("checked")
            if isinstance(checked, str) and data.get("v") == CURSOR_VERSION and checked > str(data.get("checked") or ""):
                data["checked"] = checked

    def _merge_file(self, cursor: dict) -> None:
        """Raise ``cursor`` (in place) to what the file holds: another process wrote it whole
        since this store read it (acknowledgements only raise; another list's, another
        backend's or an unreadable file is replaced, as before)."""
        problem = self.problem
        try:
            text = private_files.read_text(self.path)
            data = json.loads(text)
        except (OSError, ValueError, UnicodeDecodeError, ConfigError):
            return
        finally:
            self.problem = problem
        if not isinstance(data, dict) or data.get("v") not in (1, CURSOR_VERSION) or not isinstance(data.get("seen"), dict):
            return
        data = _upgrade(data)
        if not _same_cursor(data, cursor):
            return
        seen = cursor["seen"]
        for key, when in data["seen"].items():
            if isinstance(key, str) and isinstance(when, str):
                before = seen.get(key)
                seen[key] = when if not isinstance(before, str) else _later(before, when)
        checked = data.get("checked")
        if isinstance(checked, str) and checked > str(cursor.get("checked") or ""):
            cursor["checked"] = checked

    def _locked(self):
        """This user's processes append to the journal and empty it one at a time."""
        return private_files.exclusive(self.lock)

    def save(self, cursor: dict, *, merge: bool = False, forget_idle: bool = False) -> None:
        """Write ``cursor`` whole, with what the journal holds now (lines another process
        appended since this one read it: they only raise, so ``cursor`` takes them too), and
        empty the journal. ``merge``: the file too, when another process wrote it whole since
        this store read or wrote it (the poller's deferred writes: it was overwritten, its
        acknowledgements lost). ``forget_idle``: then entries idle for RETENTION leave (after
        the journal is applied: an idle entry it holds leaves too). ``cursor`` takes all of it.
        ``known`` says what was written."""
        with self._locked():
            if isinstance(cursor.get("seen"), dict):
                if merge:
                    on_disk = self.stamp()
                    if on_disk is not None and (self.known is None or on_disk[:3] != self.known[:3]):
                        self._merge_file(cursor)
                self._apply_journal(cursor)
                if forget_idle:
                    _forget_idle(cursor)
            data = json.dumps(cursor, indent=1, sort_keys=True).encode("utf-8")
            private_files.write_atomic(self.path, data)
            self.file_bytes = len(data)
            try:
                self.journal.unlink()
            except FileNotFoundError:
                pass
            self.journal_bytes = 0
            self.known = self.stamp()

    def append(self, cursor: dict, changes: dict[str, str]) -> bool:
        """Add ``changes`` (the keys acknowledged since the last write, of ``cursor``) to the
        journal; False when it is due to be folded into the file (the caller saves whole).
        ``known`` moves to the line's write when nothing else was written since this store
        read or wrote (else it is None: another process's write is to be read)."""
        # Each line starts on a line of its own: after a line torn by a kill, the next is whole.
        line = b"\n" + json.dumps({"backend": cursor.get("backend"), "list": cursor.get("list"),
                                   "checked": cursor.get("checked"), "seen": changes},
                                  sort_keys=True, separators=(",", ":")).encode("utf-8")
        if self.journal_bytes + len(line) > max(JOURNAL_MIN_BYTES, self.file_bytes):
            return False
        with self._locked():
            before = self.stamp()
            fd = private_files.open_append(self.journal)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            self.known = self.stamp() if before is not None and before == self.known else None
        self.journal_bytes += len(line)
        return True


@dataclass
class PollOutcome:
    """What one poll found. ``cursor`` is persisted only by ``acknowledge``."""

    backend: str | None
    baseline: bool
    new_threads: list[ThreadSummary] = field(default_factory=list)
    updated_threads: list[ThreadSummary] = field(default_factory=list)
    cursor: dict | None = None
    notes: list[str] = field(default_factory=list)
    # The acknowledged cursor the poll started from, and the cursor keys it set or raised: an
    # acknowledgement merges those only (issue 39: ~20,000 keys each, on the UI thread).
    base: dict | None = field(default=None, repr=False, compare=False)
    changed: list[str] | None = field(default=None, repr=False, compare=False)
    # The cursor's "seen" holds only the keys the poll set or raised (a poll answered by the
    # change feed): the rest is its base's.
    seen_delta: bool = field(default=False, repr=False, compare=False)

    @property
    def has_news(self) -> bool:
        return bool(self.new_threads or self.updated_threads)

    def to_json(self) -> dict:
        return {
            "backend": self.backend,
            "baseline": self.baseline,
            "new_threads": [t.to_json() for t in self.new_threads],
            "updated_threads": [t.to_json() for t in self.updated_threads],
            "notes": list(self.notes),
        }


@dataclass
class Outage:
    """Polls that failed in a row: when the first failed, how many, and the last error's text.

    The watch keeps polling through it: the availability of a backend that was down is
    checked again after a growing backoff (``AvailabilityCache.retry_outages``), so the
    first poll after the server is back ends it and announces what arrived meanwhile.
    """

    started: float  # time.monotonic() of the first failed poll
    failures: int = 0
    last_error: str = ""

    @property
    def seconds(self) -> float:
        return max(0.0, _monotonic() - self.started)


def _canonical(text: str) -> bool:
    """``text`` is written as :func:`iso_utc` writes (``2026-12-02T13:05:00Z``): such texts
    compare as the times they name."""
    return len(text) == 20 and text[10] == "T" and text[19] == "Z"


def _newer(summary: ThreadSummary, seen_when: str, texts: dict | None = None) -> bool:
    """The thread has activity after ``seen_when`` (an ISO time, or "" when it had none).
    ``texts``: the ISO texts of activity times already written (compared as text, unparsed)."""
    when = _when(summary)
    if when is None:
        return False
    if texts is not None and when in texts and _canonical(seen_when):
        return texts[when] > seen_when
    before = parse_iso(seen_when) if seen_when else None
    return before is None or when.replace(microsecond=0) > before


def _later(a: str, b: str) -> str:
    """The later of two ISO UTC times ("" is earliest); same-format strings compare as times."""
    return a if a >= b else b


def _same_list(cursor: dict, backend: str, kind: str, list_name: str | None) -> bool:
    return (cursor.get("backend") == backend and _shape(cursor.get("kind")) == _shape(kind)
            and cursor.get("list") == list_name)


def _same_cursor(a: dict, b: dict) -> bool:
    return _same_list(a, b.get("backend"), b.get("kind"), b.get("list"))


def _upgrade(cursor: dict) -> dict:
    """A version 1 cursor (``at`` = newest activity seen) read as version 2."""
    if cursor.get("v") == 1:
        cursor = {**cursor, "v": CURSOR_VERSION, "checked": cursor.get("at")}
        cursor.pop("at", None)
    # Keys are kind:value (shape tags; old backend tags such as "mbox:" read back as theirs).
    seen = cursor.get("seen") or {}
    return {**cursor, "seen": {_seen_key(k): v for k, v in seen.items()}}


def _when(summary: ThreadSummary) -> datetime | None:
    when = summary.last_activity
    if when is None:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


@dataclass
class _Previous:
    """What one poll listed, for the next (issue 39): per thread, by id, ``(thread, cursor key,
    activity text)`` (the thread is held: its id stays its own; None after a poll that was
    answered by the change feed, which does not list every thread)."""

    backend: str | None
    quiet_before: datetime | None
    records: dict[int, tuple] | None
    full_at: datetime  # when the last poll that judged every thread ran
    token: object = None  # the change feed's token of the backend's answer
    # The threads judged whose activity the acknowledged cursor did not hold then, by cursor key
    # (thread, key, activity text): judged again by the next polls until it holds it.
    unsettled: dict[str, tuple] | None = None
    loads: int = 0  # NewReportPoller._loads when it ran


def _rank(summary: ThreadSummary) -> tuple:
    """A thread's place in a listing (most recent activity first, sorted in reverse)."""
    when = _when(summary)
    return (when.timestamp() if when is not None else 0.0, summary.root_message_id or "")


class NewReportPoller:
    """Polls one list through the resolution rule (``list_recent_threads``).

    The cursor says exactly what was seen: each thread's root and its last activity, and
    when the last poll ran (``checked``). A poll lists the threads active since ``checked``
    less :data:`LOOKBACK` (mail dated before its arrival is still found), so the windows
    of successive polls overlap and cover everything since the baseline. Then a thread is

    * **new** when its root was never seen and it started inside the window;
    * **updated** when it was seen and has newer activity, or when it was never seen but
      started before the window (``ThreadSummary.continued``: a reply to an older thread).

    The acknowledged cursor is also kept in memory, so a poll that ran while another
    outcome was being acknowledged never reports what that acknowledgement covered
    (:meth:`fresh`), and acknowledgements merge (a late one never takes the cursor back).
    """

    def __init__(self, sources: SourceSet, *, list_name: str | None = None, store: CursorStore | None = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.sources = sources
        self.list_name = list_name if list_name is not None else sources.config.get("security_list")
        self.store = store or CursorStore.for_list(sources.config, self.list_name)
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self._lock = threading.Lock()
        self._acked: dict | None = None  # the acknowledged cursor, as last saved or loaded
        # The keys acknowledged since the cursor was last written (its journal takes them), or
        # None when it is to be written whole.
        self._unsaved: dict[str, str] | None = None
        self._loads = 0  # how many times the acknowledged cursor was read from its file
        self._dirty = False  # acknowledged in memory, not saved yet
        self.outage: Outage | None = None  # the polls failing since the last that worked
        self._wait_failed = False  # the last wait for mail ended on a dropped connection
        self._wait_failures = 0  # waits that failed again since (each backs off longer)
        self._texts: dict[datetime, str] = {}  # the last poll's activity times as ISO texts
        self._previous: _Previous | None = None  # what the last poll listed and judged
        self.last_judged = 0  # how many threads the last poll judged (the others were as the cursor held them)
        # Per backend: the roots found on the list, under the backend's message_ids_epoch then.
        self._found_roots: dict[str, tuple[object, set[str]]] = {}
        self._lookup_failures: dict[str, int] = {}  # root -> polls in a row whose lookup of it failed

    def failed(self, error: Exception) -> Outage:
        """Note a failed poll: the outage it starts or continues."""
        if self.outage is None:
            self.outage = Outage(_monotonic())
        self.outage.failures += 1
        self.outage.last_error = str(error)
        return self.outage

    def worked(self) -> Outage | None:
        """Note a poll that worked: the outage it ends, if any."""
        ended, self.outage = self.outage, None
        return ended

    def pause_seconds(self, interval: float) -> float:
        """How long to wait for the next poll: ``interval``, or during an outage the backoff
        of the availability check (2, 4, 8 … s, at most ``interval``), so a server that comes
        back is polled within seconds even with an hour between polls."""
        return interval if self.outage is None else retry_delay(self.outage.failures, interval)

    def _acknowledged(self) -> dict | None:
        """The acknowledged cursor (call with the lock held): re-read only when the files
        changed since this poller read or wrote them (``CursorStore.known``: another process
        wrote). Acknowledgements made here and not written yet stay, and are still to be
        written (acknowledgements only raise)."""
        stamp = self.store.stamp()
        if stamp is None:
            return self._acked
        if stamp != self.store.known:
            loaded = self.store.load()
            fresh = _upgrade(loaded) if loaded is not None else None
            mine = self._acked
            if self._dirty and mine is not None and fresh is not None and _same_cursor(fresh, mine):
                seen = fresh["seen"]
                pending = self._unsaved if self._unsaved is not None else mine["seen"]
                for key, when in pending.items():
                    before = seen.get(key)
                    if before is None or when > before:
                        seen[key] = when
                fresh["checked"] = max(str(fresh.get("checked") or ""), str(mine.get("checked") or ""))
            else:
                self._unsaved = {}  # (on disk as read)
            self._acked = fresh
            self._loads += 1
        return self._acked

    def poll(self) -> PollOutcome:
        """One poll; saves nothing.

        Raises MandatoryBackendUnavailable, NoBackendAvailable and the backend's errors
        (the loop reports them and polls again later).
        """
        res = self.sources.resolve(Op.LIST_RECENT_THREADS)
        res.raise_if_unresolved()
        backend = res.chosen
        kind = self.sources.backends[backend].thread_id_kind
        with self._lock:
            stored = self._acknowledged()
            notes = [self.store.problem] if self.store.problem else []
            self.store.problem = None
        now = self._clock()
        if stored is not None and not _same_list(stored, backend, kind, self.list_name):
            notes.append(f"the alert cursor was set on {stored.get('backend')} for {stored.get('list')}; "
                         "a new silent baseline is set")
            stored = None
        checked = parse_iso(str(stored.get("checked"))) if stored else None
        span = DATED_LOOKBACK if self.sources.backends[backend].features.local_archive else LOOKBACK
        since = (min(checked, now) if checked else now) - span
        # A cursor written by a narrower listing never recorded the older threads: the first
        # wider poll records them silently (they were there before, not new).
        quiet_before = ((min(checked, now) if checked else now) - LOOKBACK
                        if stored is not None and span > LOOKBACK and stored.get("span", 0) < span.days else None)
        list_name = self.list_name
        # Issue 39: a poll in a storm lists thousands of threads and a few changed. The backend's
        # change feed (``list_recent_changes``, with the token of its last answer) says which
        # threads were added or changed since the last poll (IMAP: recent.SummaryMemo's delta);
        # only those, and the threads an earlier poll reported that are not acknowledged yet
        # (``_unsettled``), are judged, and the cursor's changes are kept apart (no copy of it).
        # A backend that answers whole (the default; IMAP after a walk) hands back the very same
        # summary objects for unchanged threads where it can: such a thread whose activity the
        # cursor already holds is skipped by one lookup. Every FULL_POLL_SECONDS a poll asks for
        # the whole listing and judges every thread (a safety net; entries older than RETENTION
        # leave the cursor then), and so does the first poll after the cursor was read from its
        # file (another process wrote it: what it holds is not what this poller last saw).
        prev = self._previous
        with self._lock:
            loads = self._loads
        in_step = (prev is not None and stored is not None and prev.backend == backend
                   and prev.quiet_before == quiet_before and prev.full_at <= now < prev.full_at + FULL_POLL_SECONDS
                   and prev.loads == loads)
        token = prev.token if in_step and prev is not None else None
        changes = self.sources.dispatch(
            Op.LIST_RECENT_THREADS,
            lambda b: b.list_recent_changes(list_name, since, token if b.name == backend else None)).value
        with self._lock:
            # Against the newest acknowledgement: one made while the listing ran counts too.
            current = self._acknowledged() if stored is not None else None
            if current is not None and _same_list(current, backend, kind, self.list_name):
                stored = current
            in_step = in_step and self._loads == loads
            acked_seen: dict[str, str] = stored["seen"] if stored else {}
        by_delta = in_step and not changes.whole and prev is not None and prev.unsettled is not None
        partial = in_step and prev is not None and (by_delta or prev.records is not None)
        kept: dict[int, tuple] = {}  # id(thread) -> (thread, cursor key, activity text) of this poll
        if by_delta and prev is not None and prev.unsettled is not None:
            # The threads that changed, and those reported before whose activity the cursor
            # does not hold yet (not acknowledged: reported again until it is).
            threads = list(changes.changed)
            listed = {_seen_key(t.thread_id) for t in threads}
            gone = {_seen_key(thread_id) for thread_id in changes.removed}
            for key, record in prev.unsettled.items():
                if key in listed or key in gone:
                    continue
                before = acked_seen.get(key)
                if before is None or not before >= record[2] or not _canonical(before):
                    threads.append(record[0])
            if len(threads) > len(changes.changed):
                threads.sort(key=_rank, reverse=True)
            fresh = threads
            seen: dict[str, str] = {}  # the cursor's changes only (acknowledge merges them)
            get_seen = acked_seen.get
        else:
            if changes.threads is None:  # (never: a feed answers whole to no token)
                raise RuntimeError("the change feed answered a delta to a poll that asked for the whole listing")
            threads = list(changes.threads)
            with self._lock:
                seen = dict(acked_seen)
            get_seen = seen.get
            if partial and prev is not None and prev.records is not None:
                records = prev.records
                fresh = []
                for t in threads:
                    known = records.get(id(t))
                    if known is not None:
                        before = get_seen(known[1])
                        if before is not None and before >= known[2] and _canonical(before):
                            kept[id(t)] = known
                            continue
                    fresh.append(t)
            else:
                fresh = threads
        # Each thread's last activity as the cursor's ISO text: most threads' are the same from
        # poll to poll, so the texts of the last polls are kept (until the next full judge).
        last_texts = self._texts
        texts = last_texts if partial else {}
        for t in fresh:
            when = _when(t)
            if when is not None and when not in texts:
                texts[when] = last_texts.get(when) or iso_utc(when)
        self._texts = texts
        new, updated = [], []
        deferred: set[str] = set()  # cursor keys of threads whose root's lookup failed
        if stored is not None:
            first_seen = []
            for t in fresh:
                key = _seen_key(t.thread_id)
                before = get_seen(key)
                if before is None:
                    when = _when(t)
                    if quiet_before is not None and when is not None and when < quiet_before:
                        continue
                    first_seen.append(t)
                elif _newer(t, before, texts):
                    updated.append(t)
            on_list, undecided = self._roots_on_list(backend, [t for t in first_seen if t.continued])
            for t in first_seen:
                if t.continued and _root(t) in undecided:
                    # Its root's lookup failed: judged again at the next poll (left out of the
                    # cursor below), not a new report now (storm9: a false "new" for good).
                    deferred.add(_seen_key(t.thread_id))
                    continue
                (updated if t.continued and _root(t) in on_list else new).append(t)
            if first_seen:  # in the listing's order, as they came
                order = {id(t): n for n, t in enumerate(fresh)}
                updated.sort(key=lambda t: order[id(t)])
        changed = []
        unsettled: dict[str, tuple] = {}
        for t in fresh:
            when = _when(t)
            key = _seen_key(t.thread_id)
            before = get_seen(key)
            text = texts[when] if when is not None else ""
            after = _later(before or "", text)
            if key in deferred:
                unsettled[key] = (t, key, text)  # (not in the cursor: judged again)
            elif after != before:
                seen[key] = after
                changed.append(key)
                unsettled[key] = (t, key, text)  # until the cursor acknowledged holds it
            elif not (before >= text and _canonical(before)):  # (as the skip above: judged again)
                unsettled[key] = (t, key, text)
            if not by_delta:
                kept[id(t)] = (t, key, text)
        if not partial:
            newest = max([w for w in (_when(t) for t in threads) if w is not None], default=None)
            horizon = max(newest or now, now) - RETENTION
            horizon_text = iso_utc(horizon)
            seen = {k: v for k, v in seen.items()
                    if not v or (v >= horizon_text if _canonical(v) else (parse_iso(v) or now) >= horizon)}
        self._previous = _Previous(backend, quiet_before, None if by_delta else kept,
                                   prev.full_at if partial and prev is not None else now,
                                   changes.token, unsettled, loads)
        self.last_judged = len(fresh)
        cursor = {"v": CURSOR_VERSION, "backend": backend, "kind": kind, "list": self.list_name,
                  "checked": iso_utc(now), "span": span.days, "seen": seen}
        return PollOutcome(backend, stored is None, new, updated, cursor, notes, base=stored, changed=changed,
                           seen_delta=by_delta)

    def _roots_on_list(self, backend_name: str, summaries: list[ThreadSummary]) -> tuple[set[str], set[str]]:
        """The roots of threads first seen now, that started before the window, that are on
        the list (a reply to an older thread: an update). A root never on the list (a first
        message answering a private thread) makes it a new report; when the backend cannot
        tell (it resolves no Message-IDs), it is a new report too (a spare alert beats a missed
        one). The second set: the roots whose lookup failed (a dropped connection, a timeout),
        to be judged again at the next poll rather than made new reports at once (a false
        "new" for good); after :data:`LOOKUP_TRIES` polls in a row that failed to look a root
        up, it is left out of that set: the backend cannot tell, a new report.

        All of a poll's roots are asked for at once (one ORed search on IMAP, not one each: a
        storm of replies to old threads held each poll for seconds), and a root found once is
        remembered (it stays on the list): until the poll is acknowledged, the next polls
        report the same threads and ask nothing again. Remembered no longer than that: an
        acknowledgement forgets the roots of its threads (the cursor has them now), and all are
        forgotten when the backend's ``message_ids_epoch`` changes (IMAP: the folder re-created,
        or a message expunged from it: the root may be gone)."""
        roots = list(dict.fromkeys(r for r in map(_root, summaries) if r))
        backend = self.sources.backends[backend_name]
        if not roots or not backend.resolves_message_ids:
            return set(), set()
        epoch = backend.message_ids_epoch()
        with self._lock:
            held = self._found_roots.get(backend_name)
            if held is None or held[0] != epoch:
                held = self._found_roots[backend_name] = (epoch, set())
            known = held[1]
            on_list = {r for r in roots if r in known}
        ask = [r for r in roots if r not in on_list]
        if not ask:
            return on_list, set()
        failures = self._lookup_failures
        try:
            found = set(backend.threads_for_message_ids(ask))
        except Exception:  # the backend cannot tell now: asked again at the next poll, a few times
            with self._lock:
                if len(failures) + len(ask) > FOUND_ROOTS_KEPT:
                    failures.clear()
                for root in ask:
                    failures[root] = failures.get(root, 0) + 1
                return on_list, {r for r in ask if failures[r] < LOOKUP_TRIES}
        with self._lock:
            if len(known) + len(found) > FOUND_ROOTS_KEPT:
                known.clear()
            known |= found
            for root in ask:
                failures.pop(root, None)
        return on_list | found, set()

    def fresh(self, outcome: PollOutcome) -> PollOutcome:
        """``outcome`` less what was acknowledged since it was computed (cheap: its news only)."""
        with self._lock:
            acked = self._acked
        if acked is None or outcome.cursor is None or not _same_cursor(acked, outcome.cursor):
            return outcome
        seen = acked["seen"]
        new = [t for t in outcome.new_threads if _seen_key(t.thread_id) not in seen]
        updated = [t for t in outcome.updated_threads
                   if _seen_key(t.thread_id) not in seen or _newer(t, seen[_seen_key(t.thread_id)])]
        if len(new) == len(outcome.new_threads) and len(updated) == len(outcome.updated_threads):
            return outcome
        return PollOutcome(outcome.backend, outcome.baseline, new, updated, outcome.cursor, list(outcome.notes),
                           base=outcome.base, changed=outcome.changed, seen_delta=outcome.seen_delta)

    def acknowledge(self, outcome: PollOutcome, *, save: bool = True) -> None:
        """Merge the outcome's cursor into the acknowledged one (in memory at once) and save
        it (``save=False``: call :meth:`save` later, e.g. off the UI thread). Call only
        after its threads were shown, or announced."""
        if outcome.cursor is None:
            return
        with self._lock:
            self._acknowledged()
            acked = self._acked
            if outcome.seen_delta:
                # The poll's changes only: merged into the acknowledged cursor in place (it is
                # this poller's own: loaded, or merged here), or onto the poll's base when the
                # acknowledged cursor is another's now.
                same = acked is not None and _same_cursor(acked, outcome.cursor)
                base = acked if same else outcome.base
                seen = base["seen"] if same and base is not None else dict(base["seen"]) if base is not None else {}
                unsaved = self._unsaved if same else None
                for key, when in outcome.cursor["seen"].items():
                    before = seen.get(key)
                    if before is None or when > before:
                        seen[key] = when
                        if unsaved is not None:
                            unsaved[key] = when
                self._unsaved = unsaved
                checked = max((acked.get("checked") or "") if same and acked is not None else "",
                              outcome.cursor.get("checked") or "")
                merged = {**outcome.cursor, "seen": seen, "checked": checked}
            elif acked is None or not _same_cursor(acked, outcome.cursor) or outcome.base is acked:
                merged = outcome.cursor  # (built on this very cursor: it holds all of it, less what aged out)
                self._unsaved = None
            else:
                self._unsaved = None
                seen = dict(acked["seen"])
                cursor_seen = outcome.cursor["seen"]
                # The keys the poll set or raised: the others hold what its base held, which the
                # acknowledged cursor holds too (acknowledgements only raise).
                keys = outcome.changed if outcome.changed is not None else cursor_seen
                for key in keys:
                    when = cursor_seen.get(key)
                    if when is not None:
                        seen[key] = _later(seen.get(key, ""), when)
                merged = {**outcome.cursor, "seen": seen,
                          "checked": max(acked.get("checked") or "", outcome.cursor.get("checked") or "")}
            self._acked = merged
            self._dirty = True
            # The cursor has these threads now: their roots are not asked for again.
            shown = {_root(t) for t in outcome.updated_threads}
            for _epoch, known in self._found_roots.values():
                known -= shown
        if save:
            self.save()

    def save(self) -> None:
        """Write the acknowledged cursor (if it changed since the last save): what the
        acknowledgements since the last write raised, to the cursor's journal (a poll answered
        by the change feed), else the cursor whole (and once the journal is as large as it)."""
        with self._lock:
            if not self._dirty or self._acked is None:
                return
            unsaved = self._unsaved
            if unsaved is None or not self.store.append(self._acked, unsaved):  # (an empty one moves `checked`)
                self.store.save(self._acked, merge=True, forget_idle=True)
            self._unsaved = {}
            self._dirty = False

    def _waiting_backends(self) -> list:
        """Each backend the listing may use (preferred, primary, fallbacks) that is available
        and can wait for mail (IMAP IDLE on its list folder, on its own connection)."""
        backends = []
        for _step, entry in resolution_order(Op.LIST_RECENT_THREADS, self.sources.entries):
            backend = self.sources.backends[entry.name]
            if not callable(getattr(backend, "wait_for_mail", None)):
                continue
            try:
                if (not backend.supports(Op.LIST_RECENT_THREADS)
                        or self.sources.availability.reason(entry.name) is not None):
                    continue
            except Exception:  # a backend that cannot say now: the others still wait
                continue
            backends.append(backend)
        return backends

    def look_before_poll(self) -> None:
        """Before a poll: each waiting folder the poll will not list (a fallback's) is looked at
        now, so the next wait counts mail that lands there from now on, before its own first
        SELECT too (IDLE announces only later arrivals: such mail waited for the next poll).
        The folder the poll lists needs no look: its listing's SELECT is the wait's ``seen``."""
        try:
            listed = self.sources.resolve(Op.LIST_RECENT_THREADS).chosen
        except Exception:  # the poll reports why nothing can list
            return
        for backend in self._waiting_backends():
            look = getattr(backend, "look_for_wait", None)
            if backend.name == listed or not callable(look):
                continue
            try:
                look()
            except Exception:  # its wait fails the same way and is handled there
                continue

    def idle_waiter(self) -> Callable[[float], bool] | None:
        """``wait(timeout) -> bool`` for new mail in every folder that holds the list: each
        waiting backend (see ``_waiting_backends``), all at once; None when none can (then
        the loop sleeps)."""
        waiters = [backend.wait_for_mail for backend in self._waiting_backends()]
        if not waiters:
            return None
        if len(waiters) == 1:
            return waiters[0]
        return lambda timeout: _wait_any(waiters, timeout)

    def wait(self, seconds: float, stop: threading.Event, *, slice_seconds: float = IDLE_SLICE_SECONDS) -> bool:
        """Wait up to ``seconds`` (IDLE when offered, in slices of ``slice_seconds`` so ``stop``
        is honoured within one slice). True when the loop should poll now: the server
        announced new mail, or the connection the wait was on dropped (what came meanwhile,
        perhaps that very announcement, is unknown; the poll reconnects). A wait that fails
        again after that poll is retried after a backoff (2, 4, 8 … s), not slept out."""
        waiter = self.idle_waiter()
        deadline = _monotonic() + seconds
        while not stop.is_set():
            remaining = deadline - _monotonic()
            if remaining <= 0:
                return False
            if waiter is None:
                stop.wait(remaining)
                continue
            try:
                woke = waiter(min(remaining, slice_seconds))
            except Exception:  # the connection dropped: poll now, once; if it keeps failing, back off
                if not self._wait_failed:
                    self._wait_failed = True
                    self._wait_failures = 0
                    return True
                # It failed again after that poll: wait 2, 4, 8 … s (at most the rest of the
                # wait) and wait on the server again, rather than sleep out the interval. The
                # next wait counts mail that came meanwhile (since the last listing) as new.
                self._wait_failures += 1
                stop.wait(min(max(0.0, deadline - _monotonic()), retry_delay(self._wait_failures, seconds)))
                continue
            self._wait_failed = False
            self._wait_failures = 0
            if woke:
                return True
        return False


def _forget_idle(cursor: dict) -> None:
    """Drop from ``cursor`` (in place) the threads idle for :data:`RETENTION` before its
    ``checked``: on every whole write, whichever poll's acknowledgement makes it (a poll that
    judged every thread drops them from its own cursor, but an acknowledgement merged onto a
    newer acknowledged cursor kept them: in a storm, for good)."""
    checked = parse_iso(str(cursor.get("checked") or ""))
    seen = cursor.get("seen")
    if checked is None or not isinstance(seen, dict):
        return
    horizon = checked - RETENTION
    horizon_text = iso_utc(horizon)
    for key, when in list(seen.items()):
        if isinstance(when, str) and when and (when < horizon_text if _canonical(when) else (parse_iso(when) or checked) < horizon):
            del seen[key]


def _monotonic() -> float:
    return time.monotonic()


def _wait_any(waiters: list[Callable[..., bool]], timeout: float) -> bool:
    """Wait on every folder at once (one thread each: each backend has its own connection).
    True as soon as one announces mail, once the others stopped too (within a moment, see
    ``poll.CANCEL_CHECK_SECONDS``): their connections serve the next poll. A wait that fails
    (its connection dropped) ends the others too and is raised, as a single wait's would be."""
    woke = threading.Event()  # ends every wait
    announced = threading.Event()
    failures: list[Exception] = []

    def one(waiter) -> None:
        try:
            if waiter(timeout, woke):
                announced.set()
                woke.set()
        except Exception as exc:  # this folder's connection dropped: what came meanwhile is unknown
            failures.append(exc)
            woke.set()

    threads = [threading.Thread(target=one, args=(w,), name="alerts-idle", daemon=True) for w in waiters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if announced.is_set():
        return True
    if failures:
        raise failures[0]
    return False


def run_poll_loop(poller: NewReportPoller, on_news: Callable[[PollOutcome], Any], *, stop: threading.Event,
                  interval: float | None = None, on_error: Callable[[Exception], Any] | None = None,
                  max_polls: int | None = None, on_recovered: Callable[[Outage], Any] | None = None) -> int:
    """Poll until ``stop`` is set (or ``max_polls`` polls ran); returns the number of polls.

    A baseline or a poll with nothing new is acknowledged at once (there is nothing to
    show). A poll with news goes to ``on_news``; the caller calls ``poller.acknowledge``
    once the threads are on screen. Errors go to ``on_error`` and the loop goes on
    (``poller.outage`` counts them); the first poll that works again goes to
    ``on_recovered`` with the outage it ended, before its news.

    A backend found down is checked again after a backoff of 2, 4, 8 … seconds, at most
    the interval (and a minute): a server that comes back is used at the next poll.
    """
    seconds = interval if interval is not None else poll_seconds(poller.sources.config)
    poller.sources.availability.retry_outages(seconds)
    polls = 0
    while not stop.is_set():
        started = _monotonic()
        poller.look_before_poll()
        try:
            outcome = poller.poll()
        except Exception as exc:  # a failed poll is reported; the next one may succeed
            poller.failed(exc)
            if on_error is not None:
                on_error(exc)
            outcome = None
        took = _monotonic() - started
        if outcome is not None:
            ended = poller.worked()
            if ended is not None and on_recovered is not None:
                on_recovered(ended)
            if outcome.has_news and not outcome.baseline:
                on_news(outcome)
            else:
                poller.acknowledge(outcome)
        polls += 1
        if max_polls is not None and polls >= max_polls:
            break
        if poller.wait(poller.pause_seconds(seconds), stop):
            # Woken early by the server: not again before the gap (see MIN_POLL_GAP_SECONDS).
            gap = max(MIN_POLL_GAP_SECONDS, POLL_GAP_FACTOR * took) - (_monotonic() - started)
            if gap > 0:
                stop.wait(gap)
    return polls


def _shape(kind: object) -> str:
    """A stored kind as today's shape tag ("mbox"/"imap" cursors were written before shapes)."""
    return ThreadId(str(kind), "").kind if kind else ""


def _root(summary: ThreadSummary) -> str | None:
    """The root Message-ID of a thread (its reference's value when the summary names none)."""
    return summary.root_message_id or summary.thread_id.value


def _seen_key(thread_id: "ThreadId | str") -> str:
    """The cursor key of a thread: ``kind:value`` without the root, so it stays stable."""
    if isinstance(thread_id, str):
        try:
            thread_id = ThreadId.parse(thread_id)
        except ValueError:
            return thread_id
    return f"{thread_id.kind}:{thread_id.value}"


class PollFlow:
    """New threads on the security list since the last acknowledged poll."""

    def __init__(self, sources: SourceSet, list_name: str | None = None) -> None:
        self.poller = NewReportPoller(sources, list_name=list_name)

    @classmethod
    def for_alerts(cls, config: ProjectConfig, user_settings: Any = None) -> "PollFlow | None":
        """A poll of the configured security list with mail sources of its own (it runs beside
        the front end's), or None when there is no security list."""
        list_name = configured_address(config.get("security_list"))
        if not list_name:
            return None
        sources = SourceSet(config, user_settings)
        for backend in sources.backends.values():
            backend.hold_window_only()  # the front end's sources keep the summary cache (issue 39)
        return cls(sources, list_name=list_name)

    @property
    def list_name(self) -> str | None:
        return self.poller.list_name

    def poll(self) -> PollOutcome:
        return self.poller.poll()

    def acknowledge(self, outcome: PollOutcome) -> None:
        """The outcome was shown: only now the cursor moves."""
        self.poller.acknowledge(outcome)

    def watch(self, on_news: Callable[[PollOutcome], Any], *, interval: float, stop: threading.Event | None = None,
              on_error: Callable[[Exception], Any] | None = None,
              on_recovered: Callable[[Any], Any] | None = None) -> int:
        return run_poll_loop(self.poller, on_news, stop=stop or threading.Event(), interval=interval,
                             on_error=on_error, on_recovered=on_recovered)
