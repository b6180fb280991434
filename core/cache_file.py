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

Reads and writes follow the one rule of :mod:`mailtriage.core.private_files`: a cache file
in a folder another user could write, owned by someone else, a symlink or a FIFO is never
read (the caller rebuilds) nor written through. Writes go to a new temporary file in the
same folder (created ``0600``, exclusively), synced, then renamed over the old one: a reader
sees the old file or the new one, never a mix, also after a kill, so two app instances on one
cache never corrupt it (the last writer wins; each file is consistent on its own).

A cache that cannot be written (a full disk, a read-only or refused folder) is no cache: the
caller goes on without it, and :func:`cannot_write` says so once per process, as an op-log
record (:data:`UNWRITABLE`) the front ends show: the CLI one stderr line, the app one notice.
"""

from __future__ import annotations

import errno
import marshal
import os
import struct
import sys
import weakref
import zlib
from pathlib import Path
from typing import Any

from mailtriage.core import private_files
from mailtriage.core.errors import ConfigError
from mailtriage.core.trace import OPLOG

#: The op-log ``op`` of the one record that says the caches are off (see :func:`cannot_write`).
UNWRITABLE = "cache-unwritable"
_said: list[str] = []  # the notice given in this process (at most one)

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

    Raises OSError when the folder cannot be written or is refused (callers treat a cache that
    cannot be saved as no cache)."""
    sections = [p.data if isinstance(p, Raw) else marshal.dumps(p) for p in (payload, *more)]
    tag = tag_for(kind, version)
    head = [MAGIC, struct.pack(">H", len(tag)), tag, struct.pack(">H", len(sections))]
    head += [_ENTRY.pack(len(data), zlib.crc32(data)) for data in sections]
    try:
        private_files.write_atomic(path, [b"".join(head), *sections])
    except ConfigError as exc:  # a folder another user could write: no cache, as for any unwritable one
        error = PermissionError(errno.EPERM, f"not written: {exc}")
        cannot_write(Path(path).parent, error)
        raise error from exc
    except OSError as exc:
        cannot_write(Path(path).parent, exc)
        raise
    return sum(map(len, head)) + sum(map(len, sections))


def cannot_write(folder: Path, exc: Exception) -> None:
    """A cache file in ``folder`` could not be written (nor the folder made): say once per process that
    the app works without its caches, and why (an op-log record, op :data:`UNWRITABLE`).
    Callers that fail before :func:`write` (making the cache folder) call it too."""
    if _said:
        return
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    _said.append(f"the cache folder {folder} cannot be written ({why}); working without the cache "
                 "(slower listings) until there is room")
    with OPLOG.record("cache", UNWRITABLE, _said[0]):
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
        blob = private_files.read_bytes(path)  # the one rule: ours, regular, in a private folder
    except FileNotFoundError:
        return None, None
    except ConfigError as exc:  # a file or folder another user could have planted: never read
        return None, f"{path.name} not read: {exc.file} {exc.problem}"
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


class LazyFile:
    """A cache file of which only the first sections were read (:func:`read_sections_lazily`):
    kept open, so the others, read later, are those of the same file even if it was replaced
    meanwhile (a write renames a new file over it). Closed once every section is read, or
    when it is dropped."""

    def __init__(self, fd: int, path: Path, size: int) -> None:
        self.path = path
        self.size = size  #: the file's bytes
        self.bytes_read = 0  #: the bytes read so far (the header, the sections read)
        self.unread = 0
        self._fd: int | None = fd
        self._closer = weakref.finalize(self, os.close, fd)

    def read(self, at: int, length: int) -> bytes:
        if self._fd is None:
            raise OSError(errno.EBADF, "the cache file was closed")
        data = os.pread(self._fd, length, at)
        self.bytes_read += len(data)
        if len(data) != length:
            raise OSError(errno.EIO, f"{self.path.name} was cut short while read")
        return data

    def close(self) -> None:
        self._fd = None
        self._closer()


class Later:
    """A section of a :class:`LazyFile` not read yet: :meth:`read` reads and checks it."""

    def __init__(self, file: LazyFile, at: int, length: int, crc: int) -> None:
        self.file, self.at, self.length, self.crc = file, at, length, crc

    def read(self) -> tuple[bytes | None, str | None]:
        """The section's bytes (checked), or ``(None, why)``."""
        file = self.file
        try:
            data = file.read(self.at, self.length)
        except OSError as exc:
            return None, f"cannot read {file.path.name}: {exc.strerror or exc}"
        finally:
            file.unread -= 1
            if file.unread <= 0:
                file.close()
        if zlib.crc32(data) != self.crc:
            return None, f"{file.path.name} is corrupt (checksum mismatch); rebuilt"
        return data, None


#: How much of a file :func:`read_sections_lazily` reads at first (the header, and the first
#: sections when they fit), then the rest of the first sections.
HEAD_READ = 1 << 12


def read_sections_lazily(path: Path, kind: str, version: int,
                         first: int) -> tuple[list[memoryview | Later] | None, str | None, LazyFile | None]:
    """As :func:`read_sections`, but only the ``first`` sections are read (and checked) now;
    the others are :class:`Later` sections, read and checked when the caller needs them (a
    first page of a 100k folder's cache needs its newest rows, not the whole file).
    Returns ``(sections, why, the file)``."""
    try:
        fd = private_files.open_read(path)  # the one rule: ours, regular, in a private folder
    except FileNotFoundError:
        return None, None, None
    except ConfigError as exc:  # a file or folder another user could have planted: never read
        return None, f"{path.name} not read: {exc.file} {exc.problem}", None
    except OSError as exc:
        return None, f"cannot read {path.name}: {exc.strerror or exc}", None
    try:
        size = os.fstat(fd).st_size
    except OSError as exc:
        os.close(fd)
        return None, f"cannot read {path.name}: {exc.strerror or exc}", None
    file = LazyFile(fd, path, size)
    try:
        sections, why = _lazy_sections(file, kind, version, first)
    except OSError as exc:
        sections, why = None, f"cannot read {path.name}: {exc.strerror or exc}"
    if sections is None or file.unread == 0:
        file.close()
    return sections, why, file


def _lazy_sections(file: LazyFile, kind: str, version: int, first: int) -> tuple[list | None, str | None]:
    name = file.path.name
    head = file.read(0, min(file.size, HEAD_READ))
    tag = tag_for(kind, version)
    if not head.startswith(MAGIC) or len(head) < len(MAGIC) + 2:
        return None, f"{name} is not a mailtriage cache file of this version (or is truncated); rebuilt"
    at = len(MAGIC)
    (tag_len,) = struct.unpack_from(">H", head, at)
    at += 2
    if head[at:at + tag_len] != tag:
        shown = head[at:at + tag_len].decode("ascii", "replace")[:80]
        return None, f"{name} was written by another version ({shown}); rebuilt"
    at += tag_len
    if len(head) < at + 2:
        return None, f"{name} is truncated; rebuilt"
    (count,) = struct.unpack_from(">H", head, at)
    at += 2
    if len(head) < at + count * _ENTRY.size:
        if file.size < at + count * _ENTRY.size:
            return None, f"{name} is truncated; rebuilt"
        head += file.read(len(head), at + count * _ENTRY.size - len(head))
    entries = [_ENTRY.unpack_from(head, at + i * _ENTRY.size) for i in range(count)]
    at += count * _ENTRY.size
    expected = at + sum(length for length, _crc in entries)
    if file.size != expected:
        return None, f"{name} is truncated or padded ({file.size} of {expected} bytes); rebuilt"
    eager = sum(length for length, _crc in entries[:first])
    if len(head) < at + eager:
        head += file.read(len(head), at + eager - len(head))
    view = memoryview(head)
    sections: list[memoryview | Later] = []
    for i, (length, crc) in enumerate(entries):
        if i < first:
            data = view[at:at + length]
            if zlib.crc32(data) != crc:
                return None, f"{name} is corrupt (checksum mismatch); rebuilt"
            sections.append(data)
        else:
            sections.append(Later(file, at, length, crc))
            file.unread += 1
        at += length
    return sections, None


def remove(path: Path) -> None:
    """Delete a cache file that must not be used again (never raises)."""
    try:
        os.unlink(path)
    except OSError:
        pass
