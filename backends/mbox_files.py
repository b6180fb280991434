"""Maildir and ``.eml`` folders: one file per message, indexed from its header block.

Moved out of :mod:`backends.mbox` (issue 36).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, Sequence

from mailtriage.backends.mbox_index import NO_DATE, ArchiveIndex, _first_id, _row_from_fields, _sender_emails
from mailtriage.backends.mbox_scan import _HEADER_READ, _new_columns
from mailtriage.backends.mime_headers import header_fields, normalize_line_ends, split_header_block, unfold_header_names
from mailtriage.backends.thread_reconstruction import link_records
from mailtriage.core.lazy_re import lazy

DEFAULT_MAX_MESSAGE_BYTES = 25 * 1024 * 1024


# A file's header block is read to its end (a mail loop's trace headers pass 1 MiB, and what a
# listing shows may come after them), bounded only by the largest message a read accepts.
_MAX_HEADER_BYTES = DEFAULT_MAX_MESSAGE_BYTES


_BLANK_LINE_AFTER = lazy(rb"\n\n|\r\n\r\n|\r\r")


_MAILDIR_TIME = lazy(r"^(\d{9,11})\.")


# ---------------------------------------------------------------------------
# Maildir and .eml folders
# ---------------------------------------------------------------------------

def _read_header(path: Path) -> bytes:
    """The head of a message file, enough to hold its whole header block."""
    with open(path, "rb") as handle:
        data = bytearray(handle.read(_HEADER_READ))
        looked = 0  # what was already searched for the blank line (less 3 bytes that may start one)
        while len(data) < _MAX_HEADER_BYTES and not _BLANK_LINE_AFTER.search(data, looked):
            more = handle.read(_HEADER_READ)
            if not more:
                break
            looked = max(0, len(data) - 3)
            data += more
    return bytes(data)


def _index_files(fmt: str, files: Sequence[Path], delivery_time) -> ArchiveIndex:
    out = _new_columns()
    locations, mids, synthetic, dates, subjects, senders, emails, notes = out
    records = []
    not_mail: set[int] = set()
    for row, path in enumerate(files):
        row_notes: list[str] = []
        try:
            head = _read_header(path)
        except OSError as exc:
            head = None
            row_notes.append(f"could not read {path.name}: {exc.strerror or exc}")
        header, _ = split_header_block(unfold_header_names(normalize_line_ends(head or b"")[0])[0])
        fields = header_fields(header)
        what = _not_mail(head, fields)
        if what is not None:
            not_mail.add(row)
            row_notes.append(f"{path.name} is not a mail message: {what}")
        raw = None
        if not _first_id(fields.get(b"message-id")):
            try:  # a synthetic ID hashes the body too
                raw = path.read_bytes()
            except OSError:
                raw = head
        values = _row_from_fields(fields, header, delivery_time(path), row_notes, raw)
        if what is not None:
            values = values[:5] + (f"({what})".encode(), values[6])
        locations.append(str(path))
        mids.append(values[0])
        synthetic.append(values[1])
        records.append((values[0], values[2], values[3], values[1]))
        dates.append(NO_DATE if values[4] is None else values[4])
        subjects.append(values[5])
        senders.append(values[6])
        emails += _sender_emails([values[6]])
        notes.extend((row, n) for n in row_notes)
    index = ArchiveIndex(fmt, links=link_records(records))
    index.extend(out)
    index.not_mail = not_mail
    return index


def _not_mail(head: bytes | None, fields: Mapping[bytes, bytes]) -> str | None:
    """What a file in a mail folder is when it is no mail (empty, or binary without headers), else None."""
    if head is None:
        return None  # unreadable: said by its own note
    if not head.strip():
        return "the file is empty" if not head else "the file is empty (only blank lines)"
    sample = head[:4096]
    if not fields and (b"\x00" in sample or sum(b < 9 or 13 < b < 32 for b in sample) > len(sample) // 20):
        return "a binary file"
    return None


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _maildir_time(path: Path) -> float | None:
    match = _MAILDIR_TIME.match(path.name)
    return float(match.group(1)) if match else _mtime(path)


def maildir_files(root: Path) -> list[Path]:
    """Messages of a Maildir (``cur/`` and ``new/``; ``tmp/`` is mail still being written)."""
    files = []
    for sub in ("cur", "new"):
        folder = root / sub
        if folder.is_dir():
            files += [p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")]
    return sorted(files, key=lambda p: (_maildir_time(p) or 0.0, p.name))


def eml_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.eml") if p.is_file())
