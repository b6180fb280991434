"""One persisted cache file: framed, checksummed, written atomically, private.

Used by the IMAP summary cache (:mod:`backends.imap.summary_cache`), the persisted mbox
index (:mod:`backends.mbox_index_store`) and the app's kept start screen (tui/first_paint.py). A cache is derived data: when a file is missing,
truncated, corrupt, or written by another version (of the cache format, of Python's
``marshal``), :func:`read` answers "nothing" with a note saying why, and the caller rebuilds.
Deleting the cache folder is always safe.

A file is::

    MAGIC  tag-length(2)  tag  section-count(2)  (length(8) crc32(4)) per section  sections…

where ``tag`` names the cache kind, its format version, the Python version and the
marshal version, and each section is ``marshal.dumps`` of plain data (tuples, lists,
dicts, bytes, str, numbers), or bytes as they are (a :class:`Raw` section, which a reader
uses in place, without a copy). Every section's CRC is checked before ``marshal.loads``
ever sees its bytes, so a torn or damaged file is never parsed. (A CRC, not a
cryptographic digest: it guards against damage; the folder is private to the user.)
A caller may decode a section only when it needs it (:func:`read_sections`).

Writes go to a new temporary file in the same folder (created ``0600``, exclusively) that
is then renamed over the old one: a reader sees the old file or the new one, never a mix,
so two app instances on one cache never corrupt it (the last writer wins; each file is
consistent on its own).
"""

from __future__ import annotations

import marshal
import os
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

MAGIC = b"MTCACHE\x01"
_ENTRY = struct.Struct(">QI")


class Raw:
    """A section written as the bytes it holds (not marshalled); read back, it is those
    bytes (a memoryview of the file's contents, see :func:`read_sections`)."""

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        self.data = data


def tag_for(kind: str, version: int) -> bytes:
    py = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return f"{kind}/v{version}/py{py}/marshal{marshal.version}".encode("ascii")


def write(path: Path, kind: str, version: int, payload: Any, *more: Any) -> int:
    """Write ``payload`` (and any further sections) to ``path`` atomically, mode 0600.
    Returns the bytes written.

    Raises OSError when the folder cannot be written (callers treat a cache that cannot be
    saved as no cache)."""
    sections = [p.data if isinstance(p, Raw) else marshal.dumps(p) for p in (payload, *more)]
    tag = tag_for(kind, version)
    head = [MAGIC, struct.pack(">H", len(tag)), tag, struct.pack(">H", len(sections))]
    head += [_ENTRY.pack(len(data), zlib.crc32(data)) for data in sections]
    tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(b"".join(head))
            for data in sections:
                handle.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _sweep_leftovers(path)
    return sum(map(len, head)) + sum(map(len, sections))


def _sweep_leftovers(path: Path) -> None:
    """Remove the temporary files of ``path`` that a writer killed mid-write left behind (the
    app ends a late head start child; a crash): those of a process no longer running. A
    running writer's file is left alone. Never raises."""
    try:
        leftovers = list(path.parent.glob(f".{path.name}.*.tmp"))
    except OSError:
        return
    for leftover in leftovers:
        pid = leftover.name[len(path.name) + 2:].split(".", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # still running: maybe writing right now
        except ProcessLookupError:
            pass
        except OSError:  # another user's process (EPERM): running, not ours to judge
            continue
        try:
            os.unlink(leftover)
        except OSError:
            pass


def read(path: Path, kind: str, version: int) -> tuple[Any, str | None]:
    """``(first section, None)``, or ``(None, why)`` when the file cannot be used (``why``
    is None when there simply is no file)."""
    sections, why = read_sections(path, kind, version)
    if sections is None:
        return None, why
    return decode(sections[0], path)


def decode(section: bytes | memoryview, path: Path) -> tuple[Any, str | None]:
    """One section's value, or ``(None, why)``."""
    try:
        return marshal.loads(section), None
    except (ValueError, EOFError, TypeError) as exc:  # pragma: no cover - the CRC catches damage first
        return None, f"{path.name} could not be decoded ({exc}); rebuilt"


def read_sections(path: Path, kind: str, version: int) -> tuple[list[memoryview] | None, str | None]:
    """The checked, still-encoded sections of ``path`` (decode each with :func:`decode`, or
    use a :class:`Raw` one as it is), or ``(None, why)``; ``why`` is None when there is no
    file. Each is a memoryview of one ``bytes`` object holding the whole file (its ``obj``),
    the sections laid end to end, the last one ending with it."""
    try:
        with open(path, "rb") as handle:
            blob = handle.read()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read {path.name}: {exc.strerror or exc}"
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + 2:
        return None, f"{path.name} is not a mailtriage cache file of this version (or is truncated); rebuilt"
    at = len(MAGIC)
    (tag_len,) = struct.unpack_from(">H", blob, at)
    at += 2
    tag = blob[at:at + tag_len]
    at += tag_len
    if tag != tag_for(kind, version):
        shown = tag.decode("ascii", "replace")[:80]
        return None, f"{path.name} was written by another version ({shown}); rebuilt"
    if len(blob) < at + 2:
        return None, f"{path.name} is truncated; rebuilt"
    (count,) = struct.unpack_from(">H", blob, at)
    at += 2
    if len(blob) < at + count * _ENTRY.size:
        return None, f"{path.name} is truncated; rebuilt"
    entries = [_ENTRY.unpack_from(blob, at + i * _ENTRY.size) for i in range(count)]
    at += count * _ENTRY.size
    expected = at + sum(length for length, _crc in entries)
    if len(blob) != expected:
        return None, f"{path.name} is truncated or padded ({len(blob)} of {expected} bytes); rebuilt"
    view = memoryview(blob)
    sections = []
    for length, crc in entries:
        data = view[at:at + length]
        if zlib.crc32(data) != crc:
            return None, f"{path.name} is corrupt (checksum mismatch); rebuilt"
        sections.append(data)
        at += length
    return sections, None


def remove(path: Path) -> None:
    """Delete a cache file that must not be used again (never raises)."""
    try:
        os.unlink(path)
    except OSError:
        pass
