"""One persisted cache file: framed, checksummed, written atomically, private.

Used by the IMAP summary cache (:mod:`backends.imap.summary_cache`) and the persisted mbox
index (:mod:`backends.mbox_index_store`). A cache is derived data: when a file is missing,
truncated, corrupt, or written by another version (of the cache format, of Python's
``marshal``), :func:`read` answers "nothing" with a note saying why, and the caller rebuilds.
Deleting the cache folder is always safe.

A file is::

    MAGIC  tag-length(2)  tag  payload-length(8)  blake2b-128(payload)  payload

where ``tag`` names the cache kind, its format version, the Python version and the
marshal version, and ``payload`` is ``marshal.dumps`` of plain data (tuples, lists, dicts,
bytes, str, numbers). The checksum is checked before ``marshal.loads`` ever sees the
bytes, so a torn or damaged file is never parsed.

Writes go to a temporary file in the same folder (created ``0600`` by ``mkstemp``) that
is then renamed over the old one: a reader sees the old file or the new one, never a mix,
so two app instances on one cache never corrupt it (the last writer wins; each file is
consistent on its own).
"""

from __future__ import annotations

import hashlib
import marshal
import os
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

MAGIC = b"MTCACHE\x00"
_DIGEST = 16


def tag_for(kind: str, version: int) -> bytes:
    py = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return f"{kind}/v{version}/py{py}/marshal{marshal.version}".encode("ascii")


def write(path: Path, kind: str, version: int, payload: Any) -> int:
    """Write ``payload`` to ``path`` atomically (mode 0600). Returns the bytes written.

    Raises OSError when the folder cannot be written (callers treat a cache that cannot be
    saved as no cache)."""
    data = marshal.dumps(payload)
    tag = tag_for(kind, version)
    head = MAGIC + struct.pack(">H", len(tag)) + tag + struct.pack(">Q", len(data)) + _digest(data)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(head)
            handle.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return len(head) + len(data)


def read(path: Path, kind: str, version: int) -> tuple[Any, str | None]:
    """``(payload, None)``, or ``(None, why)`` when the file cannot be used (``why`` is None
    when there simply is no file)."""
    try:
        with open(path, "rb") as handle:
            blob = handle.read()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read {path.name}: {exc.strerror or exc}"
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + 2:
        return None, f"{path.name} is not a mailtriage cache file (or is truncated); rebuilt"
    at = len(MAGIC)
    (tag_len,) = struct.unpack_from(">H", blob, at)
    at += 2
    tag = blob[at:at + tag_len]
    at += tag_len
    if tag != tag_for(kind, version):
        shown = tag.decode("ascii", "replace")[:80]
        return None, f"{path.name} was written by another version ({shown}); rebuilt"
    if len(blob) < at + 8 + _DIGEST:
        return None, f"{path.name} is truncated; rebuilt"
    (length,) = struct.unpack_from(">Q", blob, at)
    at += 8
    digest = blob[at:at + _DIGEST]
    at += _DIGEST
    data = blob[at:]
    if len(data) != length:
        return None, f"{path.name} is truncated ({len(data)} of {length} bytes); rebuilt"
    if _digest(data) != digest:
        return None, f"{path.name} is corrupt (checksum mismatch); rebuilt"
    try:
        return marshal.loads(data), None
    except (ValueError, EOFError, TypeError) as exc:  # pragma: no cover - the checksum catches damage first
        return None, f"{path.name} could not be decoded ({exc}); rebuilt"


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=_DIGEST).digest()


def remove(path: Path) -> None:
    """Delete a cache file that must not be used again (never raises)."""
    try:
        os.unlink(path)
    except OSError:
        pass
