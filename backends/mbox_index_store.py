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
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from mailtriage.backends import cache_file
from mailtriage.backends.thread_reconstruction import Links, ThreadGroup
from mailtriage.core.errors import ConfigError
from mailtriage.core.paths import private_cache_dir
from mailtriage.core.trace import TRACE

KIND = "mbox-index"
VERSION = 4
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


_NUMBERS = {"locations": "q", "ends": "q", "dates": "d"}


TEXT_COLUMNS = _TEXTS = ("message_ids", "subjects", "senders", "emails")


class BlobColumn(Sequence):
    """A column of bytes (or str) values kept as one blob and its offsets: loading it costs a
    copy, not an object per message; a value is made when it is read."""

    def __init__(self, blob: bytes, edges: array, nones: bytes, text: bool) -> None:
        if len(edges) < 1 or (nones and len(nones) != len(edges) - 1) or edges[-1] != len(blob):
            raise ValueError("a packed column of inconsistent lengths")
        self.blob, self.edges, self.nones, self.text = blob, edges, nones, text

    def __len__(self) -> int:
        return len(self.edges) - 1

    def __getitem__(self, row):  # type: ignore[override]
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(len(self)))]
        if row < 0:
            row += len(self)
        if self.nones and self.nones[row]:
            return None
        value = self.blob[self.edges[row]:self.edges[row + 1]]
        return value.decode("utf-8", "surrogateescape") if self.text else value

    def __iter__(self):
        for row in range(len(self)):
            yield self[row]

    def __iadd__(self, values: Sequence) -> "BlobColumn":
        """This column with ``values`` appended (a new column: the blob is shared by nobody)."""
        if not values:
            return self
        text, blob, edges_bytes, nones = BlobColumn.pack(values)
        added = array("q")
        added.frombytes(edges_bytes)
        base = self.edges[-1]
        edges = array("q", self.edges)
        edges.extend(base + e for e in added[1:])
        if self.nones or nones:
            nones = (self.nones or bytes(len(self))) + (nones or bytes(len(values)))
        return BlobColumn(self.blob + blob, edges, nones, self.text or text)

    @classmethod
    def pack(cls, values: Sequence) -> tuple:
        text = any(isinstance(v, str) for v in values)
        raw = [(v.encode("utf-8", "surrogateescape") if text else v) if v is not None else b"" for v in values]
        edges = array("q", [0])
        total = 0
        for value in raw:
            total += len(value)
            edges.append(total)
        nones = bytes(bytearray(v is None for v in values)) if any(v is None for v in values) else b""
        return (text, b"".join(raw), edges.tobytes(), nones)

    @classmethod
    def unpack(cls, packed: tuple) -> "BlobColumn":
        text, blob, edges_bytes, nones = packed
        edges = array("q")
        edges.frombytes(edges_bytes)
        return cls(blob, edges, nones, text)


def pack_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """Numeric columns as machine arrays, text columns as blobs (a fast load), flags as
    bytes; the rest as is."""
    out = dict(fields)
    for name, code in _NUMBERS.items():
        out[name] = array(code, fields[name]).tobytes()
    for name in _TEXTS:
        column = fields[name]
        out[name] = ((column.text, column.blob, column.edges.tobytes(), column.nones)
                     if isinstance(column, BlobColumn) else BlobColumn.pack(column))
    out["synthetic"] = bytes(bytearray(fields["synthetic"]))
    return out


def unpack_fields(packed: dict[str, Any], *, as_lists: bool = False) -> dict[str, Any]:
    """The columns back; text columns stay blobs unless ``as_lists`` (to be extended)."""
    out = dict(packed)
    for name, code in _NUMBERS.items():
        column = array(code)
        column.frombytes(packed[name])
        out[name] = column.tolist()
    for name in _TEXTS:
        column = BlobColumn.unpack(packed[name])
        out[name] = list(column) if as_lists else column
    out["synthetic"] = [flag == 1 for flag in packed["synthetic"]]
    return out


def pack_groups(groups: Sequence[ThreadGroup], dates: Sequence[float]) -> tuple:
    """The groups as flat arrays, with each group's latest date (a listing picks its window
    from those without building a group object per thread)."""
    if isinstance(groups, PackedGroups):
        return groups.packed()
    members = array("i")
    bounds = array("q", [0])
    latest = array("d")
    for group in groups:
        members.extend(group.members)
        bounds.append(len(members))
        latest.append(max(dates[m] for m in group.members))
    return ([g.root_id for g in groups], bytes(bytearray(g.synthetic for g in groups)), members.tobytes(),
            bounds.tobytes(), latest.tobytes())


class PackedGroups(Sequence):
    """Thread groups read back from a persisted index: a sequence of :class:`ThreadGroup`
    made one by one as they are read, plus ``roots`` and ``latest`` (each group's newest
    date) as plain lists."""

    def __init__(self, roots: list, synthetic: bytes, members: list[int], edges: list[int],
                 latest: list[float]) -> None:
        if not len(roots) == len(synthetic) == len(latest) == len(edges) - 1:
            raise ValueError("thread groups of inconsistent lengths")
        self.roots, self.synthetic, self.members, self.edges, self.latest = roots, synthetic, members, edges, latest

    def __len__(self) -> int:
        return len(self.roots)

    def __getitem__(self, position):  # type: ignore[override]
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        edges = self.edges
        return ThreadGroup(self.roots[position], self.synthetic[position] == 1,
                           self.members[edges[position]:edges[position + 1]])

    def __iter__(self):
        for position in range(len(self.roots)):
            yield self[position]

    def packed(self) -> tuple:
        return (self.roots, self.synthetic, array("i", self.members).tobytes(), array("q", self.edges).tobytes(),
                array("d", self.latest).tobytes())

    def as_list(self) -> list[ThreadGroup]:
        return list(self)


def unpack_groups(packed: tuple) -> PackedGroups:
    roots, synthetic, members_bytes, bounds_bytes, latest_bytes = packed
    members, bounds, latest = array("i"), array("q"), array("d")
    members.frombytes(members_bytes)
    bounds.frombytes(bounds_bytes)
    latest.frombytes(latest_bytes)
    return PackedGroups(roots, synthetic, members.tolist(), bounds.tolist(), latest.tolist())


class Stored:
    """A persisted index as read back: the archive stamp it was made from and its parts.
    The threading links are decoded only when asked for (an append needs them; a listing
    does not)."""

    def __init__(self, path: Path, stamp: ArchiveStamp, fields: dict[str, Any], groups: PackedGroups,
                 links_section) -> None:
        self.path, self.stamp, self.fields, self.groups = path, stamp, fields, groups
        self._links_section = links_section

    def links(self) -> Links | None:
        plain, why = cache_file.decode(self._links_section, self.path)
        if why:
            note(why)
            return None
        try:
            return Links.from_plain(plain)
        except (TypeError, ValueError) as exc:
            note(f"{self.path.name}: unexpected threading links ({exc}); rebuilt")
            return None


def load(archive: Path) -> Stored | None:
    """The persisted index of ``archive``, or None (no file, or one that cannot be used)."""
    try:
        path = store_path(archive)
    except (OSError, ConfigError) as exc:
        note(f"no mbox index cache folder: {exc}")
        return None
    sections, why = cache_file.read_sections(path, KIND, VERSION)
    if sections is not None and len(sections) != 2:
        sections, why = None, f"{path.name} has {len(sections)} sections, not 2; rebuilt"
    main = None
    if sections is not None:
        main, why = cache_file.decode(sections[0], path)
    if why:
        note(f"mbox index of {archive.name}: {why}")
        cache_file.remove(path)
    if main is None:
        return None
    try:
        where, stamp, fields, groups = main
        if where != str(archive):
            return None
        return Stored(path, ArchiveStamp.from_plain(stamp), unpack_fields(fields), unpack_groups(groups), sections[1])
    except (TypeError, ValueError, KeyError) as exc:
        note(f"mbox index of {archive.name} has an unexpected shape ({exc}); rebuilt")
        cache_file.remove(path)
        return None


def save(archive: Path, stamp: ArchiveStamp, fields: dict[str, Any], links: Links,
         groups: Sequence[ThreadGroup]) -> None:
    """Persist the index (atomically). A cache that cannot be written is only noted."""
    try:
        cache_file.write(store_path(archive), KIND, VERSION,
                         (str(archive), stamp.to_plain(), pack_fields(fields), pack_groups(groups, fields["dates"])),
                         links.to_plain())
    except (OSError, ValueError, ConfigError) as exc:
        note(f"mbox index of {archive.name} not saved: {exc}")
