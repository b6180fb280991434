"""Offline archive backend: an mbox file, a Maildir or a folder of ``.eml`` files.

Read-only, always: the archive is opened for reading only, nothing is renamed,
flagged or rewritten, and no index is stored beside it (nor anywhere else: the
index lives in memory for the life of the backend object).

Capabilities: ``list_recent_threads``, ``read_thread``, ``thread_url``. Every
other op is declined by the base class with ``NotSupported``.

Settings (``mail_sources.<name>`` in project.md)::

    path: archives/security.mbox     # relative to the project folder; required
    list: security@example.org       # optional: the list this archive is a snapshot of
    max_message_bytes: 26214400      # optional size cap for reading one message (0 = none)
    parallel: true                   # optional: scan big mbox files on two cores

Listing an mbox never builds ``email`` objects. The fast path reads the file in
16 MB chunks (a copy from the page cache; no memory map, so the resident set
stays small), finds each message's header block with one regular expression,
pulls the six fields that threading and the list need with a second one over
all header blocks of the chunk, and keeps the raw bytes: subjects and senders
are decoded only for the threads it returns. Files over 64 MB are split at a
message boundary near the middle and the first half is scanned in a forked
child. The fields come through the same rules as ``mime.header_fields`` /
``mime.parse_date`` so the fast path and a full parse agree (a test checks that
on a generated mbox).

Why not scan backwards from the end and stop early? A thread's summary needs
every message of the thread (its count, its root's subject and sender) and the
root of a reply that only has In-Reply-To is found through its parent's headers,
which can be anywhere in the archive. No stopping rule is safe without reading
all Message-ID / References / In-Reply-To fields, so the whole file is indexed
once and the index is reused while the file's size and mtime stay the same.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import marshal
import os
import re
import select
import signal
import sys
import threading
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence
from urllib.parse import quote

from mailtriage.backends.contract import (
    Address,
    MailSource,
    Message,
    Op,
    Thread,
    ThreadId,
    ThreadSummary,
)
from mailtriage.backends.errors import BackendFailure, Unavailable
from mailtriage.backends.mime import (
    AttachmentNotFound,
    attachment_bytes,
    decode_header_text,
    header_fields,
    normalize_line_ends,
    parse_address,
    parse_date_epoch,
    parse_date_epochs,
    parse_message,
    split_header_block,
    synthetic_message_id,
)
from mailtriage.backends.threading import Links, ThreadGroup, group_ids, link_records, synthetic_kind

__all__ = ["MboxSource", "ArchiveIndex", "index_archive", "sniff_archive"]

DEFAULT_MAX_MESSAGE_BYTES = 25 * 1024 * 1024
_CHUNK = 16 * 1024 * 1024
_PARALLEL_MIN_BYTES = 64 * 1024 * 1024
_CHILD_TIMEOUT_SECONDS = 300
_HEADER_READ = 64 * 1024
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_MAX_HEADER_BYTES = 1024 * 1024

# One message's header block: its From_ line and every line up to the first blank
# one. A line starting "From " is a message boundary in mbox (as for the stdlib
# ``mailbox.mbox``), so it ends the block too, and so does a line starting with CR
# (the blank line of CRLF mail). Each line is matched with the newline *before* it,
# so a block never swallows the newline that starts the next message's "\nFrom "
# (a message with no blank line). Possessive repeats: nothing here backtracks.
_HEADER_BLOCK = re.compile(rb"\nFrom [^\n]*+(?:\n(?!From )[^\r\n][^\n]*+)*+")
# The fields listing needs, over the header blocks of a chunk joined by "\n": a
# block never holds an empty line, so an empty line separates messages (the
# separator matches with an empty name). Same value rule as mime.header_fields. The
# lookahead lets most lines (Received, DKIM, continuations) fail on their first byte.
_FIELDS = re.compile(
    rb"\n(?=[\nmridsfMRIDSF])(?:\n|(message-id|references|in-reply-to|date|subject|from)[ \t]*+:[ \t]*+"
    rb"(.*+(?:\n[ \t].*+)*+))",
    re.IGNORECASE,
)
_FIELD_COLUMN = {b"message-id": 0, b"references": 1, b"in-reply-to": 2, b"date": 3, b"subject": 4, b"from": 5}
_ID = re.compile(rb"<[^<>\s]+>")
_BARE_ID = re.compile(rb"[^\s<>,;\"()]+@[^\s<>,;\"()]+")
# asctime in an mbox From_ line: "From sender Tue Jan  2 10:00:00 2024"
_ENVELOPE_DATE = re.compile(rb"From \S*\s+[A-Za-z]{3}\s+([A-Za-z]{3})\s+(\d{1,2})\s+(\d{1,2}:\d{2}(?::\d{2})?)\s+(\d{4})")
_MAILDIR_TIME = re.compile(r"^(\d{9,11})\.")
NO_DATE = float("-inf")  # the date of a message with no usable date: before every other


# ---------------------------------------------------------------------------
# The index: one row per message, in archive order
# ---------------------------------------------------------------------------

@contextlib.contextmanager
def _collector_paused():
    """Pause the cyclic garbage collector while building many small acyclic objects.

    Indexing creates about a million tuples, lists and bytes that all survive, so
    the collector would walk them over and over (about a tenth of the scan time)
    and free nothing. Reference counting still frees everything as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class ArchiveIndex:
    """What listing and threading need about every message, kept as parallel lists.

    ``locations`` are byte offsets of the From_ line (mbox) or file paths (Maildir,
    .eml folder). IDs are raw bytes with angle brackets; ``subjects`` and ``senders``
    stay undecoded until a thread is shown; References and In-Reply-To are not kept,
    only the threading ``links`` made from them. ``dates`` are epoch seconds from the
    Date header or, when it is missing or unreadable, the archive's delivery time
    (mbox From_ line, Maildir file name, file mtime), and :data:`NO_DATE` (-inf)
    when there is neither; ``emails`` are the senders' addresses, lower-cased;
    ``notes`` holds per-message notes by row.
    """

    format: str
    locations: list[Any] = field(default_factory=list)
    message_ids: list[bytes] = field(default_factory=list)
    synthetic: list[bool] = field(default_factory=list)
    dates: list[float] = field(default_factory=list)
    subjects: list[bytes | None] = field(default_factory=list)
    senders: list[bytes | None] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    notes: dict[int, list[str]] = field(default_factory=dict)
    ends: list[int] = field(default_factory=list)  # mbox: end offset of each message
    # Threading links from every message's References / In-Reply-To, worked out
    # while scanning, so those fields need not be kept.
    links: Links = field(default_factory=Links)

    def __len__(self) -> int:
        return len(self.message_ids)

    def threads(self) -> list[ThreadGroup]:
        return group_ids(self.message_ids, self.synthetic, self.links)

    def sender_emails(self) -> list[str]:
        return self.emails

    def comparable_dates(self) -> list[float]:
        return self.dates

    def extend(self, columns: tuple) -> None:
        locations, mids, synthetic, dates, subjects, senders, emails, notes = columns
        base = len(self.message_ids)
        self.locations += locations
        self.message_ids += mids
        self.synthetic += synthetic
        self.dates += dates
        self.subjects += subjects
        self.senders += senders
        self.emails += emails
        for row, note in notes:
            self.notes.setdefault(base + row, []).append(note)


def _first_id(value: bytes | None) -> bytes | None:
    """Same rule as ``mime.extract_msgid``, on bytes: the first <...>, else a bare a@b."""
    if not value:
        return None
    match = _ID.search(value)
    if match is not None:
        return match.group()
    match = _BARE_ID.search(value)
    return b"<" + match.group() + b">" if match is not None else None


_MONTH_NUMBER = {m: i for i, m in enumerate(
    (b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov", b"dec"), 1)}


def _envelope_epoch(from_line: bytes) -> float | None:
    """Delivery time from an mbox From_ line (asctime, taken as UTC)."""
    match = _ENVELOPE_DATE.search(from_line)
    if match is None:
        return None
    mon, day, clock, year = match.groups()
    month = _MONTH_NUMBER.get(mon.lower())
    if month is None:
        return None
    parts = [int(p) for p in clock.split(b":")] + [0]
    try:
        return datetime(int(year), month, int(day), parts[0], parts[1], parts[2], tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def _row_from_fields(fields: Mapping[bytes, bytes], header_block: bytes,
                     fallback_epoch: float | None, notes: list[str]) -> tuple:
    """(mid, synthetic, refs, irt, date, subject, sender) from header fields (the careful path)."""
    mid = _first_id(fields.get(b"message-id"))
    synthetic = mid is None
    if synthetic:
        mid = synthetic_message_id(header_block).encode("ascii")
    refs_raw = fields.get(b"references")
    refs = tuple(_ID.findall(refs_raw)) if refs_raw else ()
    irt = _first_id(fields.get(b"in-reply-to"))
    date = parse_date_epoch(fields.get(b"date"))
    if date is None:
        date = fallback_epoch
        if fallback_epoch is not None:
            notes.append("no usable Date header; the archive's delivery time is used")
    return mid, synthetic, refs, irt, date, fields.get(b"subject"), fields.get(b"from")


# ---------------------------------------------------------------------------
# mbox: the fast scan
# ---------------------------------------------------------------------------

def _index_header_blocks(buf: bytearray, stop: int, base: int, out: tuple, links: Links) -> None:
    """Index every message whose header block starts in ``buf[:stop]``.

    ``buf[0]`` is a newline standing before file offset ``base``; so a From_ line
    found at buffer index ``i + 1`` starts at file offset ``base + i``. This is the
    hot loop of listing: the common case runs in C-level ``map`` calls and list
    comprehensions; the rare rows (no Message-ID, a bare ID, CR line ends, no usable
    date) are found with C-level checks and fixed one by one after.
    """
    locations, mids, synthetic, dates, subjects, senders, emails, notes = out
    matches = list(_HEADER_BLOCK.finditer(buf, 0, stop))
    count = len(matches)
    if not count:
        return
    first_row = len(mids)
    locations += [base + m.start() for m in matches]
    blocks = [m.group() for m in matches]
    joined = b"\n".join(blocks)
    # b"" stands for "no such field" (an empty field reads the same everywhere).
    col_mid = [b""] * count
    col_refs = [b""] * count
    col_irt = [b""] * count
    col_date = [b""] * count
    col_subject = [b""] * count
    col_from = [b""] * count
    columns = (col_mid, col_refs, col_irt, col_date, col_subject, col_from)
    column_of: dict[bytes, list] = {}
    # Walk backwards so an earlier occurrence of a field overwrites a later one:
    # the first occurrence wins, as in mime.header_fields.
    row = count - 1
    for name, value in reversed(_FIELDS.findall(joined)):
        if not name:
            row -= 1
            continue
        column = column_of.get(name)
        if column is None:
            column = column_of[name] = columns[_FIELD_COLUMN[name.lower()]]
        column[row] = value
    search = _ID.search
    row_mids = [m and m.group() for m in map(search, col_mid)]
    row_irts = [m and m.group() for m in map(search, col_irt)]
    row_refs = list(map(_ID.findall, col_refs))
    row_dates = parse_date_epochs(col_date)
    row_synthetic = [False] * count

    # The rare rows, found with C-level checks, fixed one by one.
    fix: set[int] = set()
    if None in row_mids:
        fix.update(i for i, v in enumerate(row_mids) if v is None)
    if None in row_dates:
        fix.update(i for i, v in enumerate(row_dates) if v is None)
    if row_irts.count(None) != col_irt.count(b""):
        fix.update(i for i, (v, raw) in enumerate(zip(row_irts, col_irt)) if v is None and raw)
    careful: set[int] = set()
    if buf.find(b"\r", 0, stop) != -1:
        starts = [m.start() for m in matches] + [stop]
        careful = {i for i in range(count) if buf.find(b"\r", starts[i], starts[i + 1]) != -1}
        fix |= careful
    for i in sorted(fix):
        block = blocks[i]
        from_line_end = block.find(b"\n", 1)
        if from_line_end < 0:
            from_line_end = len(block)
        envelope = _envelope_epoch(block[1:from_line_end])
        try:
            if i in careful:
                # CR in this message (CRLF or CR-only mail): read its headers exactly as
                # a full parse of the whole message would.
                raw = _message_bytes(buf, starts[i] + 1 + from_line_end, starts[i + 1], stop)
                header, _ = split_header_block(normalize_line_ends(raw)[0])
                row_notes: list[str] = []
                (row_mids[i], row_synthetic[i], row_refs[i], row_irts[i], row_dates[i],
                 col_subject[i], col_from[i]) = _row_from_fields(header_fields(header), header, envelope, row_notes)
                notes.extend((first_row + i, n) for n in row_notes)
                continue
            if row_mids[i] is None:
                row_mids[i] = _first_id(col_mid[i])
                if row_mids[i] is None:
                    row_mids[i] = synthetic_message_id(block[from_line_end + 1:]).encode("ascii")
                    row_synthetic[i] = True
            if row_irts[i] is None and col_irt[i]:
                row_irts[i] = _first_id(col_irt[i])
            if row_dates[i] is None:
                row_dates[i] = envelope
                if envelope is not None:
                    notes.append((first_row + i, "no usable Date header; the archive's delivery time is used"))
        except Exception as exc:  # noqa: BLE001 - one bad message must not lose the list
            if row_mids[i] is None:
                row_mids[i] = synthetic_message_id(block).encode("ascii")
                row_synthetic[i] = True
            notes.append((first_row + i, f"headers could not be read ({type(exc).__name__}: {exc})"))
    link_records(zip(row_mids, row_refs, row_irts, row_synthetic), links)
    if None in row_dates:
        row_dates = [NO_DATE if d is None else d for d in row_dates]
    mids += row_mids
    synthetic += row_synthetic
    dates += row_dates
    subjects += col_subject
    senders += col_from
    emails += _sender_emails(col_from)


def _message_bytes(buf: bytearray, start: int, end: int, data_end: int) -> bytes:
    """One message's bytes after its From_ line, cut as ``mailbox.mbox`` cuts them.

    ``end`` is the newline before the next From_ line (or ``data_end``): it ends the
    message's last line, unless that line is the blank separator, which is dropped.
    """
    raw = bytes(buf[start : end + 1 if end < data_end else end])
    return raw[:-1] if raw.endswith(b"\n\n") else raw


def _new_columns() -> tuple:
    return ([], [], [], [], [], [], [], [])


def _next_boundary(fd: int, offset: int, end: int, buf: bytearray) -> int:
    """File offset of the next From_ line at or after ``offset`` (``end`` when none)."""
    view = memoryview(buf)
    position = max(offset - 1, 0)
    while position < end:
        got = os.preadv(fd, [view[: min(len(buf), end - position)]], position)
        if got <= 0:
            return end
        found = buf.find(b"\nFrom ", 0, got)
        if found >= 0:
            return min(position + found + 1, end)
        if position + got >= end:
            return end
        position += got - 5
    return end


def scan_mbox_range(fd: int, start: int, end: int, chunk: int = _CHUNK) -> tuple[tuple, Links]:
    """Index the messages whose From_ line starts in ``[start, end)`` of an open mbox.

    ``start`` must be 0 or the offset of a From_ line. Returns marshal-able columns
    and the threading links of those messages.
    """
    out = _new_columns()
    links = Links()
    buf = bytearray(chunk + 1)
    view = memoryview(buf)
    position = start
    while position < end:
        want = min(chunk, end - position)
        buf[0] = 0x0A
        got = os.preadv(fd, [view[1 : 1 + want]], position)
        if got <= 0:
            break
        limit = got + 1
        if position + got < end:
            last = buf.rfind(b"\nFrom ", 1, limit)
            if last <= 0:
                # One message bigger than the buffer: index its headers, skip its body.
                _index_header_blocks(buf, limit, position, out, links)
                position = _next_boundary(fd, position + got - 5, end, buf)
                continue
            _index_header_blocks(buf, last, position, out, links)
            position += last
        else:
            _index_header_blocks(buf, limit, position, out, links)
            position += got
    return out, links


def _may_fork() -> bool:
    """Whether the scan may fork a child here.

    The child only runs the scan (no locks, no imports, ``os._exit`` at the end),
    which is safe after a fork even beside other threads; but Python 3.12 and later
    warn about forking a multi-threaded process, so there the scan forks only from
    a single-threaded one (the CLI) and runs in one process inside the TUI.
    """
    if not hasattr(os, "fork"):
        return False
    return sys.version_info < (3, 12) or threading.active_count() == 1


def _split_point(fd: int, size: int) -> int | None:
    """Offset of a From_ line a little before the middle of the file, or None.

    The child gets slightly less: it also has to send its columns over a pipe.
    """
    buf = bytearray(1024 * 1024)
    boundary = _next_boundary(fd, size * 47 // 100, size, buf)
    return boundary if 0 < boundary < size else None


def _scan_in_child(fd: int, start: int, end: int, chunk: int) -> tuple[int, int]:
    """Fork a child that scans ``[start, end)`` and writes its columns to a pipe."""
    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(write_end, _F_SETPIPE_SZ, 1 << 20)  # fewer wake-ups for ~10 MB of columns
    except OSError:
        pass
    pid = os.fork()
    if pid == 0:  # child: scan, send, and leave without running any parent cleanup
        status = 1
        try:
            os.close(read_end)
            columns, links = scan_mbox_range(fd, start, end, chunk)
            data = marshal.dumps((columns, links.to_plain()))
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view):]
            status = 0
        except BaseException:  # noqa: BLE001 - the parent falls back to scanning itself
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    return pid, read_end


def _collect_child(pid: int, read_end: int) -> tuple | None:
    """The child's columns, or None when it failed (the caller then scans that part)."""
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([read_end], [], [], _CHILD_TIMEOUT_SECONDS)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                return None
            data = os.read(read_end, 1 << 20)
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    if status != 0:
        return None
    try:
        columns, plain_links = marshal.loads(b"".join(chunks))
        return columns, Links.from_plain(plain_links)
    except (EOFError, ValueError, TypeError):
        return None


def index_mbox(path: Path, *, parallel: bool = True, parallel_min_bytes: int = _PARALLEL_MIN_BYTES,
               chunk: int = _CHUNK) -> ArchiveIndex:
    """Index an mbox file (see the module docstring for how).

    ``parallel_min_bytes`` and ``chunk`` exist so tests can drive the two-process
    split and the chunk seams on small files.
    """
    index = ArchiveIndex("mbox")
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        split = None
        if parallel and size >= parallel_min_bytes and _may_fork():
            split = _split_point(fd, size)
        pid = None
        if split is not None:
            try:
                pid, read_end = _scan_in_child(fd, 0, split, chunk)
            except OSError:
                pid = None
        if pid is None:
            columns, index.links = scan_mbox_range(fd, 0, size, chunk)
            index.extend(columns)
        else:
            # Scan and link the second half here while the child does the first.
            second_half, second_links = scan_mbox_range(fd, split, size, chunk)
            first = _collect_child(pid, read_end)
            if first is None:  # the child failed: do its part here, lose nothing
                first = scan_mbox_range(fd, 0, split, chunk)
            index.extend(first[0])
            index.extend(second_half)
            index.links = first[1].then(second_links)
        index.ends = index.locations[1:] + [size]
    finally:
        os.close(fd)
    return index


# ---------------------------------------------------------------------------
# Maildir and .eml folders
# ---------------------------------------------------------------------------

def _read_header(path: Path) -> bytes:
    """The head of a message file, enough to hold its header block."""
    with open(path, "rb") as handle:
        data = handle.read(_HEADER_READ)
        while len(data) < _MAX_HEADER_BYTES and b"\n\n" not in data and b"\r\n\r\n" not in data \
                and b"\r\r" not in data:
            more = handle.read(_HEADER_READ)
            if not more:
                break
            data += more
    return data


def _index_files(fmt: str, files: Sequence[Path], delivery_time) -> ArchiveIndex:
    out = _new_columns()
    locations, mids, synthetic, dates, subjects, senders, emails, notes = out
    records = []
    for row, path in enumerate(files):
        row_notes: list[str] = []
        try:
            head = _read_header(path)
        except OSError as exc:
            head = b""
            row_notes.append(f"could not read {path.name}: {exc.strerror or exc}")
        header, _ = split_header_block(normalize_line_ends(head)[0])
        values = _row_from_fields(header_fields(header), header, delivery_time(path), row_notes)
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
    return index


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


# ---------------------------------------------------------------------------
# Sniffing
# ---------------------------------------------------------------------------

def sniff_archive(path: Path) -> str:
    """``mbox``, ``maildir`` or ``eml``; raises ValueError with the reason when none fits."""
    if not path.exists():
        raise ValueError(f"archive path {path} does not exist")
    if path.is_dir():
        if (path / "cur").is_dir() and (path / "new").is_dir():
            return "maildir"
        try:
            has_eml = next((True for p in path.rglob("*.eml") if p.is_file()), False)
        except OSError as exc:
            raise ValueError(f"cannot read folder {path}: {exc.strerror or exc}") from exc
        if has_eml:
            return "eml"
        raise ValueError(f"folder {path} is neither a Maildir (cur/ and new/) nor a folder of .eml files")
    if not path.is_file():  # a FIFO or a device would block or never end
        raise ValueError(f"{path} is neither a regular file nor a folder")
    try:
        with open(path, "rb") as handle:
            head = handle.read(5)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if head == b"" or head == b"From ":
        return "mbox"
    raise ValueError(f"{path} is not an mbox file (it does not start with a 'From ' line)")


def index_archive(path: Path, *, parallel: bool = True) -> ArchiveIndex:
    """Sniff ``path`` and index it. Raises ValueError when it is not an archive."""
    fmt = sniff_archive(path)
    with _collector_paused():
        if fmt == "mbox":
            return index_mbox(path, parallel=parallel)
        if fmt == "maildir":
            return _index_files("maildir", maildir_files(path), _maildir_time)
        return _index_files("eml", eml_files(path), _mtime)


# ---------------------------------------------------------------------------
# The backend
# ---------------------------------------------------------------------------

def _id_text(raw: bytes) -> str:
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace")


def _normalize_list(name: str) -> str:
    return name.strip().strip("<>").strip().lower()


_ADDRESS_CACHE: dict[bytes, Address] = {}
_EMAIL_CACHE: dict[bytes | None, str] = {}


def _sender(raw: bytes | None) -> Address:
    if raw is None:
        return Address("", "")
    found = _ADDRESS_CACHE.get(raw)
    if found is None:
        found = parse_address(raw)
        if len(_ADDRESS_CACHE) < 50_000:
            _ADDRESS_CACHE[raw] = found
    return found


def _sender_emails(raw_senders: list[bytes | None]) -> list[str]:
    """Lower-cased sender addresses ("" when none), parsed once per distinct header."""
    cache = _EMAIL_CACHE
    emails = list(map(cache.get, raw_senders))
    if None in emails:
        for row, email in enumerate(emails):
            if email is None:
                raw = raw_senders[row]
                email = emails[row] = _sender(raw).email.lower()
                if len(cache) < 100_000:
                    cache[raw] = email
    return emails


class MboxSource(MailSource):
    """A read-only archive snapshot: an mbox file, a Maildir or a folder of ``.eml`` files.

    Raises (every operation):
        Unavailable: the path is missing, unreadable or not an archive, or the
            settings are wrong (the reason names the file and key).
        BackendFailure: a ``list`` argument names another list than the one this
            archive is a snapshot of; a thread ID of another kind; an unknown thread.
        NotSupported: list_drafts, list_sent_since, create_draft.
    """

    kind = "mbox"
    thread_id_kind = "mbox"
    capabilities = frozenset({Op.LIST_RECENT_THREADS, Op.READ_THREAD, Op.THREAD_URL})

    def __init__(self, name: str, settings: Mapping[str, object] | None = None) -> None:
        super().__init__(name, settings)
        self._problem: str | None = None
        project_dir = Path(str(self.settings.get("_project_dir") or "."))
        self._config_file = project_dir / "project.md"
        raw_path = self.settings.get("path")
        self.path: Path | None = None
        if raw_path is None or not str(raw_path).strip():
            self._problem = self._setting_problem("path", "is not set",
                                                  "a path to an mbox file, a Maildir or a folder of .eml files")
        else:
            path = Path(str(raw_path)).expanduser()
            self.path = (path if path.is_absolute() else project_dir / path).resolve()
        archive_list = self.settings.get("list")
        if archive_list is not None and not isinstance(archive_list, str):
            self._problem = self._setting_problem("list", f"must be a list address, not {archive_list!r}",
                                                  "e.g. security@example.org")
        self.archive_list = archive_list.strip() if isinstance(archive_list, str) and archive_list.strip() else None
        cap = self.settings.get("max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES)
        if cap is None:
            cap = 0
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            self._problem = self._setting_problem("max_message_bytes", f"must be a whole number of bytes, not {cap!r}",
                                                  "0 (no cap) or a positive integer such as 26214400")
            cap = DEFAULT_MAX_MESSAGE_BYTES
        self.max_message_bytes: int = cap
        parallel = self.settings.get("parallel", True)
        if not isinstance(parallel, bool):
            self._problem = self._setting_problem("parallel", f"must be true or false, not {parallel!r}", "true, false")
            parallel = True
        self.parallel = parallel
        self._synthetic_kind = synthetic_kind(self.thread_id_kind)
        self._index: ArchiveIndex | None = None
        self._index_key: tuple | None = None
        self._lock = threading.RLock()
        self._groups: list[ThreadGroup] | None = None

    def _setting_problem(self, key: str, problem: str, valid: str) -> str:
        return f"{self._config_file}: mail_sources.{self.name}.{key}: {problem} (valid: {valid})"

    # -- availability -------------------------------------------------
    def check_available(self) -> None:
        """Raise Unavailable when the archive cannot be read (cheap: stat and 5 bytes)."""
        if self._problem:
            raise Unavailable(self.name, self._problem)
        assert self.path is not None
        try:
            sniff_archive(self.path)
        except ValueError as exc:
            raise Unavailable(self.name, str(exc)) from None

    # -- index --------------------------------------------------------
    def _archive_key(self) -> tuple:
        assert self.path is not None
        stat = self.path.stat()
        key: tuple = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if self.path.is_dir():
            for sub in ("cur", "new"):
                folder = self.path / sub
                if folder.is_dir():
                    sub_stat = folder.stat()
                    key += (sub_stat.st_mtime_ns,)
        return key

    def load_index(self) -> ArchiveIndex:
        """The archive's index, rebuilt only when the archive changed on disk.

        Raises:
            Unavailable: the archive cannot be read.
        """
        self.check_available()
        assert self.path is not None
        with self._lock:  # two workers asking at once scan the archive once
            return self._load_index_locked()

    def _load_index_locked(self) -> ArchiveIndex:
        assert self.path is not None
        try:
            key = self._archive_key()
            if self._index is None or key != self._index_key:
                self._index = index_archive(self.path, parallel=self.parallel)
                self._index_key = key
                self._groups = None
        except ValueError as exc:
            raise Unavailable(self.name, str(exc)) from None
        except OSError as exc:
            raise Unavailable(self.name, f"cannot read {self.path}: {exc.strerror or exc}") from None
        return self._index

    def _threads(self) -> tuple[ArchiveIndex, list[ThreadGroup]]:
        with self._lock:
            index = self.load_index()
            if self._groups is None:
                with _collector_paused():
                    self._groups = index.threads()
            return index, self._groups

    def _check_list(self, list_name: str | None) -> None:
        if list_name is None or self.archive_list is None:
            return
        if _normalize_list(list_name) != _normalize_list(self.archive_list):
            raise BackendFailure(self.name, f"this archive is a snapshot of {self.archive_list}, "
                                            f"not {list_name} (mail_sources.{self.name}.list)")

    def _accepts(self, thread_id: ThreadId) -> None:
        if thread_id.kind not in (self.thread_id_kind, synthetic_kind(self.thread_id_kind)):
            raise BackendFailure(
                self.name,
                f"thread id of kind {thread_id.kind!r} given to backend {self.name!r}, which emits "
                f"{self.thread_id_kind!r} and {synthetic_kind(self.thread_id_kind)!r} ids")

    # -- operations ---------------------------------------------------
    def list_recent_threads(self, list_name: str | None, since: datetime) -> list[ThreadSummary]:
        """Threads with a message dated at or after ``since``, newest activity first.

        Raises:
            Unavailable: the archive cannot be read.
            BackendFailure: ``list_name`` is not the list this archive holds.
        """
        self._check_list(list_name)
        if since.tzinfo is None:
            since = since.replace(tzinfo=timezone.utc)
        since_epoch = since.timestamp()
        index, groups = self._threads()
        date_of = index.comparable_dates().__getitem__
        rows = []
        for position, group in enumerate(groups):
            members = group.members
            latest = date_of(members[0]) if len(members) == 1 else max(map(date_of, members))
            if latest >= since_epoch:
                rows.append((-latest, group.root_id, position, group))
        rows.sort()  # newest first; ties by root ID, then archive order
        summarize = self._summarizer(index, since_epoch)
        with _collector_paused():
            return [summarize(group, -negative) for negative, _, _, group in rows]

    def _summarizer(self, index: ArchiveIndex, since_epoch: float | None = None):
        """A function building one ThreadSummary; the index's columns bound once (it runs per row)."""
        emails = index.sender_emails()
        stamps = index.comparable_dates()
        mids = index.message_ids
        subjects = index.subjects
        senders = index.senders
        row_notes = index.notes
        real_kind, synthetic_kind_ = self.thread_id_kind, self._synthetic_kind
        utc = timezone.utc

        def summarize(group: ThreadGroup, latest: float) -> ThreadSummary:
            members = group.members
            head = members[0] if mids[members[0]] == group.root_id else self._head_member(index, group)
            subject, subject_notes = decode_header_text(subjects[head])
            count = len(members)
            if count == 1:
                email = emails[head]
                participants: tuple[str, ...] = (email,) if email else ()
            elif count == 2:
                first, second = members
                if stamps[second] < stamps[first]:
                    first, second = second, first
                participants = tuple(filter(None, dict.fromkeys((emails[first], emails[second]))))
            else:
                # In date order (undated first), ties in archive order; archives are
                # mostly in order already, so check before sorting.
                order_stamps = list(map(stamps.__getitem__, members))
                order = members if order_stamps == sorted(order_stamps) else \
                    [m for _, m in sorted(zip(order_stamps, members))]
                participants = tuple(filter(None, dict.fromkeys(map(emails.__getitem__, order))))
            notes = [f"subject: {n}" for n in subject_notes] if subject_notes else []
            if count > 1 and len(set(map(mids.__getitem__, members))) != count:
                counts: dict[bytes, int] = {}
                for member in members:
                    counts[mids[member]] = counts.get(mids[member], 0) + 1
                notes += [f"{n} messages share Message-ID {_id_text(mid)}; all are kept"
                          for mid, n in counts.items() if n > 1]
            if row_notes and not row_notes.keys().isdisjoint(members):
                for member in members:
                    for note in row_notes.get(member, ()):
                        if note not in notes:
                            notes.append(note)
            root = _id_text(group.root_id)
            # A thread whose first message is older than `since` is a reply to an older thread.
            continued = since_epoch is not None and count > 1 and min(map(stamps.__getitem__, members)) < since_epoch
            return ThreadSummary(
                thread_id=ThreadId(synthetic_kind_ if group.synthetic else real_kind, root),
                subject=subject,
                root_message_id=root,
                sender=_sender(senders[head]),
                last_activity=datetime.fromtimestamp(latest, tz=utc),
                message_count=count,
                participants=participants,
                notes=tuple(notes),
                continued=continued,
            )

        return summarize

    @staticmethod
    def _head_member(index: ArchiveIndex, group: ThreadGroup) -> int:
        """The root message when present, else the earliest (by date, then archive order)."""
        mids = index.message_ids
        for member in group.members:
            if mids[member] == group.root_id:
                return member
        dates = index.dates
        return min(group.members, key=lambda m: (dates[m] == NO_DATE, dates[m], m))

    def _find_group(self, thread_id: ThreadId) -> tuple[ArchiveIndex, ThreadGroup]:
        self._accepts(thread_id)
        index, groups = self._threads()
        want_synthetic = thread_id.kind == synthetic_kind(self.thread_id_kind)
        for group in groups:
            if group.synthetic == want_synthetic and _id_text(group.root_id) == thread_id.value:
                return index, group
        raise BackendFailure(self.name, f"no thread {thread_id} in {self.path}")

    def read_thread(self, thread_id: ThreadId) -> Thread:
        """Every message of the thread, oldest first, fully decoded.

        Raises:
            Unavailable: the archive cannot be read.
            BackendFailure: a thread ID of another kind, or no such thread.
        """
        index, group = self._find_group(thread_id)
        messages = []
        for member in group.members:
            messages.append((index.dates[member], member, self._read_message(index, member)))
        messages.sort(key=lambda item: (item[0], item[1]))  # oldest first; undated ones before all
        head = self._head_member(index, group)
        subject, _ = decode_header_text(index.subjects[head])
        notes = []
        if not any(index.message_ids[m] == group.root_id for m in group.members):
            notes.append(f"the thread's first message {_id_text(group.root_id)} is not in this archive")
        return Thread(thread_id=thread_id, subject=subject, messages=tuple(m for _, _, m in messages),
                      notes=tuple(notes))

    def _read_raw(self, index: ArchiveIndex, row: int) -> tuple[bytes, int]:
        """Raw message bytes (capped) and the message's full size."""
        cap = self.max_message_bytes or None
        if index.format == "mbox":
            assert self.path is not None
            start, end = index.locations[row], index.ends[row]
            size = end - start
            with open(self.path, "rb") as handle:
                handle.seek(start)
                data = handle.read(min(size, cap + _HEADER_READ) if cap else size)
            if len(data) == size and data.endswith(b"\n\n"):
                data = data[:-1]  # the blank line before the next From_ line is the separator's
            newline = data.find(b"\n")
            data = data[newline + 1 :] if data.startswith(b"From ") and newline >= 0 else data
            return data, size - (newline + 1 if newline >= 0 else 0)
        path = Path(index.locations[row])
        size = path.stat().st_size
        with open(path, "rb") as handle:
            data = handle.read(min(size, cap + _HEADER_READ) if cap else size)
        return data, size

    def _message_ref(self, index: ArchiveIndex, row: int) -> str:
        if index.format == "mbox":
            return f"{self.name}:{index.locations[row]}"
        assert self.path is not None
        return f"{self.name}:{Path(index.locations[row]).relative_to(self.path).as_posix()}"

    def _read_message(self, index: ArchiveIndex, row: int) -> Message:
        ref = self._message_ref(index, row)
        try:
            raw, size = self._read_raw(index, row)
        except OSError as exc:
            mid = _id_text(index.message_ids[row])
            subject, _ = decode_header_text(index.subjects[row])
            return Message(message_id=mid, subject=subject, sender=_sender(index.senders[row]),
                           notes=(f"could not read this message: {exc.strerror or exc}",),
                           synthetic_id=index.synthetic[row], backend_ref=ref)
        cap = self.max_message_bytes
        message = parse_message(raw, backend_ref=ref, max_bytes=cap or None)
        if cap and size > cap:
            note = (f"message is {size:,} bytes, over the size cap of {cap:,} "
                    f"(mail_sources.{self.name}.max_message_bytes); body truncated")
            message = replace(message, notes=tuple(n for n in message.notes if "size cap" not in n) + (note,))
        extra = tuple(n for n in index.notes.get(row, ()) if n not in message.notes)
        if extra:
            message = replace(message, notes=message.notes + extra)
        return message

    def thread_url(self, thread_id: ThreadId) -> str:
        """``file://<absolute archive path>#<url-quoted root Message-ID>`` (no archive read).

        Raises:
            Unavailable: the settings are wrong.
            BackendFailure: a thread ID of another kind.
        """
        self._accepts(thread_id)
        if self._problem:
            raise Unavailable(self.name, self._problem)
        assert self.path is not None
        return f"{self.path.as_uri()}#{quote(thread_id.value, safe='')}"

    # -- beyond the contract -------------------------------------------
    def attachment(self, message_ref: str, index: int) -> bytes:
        """Bytes of attachment ``index`` of the message ``message_ref`` (a Message.backend_ref).

        Raises:
            Unavailable: the archive cannot be read.
            BackendFailure: the reference or the attachment index is unknown.
        """
        archive = self.load_index()
        prefix = f"{self.name}:"
        if not message_ref.startswith(prefix):
            raise BackendFailure(self.name, f"message reference {message_ref!r} is not from this backend")
        wanted = message_ref[len(prefix):]
        row = self._row_of(archive, wanted)
        if row is None:
            raise BackendFailure(self.name, f"no message {message_ref!r} in {self.path}")
        raw, _ = self._read_raw(archive, row)
        try:
            return attachment_bytes(raw, index)
        except AttachmentNotFound as exc:
            raise BackendFailure(self.name, str(exc)) from None

    def _row_of(self, archive: ArchiveIndex, wanted: str) -> int | None:
        if archive.format == "mbox":
            try:
                offset = int(wanted)
            except ValueError:
                return None
            row = bisect_left(archive.locations, offset)
            return row if row < len(archive.locations) and archive.locations[row] == offset else None
        assert self.path is not None
        target = str(self.path / wanted)
        for row, location in enumerate(archive.locations):
            if location == target:
                return row
        return None
