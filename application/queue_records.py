"""The queue's derived records: what it read of each thread and each local issue file, kept
so a queue over 10,000 reports opens without reading them all again (issue 37 §4).

Derived data, never a source of truth, like the tracker's thread index: a thread's facts are
used while its listing row says the same (message count and last activity), an issue file's
while its size, modification time, inode and change time are the same (a file
replaced within one timestamp tick at the same size has another inode or change time); anything else is read again. The file
lives under ``core.settings.data_dir()/queue/`` (addresses, dates, subjects, issue IDs and
labels: what the list and the tracker already show the user), private like every cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from mailtriage.core import private_files, settings
from mailtriage.core.errors import ConfigError

VERSION = 6  # 2: a thread's mail state instead of its messages; 3: last activity as a POSIX time;
#   4: the thread state ends with why its first message is automated (None: a report);
#   5: an issue file's stamp is [mtime_ns, size, inode, ctime_ns]; 6: a server tracker's issues
ISSUE_FILE = re.compile(r"^([A-Z][A-Z0-9]*-\d+)\.md$")


def records_path(project_dir: Path, tracker_root: Path | None) -> Path:
    key = f"{project_dir.resolve()}\0{tracker_root.resolve() if tracker_root else ''}"
    return settings.data_dir() / "queue" / (hashlib.sha256(key.encode("utf-8")).hexdigest()[:24] + ".json")


def iso(when: datetime | None) -> str | None:
    return None if when is None else when.isoformat()


def parse(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


class QueueRecords:
    """Thread facts by thread reference, issue facts by file name; :meth:`save` writes them."""

    def __init__(self, path: Path | None, team: tuple[str, ...] = ()) -> None:
        """``team``: what decides who is the team; thread records made for another team are dropped."""
        self.path = path
        self.team = list(team)
        #: What a caller made of an entry (parsed dates, objects), kept while the entry is: key -> (entry, value)
        self.objects: dict[tuple[str, str], tuple[Any, Any]] = {}
        #: False: :meth:`keep` keeps nothing (a one-shot process, the command line, never asks again)
        self.keeping = True
        self.stamp: tuple[int, ...] | None = None  # the file's stamp (:func:`_stamp`) as loaded or saved
        self.settings: Any = None  # what the rows kept in ``objects`` were derived under
        self.busy = False
        # str(thread id) -> [count, last activity, subject, [reporter, opened, last reporter, waiting, team wrote]]
        self.threads: dict[str, list] = {}
        self.issues: dict[str, list] = {}  # file name -> [[mtime_ns, size, inode, ctime_ns], facts, thread keys]
        # a server tracker's issues (GitHub, Jira): {"cursor": its changes cursor, "issues": {id: [facts, keys]}}
        self.server: dict[str, Any] = {}
        self._changed = False
        self._used_threads: set[str] = set()
        self._used_issues: set[str] = set()
        if path is not None:
            try:
                stamp = _stamp(path)
                data = json.loads(private_files.read_text(path))
            except (OSError, ValueError, ConfigError):
                return  # missing, unreadable or not ours: rebuilt
            self.stamp = stamp
            if isinstance(data, dict) and data.get("v") == VERSION:
                if data.get("team") == self.team:
                    self.threads = data.get("threads") or {}
                self.issues = data.get("issues") or {}
                self.server = data.get("server") or {}

    # -- threads ---------------------------------------------------------------------------
    def thread(self, key: str, count: int, last: datetime | None) -> list | None:
        """[subject, mail state] when the record matches the listing row, else None."""
        got = self.threads.get(key)
        if got is None or got[0] != count or got[1] != _instant(last):
            return None
        self._used_threads.add(key)
        return got[2:]

    def put_thread(self, key: str, count: int, last: datetime | None, subject: str, state: list[Any]) -> None:
        self.threads[key] = [count, _instant(last), subject, state]
        self._used_threads.add(key)
        self._changed = True

    # -- issue files -------------------------------------------------------------------------
    def issue(self, name: str, stat: os.stat_result) -> list | None:
        """[facts, thread keys] when the file's stamp (size, mtime, inode, ctime) is as recorded, else None."""
        got = self.issues.get(name)
        if got is None or got[0] != _file_stamp(stat):
            return None
        self._used_issues.add(name)
        return got[1:]

    def put_issue(self, name: str, stat: os.stat_result, facts: dict, keys: list[str]) -> None:
        self.issues[name] = [_file_stamp(stat), facts, keys]
        self._used_issues.add(name)
        self._changed = True

    # -- a server tracker's issues -------------------------------------------------------------
    def server_issues(self) -> tuple[str | None, dict[str, list]]:
        """(the changes cursor, {issue ID: [facts, thread keys]}) kept from the last run."""
        return self.server.get("cursor"), self.server.get("issues") or {}

    def put_server(self, cursor: str, issues: dict[str, list], swept: datetime | None = None) -> None:
        """Keep the cursor and the issues; ``swept``: when the issues were last listed whole
        (None: keep the time kept)."""
        self.server = {"cursor": cursor, "issues": issues,
                       "swept": iso(swept) if swept is not None else self.server.get("swept")}
        self._changed = True

    def server_swept(self) -> datetime | None:
        """When the server tracker's issues were last listed whole (a full sweep), if ever."""
        return parse(self.server.get("swept"))

    def made(self, kind: str, key: str, entry: Any) -> Any:
        """What :meth:`keep` stored for ``entry`` (the same entry object), else None."""
        got = self.objects.get((kind, key))
        return got[1] if got is not None and got[0] is entry else None

    def forget(self, kind: str) -> None:
        """Drop what callers made of entries of ``kind``."""
        self.objects = {k: v for k, v in self.objects.items() if k[0] != kind}

    def keep(self, kind: str, key: str, entry: Any, value: Any) -> Any:
        """Keep ``value`` (made of ``entry``) for the next run of this process; returns it."""
        if self.keeping:
            self.objects[(kind, key)] = (entry, value)
        return value

    def begin(self) -> None:
        """Start a run on records kept from an earlier one (what it uses is counted again)."""
        self._used_threads.clear()
        self._used_issues.clear()

    def save(self) -> None:
        """Write the records when anything changed, keeping only what this run used."""
        stale = set(self.threads) - self._used_threads or set(self.issues) - self._used_issues
        if self.path is None or not (self._changed or stale):
            return
        threads = {k: v for k, v in self.threads.items() if k in self._used_threads}
        issues = {k: v for k, v in self.issues.items() if k in self._used_issues}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            private_files.write_atomic(self.path, json.dumps({"v": VERSION, "team": self.team, "threads": threads,
                                                             "issues": issues, "server": self.server},
                                                             separators=(",", ":")).encode("utf-8"))
            self.threads, self.issues = threads, issues
            self.stamp = _stamp(self.path)
        except (OSError, ConfigError):
            self.stamp = None  # records that cannot be saved are rebuilt next time
        self._changed = False


def _instant(when: datetime | None) -> float | None:
    return None if when is None else when.timestamp()


def _file_stamp(st: os.stat_result) -> list[int]:
    """What tells a file changed: a rewrite within one mtime tick at the same size still gets
    another inode (a rename over it) or change time."""
    return [st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]


def _stamp(path: Path) -> tuple[int, ...]:
    return tuple(_file_stamp(path.stat()))


_open: dict[Path, QueueRecords] = {}
_open_lock = threading.Lock()


def open_records(path: Path | None, team: tuple[str, ...]) -> QueueRecords:
    """The records at ``path``: those this process kept from its last run while the file is as
    it left it (a long-running app parses them once), else read from the file. Hand them back
    with :func:`release` after the run."""
    with _open_lock:
        kept = _open.get(path) if path is not None else None
        if kept is not None and not kept.busy and kept.team == list(team) and kept.stamp is not None:
            try:
                same = _stamp(kept.path) == kept.stamp  # type: ignore[arg-type]
            except OSError:
                same = False
            if same:
                kept.busy = True
                kept.begin()
                return kept
        kept = QueueRecords(path, team)
        kept.busy = True
        if path is not None:
            _open[path] = kept
        return kept


def release(kept: QueueRecords) -> None:
    with _open_lock:
        kept.busy = False
