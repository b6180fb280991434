"""The persisted mbox index: a second open of a large mbox reads this instead of the archive.

What is stored (under ``<cache dir>/mbox/``, mode 0600, see :mod:`core.cache_file`): the
:class:`~backends.mbox_index.ArchiveIndex` columns (byte offsets, Message-IDs, dates, raw subjects
and senders, sender addresses, per-message notes), the threading links and the thread groups,
plus what identifies the archive as it was indexed: its path, inode, size, mtime, change time
(ctime) and a digest of its last 4 KiB. Never a message body.

Two files per archive:

* the **base** (``<name>.idx``): the whole index, with a random token of its own (the text
  columns' bytes in a raw section that the loaded columns read in place, without a copy);
* a **delta** (``<name>.dlt``, optional): what messages appended since the base added (their
  rows, their threading links, the members they add to the base's groups and the groups
  they start) and the archive's stamp after them. It names the base token it extends, so it
  is never applied to another base (a base rewritten by anyone gets a new token; a delta of
  an older base is ignored and deleted). An append rewrites only the delta (it holds every
  append since the base), so its cost follows what was appended, not the archive's size.
  When the delta holds more than ``1/COMPACT_SHARE`` of the base's rows (and more than
  ``COMPACT_MIN_ROWS``), the next append rewrites the base instead (compaction) and the
  delta goes.

When the index is used:

* same inode, size, mtime and ctime, and the tail digest still matches (the delta's stamp when there
  is one, else the base's): as it is;
* same inode, the file grew, the old tail is unchanged and a From_ line starts exactly where
  the old file ended (a message was appended, as every MDA and list archiver does): only the
  new tail is scanned and the index is extended (the threading links of the old run and of
  the new one merge exactly, :meth:`Links.then`); when the new mail re-links mail already
  grouped, everything is grouped again and the whole index is rewritten;
* anything else (another inode, a shorter file, a rewritten tail, an mboxcl2 or CR-only
  archive that grew): rebuilt from the archive.

A missing, truncated, corrupt or other-version file is rebuilt without fuss (a bad delta is
dropped and the base extended again from the archive); the reason is noted in the backend
console (the protocol trace, channel ``cache:mbox``). Each file is written atomically (see
:mod:`core.cache_file`), so two processes on one cache never corrupt it: a reader sees
a base and a delta that are each whole, and uses the delta only when it names that base.
"""

from __future__ import annotations

import hashlib
import os
from array import array
from pathlib import Path
from typing import Any, Sequence

from mailtriage.core import cache_file
from mailtriage.backends.thread_reconstruction import Links, ThreadGroup
from mailtriage.core.errors import ConfigError
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.paths import cache_dir, private_cache_dir
from mailtriage.core.trace import TRACE

KIND = "mbox-index"
# 6: a message whose first line is a quoted ">From " envelope line keeps its header block
#    (issue 33): an index of 5 holds it without sender, subject or Message-ID.
# 7: the archive stamp holds the ctime too (issue 33): a stamp of 6 has none.
VERSION = 7
DELTA_KIND = "mbox-index-delta"
DELTA_VERSION = 2  # 2: the stamp holds the ctime
# Compaction: an append rewrites the base once the delta holds more than 1/COMPACT_SHARE of
# the base's rows (and more than COMPACT_MIN_ROWS): 6,250 rows of a 100,000-message archive,
# about 1.7 MB of delta to load and rewrite on each append, against 27 MB for the base.
COMPACT_SHARE = 16
COMPACT_MIN_ROWS = 256
TAIL = 4096
CHANNEL = "cache:mbox"


@frozen_dataclass
class ArchiveStamp:
    """What identifies one state of an mbox file."""

    inode: int
    size: int
    mtime_ns: int
    # A rewrite in place can keep the size and set the mtime back (utime); the ctime cannot be
    # set back, so it tells such a rewrite (a chmod or a new hard link also moves it: a rebuild).
    ctime_ns: int
    tail: bytes  # blake2b of the last TAIL bytes before ``size``

    def to_plain(self) -> tuple:
        return (self.inode, self.size, self.mtime_ns, self.ctime_ns, self.tail)

    @classmethod
    def from_plain(cls, plain: tuple) -> "ArchiveStamp":
        return cls(*plain)


def tail_digest(fd: int, size: int) -> bytes:
    start = max(0, size - TAIL)
    return hashlib.blake2b(os.pread(fd, size - start, start), digest_size=16).digest()


def stamp_of(fd: int) -> ArchiveStamp:
    info = os.fstat(fd)
    return ArchiveStamp(info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns,
                        tail_digest(fd, info.st_size))


def store_path(archive: Path) -> Path:
    """Where the index of ``archive`` is kept (the folder is created private on demand)."""
    name = hashlib.blake2b(str(archive).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
    return private_cache_dir("mbox") / f"{name}.idx"


def delta_path(base: Path) -> Path:
    """Where the delta of the base index file ``base`` is kept."""
    return base.with_suffix(".dlt")


def note(text: str) -> None:
    TRACE.log(CHANNEL, "!", text)


_NUMBERS = {"locations": "q", "ends": "q", "dates": "d"}


TEXT_COLUMNS = _TEXTS = ("message_ids", "subjects", "senders", "emails")


class BlobColumn(Sequence):
    """A column of bytes (or str) values kept as one blob and its offsets: loading it costs a
    copy, not an object per message; a value is made when it is read.

    Values appended later (an append's rows, a delta's) are kept apart as a plain list
    (``more``): appending costs what was appended, not a copy of the blob."""

    def __init__(self, blob: bytes, edges: array, nones: bytes, text: bool, more: list | None = None,
                 offset: int = 0, length: int | None = None) -> None:
        # ``blob[offset:offset + length]`` holds the values (a persisted index's columns share
        # the bytes of the whole file, read once, instead of a copy each).
        length = len(blob) - offset if length is None else length
        if (len(edges) < 1 or (nones and len(nones) != len(edges) - 1) or edges[0] != 0 or edges[-1] != length
                or offset < 0 or offset + length > len(blob)):
            raise ValueError("a packed column of inconsistent lengths")
        self.blob, self.edges, self.nones, self.text = blob, edges, nones, text
        self.offset, self.length = offset, length
        self.packed_rows = len(edges) - 1
        self.more: list = more or []

    def __len__(self) -> int:
        return self.packed_rows + len(self.more)

    def __getitem__(self, row):  # type: ignore[override]
        # A listing reads ~8 values per thread: the common case (an int row) is tried first.
        try:
            if row < 0:
                row += len(self)
        except TypeError:
            if not isinstance(row, slice):
                raise
            return [self[i] for i in range(*row.indices(len(self)))]
        if row >= self.packed_rows:
            return self.more[row - self.packed_rows]
        if self.nones and self.nones[row]:
            return None
        edges, offset = self.edges, self.offset
        value = self.blob[offset + edges[row]:offset + edges[row + 1]]
        return value.decode("utf-8", "surrogateescape") if self.text else value

    def __iter__(self):
        for row in range(len(self)):
            yield self[row]

    def values_at(self, rows: Sequence[int]) -> list:
        """The values of ``rows`` (non-negative), in one call (a listing reads a thread's
        participants and Message-IDs this way)."""
        if self.nones:
            return [self[row] for row in rows]
        blob, edges, packed, more, at = self.blob, self.edges, self.packed_rows, self.more, self.offset
        if self.text:
            return [blob[at + edges[row]:at + edges[row + 1]].decode("utf-8", "surrogateescape") if row < packed
                    else more[row - packed] for row in rows]
        return [blob[at + edges[row]:at + edges[row + 1]] if row < packed else more[row - packed] for row in rows]

    def __iadd__(self, values: Sequence) -> "BlobColumn":
        """This column with ``values`` appended: a new column (this one is left as it was)
        sharing the blob."""
        if not len(values):
            return self
        return BlobColumn(self.blob, self.edges, self.nones, self.text, self.more + list(values), self.offset,
                          self.length)

    def then(self, later: "BlobColumn") -> "BlobColumn":
        """This column followed by ``later``'s values."""
        self += later
        return self

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

    def packed_from(self, row: int = 0) -> tuple:
        """The packed form (:meth:`pack`) of the values from ``row`` on; the blob's part
        without a value object per row."""
        if row >= self.packed_rows or not self.packed_rows:
            return BlobColumn.pack(self.more[max(0, row - self.packed_rows):])
        start = self.edges[row]
        edges = self.edges[row:] if not start else array("q", [e - start for e in self.edges[row:]])
        whole = not start and not self.offset and self.length == len(self.blob)
        packed = (self.text, self.blob if whole else self.blob[self.offset + start:self.offset + self.length], edges,
                  self.nones[row:])
        if not self.more:
            return packed[:2] + (edges.tobytes(), packed[3])
        text, blob, edges_bytes, nones = BlobColumn.pack(self.more)
        if text != self.text and any(v is not None for v in self.more):
            raise ValueError("a column of bytes and text")
        added = array("q")
        added.frombytes(edges_bytes)
        base = edges[-1]
        edges = array("q", edges)
        edges.extend([base + e for e in added[1:]])
        rows = len(edges) - 1
        if packed[3] or nones:
            nones = (packed[3] or bytes(rows - len(self.more))) + (nones or bytes(len(self.more)))
        return (self.text, packed[1] + blob, edges.tobytes(), nones)

    @classmethod
    def unpack(cls, packed: tuple) -> "BlobColumn":
        text, blob, edges_bytes, nones = packed
        edges = array("q")
        edges.frombytes(edges_bytes)
        return cls(blob, edges, nones, text)


def pack_fields(fields: dict[str, Any], start: int = 0) -> dict[str, Any]:
    """Numeric columns as machine arrays, text columns as blobs (a fast load), flags as
    bytes; the rest as is. With ``start``, only the rows from ``start`` on (and their
    notes): what a delta holds."""
    out = dict(fields)
    for name, code in _NUMBERS.items():
        column = fields[name]
        if not (isinstance(column, array) and column.typecode == code):
            column = array(code, column)
        out[name] = column[start:].tobytes() if start else column.tobytes()
    for name in _TEXTS:
        column = fields[name]
        if isinstance(column, BlobColumn):
            out[name] = column.packed_from(start)
        else:
            out[name] = BlobColumn.pack(column[start:] if start else column)
    out["synthetic"] = bytes(bytearray(fields["synthetic"][start:] if start else fields["synthetic"]))
    if start:
        out["notes"] = {row: notes for row, notes in fields["notes"].items() if row >= start}
    return out


def unpack_fields(packed: dict[str, Any]) -> dict[str, Any]:
    """The columns back: numbers as arrays, text columns as blobs (a value is made when it
    is read)."""
    out = dict(packed)
    for name, code in _NUMBERS.items():
        column = array(code)
        column.frombytes(packed[name])
        out[name] = column
    for name in _TEXTS:
        column = packed[name]
        out[name] = column if isinstance(column, BlobColumn) else BlobColumn.unpack(column)
    out["synthetic"] = list(map(bool, packed["synthetic"]))
    return out


def _rows_of(fields: dict[str, Any]) -> int:
    rows = len(fields["message_ids"])
    if any(len(fields[name]) != rows for name in (*_NUMBERS, *_TEXTS, "synthetic")):
        raise ValueError("columns of inconsistent lengths")
    return rows


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
    date).

    Appended mail is an overlay (:meth:`place`, :meth:`add_group`): the members it adds to
    a group (``extra``, by group position) come after the group's stored members, and the
    groups it starts come after the stored groups, as :func:`group_ids` over the whole
    archive orders them. ``stored`` is how many groups the base file holds."""

    def __init__(self, roots: list, synthetic: bytes, members: Sequence[int], edges: Sequence[int],
                 latest: Sequence[float]) -> None:
        if not len(roots) == len(synthetic) == len(latest) == len(edges) - 1:
            raise ValueError("thread groups of inconsistent lengths")
        if edges[0] != 0 or edges[-1] != len(members):
            raise ValueError("thread group bounds out of range")
        self.roots, self.synthetic, self.members, self.edges, self.latest = roots, synthetic, members, edges, latest
        self.stored = len(roots)
        self.extra: dict[int, list[int]] = {}

    def __len__(self) -> int:
        return len(self.roots)

    def __getitem__(self, position):  # type: ignore[override]
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        if position < 0:
            position += len(self.roots)
        members = self.members[self.edges[position]:self.edges[position + 1]] if position < self.stored else []
        if not isinstance(members, list):
            members = members.tolist()
        extra = self.extra.get(position)
        if extra:
            members += extra
        return ThreadGroup(self.roots[position], self.synthetic[position] == 1, members)

    def __iter__(self):
        for position in range(len(self.roots)):
            yield self[position]

    def key_index(self, lookups: int | None = None) -> "dict[tuple, int] | _GroupFinder":
        """Each group's position by (root ID, synthetic): a dict (``get``, ``in``, item
        assignment). For a few ``lookups`` (an append of a few messages), a finder with the
        same methods that searches the roots when asked instead of indexing them all."""
        if lookups is not None and lookups <= _FEW_LOOKUPS:
            return _GroupFinder(self.roots, self.synthetic)
        return dict(zip(zip(self.roots, map(bool, self.synthetic)), range(len(self.roots))))

    def place(self, position: int, member: int, date: float) -> None:
        """Add ``member`` (an appended message dated ``date``) to the group at ``position``."""
        self.extra.setdefault(position, []).append(member)
        if date > self.latest[position]:
            self.latest[position] = date

    def add_group(self, root: Any, synthetic: bool) -> int:
        """Start a group (its members come with :meth:`place`); its position."""
        if not isinstance(self.synthetic, bytearray):
            self.synthetic = bytearray(self.synthetic)
        if not isinstance(self.latest, array):
            self.latest = array("d", self.latest)
        self.roots.append(root)
        self.synthetic.append(1 if synthetic else 0)
        self.latest.append(float("-inf"))
        return len(self.roots) - 1

    def packed(self) -> tuple:
        """The groups with the overlay folded in, as :func:`pack_groups` makes them."""
        members, edges = self.members, self.edges
        if self.extra:
            merged = array("i")
            bounds = array("q", [0])
            extra = self.extra
            for position in range(len(self.roots)):
                if position < self.stored:
                    merged.extend(members[edges[position]:edges[position + 1]])
                more = extra.get(position)
                if more:
                    merged.extend(more)
                bounds.append(len(merged))
            members, edges = merged, bounds
        return (list(self.roots), bytes(self.synthetic), array("i", members).tobytes(), array("q", edges).tobytes(),
                array("d", self.latest).tobytes())

    def overlay(self) -> tuple:
        """The overlay as plain data (for a delta): members added by group position, and the
        roots and synthetic flags of the groups it started."""
        return (dict(self.extra), self.roots[self.stored:], bytes(self.synthetic[self.stored:]))

    def apply(self, overlay: tuple, dates: Sequence[float], first_row: int) -> None:
        """Lay a delta's overlay (:meth:`overlay`) over these stored groups; every member it
        adds must be a row from ``first_row`` on."""
        extra, roots, synthetic = overlay
        if len(roots) != len(synthetic):
            raise ValueError("appended thread groups of inconsistent lengths")
        for root, flag in zip(roots, synthetic):
            self.add_group(root, flag == 1)
        rows = len(dates)
        for position, added in extra.items():
            if not (isinstance(position, int) and 0 <= position < len(self.roots)) or not added:
                raise ValueError("a delta's group overlay names no group")
            for member in added:
                if not first_row <= member < rows:
                    raise ValueError("a delta's group overlay names a row it does not hold")
                self.place(position, member, dates[member])
        if any(position not in self.extra for position in range(self.stored, len(self.roots))):
            raise ValueError("a delta starts a thread group without members")


_FEW_LOOKUPS = 64  # a search of the roots costs about 1/50 of indexing them all


class _GroupFinder:
    """A group's position by (root ID, synthetic), found by searching the roots (C speed,
    no dict of every group); what was found or set is remembered."""

    def __init__(self, roots: list, synthetic: Sequence[int]) -> None:
        self.roots, self.synthetic, self.known = roots, synthetic, {}

    def get(self, key: tuple, default: Any = None) -> Any:
        if key in self.known:
            return self.known[key]
        root, synthetic = key
        roots, flags = self.roots, self.synthetic
        at = -1
        while True:
            try:
                at = roots.index(root, at + 1)
            except ValueError:
                return default
            if (flags[at] == 1) == synthetic:
                self.known[key] = at
                return at

    def __contains__(self, key: tuple) -> bool:
        return self.get(key) is not None

    def __setitem__(self, key: tuple, position: int) -> None:
        self.known[key] = position


def unpack_groups(packed: tuple) -> PackedGroups:
    roots, synthetic, members_bytes, bounds_bytes, latest_bytes = packed
    members, bounds, latest = array("i"), array("q"), array("d")
    members.frombytes(members_bytes)
    bounds.frombytes(bounds_bytes)
    latest.frombytes(latest_bytes)
    return PackedGroups(roots, synthetic, members, bounds, latest)


def _links_from(section, path: Path) -> Links | None:
    plain, why = cache_file.decode(section, path)
    if why:
        note(why)
        return None
    try:
        return Links.from_plain(plain)
    except (TypeError, ValueError) as exc:
        note(f"{path.name}: unexpected threading links ({exc}); rebuilt")
        return None


def chain_links(first: Links, later: Links) -> Links:
    """``first.then(later)`` made in place in ``first`` (which must be no one else's): the
    cost of ``later``, not of both."""
    guessed = first.guessed
    for key, value in later.guessed.items():
        if key not in guessed:
            guessed[key] = value
    first.own.update(later.own)
    return first


class Stored:
    """A persisted index as read back, its delta (if any) applied: the archive stamp it
    describes and its parts. The threading links are decoded only when asked for (an append
    needs them; a listing does not).

    ``base_rows`` / ``base_stamp`` / ``token`` describe the base file; ``stamp`` is the
    delta's when there is one."""

    def __init__(self, path: Path, token: bytes, base_stamp: ArchiveStamp, fields: dict[str, Any],
                 groups: PackedGroups, links_section) -> None:
        self.path, self.token, self.base_stamp, self.stamp = path, token, base_stamp, base_stamp
        self.fields, self.groups = fields, groups
        self.base_rows = _rows_of(fields)
        self._links_section = links_section
        self._delta_links_section = None

    @property
    def rows(self) -> int:
        return len(self.fields["message_ids"])

    def links(self) -> Links | None:
        """All threading links (the base's, then the delta's)."""
        links = _links_from(self._links_section, self.path)
        if links is None or self._delta_links_section is None:
            return links
        later = self.delta_links()
        return None if later is None else chain_links(links, later)

    def delta_links(self) -> Links | None:
        """The links of the delta's rows only (none without a delta)."""
        if self._delta_links_section is None:
            return Links()
        return _links_from(self._delta_links_section, delta_path(self.path))

    def apply_delta(self, main: Any, links_section) -> None:
        """Lay a delta over the base (raises ValueError/TypeError/KeyError when it does not fit)."""
        _where, _token, base_rows, stamp, packed_fields, overlay = main
        stamp = ArchiveStamp.from_plain(stamp)
        base = self.base_stamp
        if base_rows != self.base_rows or stamp.inode != base.inode or stamp.size <= base.size:
            raise ValueError("it does not extend its base")
        added = unpack_fields(packed_fields)
        fields = self.fields
        if _rows_of(added) < 1 or added["locations"][0] != base.size or any(row < base_rows for row in added["notes"]):
            raise ValueError("its rows do not follow its base's")
        for name in _NUMBERS:
            fields[name].extend(added[name])
        for name in _TEXTS:
            fields[name] = fields[name].then(added[name])
        fields["synthetic"] += added["synthetic"]
        fields["notes"] = {**fields["notes"], **added["notes"]}
        self.groups.apply(overlay, fields["dates"], base_rows)
        self.stamp = stamp
        self._delta_links_section = links_section


def _read_delta(stored: Stored, archive: Path) -> None:
    """Apply the delta of ``stored`` when there is one that extends it (else drop it)."""
    path = delta_path(stored.path)
    sections, main, why = _read_file(path, DELTA_KIND, DELTA_VERSION, 2)
    if main is not None and why is None:
        try:
            where, token = main[0], main[1]
        except (TypeError, IndexError, KeyError):
            where, token = None, None
        if where != str(archive) or token != stored.token:
            # Written for a base that was replaced since (by a rebuild, a compaction, another
            # process): it describes another base, so it is dropped, never applied.
            note(f"appended-mail index of {archive.name} belongs to an earlier index; dropped")
            cache_file.remove(path)
            return
        try:
            stored.apply_delta(main, sections[1])
            return
        except (TypeError, ValueError, KeyError, IndexError) as exc:
            why = f"{path.name} has an unexpected shape ({exc}); rebuilt"
            # apply_delta may have changed the columns half way: the caller reads the base again.
            raise _DeltaUnusable(why) from exc
    if why:
        note(f"appended-mail index of {archive.name}: {why}")
        cache_file.remove(path)


def _read_file(path: Path, kind: str, version: int, count: int) -> tuple[list | None, Any, str | None]:
    """``path``'s checked sections (``count`` of them) and its first one decoded, or why not."""
    sections, why = cache_file.read_sections(path, kind, version)
    if sections is not None and len(sections) != count:
        sections, why = None, f"{path.name} has {len(sections)} sections, not {count}; rebuilt"
    main = None
    if sections is not None:
        main, why = cache_file.decode(sections[0], path)
    return sections, main, why


class _DeltaUnusable(Exception):
    pass


def load(archive: Path) -> Stored | None:
    """The persisted index of ``archive`` with its delta applied, or None (no file, or one
    that cannot be used)."""
    stored = _load_base(archive)
    if stored is None:
        return None
    try:
        _read_delta(stored, archive)
    except _DeltaUnusable as exc:
        note(f"appended-mail index of {archive.name}: {exc}")
        cache_file.remove(delta_path(stored.path))
        return _load_base(archive)
    return stored


def _load_base(archive: Path) -> Stored | None:
    try:
        path = store_path(archive)
    except (OSError, ConfigError) as exc:
        note(f"no mbox index cache folder: {exc}")
        return None
    sections, main, why = _read_file(path, KIND, VERSION, 3)
    if why:
        note(f"mbox index of {archive.name}: {why}")
        cache_file.remove(path)
    if main is None:
        return None
    try:
        where, token, stamp, fields, groups = main
        if where != str(archive):
            return None
        _blobs_back(fields, sections[2])
        return Stored(path, token, ArchiveStamp.from_plain(stamp), unpack_fields(fields), unpack_groups(groups),
                      sections[1])
    except (TypeError, ValueError, KeyError) as exc:
        note(f"mbox index of {archive.name} has an unexpected shape ({exc}); rebuilt")
        cache_file.remove(path)
        return None


def live_links(links: Links) -> Links:
    """``links`` without the guesses that can no longer matter: an ID with a parent of its
    own keeps it (own links are never undone, :meth:`Links.then`), so its guessed parent is
    never read again. (About a quarter of the links section of a list archive; it decodes
    that much faster on an append.)"""
    own = links.own
    return Links({key: up for key, up in links.guessed.items() if key not in own}, own)


def _blobs_apart(packed: dict[str, Any]) -> cache_file.Raw:
    """The text columns' blobs of ``packed`` (:func:`pack_fields`) moved to one raw section,
    each column left with where its values start and end in it."""
    blobs, at = [], 0
    for name in _TEXTS:
        text, blob, edges, nones = packed[name]
        packed[name] = (text, at, at + len(blob), edges, nones)
        blobs.append(blob)
        at += len(blob)
    return cache_file.Raw(b"".join(blobs))


def _blobs_back(packed: dict[str, Any], raw: memoryview) -> None:
    """The text columns of ``packed`` as columns over the file's own bytes (no copy)."""
    whole = raw.obj
    if not isinstance(whole, bytes):
        raise ValueError("the blobs are not the file's bytes")
    base = len(whole) - len(raw)  # the raw section is the last one: it ends with the file
    for name in _TEXTS:
        text, start, end, edges_bytes, nones = packed[name]
        if not 0 <= start <= end <= len(raw):
            raise ValueError("a column outside the file")
        edges = array("q")
        edges.frombytes(edges_bytes)
        packed[name] = BlobColumn(whole, edges, nones, text, offset=base + start, length=end - start)


def save(archive: Path, stamp: ArchiveStamp, fields: dict[str, Any], links: Links,
         groups: Sequence[ThreadGroup]) -> None:
    """Persist the whole index (atomically) as a new base; a delta of the old base goes.
    A cache that cannot be written is only noted."""
    try:
        path = store_path(archive)
        packed = pack_fields(fields)
        blobs = _blobs_apart(packed)
        cache_file.write(path, KIND, VERSION,
                         (str(archive), os.urandom(16), stamp.to_plain(), packed, pack_groups(groups, fields["dates"])),
                         live_links(links).to_plain(), blobs)
    except (OSError, ValueError, ConfigError) as exc:
        note(f"mbox index of {archive.name} not saved: {exc}")
        if not isinstance(exc, ValueError):  # the folder could not be made: said once, as a write
            cache_file.cannot_write(cache_dir() / "mbox", exc)
        return
    # After the new base: a reader between the two sees a delta naming another token.
    cache_file.remove(delta_path(path))


def wants_compaction(stored: Stored, rows: int) -> bool:
    """Whether an index of ``rows`` rows over ``stored``'s base is better rewritten whole."""
    added = rows - stored.base_rows
    return added > COMPACT_MIN_ROWS and added * COMPACT_SHARE > stored.base_rows


def save_delta(archive: Path, stored: Stored, stamp: ArchiveStamp, fields: dict[str, Any], links: Links,
               groups: PackedGroups) -> int | None:
    """Persist what the rows after ``stored``'s base add (atomically), bound to that base.
    ``links`` are the links of those rows only. Returns the bytes written (None when the
    cache cannot be written, which is only noted)."""
    try:
        return cache_file.write(delta_path(stored.path), DELTA_KIND, DELTA_VERSION,
                                (str(archive), stored.token, stored.base_rows, stamp.to_plain(),
                                 pack_fields(fields, stored.base_rows), groups.overlay()),
                                live_links(links).to_plain())
    except (OSError, ValueError, ConfigError) as exc:
        note(f"appended-mail index of {archive.name} not saved: {exc}")
        return None
