"""Offline archive backend: an mbox file, a Maildir or a folder of ``.eml`` files.

Read-only, always: the archive is opened for reading only, nothing is renamed,
flagged or rewritten, and no index is stored beside it. An mbox file's index is
kept in the private cache folder instead (a base and a delta of appended mail, see
:mod:`backends.mbox_index_store`; ``persist_index: false`` or the user's
``cache_summaries = false`` keep it in memory only).

Capabilities: ``list_recent_threads``, ``read_thread``, ``thread_url``. Every
other op is declined by the base class with ``NotSupported``.

Settings (``mail_sources.<name>`` in project.md)::

    path: archives/security.mbox     # relative to the project folder; required
    list: security@example.org       # optional: the list this archive is a snapshot of
    max_message_bytes: 26214400      # optional size cap for reading one message (0 = none)
    parallel: true                   # optional: scan big mbox files on two cores
    persist_index: true              # optional: keep an mbox file's index in the cache folder

Listing an mbox never builds ``email`` objects. The fast path reads the file in
16 MB chunks (a copy from the page cache; no memory map, so the resident set
stays small), finds each message's header block with one regular expression,
pulls the six fields that threading and the list need with a second one over
all header blocks of the chunk, and keeps the raw bytes: subjects and senders
are decoded only for the threads it returns. Files over 64 MB are split at a
message boundary near the middle and the first half is scanned in a forked
child. The fields come through the same rules as ``mime_headers.header_fields`` /
``mime_dates.parse_date`` so the fast path and a full parse agree (a test checks that
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
from typing import TYPE_CHECKING, Any, Mapping, Sequence
from urllib.parse import quote

from mailtriage.backends.contract import (
    SourceOrigin,
    SourceFeatures,
    MESSAGE_ID_KIND,
    Address,
    AttachmentInfo,
    MailSource,
    Message,
    Op,
    Thread,
    ThreadId,
    ThreadSummary,
)
from mailtriage.backends import mbox_index_store as index_store
from mailtriage.backends.errors import BackendFailure, ThreadNotFound, Unavailable
from mailtriage.core.collector import collector_paused
from mailtriage.core.errors import ConfigError
from mailtriage.core.paths import user_allows_caches
from mailtriage.backends.mime import AttachmentNotFound, _body_charset, attachment_bytes, parse_message
from mailtriage.backends.mime_dates import (
    PLAUSIBLE_AHEAD_SECONDS,
    PLAUSIBLE_SINCE,
    implausible_date,
    parse_date_epoch,
    parse_date_epochs,
)
from mailtriage.backends.mime_header_text import decode_header_text, header_needs_charset, parse_address
from mailtriage.backends.mime_headers import (
    unfold_header_names,
    header_fields,
    normalize_line_ends,
    message_synthetic_id,
    split_header_block,
    synthetic_message_id,
)
from mailtriage.backends.mime_ids import REFERENCE_ID, ignored_references
from mailtriage.backends.thread_reconstruction import Links, ThreadGroup, group_ids, link_records, synthetic_kind
from mailtriage.backends.thread_reconstruction import _Synthetic  # the key shape of synthetic IDs in Links

if TYPE_CHECKING:
    from mailtriage.backends.search import SearchPage, SearchRequest

__all__ = ["MboxSource", "ArchiveIndex", "ArchivedMessage", "index_archive", "sniff_archive"]

DEFAULT_MAX_MESSAGE_BYTES = 25 * 1024 * 1024
_CHUNK = 16 * 1024 * 1024
_PARALLEL_MIN_BYTES = 64 * 1024 * 1024
_CHILD_TIMEOUT_SECONDS = 300
_HEADER_READ = 64 * 1024
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
# A file's header block is read to its end (a mail loop's trace headers pass 1 MiB, and what a
# listing shows may come after them), bounded only by the largest message a read accepts.
_MAX_HEADER_BYTES = DEFAULT_MAX_MESSAGE_BYTES
_SYNTHETIC_READ = 2 * 1024 * 1024
_BLANK_LINE_AFTER = re.compile(rb"\n\n|\r\n\r\n|\r\r")

# One message's header block: its From_ line and every header line after it (a
# field, or a continuation), ending at the first line that is neither: the blank
# line, the next "From " line, a CR line (the blank line of CRLF mail), or a broken
# line (a strict parser ends the headers there too, so nothing after it can become
# a header). A "From " line only starts a message when a header field follows it, or
# when it ends in a clock and a year like a real From_ line; any other "From " line is body text
# of an mboxo archive that did not quote it, and stays in the message before it.
# Each line is matched with the newline *before* it, so a block never swallows the
# newline that starts the next message's "\nFrom " (a message with no blank line).
# Possessive repeats: nothing here backtracks.
_FIELD_LINE = rb"[!-9;-~]++[ \t]*+(?:\n[ \t]++)?:"
_HEADER_BLOCK = re.compile(
    rb"\nFrom [^\n]*+(?:(?=\n" + _FIELD_LINE + rb")|(?:(?<=:\d\d \d\d\d\d)|(?<=:\d\d \d\d\d\d\r))(?=\n|\Z))"
    # The first branch is the common line ("Name:" with no blank before the colon); it
    # is tried first because it makes the loop as cheap as a plain line match.
    rb"(?:\n(?:[!-9;-~]++:|[ \t]|" + _FIELD_LINE + rb")[^\n]*+)*+")
# The fields listing needs, over the header blocks of a chunk joined by "\n": a
# block never holds an empty line, so an empty line separates messages (the
# separator matches with an empty name). Same value rule as mime_headers.header_fields
# (including a name folded away from its colon). The lookahead lets most lines
# (Received, DKIM, continuations) fail on their first byte.
_FIELDS = re.compile(
    rb"\n(?=[\nmridsfMRIDSF])(?:\n|(message-id|references|in-reply-to|date|subject|from)[ \t]*+(?:\n[ \t]++)?:"
    rb"[ \t]*+(.*+(?:\n[ \t].*+)*+))",
    re.IGNORECASE,
)
_FIELD_COLUMN = {b"message-id": 0, b"references": 1, b"in-reply-to": 2, b"date": 3, b"subject": 4, b"from": 5}
# Whitespace spelt out (\s as a set is slower in the scans hot loop; same bytes).
_ID = re.compile(rb"<[^<> \t\n\r\f\v]+>")
_REF_ID = REFERENCE_ID  # a reference must hold an "@" (mime_ids.extract_msgids' rule)
_CONTENT_LENGTH = re.compile(rb"\ncontent-length[ \t]*:[ \t]*(\d{1,12})[ \t\r]*(?=\n|\Z)", re.IGNORECASE)
_MBOXRD_QUOTED = re.compile(rb"^>(>*From )", re.MULTILINE)
_UNDATED_NOTE = "no usable Date header; the archive's delivery time is used"
_BARE_ID = re.compile(rb"[^\s<>,;\"()]+@[^\s<>,;\"()]+")
# asctime in an mbox From_ line: "From sender Tue Jan  2 10:00:00 2024"
_ENVELOPE_DATE = re.compile(rb"From \S*\s+[A-Za-z]{3}\s+([A-Za-z]{3})\s+(\d{1,2})\s+(\d{1,2}:\d{2}(?::\d{2})?)\s+(\d{4})")
_MAILDIR_TIME = re.compile(r"^(\d{9,11})\.")
NO_DATE = float("-inf")  # the date of a message with no usable date: before every other


# ---------------------------------------------------------------------------
# The index: one row per message, in archive order
# ---------------------------------------------------------------------------

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
    # Notes about the whole archive (a BOM before the first From line, CR-only line
    # ends), shown on every thread; rows that are no mail at all (empty or binary
    # files in a folder); "cr" when the mbox uses CR-only line ends.
    archive_notes: list[str] = field(default_factory=list)
    not_mail: set[int] = field(default_factory=set)
    line_ends: str = "lf"
    # Threading links from every message's References / In-Reply-To, worked out
    # while scanning, so those fields need not be kept.
    links: Links = field(default_factory=Links)
    # A persisted index's links are decoded only when needed (see threads()).
    links_loader: Any = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.message_ids)

    def threads(self) -> list[ThreadGroup]:
        if self.links_loader is not None:  # links of a persisted index, decoded now
            loaded = self.links_loader()
            if loaded is None:
                raise ValueError("the persisted index's threading links cannot be read; it is rebuilt")
            self.links, self.links_loader = loaded, None
        return group_ids(self.message_ids, self.synthetic, self.links)

    def sender_emails(self) -> list[str]:
        return self.emails

    def comparable_dates(self) -> list[float]:
        return self.dates

    def extend(self, columns: tuple) -> None:
        locations, mids, synthetic, dates, subjects, senders, emails, notes = columns
        base = len(self.message_ids)
        self.locations.extend(locations)  # a list, or an array of a persisted index
        self.message_ids += mids
        self.synthetic += synthetic
        self.dates.extend(dates)
        self.subjects += subjects
        self.senders += senders
        self.emails += emails
        for row, note in notes:
            row_notes = self.notes.setdefault(base + row, [])
            if note not in row_notes:
                row_notes.append(note)


def _first_id(value: bytes | None) -> bytes | None:
    """Same rule as ``mime_ids.extract_msgid``, on bytes: the first <...>, else a bare a@b."""
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


def _first_ref(value: bytes | None) -> bytes | None:
    """Same rule as ``mime_ids.extract_msgid(reference=True)``: the first <...@...>, else a bare a@b."""
    if not value:
        return None
    match = _REF_ID.search(value)
    if match is not None:
        return match.group()
    match = _BARE_ID.search(value)
    return b"<" + match.group() + b">" if match is not None else None


def _ignored_note(irt: bytes | None, refs: bytes | None) -> str | None:
    """mime's note for reference values without "@" (the same text, so notes dedupe)."""
    ignored = ignored_references(irt) + ignored_references(refs)
    if not ignored:
        return None
    return f"reference values that are not Message-IDs (no @) are ignored: {', '.join(dict.fromkeys(ignored))}"


def mbox_unquote(message: bytes) -> bytes:
    """One message of an mbox as it was before it was stored: ``>From `` quoting undone.

    mboxrd quotes every ``>*From `` body line with one more ``>``; mboxo quotes
    ``From `` lines only. Removing one ``>`` from ``>+From `` lines is right for both
    at the common depth (``>From `` -> ``From ``). The body is touched, and the first
    line: a message stored with its own envelope line has it quoted too, and unquoted
    before the header split (a ``>From `` line is no header field: it would end the
    header block at once, losing sender and subject). A leading ``From `` line is then
    skipped as an envelope line by every header reader.
    """
    if b">From " not in message:  # also the test for ">>From "
        return message
    if message.startswith(b">") and _MBOXRD_QUOTED.match(message) is not None:
        message = message[1:]
    _, offset = split_header_block(message)
    return message[:offset] + _MBOXRD_QUOTED.sub(rb"\1", message[offset:])


def synthetic_id_of(raw: bytes) -> bytes:
    """The synthetic Message-ID ``mime.parse_message`` gives these message bytes (the one
    rule of every backend: ``mime_headers.message_synthetic_id``)."""
    return message_synthetic_id(raw).encode("ascii")


def _row_from_fields(fields: Mapping[bytes, bytes], header_block: bytes,
                     fallback_epoch: float | None, notes: list[str], raw: bytes | None = None) -> tuple:
    """(mid, synthetic, refs, irt, date, subject, sender) from header fields (the careful path).

    ``raw`` is the whole message (for a synthetic ID, which hashes the body too).
    """
    mid = _first_id(fields.get(b"message-id"))
    synthetic = mid is None
    if synthetic:
        mid = synthetic_id_of(raw if raw is not None else header_block)
    refs_raw = fields.get(b"references")
    refs = tuple(_REF_ID.findall(refs_raw)) if refs_raw else ()
    irt = _first_ref(fields.get(b"in-reply-to"))
    ignored = _ignored_note(fields.get(b"in-reply-to"), refs_raw)
    if ignored:
        notes.append(ignored)
    date = parse_date_epoch(fields.get(b"date"))
    if date is None:
        date = fallback_epoch
        if fallback_epoch is not None:
            notes.append(_UNDATED_NOTE)
    return mid, synthetic, refs, irt, date, fields.get(b"subject"), fields.get(b"from")


# ---------------------------------------------------------------------------
# mbox: the fast scan
# ---------------------------------------------------------------------------

@dataclass
class ScanState:
    """What the scan carries from one chunk to the next.

    ``content_length``: the archive is mboxcl/mboxcl2 (its first message has a
    Content-Length header), so each message's Content-Length says where it ends and
    "From " lines inside that length are body text. ``skip_until``: the file offset
    before which no new message starts (the end of the last such body).
    ``data_end``: how much of the chunk buffer holds bytes of this read (past it are
    stale bytes of an earlier, longer read).
    """

    content_length: bool = False
    skip_until: int = 0
    fd: int = -1  # the open archive, to read a message that runs past the buffer
    end: int = 0
    cr_only: bool = False
    data_end: int = -1

    def tail_at(self, buf: bytearray, index: int, base: int) -> bytes:
        """The 7 bytes of the archive that ``buf[index:index + 7]`` stands for (fewer at its end).

        Read from the buffer when it holds them, else from the file, so a decision
        about them does not depend on where a chunk happens to end.
        """
        data_end = len(buf) if self.data_end < 0 else self.data_end
        if index + 7 <= data_end or self.fd < 0:
            return bytes(buf[index:min(index + 7, data_end)])
        offset = base + index - 1  # buf[0] is the newline before file offset base
        data = os.pread(self.fd, max(0, min(7, self.end - offset)), offset)
        return data.replace(b"\r", b"\n") if self.cr_only else data

    def header_block(self, offset: int) -> bytes | None:
        """The whole header block of the message whose From_ line starts at ``offset``,
        as ``_HEADER_BLOCK`` matches it with the newline before it (up to 16 MB, the
        default chunk, so a small chunk reads what the default one does); None when
        there is none there."""
        size = _HEADER_READ
        while True:
            want = max(0, min(size, self.end - offset))
            data = b"\n" + os.pread(self.fd, want, offset)
            if self.cr_only:
                data = data.replace(b"\r", b"\n")
            block = _HEADER_BLOCK.match(data)
            if block is None:
                return None
            if block.end() < len(data) or want < size or size >= _CHUNK:
                return block.group()
            size = min(size * 4, _CHUNK)

    def message_head(self, offset: int) -> bytes | None:
        """Up to 1 MB (plus headers) of the message whose From_ line starts at ``offset``,
        cut where the next message starts: enough for its synthetic ID."""
        if self.fd < 0:
            return None
        data = os.pread(self.fd, min(_SYNTHETIC_READ, max(0, self.end - offset)), offset)
        if self.cr_only:
            data = data.replace(b"\r", b"\n")
        # In mboxcl2, From_ lines inside a trusted Content-Length are body text.
        begin = max(1, self.skip_until - offset) if self.content_length else 1
        following = _HEADER_BLOCK.search(b"\n" + data, begin)
        if following is not None:
            data = data[: following.start()]  # the "\n" before the next From_ line, as _message_bytes keeps it
            data = drop_separator_line(data)
        newline = data.find(b"\n")
        return data[newline + 1:] if newline >= 0 else b""


def _apply_content_length(buf: bytearray, starts: list, blocks: list, base: int, state: ScanState,
                          notes: list, first_row: int) -> tuple[list, list]:
    """Drop the "messages" that start inside the Content-Length of the one before.

    ``starts`` and ``blocks``: each header block's buffer index and bytes; returns
    those of the messages kept.
    """
    kept_starts: list[int] = []
    kept = []
    for at, block in zip(starts, blocks):
        start = base + at
        if start < state.skip_until:
            continue
        length = _CONTENT_LENGTH.search(block)
        if length is not None:
            end = at + len(block)
            after = state.tail_at(buf, end, base)
            body = end + 2 if after.startswith(b"\n\n") else end + 3 if after.startswith(b"\n\r\n") else None
            if body is not None:
                stop = body + int(length.group(1))
                # Trust the length only where it ends at a message boundary: a From_ line
                # or the end of the file (blank lines allowed). The bytes there are read
                # from the file when this chunk does not hold them, so every chunk size
                # decides the same way.
                tail = state.tail_at(buf, stop, base)
                if tail.startswith(b"\nFrom ") or tail.startswith(b"\n\nFrom ") \
                        or len(tail) < 7 and base + stop - 1 + len(tail) >= state.end and tail.strip(b"\r\n") == b"":
                    state.skip_until = base + stop
                else:
                    notes.append((first_row + len(kept), "the Content-Length header does not match the "
                                  "message; the message is cut at the next From line instead"))
        kept_starts.append(at)
        kept.append(block)
    return kept_starts, kept


def _index_header_blocks(buf: bytearray, stop: int, base: int, out: tuple, links: Links,
                         state: ScanState | None = None, open_end: bool = False) -> None:
    """Index every message whose header block starts in ``buf[:stop]``.

    ``buf[0]`` is a newline standing before file offset ``base``; so a From_ line
    found at buffer index ``i + 1`` starts at file offset ``base + i``. This is the
    hot loop of listing: the common case runs in C-level ``map`` calls and list
    comprehensions; the rare rows (no Message-ID, a bare ID, CR line ends, no usable
    date, references that are no Message-IDs) are found with C-level checks and
    fixed one by one after.
    """
    locations, mids, synthetic, dates, subjects, senders, emails, notes = out
    matches = list(_HEADER_BLOCK.finditer(buf, 0, stop))
    first_row = len(mids)
    starts = [m.start() for m in matches]
    blocks = [m.group() for m in matches]
    reread = False
    if open_end and state is not None and state.fd >= 0 and stop == state.data_end and matches:
        # A message bigger than this buffer (rare: the chunk is 16 MB): where its header
        # block ends may depend on lines past the buffer's end (a line cut in its name
        # ends the block early), so read the block whole from the file, and its fields
        # do not depend on where the chunk ends.
        whole = state.header_block(base + starts[-1])
        if whole is not None:
            blocks[-1], reread = whole, True
    if state is not None and state.content_length:
        starts, blocks = _apply_content_length(buf, starts, blocks, base, state, notes, first_row)
    count = len(blocks)
    if not count:
        return
    locations += [base + at for at in starts]
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
    # the first occurrence wins, as in mime_headers.header_fields.
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
    row_irts = [m and m.group() for m in map(_REF_ID.search, col_irt)]
    row_refs = list(map(_REF_ID.findall, col_refs))
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
    # References holding tokens without "@" (git-send-email's "<yes>"): noted.
    if b"".join(col_refs).count(b"<") != sum(map(len, row_refs)):
        for i, (raw, found) in enumerate(zip(col_refs, row_refs)):
            if raw.count(b"<") != len(found):
                note = _ignored_note(col_irt[i], raw)
                if note:
                    notes.append((first_row + i, note))
    careful: set[int] = set()
    has_cr = buf.find(b"\r", 0, stop) != -1
    # Message bounds, only for rows read whole: CR in the chunk, or no Message-ID at all.
    needs_raw = has_cr or any(row_mids[i] is None and _first_id(col_mid[i]) is None for i in fix)
    if reread and b"\r" in blocks[-1]:
        has_cr = needs_raw = True
    starts = starts + [stop] if needs_raw else []
    if has_cr:
        careful = {i for i in range(count) if buf.find(b"\r", starts[i], starts[i + 1]) != -1}
        if reread and b"\r" in blocks[-1]:
            careful.add(count - 1)
        fix |= careful
    for i in sorted(fix):
        block = blocks[i]
        from_line_end = block.find(b"\n", 1)
        if from_line_end < 0:
            from_line_end = len(block)
        envelope = _envelope_epoch(block[1:from_line_end])
        try:
            if i in careful or row_mids[i] is None and _first_id(col_mid[i]) is None:
                # CR in this message (CRLF or CR-only mail), or no Message-ID (the synthetic
                # one hashes the body): read the message exactly as a full parse would.
                raw = None
                if open_end and i == count - 1 and state is not None:
                    raw = state.message_head(base + starts[i])  # the message runs past this buffer
                if raw is None:
                    raw = _message_bytes(buf, starts[i] + 1 + from_line_end, starts[i + 1], stop)
                raw = mbox_unquote(raw)
                header, _ = split_header_block(unfold_header_names(normalize_line_ends(raw)[0])[0])
                row_notes: list[str] = []
                (row_mids[i], row_synthetic[i], row_refs[i], row_irts[i], row_dates[i],
                 col_subject[i], col_from[i]) = _row_from_fields(header_fields(header), header, envelope,
                                                                 row_notes, raw)
                notes.extend((first_row + i, n) for n in row_notes)
                continue
            if row_mids[i] is None:
                row_mids[i] = _first_id(col_mid[i])
            if row_irts[i] is None and col_irt[i]:
                row_irts[i] = _first_ref(col_irt[i])
                note = _ignored_note(col_irt[i], col_refs[i])
                if note:
                    notes.append((first_row + i, note))
            if row_dates[i] is None:
                row_dates[i] = envelope
                if envelope is not None:
                    notes.append((first_row + i, _UNDATED_NOTE))
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
    return drop_separator_line(bytes(buf[start : end + 1 if end < data_end else end]))


def drop_separator_line(raw: bytes) -> bytes:
    """``raw`` without its last line when that line is blank: the blank line before the next
    From_ line (or at the end of the file) is the separator's, not the body's, whether it ends
    in LF or in CRLF (an mbox written with CRLF line ends)."""
    if raw.endswith(b"\n\r\n"):
        return raw[:-2]
    return raw[:-1] if raw.endswith(b"\n\n") else raw


def _new_columns() -> tuple:
    return ([], [], [], [], [], [], [], [])


def _next_boundary(fd: int, offset: int, end: int, buf: bytearray, marker: bytes = b"\nFrom ") -> int:
    """File offset of the next From_ line at or after ``offset`` (``end`` when none)."""
    view = memoryview(buf)
    position = max(offset - 1, 0)
    while position < end:
        got = os.preadv(fd, [view[: min(len(buf), end - position)]], position)
        if got <= 0:
            return end
        found = buf.find(marker, 0, got)
        if found >= 0:
            return min(position + found + 1, end)
        if position + got >= end:
            return end
        position += got - 5
    return end


def _last_message_start(buf: bytearray, limit: int, newline: bytes = b"\n") -> int:
    """Index of the last "\\nFrom " in ``buf[1:limit]`` that starts a message (-1 when none).

    A "From " line that is body text (no header block after it) is not a place to
    cut: the message it sits in goes on past it.
    """
    undecided = -1
    last = buf.rfind(b"\nFrom ", 1, limit)
    while last > 0 and _HEADER_BLOCK.match(buf, last, limit) is None:
        if undecided < 0 and buf.count(b"\n", last + 1, limit) < 3:
            undecided = last  # its lines run past the buffer: a cut only if nothing better
        last = buf.rfind(b"\nFrom ", 1, last)
    return last if last > 0 else undecided


def scan_mbox_range(fd: int, start: int, end: int, chunk: int = _CHUNK,
                    state: ScanState | None = None, cr_only: bool = False) -> tuple[tuple, Links]:
    """Index the messages whose From_ line starts in ``[start, end)`` of an open mbox.

    ``start`` must be 0 or the offset of a From_ line. Returns marshal-able columns
    and the threading links of those messages. ``cr_only``: the file's line ends are
    CR alone; each chunk is read with CR as the line separator (CR and LF are one
    byte each, so offsets stay the file's own).
    """
    out = _new_columns()
    links = Links()
    if state is None:
        state = ScanState()
    state.fd, state.end, state.cr_only = fd, end, cr_only
    buf = bytearray(chunk + 1)
    view = memoryview(buf)
    position = start
    while position < end:
        want = min(chunk, end - position)
        buf[0] = 0x0A
        got = os.preadv(fd, [view[1 : 1 + want]], position)
        if got <= 0:
            break
        if cr_only:
            buf[1 : 1 + got] = bytes(buf[1 : 1 + got]).replace(b"\r", b"\n")
        limit = got + 1
        state.data_end = limit
        if position + got < end:
            last = _last_message_start(buf, limit)
            if last <= 0:
                # One message bigger than the buffer: index its headers, skip its body.
                _index_header_blocks(buf, limit, position, out, links, state, open_end=True)
                position = _next_boundary(fd, position + got - 5, end, buf, b"\rFrom " if cr_only else b"\nFrom ")
                continue
            _index_header_blocks(buf, last, position, out, links, state,
                                 open_end=_HEADER_BLOCK.match(buf, last, limit) is None)
            position += last
        else:
            _index_header_blocks(buf, limit, position, out, links, state)
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
    position = size * 47 // 100
    for _ in range(1000):
        boundary = _next_boundary(fd, position, size, buf)
        if not 0 < boundary < size:
            return None
        # Only a real message start: a "From " line of body text belongs to the message before it.
        head = b"\n" + os.pread(fd, _HEADER_READ, boundary)
        if _HEADER_BLOCK.match(head) is not None:
            return boundary
        position = boundary + 1
    return None


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
        head = os.pread(fd, _HEADER_READ, 0)
        start, prefix_note = _mbox_prefix(head)
        if prefix_note:
            index.archive_notes.append(prefix_note)
        cr_only = b"\n" not in head and b"\r" in head
        if cr_only:
            index.line_ends = "cr"
            head = head.replace(b"\r", b"\n")
            index.archive_notes.append("the archive uses CR-only line ends (old Mac); read with CR as the line end")
        state = ScanState(content_length=_CONTENT_LENGTH.search(
            b"\n" + split_header_block(head[start:])[0]) is not None)
        split = None
        # mboxcl2 and CR-only archives are read in one pass: a cut in the middle must
        # know where the message before it ends.
        if parallel and size >= parallel_min_bytes and _may_fork() and not cr_only and not state.content_length:
            split = _split_point(fd, size)
        pid = None
        if split is not None:
            try:
                pid, read_end = _scan_in_child(fd, start, split, chunk)
            except OSError:
                pid = None
        if pid is None:
            columns, index.links = scan_mbox_range(fd, start, size, chunk, state, cr_only)
            index.extend(columns)
        else:
            # Scan and link the second half here while the child does the first.
            second_half, second_links = scan_mbox_range(fd, split, size, chunk)
            first = _collect_child(pid, read_end)
            if first is None:  # the child failed: do its part here, lose nothing
                first = scan_mbox_range(fd, start, split, chunk)
            index.extend(first[0])
            index.extend(second_half)
            index.links = first[1].then(second_links)
        index.ends = index.locations[1:] + [size]
        if state.content_length:
            index.archive_notes.append("mboxcl2 archive: each message's Content-Length says where it ends")
    finally:
        os.close(fd)
    return index


_PREFIX = re.compile(rb"(\xef\xbb\xbf)?([\r\n \t]*)")


def _mbox_prefix(head: bytes) -> tuple[int, str | None]:
    """Where the first "From " line starts, past a UTF-8 BOM and blank lines, and a note about them."""
    match = _PREFIX.match(head)
    start = match.end()
    if start == 0 or not head.startswith(b"From ", start):
        return 0, None
    what = []
    if match.group(1):
        what.append("a UTF-8 byte order mark")
    blank = match.group(2)
    if blank:
        lines = max(blank.count(b"\n"), blank.count(b"\r"))
        what.append(f"{lines} blank line{'s' if lines != 1 else ''}" if lines else "blanks")
    return start, f"the archive has {' and '.join(what)} before the first From line; skipped"


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
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from exc
    start, _ = _mbox_prefix(head)
    if start:  # a BOM or blank lines before the first From line: read it, with a note
        return "mbox"
    raise ValueError(f"{path} is not an mbox file (it does not start with a 'From ' line)")


_PERSISTED_FIELDS = ("format", "locations", "message_ids", "synthetic", "dates", "subjects", "senders", "emails",
                     "notes", "ends", "archive_notes", "line_ends")


def _index_fields(index: ArchiveIndex) -> dict:
    """The index's columns as plain data for the persisted index (no bodies: offsets and headers)."""
    fields = {name: getattr(index, name) for name in _PERSISTED_FIELDS}
    fields["not_mail"] = sorted(index.not_mail)
    return fields


def _index_from_fields(fields: dict, links: Links) -> ArchiveIndex:
    values = {name: fields[name] for name in _PERSISTED_FIELDS}
    return ArchiveIndex(**values, not_mail=set(fields["not_mail"]), links=links)


def _extend_groups(groups: list[ThreadGroup] | index_store.PackedGroups, old_links: Links, new_links: Links,
                   new_ids: Sequence[bytes], new_synthetic: Sequence[bool], base: int,
                   dates: Sequence[float] | None = None) -> list[ThreadGroup] | index_store.PackedGroups | None:
    """``groups`` (of the first ``base`` messages) with the appended messages added, exactly
    as :func:`group_ids` over all of them would group them; or None when the appended mail
    re-links mail already grouped (a new parent for a known ID, a known ID again, a loop):
    the caller then groups everything again (``groups`` is then left as it was). ``groups``
    is extended in place: a list of groups, or the overlay of persisted ones (which needs
    ``dates``, every row's, for each group's latest date)."""
    old_own, old_guessed = old_links.own, old_links.guessed
    new_own, new_guessed = new_links.own, new_links.guessed

    # A parent in old_links.then(new_links), without making that merge (own links override
    # guesses; the tail's own links override the older ones; the first guess wins).
    def parent(key: Any) -> Any:
        up = new_own.get(key)
        if up is None:
            up = old_own.get(key)
            if up is None:
                up = old_guessed.get(key)
                if up is None:
                    up = new_guessed.get(key)
        return up

    def old_parent(key: Any) -> Any:
        up = old_own.get(key)
        return old_guessed.get(key) if up is None else up

    packed = isinstance(groups, index_store.PackedGroups)
    index_of = groups.key_index(len(new_own) + len(new_guessed) + len(new_ids)) if packed else \
        {(g.root_id, g.synthetic): i for i, g in enumerate(groups)}
    # IDs whose parent the tail sets or changes. An ID the older mail knows has a parent (own
    # or guessed) or is the root of a group: every older message and every ID it references
    # is one or the other.
    for key in dict.fromkeys([*new_own, *new_guessed]):
        if old_parent(key) != parent(key):
            synthetic_key = type(key) is _Synthetic
            if key in old_own or key in old_guessed or (key[0] if synthetic_key else key, synthetic_key) in index_of:
                return None
    placed = []
    for offset, (mid, synthetic) in enumerate(zip(new_ids, new_synthetic)):
        node = _Synthetic((mid,)) if synthetic else mid
        seen = {node}
        while True:
            up = parent(node)
            if up is None:
                break
            if up in seen:
                return None  # a reference loop: group_ids cuts it, and so must a full pass
            seen.add(up)
            node = up
        root_synthetic = type(node) is _Synthetic
        placed.append(((node[0] if root_synthetic else node, root_synthetic), base + offset))
    for key, member in placed:
        at = index_of.get(key)
        if at is None:
            at = index_of[key] = groups.add_group(*key) if packed else len(groups)
            if not packed:
                groups.append(ThreadGroup(key[0], key[1]))
        if packed:
            assert dates is not None
            groups.place(at, member, dates[member])
        else:
            groups[at].members.append(member)
    return groups


def _appended_since(fd: int, old: index_store.ArchiveStamp, now: index_store.ArchiveStamp, fields: dict) -> bool:
    """Whether the archive is the indexed one plus messages appended after it: same file,
    longer, the old tail unchanged, and a From_ line right where the old file ended."""
    if now.inode != old.inode or now.size <= old.size or old.size == 0:
        return False
    if fields.get("line_ends") != "lf" or any("mboxcl2" in n for n in fields.get("archive_notes", ())):
        return False  # Content-Length and CR-only archives are read in one pass only
    if index_store.tail_digest(fd, old.size) != old.tail:
        return False
    head = os.pread(fd, _HEADER_READ, old.size - 1)
    return head[:6] == b"\nFrom " and _HEADER_BLOCK.match(head) is not None


def index_archive(path: Path, *, parallel: bool = True) -> ArchiveIndex:
    """Sniff ``path`` and index it. Raises ValueError when it is not an archive."""
    fmt = sniff_archive(path)
    with collector_paused():
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


def _cut_mark(info: AttachmentInfo, cap: int, size: int, name: str) -> AttachmentInfo:
    """``info`` marked "truncated at N bytes" (the form workflows/attachments.py reads): its
    message was read only up to the size cap, so its bytes may end early and are not saved."""
    mark = (f"truncated at {cap:,} bytes: the message is {size:,} bytes, over "
            f"mail_sources.{name}.max_message_bytes (raise it to save this part whole)")
    return replace(info, note=f"{mark}; {info.note}" if info.note else mark)


def _sender(raw: bytes | None, charset: str | None = None) -> Address:
    if raw is None:
        return Address("", "")
    if charset is not None:
        return parse_address(raw, charset)
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


@dataclass(frozen=True)
class ArchivedMessage:
    """One message of an archive as :meth:`MboxSource.received_since` found it."""

    row: int
    received: datetime | None
    index: ArchiveIndex = field(repr=False, compare=False)


def _user_allows_caches(source: MailSource) -> bool:
    """False when the user settings say ``[settings] cache_summaries = false`` (no mail
    metadata on disk). A user settings file that cannot be read allows nothing."""
    # The user settings the application opened, when it handed them over; else the user's own file.
    user = source.origin.user_settings
    # Loaded here, not at import: core.settings brings yaml in, which listing an archive does not need.
    from mailtriage.core.settings import load_settings  # noqa: PLC0415

    try:
        user = user or load_settings()
    except ConfigError:
        return False
    return user.readable and user_allows_caches(user.data)


class MboxSource(MailSource):
    """A read-only archive snapshot: an mbox file, a Maildir or a folder of ``.eml`` files.

    Raises (every operation):
        Unavailable: the path is missing, unreadable or not an archive, or the
            settings are wrong (the reason names the file and key).
        BackendFailure: a ``list`` argument names another list than the one this
            archive is a snapshot of; a thread ID of another kind; an unknown thread.
        NotSupported: list_drafts, list_sent_since, create_draft.
    """

    signs_in_without_tokens = True  # a local file: no sign-in

    kind = "mbox"
    features = SourceFeatures(local_archive=True, attachment_bytes=True, server_search=True)
    thread_id_kind = MESSAGE_ID_KIND  # root Message-IDs; old "mbox:" tags read back as this shape
    resolves_message_ids = True
    capabilities = frozenset({Op.LIST_RECENT_THREADS, Op.READ_THREAD, Op.THREAD_URL})

    def __init__(self, name: str, settings: Mapping[str, object] | None = None, *,
                 origin: SourceOrigin | None = None) -> None:
        super().__init__(name, settings, origin=origin)
        self._problem: str | None = None
        self._config_file = self.origin.project_file
        raw_path = self.settings.get("path")
        self.path: Path | None = None
        if raw_path is None or not str(raw_path).strip():
            self._problem = self._setting_problem("path", "is not set",
                                                  "a path to an mbox file, a Maildir or a folder of .eml files")
        else:
            path = Path(str(raw_path)).expanduser()
            self.path = self.origin.resolve(path).resolve()
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
        persist = self.settings.get("persist_index", True)
        if not isinstance(persist, bool):
            self._problem = self._setting_problem("persist_index", f"must be true or false, not {persist!r}",
                                                  "true, false")
            persist = True
        self._persist_setting = persist
        self._persist: bool | None = None
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
            raise Unavailable(self.name, str(exc)) from exc

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
                self._index, self._groups = self._open_index()
                self._index_key = key
        except ValueError as exc:
            raise Unavailable(self.name, str(exc)) from exc
        except OSError as exc:
            raise Unavailable(self.name, f"cannot read {self.path}: {exc.strerror or exc}") from exc
        return self._index

    @property
    def persist_index(self) -> bool:
        """Whether the index is persisted in the cache folder (``persist_index`` and the
        user's ``[settings] cache_summaries``, both true by default)."""
        if self._persist is None:
            self._persist = self._persist_setting and _user_allows_caches(self)
        return self._persist

    def _open_index(self) -> tuple[ArchiveIndex, list[ThreadGroup] | None]:
        """The index (and, when known, its thread groups): from the persisted index when it
        still describes the archive, extended by the appended tail when the archive grew,
        else scanned (and persisted). See :mod:`backends.mbox_index_store`."""
        assert self.path is not None
        if not self.persist_index or sniff_archive(self.path) != "mbox":
            return index_archive(self.path, parallel=self.parallel), None
        path = self.path
        fd = os.open(path, os.O_RDONLY)
        try:
            stamp = index_store.stamp_of(fd)
            stored = index_store.load(path)
            if stored is not None:
                old = stored.stamp
                if old == stamp:
                    index = _index_from_fields(stored.fields, Links())
                    index.links_loader = stored.links  # decoded only if the groups must be redone
                    return index, stored.groups
                if _appended_since(fd, old, stamp, stored.fields):
                    extended = self._extend_stored(fd, stored, stamp)
                    if extended is not None:
                        return extended
                else:
                    index_store.note(f"{path.name} changed on disk (not by an append); its index is rebuilt")
        finally:
            os.close(fd)
        index = index_archive(path, parallel=self.parallel)
        with collector_paused():
            groups = index.threads()
        fd = os.open(path, os.O_RDONLY)
        try:
            after = index_store.stamp_of(fd)
        finally:
            os.close(fd)
        # Saved only when the file did not move under the scan (else the next open rebuilds).
        scanned = index.ends[-1] if index.ends else after.size
        if scanned == after.size and (after.inode, after.size) == (stamp.inode, stamp.size):
            index_store.save(path, after, _index_fields(index), index.links, groups)
        return index, groups

    def _extend_stored(self, fd: int, stored: index_store.Stored,
                       stamp: index_store.ArchiveStamp) -> tuple[ArchiveIndex, Sequence[ThreadGroup]] | None:
        """The persisted index extended by the messages appended since it was made (only the
        new tail is scanned), persisted as a delta (or, when the new mail re-links older mail
        or the delta grew past its share, as a whole new index); None when the persisted
        links cannot be read (the caller rescans)."""
        assert self.path is not None
        path, old = self.path, stored.stamp
        old_links = stored.links()
        earlier = stored.delta_links()
        if old_links is None or earlier is None:
            return None
        index = _index_from_fields(stored.fields, old_links)
        groups: Any = stored.groups
        with collector_paused():
            # A buffer the size of the tail: a zeroed 16 MB one costs 15-35 ms in a fresh process.
            columns, links = scan_mbox_range(fd, old.size, stamp.size,
                                             min(_CHUNK, max(_HEADER_READ, stamp.size - old.size)))
            before = len(index)
            index.extend(columns)
            ends = index.ends
            if columns[0]:
                if before:
                    ends[before - 1] = columns[0][0]
                ends.extend(columns[0][1:])
            ends.append(stamp.size)
            grown = _extend_groups(groups, old_links, links, index.message_ids[before:], index.synthetic[before:],
                                   before, index.dates)
            index.links = index_store.chain_links(old_links, links)
            how = "threads extended"
            if grown is None:
                grown, how = index.threads(), "threads regrouped (the new mail links older mail)"
        if grown is groups and not index_store.wants_compaction(stored, len(index)):
            written = index_store.save_delta(path, stored, stamp, _index_fields(index),
                                             index_store.chain_links(earlier, links), groups)
            saved = f"saved as a delta of {written:,} bytes" if written is not None else "not saved"
        else:
            index_store.save(path, stamp, _index_fields(index), index.links, grown)
            saved = "the whole index saved again" + ("" if grown is not groups else " (delta compacted)")
        index_store.note(f"{path.name}: {len(index) - before} appended message(s) indexed "
                         f"(bytes {old.size}-{stamp.size}; {how}); the rest from the persisted index; {saved}")
        return index, grown

    def _threads(self) -> tuple[ArchiveIndex, list[ThreadGroup]]:
        with self._lock:
            index = self.load_index()
            if self._groups is None:
                with collector_paused():
                    self._groups = index.threads()
            return index, self._groups

    def _check_list(self, list_name: str | None) -> None:
        if list_name is None or self.archive_list is None:
            return
        if _normalize_list(list_name) != _normalize_list(self.archive_list):
            raise BackendFailure(self.name, f"this archive is a snapshot of {self.archive_list}, "
                                            f"not {list_name} (mail_sources.{self.name}.list)")

    def _accepts(self, thread_id: ThreadId) -> ThreadId:
        """This archive's reference for ``thread_id``: its own shape, or another backend's
        reference by its root Message-ID. BackendFailure for anything else."""
        if thread_id.kind not in (self.thread_id_kind, synthetic_kind(self.thread_id_kind)) and not thread_id.root:
            raise BackendFailure(
                self.name,
                f"thread id of kind {thread_id.kind!r} given to backend {self.name!r}, which emits "
                f"{self.thread_id_kind!r} and {synthetic_kind(self.thread_id_kind)!r} ids")
        return self.own_thread_id(thread_id)

    def thread_for_message_id(self, message_id: str) -> ThreadId | None:
        """The thread holding the message ``message_id`` (its root or any reply)."""
        index, groups = self._threads()
        mids = index.message_ids
        for group in groups:
            if group.synthetic:
                continue
            if _id_text(group.root_id) == message_id or any(_id_text(mids[m]) == message_id for m in group.members):
                return ThreadId(self.thread_id_kind, _id_text(group.root_id))
        return None

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
        rows = []
        if isinstance(groups, index_store.PackedGroups):
            # A persisted index knows each thread's latest date: only the window's groups are made.
            roots = groups.roots
            for position, latest in enumerate(groups.latest):
                if latest >= since_epoch:
                    rows.append((-latest, roots[position], position, groups[position]))
        else:
            date_of = index.comparable_dates().__getitem__
            for position, group in enumerate(groups):
                members = group.members
                latest = date_of(members[0]) if len(members) == 1 else max(map(date_of, members))
                if latest >= since_epoch:
                    rows.append((-latest, group.root_id, position, group))
        rows.sort()  # newest first; ties by root ID, then archive order
        summarize = self._summarizer(index, since_epoch)
        with collector_paused():
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

        archive_notes = index.archive_notes
        # Many rows' values in one call (a persisted index's columns make a value per read).
        emails_of = emails.values_at if isinstance(emails, index_store.BlobColumn) else \
            (lambda rows: list(map(emails.__getitem__, rows)))
        mids_of = mids.values_at if isinstance(mids, index_store.BlobColumn) else \
            (lambda rows: list(map(mids.__getitem__, rows)))
        now = datetime.now(utc).timestamp()
        plausible_since, plausible_until = PLAUSIBLE_SINCE, now + PLAUSIBLE_AHEAD_SECONDS

        def summarize(group: ThreadGroup, latest: float) -> ThreadSummary:
            members = group.members
            head = members[0] if mids[members[0]] == group.root_id else self._head_member(index, group)
            raw_subject, raw_sender = subjects[head], senders[head]
            charset = None
            # A raw 8-bit header (or a UTF-7 subject) reads in the body's charset first. Only the
            # subject is checked for UTF-7: plus-addressing (a+tag-x@) in senders is common.
            if header_needs_charset(raw_subject) or not (raw_sender or b"").isascii():
                charset = self._row_charset(index, head)
            subject, subject_notes = decode_header_text(raw_subject, charset)
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
                participants = tuple(filter(None, dict.fromkeys(emails_of(order))))
            notes = [f"subject: {n}" for n in subject_notes] if subject_notes else []
            if count > 1 and len(set(mids_of(members))) != count:
                counts: dict[bytes, int] = {}
                for member in members:
                    counts[mids[member]] = counts.get(mids[member], 0) + 1
                notes += [f"{n} messages share Message-ID {_id_text(mid)}; all are kept"
                          for mid, n in counts.items() if n > 1]
            marker = ""
            if (latest < plausible_since or latest > plausible_until) and implausible_date(latest, now):
                odd = implausible_date(latest, now)
                marker = "implausible"
                notes.append(f"the latest date ({datetime.fromtimestamp(latest, tz=utc).isoformat()}) "
                             f"is {odd}; it may be wrong")
            if row_notes and not row_notes.keys().isdisjoint(members):
                for member in members:
                    member_notes = row_notes.get(member, ())
                    if not marker and stamps[member] == latest and _UNDATED_NOTE in member_notes:
                        marker = "undated"
                    for note in member_notes:
                        if note not in notes:
                            notes.append(note)
            if archive_notes:
                notes += [n for n in archive_notes if n not in notes]
            root = _id_text(group.root_id)
            # A thread whose first message is older than `since` is a reply to an older thread.
            continued = since_epoch is not None and count > 1 and min(map(stamps.__getitem__, members)) < since_epoch
            return ThreadSummary(
                thread_id=ThreadId(synthetic_kind_ if group.synthetic else real_kind, root),
                subject=subject,
                root_message_id=root,
                sender=_sender(raw_sender, charset),
                last_activity=datetime.fromtimestamp(latest, tz=utc),
                message_count=count,
                participants=participants,
                notes=tuple(notes),
                date_marker=marker,
                continued=continued,
            )

        return summarize

    def _row_charset(self, index: ArchiveIndex, row: int) -> str | None:
        """The charset the message's Content-Type declares (read from the archive; None on failure)."""
        try:
            if index.format == "mbox":
                assert self.path is not None
                with open(self.path, "rb") as handle:
                    handle.seek(index.locations[row])
                    head = handle.read(min(_HEADER_READ, index.ends[row] - index.locations[row]))
                if index.line_ends == "cr":
                    head = head.replace(b"\r", b"\n")
                head = head.split(b"\n", 1)[1] if head.startswith(b"From ") and b"\n" in head else head
            else:
                head = _read_header(Path(index.locations[row]))
        except OSError:
            return None
        header, _ = split_header_block(normalize_line_ends(head)[0])
        return _body_charset(header_fields(header, {b"content-type"}).get(b"content-type"))

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
        thread_id = self._accepts(thread_id)
        index, groups = self._threads()
        want_synthetic = thread_id.kind == synthetic_kind(self.thread_id_kind)
        for group in groups:
            if group.synthetic == want_synthetic and _id_text(group.root_id) == thread_id.value:
                return index, group
        if not want_synthetic:
            # A reply's own Message-ID names the thread that holds it.
            holder = self.thread_for_message_id(thread_id.value)
            if holder is not None:
                for group in groups:
                    if not group.synthetic and _id_text(group.root_id) == holder.value:
                        return index, group
        raise ThreadNotFound(self.name, f"no thread {thread_id} in {self.path}")

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
        raw_subject = index.subjects[head]
        charset = self._row_charset(index, head) if header_needs_charset(raw_subject) else None
        subject, _ = decode_header_text(raw_subject, charset)
        notes = list(index.archive_notes)
        if not any(index.message_ids[m] == group.root_id for m in group.members):
            notes.append(f"the thread's first message {_id_text(group.root_id)} is not in this archive")
        own_kind = synthetic_kind(self.thread_id_kind) if group.synthetic else self.thread_id_kind
        return Thread(thread_id=ThreadId(own_kind, _id_text(group.root_id)), subject=subject,
                      messages=tuple(m for _, _, m in messages), notes=tuple(notes))

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
            if index.line_ends == "cr":
                data = data.replace(b"\r", b"\n")
            if len(data) == size:
                data = drop_separator_line(data)
            newline = data.find(b"\n")
            data = data[newline + 1 :] if data.startswith(b"From ") and newline >= 0 else data
            return mbox_unquote(data), size - (newline + 1 if newline >= 0 else 0)
        path = Path(index.locations[row])
        size = path.stat().st_size
        with open(path, "rb") as handle:
            data = handle.read(min(size, cap + _HEADER_READ) if cap else size)
        return data, size

    # -- reading every message (the feedback sweep) ------------------------------
    def archive_format(self) -> str:
        """``mbox``, ``maildir`` or ``eml``. Raises Unavailable when the path is no archive."""
        self.check_available()
        assert self.path is not None
        return sniff_archive(self.path)

    def received_since(self, since: datetime) -> list[ArchivedMessage]:
        """Every message received at or after ``since``, in archive order; a message with
        no time at all is kept too (``received`` None).

        Received is the archive's delivery time, else the Date header: the mbox From_ line;
        for a file (Maildir, .eml) its mtime, where Dovecot keeps a Maildir message's
        received date (INTERNALDATE) and the standard library's Maildir writes it. (Listing
        falls back to the Maildir file name's time instead, for undated mail only.)
        Raises Unavailable.
        """
        index = self.load_index()
        assert self.path is not None
        floor = since.timestamp()
        found = []
        with contextlib.ExitStack() as stack:
            handle = stack.enter_context(open(self.path, "rb")) if index.format == "mbox" else None
            for row in range(len(index)):
                epoch = self._delivery_epoch(index, row, handle)
                if epoch is None and index.dates[row] != NO_DATE:
                    epoch = index.dates[row]
                if epoch is not None and epoch < floor:
                    continue
                received = datetime.fromtimestamp(epoch, timezone.utc) if epoch is not None else None
                found.append(ArchivedMessage(row, received, index))
        return found

    def _delivery_epoch(self, index: ArchiveIndex, row: int, handle) -> float | None:
        if index.format == "mbox":
            handle.seek(index.locations[row])
            line = handle.readline(_HEADER_READ)
            return _envelope_epoch(line.split(b"\r", 1)[0] if index.line_ends == "cr" else line)
        return _mtime(Path(index.locations[row]))

    def archived_bytes(self, message: ArchivedMessage) -> bytes:
        """The message's bytes as sent (mbox quoting undone), capped at ``max_message_bytes``."""
        return self._read_raw(message.index, message.row)[0]

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
        message = parse_message(raw, backend_ref=ref, max_bytes=cap or None, hash_body=True)
        if cap and size > cap:
            note = (f"message is {size:,} bytes, over the size cap of {cap:,} "
                    f"(mail_sources.{self.name}.max_message_bytes); body truncated")
            message = replace(message, notes=tuple(n for n in message.notes if "size cap" not in n) + (note,),
                              attachments=tuple(_cut_mark(a, cap, size, self.name) for a in message.attachments))
        extra = tuple(n for n in index.notes.get(row, ()) if n not in message.notes)
        if extra:
            message = replace(message, notes=message.notes + extra)
        if row in index.not_mail and not message.subject:
            message = replace(message, subject=decode_header_text(index.subjects[row])[0])
        return message

    def search(self, request: SearchRequest) -> SearchPage:
        """A scan of the archive index (subjects, senders) and, for body text, of the
        newest candidate messages (bounded); see :mod:`mailtriage.backends.mbox_search`."""
        # lazy: the search code loads with the first search, not with every open of an
        # archive (about 15 ms of a listing's start, python -X importtime)
        from mailtriage.backends.mbox_search import search_archive

        return search_archive(self, request, sender_of=_sender, id_text=_id_text)

    def thread_url(self, thread_id: ThreadId) -> str:
        """``file://<absolute archive path>#<url-quoted root Message-ID>`` (no archive read).

        Raises:
            Unavailable: the settings are wrong.
            BackendFailure: a thread ID of another kind.
        """
        thread_id = self._accepts(thread_id)
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
            raise BackendFailure(self.name, str(exc)) from exc

    def raw_message(self, message_ref: str) -> bytes:
        """The message ``message_ref`` (a Message.backend_ref) as the archive holds it.

        Raises:
            Unavailable: the archive cannot be read.
            BackendFailure: the reference is unknown.
        """
        archive = self.load_index()
        prefix = f"{self.name}:"
        if not message_ref.startswith(prefix):
            raise BackendFailure(self.name, f"message reference {message_ref!r} is not from this backend")
        row = self._row_of(archive, message_ref[len(prefix):])
        if row is None:
            raise BackendFailure(self.name, f"no message {message_ref!r} in {self.path}")
        raw, _ = self._read_raw(archive, row)
        return bytes(raw)

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
