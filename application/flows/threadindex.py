"""Which local-files issue holds a thread: an index, so an import does not grep every issue.

Every import (and its re-check just before it writes) asks "is this thread already in
the tracker?". Answering by ``list --search`` reads every issue file; with 10,000 issues
that is over a second, twice per import. This index maps what could name a thread — each
whitespace-free line of an issue file (a link in the thread field, normalised as the
field is compared) and each ``Thread: `kind:<id>``` line of its rollup — to the issue IDs
whose files hold it.

It is derived data, never a source of truth: each use stats the tracker folder and
re-reads only the files whose size or mtime changed (a stat of 10,000 files is a few
milliseconds), and callers confirm a candidate through the tracker before trusting it.
A thread no file names is answered "none" without reading any file. The cache lives
under ``core.settings.data_dir()/tracker-threads/`` (IDs and links only, no content).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from pathlib import Path

from mailtriage.backends.contract import ThreadId
from mailtriage.core import private_files, settings
from mailtriage.core.errors import ConfigError
from mailtriage.trackers.localformat import read_tracker_file

_ISSUE_FILE = re.compile(r"^([A-Z][A-Z0-9]*-\d+)\.md$")
_THREAD_LINE = re.compile(r"^Thread: `([^`\s]+)`\s*$", re.MULTILINE)
VERSION = 2  # 2: thread keys without the root Message-ID
_MIN_KEY = 6  # shorter lines ("open", "x") name no thread; keeping them only grows the index

_cache: dict[Path, "ThreadIndex"] = {}
_cache_lock = threading.Lock()


def normalise(line: str) -> str:
    """A thread-field line as ``linking._same_link`` compares it."""
    line = line.strip().strip("`").strip()
    if line.startswith("<") and line.endswith(">"):
        line = line[1:-1].strip()
    return line


def thread_key(thread_id: object) -> str:
    """The index key of a thread reference: shape and value, without the root Message-ID (a
    rollup line may carry it where a lookup does not, and the other way round)."""
    if not isinstance(thread_id, ThreadId):
        try:
            thread_id = ThreadId.parse(str(thread_id))
        except ValueError:
            return f"thread:{thread_id}"
    return f"thread:{thread_id.kind}:{thread_id.value}"


def keys_of(text: str) -> list[str]:
    """What in an issue file's text could name a thread."""
    keys = set()
    for line in text.splitlines():
        value = normalise(line)
        if len(value) >= _MIN_KEY and not any(c.isspace() for c in value):
            keys.add(value)
    keys.update(thread_key(m.group(1)) for m in _THREAD_LINE.finditer(text))
    return sorted(keys)


class ThreadIndex:
    """The thread index of one tracker folder (use :func:`for_root`)."""

    def __init__(self, root: Path, path: Path | None) -> None:
        self.root = root
        self.path = path
        self.files: dict[str, list] = {}  # file name -> [mtime_ns, size, keys]
        self._by_key: dict[str, set[str]] | None = None
        self._lock = threading.Lock()
        self._loaded = False

    def _load(self) -> None:
        self._loaded = True
        if self.path is None:
            return
        try:
            data = json.loads(private_files.read_text(self.path))
        except (OSError, ValueError, UnicodeDecodeError, ConfigError):
            return  # rebuilt from the files (also when another user could have planted it)
        if isinstance(data, dict) and data.get("v") == VERSION and isinstance(data.get("files"), dict):
            self.files = data["files"]

    def _refresh(self) -> None:
        """Re-read the files that changed since the index saw them; drop the ones gone."""
        if not self._loaded:
            self._load()
        seen: dict[str, list] = {}
        changed = False
        with os.scandir(self.root) as it:
            for entry in it:
                if not _ISSUE_FILE.match(entry.name):
                    continue
                try:
                    st = entry.stat()
                except OSError:
                    continue
                known = self.files.get(entry.name)
                if known is not None and known[0] == st.st_mtime_ns and known[1] == st.st_size:
                    seen[entry.name] = known
                    continue
                try:  # team data: a link (to ~/.ssh, /dev/zero, a FIFO) is never followed
                    text = read_tracker_file(entry.path).decode("utf-8", errors="replace")
                except OSError:
                    continue
                seen[entry.name] = [st.st_mtime_ns, st.st_size, keys_of(text)]
                changed = True
        if changed or len(seen) != len(self.files):
            self.files = seen
            self._by_key = None
            self._save()
        if self._by_key is None:
            by_key: dict[str, set[str]] = {}
            for name, (_, _, keys) in self.files.items():
                issue = name[:-3]
                for key in keys:
                    by_key.setdefault(key, set()).add(issue)
            self._by_key = by_key

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            private_files.write_atomic(self.path, json.dumps({"v": VERSION, "files": self.files},
                                                             separators=(",", ":")).encode("utf-8"))
        except (OSError, ConfigError):  # (a folder another user could write is not written)
            pass  # a cache that cannot be saved is rebuilt next time

    def candidates(self, key: str, thread_id: object | None = None) -> list[str]:
        """Issue IDs whose files name ``key`` (a thread link) or ``thread_id``, in ID order."""
        with self._lock:
            self._refresh()
            assert self._by_key is not None
            found = set(self._by_key.get(normalise(key), ()))
            if thread_id is not None:
                found |= self._by_key.get(thread_key(thread_id), set())
        return sorted(found, key=_id_order)


def _id_order(issue_id: str) -> tuple:
    prefix, _, number = issue_id.rpartition("-")
    return (prefix, int(number) if number.isdigit() else 0)


def for_root(root: Path) -> ThreadIndex:
    """The (process-wide) index of the tracker folder ``root``."""
    root = Path(root).resolve()
    with _cache_lock:
        index = _cache.get(root)
        if index is None:
            try:
                digest = hashlib.sha256(str(root).encode()).hexdigest()[:20]
                path: Path | None = settings.data_dir() / "tracker-threads" / f"{digest}.json"
            except Exception:  # no data dir: an in-memory index only
                path = None
            index = _cache[root] = ThreadIndex(root, path)
        return index
