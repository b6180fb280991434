"""A derived index of a local-files tracker's front matter, so ``list`` does not parse every file.

The index is a cache, never a source of truth: it maps each issue file name to its
``(mtime_ns, size, inode)`` and the fields ``list`` shows. An entry is used only while the
file's stat still matches; otherwise the file is parsed again. It lives inside the working
copy's VCS metadata folder (``.git/mailtriage/`` or ``.svn/mailtriage/``): outside the
tracker root, never committed, and behind the same access as the tracker itself (it holds
titles of embargoed issues, so it must not go to a shared cache folder).

Search does not use the index: it greps each file's raw bytes for the words (fast), and
only the matches are shown.

Read and written under the one file rule (core/private_files.py): a working copy on a shared
machine may have a metadata folder others can write, and an index planted there, or a link
under its name, is treated as missing and not written.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from mailtriage.core import private_files
from mailtriage.core.errors import ConfigError
from mailtriage.trackers import localformat as fmt
from mailtriage.trackers.contract import MalformedIssue

INDEX_VERSION = 2
_SUMMARY_KEYS = ("id", "title", "state", "labels", "updated", "assignees", "milestone")


def index_path(meta_dir: Path | None, root: Path) -> Path | None:
    if meta_dir is None:
        return None
    digest = hashlib.sha1(str(root).encode("utf-8")).hexdigest()[:16]
    return meta_dir / "mailtriage" / f"tracker-index-{digest}.json"


def _load(path: Path | None) -> dict[str, list]:
    if path is None:
        return {}
    try:
        data = json.loads(private_files.read_bytes(path))
    except (OSError, ValueError, ConfigError):  # missing, broken or planted: rebuilt
        return {}
    if not isinstance(data, dict) or data.get("version") != INDEX_VERSION:
        return {}
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def _save(path: Path | None, files: dict[str, list]) -> None:
    if path is None:
        return
    text = json.dumps({"version": INDEX_VERSION, "files": files}, ensure_ascii=False, separators=(",", ":"))
    try:
        private_files.write_atomic(path, text.encode("utf-8"))
    except (OSError, ConfigError):
        pass  # a cache that cannot be written (or not safely) only costs time


def summarize(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: meta.get(k) for k in _SUMMARY_KEYS}


def scan(root: Path, is_issue_name, cache: Path | None, parsed: dict[str, tuple[str, dict]] | None = None,
         stats: dict[str, tuple[int, int]] | None = None) -> tuple[list[tuple[str, dict]], list[str]]:
    """([(file name, summary)], [problem per malformed file]) for every issue file under ``root``.

    ``is_issue_name(name)`` selects issue files (``PREFIX-NNNN.md``). ``parsed``, when given,
    receives ``{file name: (front matter text, parsed front matter)}`` of each file parsed here
    (not found in the index), so a read of the whole file right after need not parse it again.
    ``stats``, when given, receives ``{file name: (mtime_ns, size)}`` of each regular issue file,
    taken before the file is read.
    """
    old = _load(cache)
    new: dict[str, list] = {}
    found: list[tuple[str, dict]] = []
    problems: list[str] = []
    changed = False
    with os.scandir(root) as it:
        entries = [e for e in it if is_issue_name(e.name)]
    for entry in entries:
        try:
            if entry.is_symlink() or not entry.is_file(follow_symlinks=False):
                problems.append(f"{entry.name}: not a regular file (symlinks are refused)")
                continue
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            problems.append(f"{entry.name}: cannot stat: {exc.strerror}")
            continue
        key = [st.st_mtime_ns, st.st_size, st.st_ino]
        if stats is not None:
            stats[entry.name] = (st.st_mtime_ns, st.st_size)
        hit = old.get(entry.name)
        if hit is not None and hit[:3] == key:
            new[entry.name] = hit
        else:
            changed = True
            try:
                text = fmt.read_tracker_file(entry.path).decode("utf-8")
                fm, _ = fmt.split_front_matter(text, entry.name)
                meta = fmt.parse_front_matter(fm, entry.name)
                new[entry.name] = key + [summarize(meta), None]
                if parsed is not None:
                    parsed[entry.name] = (fm, meta)
            except UnicodeDecodeError as exc:
                new[entry.name] = key + [None, f"{entry.name}: not UTF-8 ({exc.reason} at byte {exc.start})"]
            except MalformedIssue as exc:
                new[entry.name] = key + [None, str(exc)]
            except OSError as exc:
                problems.append(f"{entry.name}: cannot read: {exc.strerror}")
                continue
        record = new[entry.name]
        if record[4]:
            problems.append(record[4])
        else:
            found.append((entry.name, record[3]))
    if changed or len(new) != len(old):
        _save(cache, new)
    return found, problems


def grep(path: Path, words: list[str], title: str) -> bool:
    """True when every word occurs (case-insensitively) in the title, body or comments.

    Reads raw bytes and skips the front matter; non-ASCII words fall back to decoding.
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    end = data.find(b"\n---", 3)
    if end >= 0:
        data = data[end + 4:]
    lowered = data.lower()
    decoded: str | None = None
    title_folded = title.casefold()
    for word in words:
        folded = word.casefold()
        if folded in title_folded:
            continue
        if word.isascii():
            if folded.encode("ascii") in lowered:
                continue
            return False
        if decoded is None:
            decoded = data.decode("utf-8", "replace").casefold()
        if folded not in decoded:
            return False
    return True
