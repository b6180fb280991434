"""The persisted mbox index: a second open of a large mbox reads this instead of the archive.

What is stored (one file per archive under ``<cache dir>/mbox/``, mode 0600, see
:mod:`backends.cache_file`): the :class:`~backends.mbox.ArchiveIndex` columns (byte offsets,
Message-IDs, dates, raw subjects and senders, sender addresses, per-message notes), the
threading links and the thread groups, plus what identifies the archive as it was indexed:
its path, inode, size, mtime and a digest of its last 4 KiB. Never a message body.

When the index is used:

* same inode, size and mtime, and the tail digest still matches: as it is;
* same inode, the file grew, the old tail is unchanged and a From_ line starts exactly where
  the old file ended (a message was appended, as every MDA and list archiver does): only the
  new tail is scanned and the index is extended (the threading links of the old run and of
  the new one merge exactly, :meth:`Links.then`);
* anything else (another inode, a shorter file, a rewritten tail, an mboxcl2 or CR-only
  archive that grew): rebuilt from the archive.

A missing, truncated, corrupt or other-version file is rebuilt without fuss; the reason is
noted in the backend console (the protocol trace, channel ``cache:mbox``).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mailtriage.backends import cache_file
from mailtriage.backends.thread_reconstruction import Links, ThreadGroup
from mailtriage.core.errors import ConfigError
from mailtriage.core.paths import private_cache_dir
from mailtriage.core.trace import TRACE

KIND = "mbox-index"
VERSION = 1
TAIL = 4096
CHANNEL = "cache:mbox"


@dataclass(frozen=True)
class ArchiveStamp:
    """What identifies one state of an mbox file."""

    inode: int
    size: int
    mtime_ns: int
    tail: bytes  # blake2b of the last TAIL bytes before ``size``

    def to_plain(self) -> tuple:
        return (self.inode, self.size, self.mtime_ns, self.tail)

    @classmethod
    def from_plain(cls, plain: tuple) -> "ArchiveStamp":
        return cls(*plain)


def tail_digest(fd: int, size: int) -> bytes:
    start = max(0, size - TAIL)
    return hashlib.blake2b(os.pread(fd, size - start, start), digest_size=16).digest()


def stamp_of(fd: int) -> ArchiveStamp:
    info = os.fstat(fd)
    return ArchiveStamp(info.st_ino, info.st_size, info.st_mtime_ns, tail_digest(fd, info.st_size))


def store_path(archive: Path) -> Path:
    """Where the index of ``archive`` is kept (the folder is created private on demand)."""
    name = hashlib.blake2b(str(archive).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
    return private_cache_dir("mbox") / f"{name}.idx"


def note(text: str) -> None:
    TRACE.log(CHANNEL, "!", text)


@dataclass
class Stored:
    """A persisted index as read back: the archive stamp it was made from and its parts."""

    stamp: ArchiveStamp
    fields: dict[str, Any]
    links: Links
    groups: list[ThreadGroup] | None


def load(archive: Path) -> Stored | None:
    """The persisted index of ``archive``, or None (no file, or one that cannot be used)."""
    try:
        path = store_path(archive)
    except (OSError, ConfigError) as exc:
        note(f"no mbox index cache folder: {exc}")
        return None
    payload, why = cache_file.read(path, KIND, VERSION)
    if why:
        note(f"mbox index of {archive.name}: {why}")
        cache_file.remove(path)
    if payload is None:
        return None
    try:
        where, stamp, fields, links, groups = payload
        if where != str(archive):
            return None
        parsed_groups = None
        if groups is not None:
            roots, synthetic, members = groups
            parsed_groups = [ThreadGroup(r, s, m) for r, s, m in zip(roots, synthetic, members)]
        return Stored(ArchiveStamp.from_plain(stamp), fields, Links.from_plain(links), parsed_groups)
    except (TypeError, ValueError, KeyError) as exc:
        note(f"mbox index of {archive.name} has an unexpected shape ({exc}); rebuilt")
        cache_file.remove(path)
        return None


def save(archive: Path, stamp: ArchiveStamp, fields: dict[str, Any], links: Links,
         groups: list[ThreadGroup] | None) -> None:
    """Persist the index (atomically). A cache that cannot be written is only noted."""
    plain_groups = None
    if groups is not None:
        plain_groups = ([g.root_id for g in groups], [g.synthetic for g in groups], [g.members for g in groups])
    try:
        cache_file.write(store_path(archive), KIND, VERSION,
                         (str(archive), stamp.to_plain(), fields, links.to_plain(), plain_groups))
    except (OSError, ValueError, ConfigError) as exc:
        note(f"mbox index of {archive.name} not saved: {exc}")
