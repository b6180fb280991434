"""The fast mbox scan: 16 MB chunks, one pattern for header blocks, one for the fields
listing needs, and the forked child that scans the first half of a big file.

Moved out of :mod:`backends.mbox` (issue 36); see that module for why the whole file is read.
"""

from __future__ import annotations

import fcntl
import marshal
import os
import re
import select
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from mailtriage.backends.mbox_index import (
    _ID,
    _REF_ID,
    _UNDATED_NOTE,
    NO_DATE,
    ArchiveIndex,
    _envelope_epoch,
    _first_id,
    _first_ref,
    _ignored_note,
    _row_from_fields,
    _sender_emails,
    mbox_unquote,
)
from mailtriage.backends.mime_dates import parse_date_epochs
from mailtriage.backends.mime_headers import (
    header_fields,
    normalize_line_ends,
    split_header_block,
    synthetic_message_id,
    unfold_header_names,
)
from mailtriage.backends.thread_reconstruction import Links, link_records
from mailtriage.core.lazy_re import lazy

_CHUNK = 16 * 1024 * 1024
_PARALLEL_MIN_BYTES = 64 * 1024 * 1024
_CHILD_TIMEOUT_SECONDS = 300
_HEADER_READ = 64 * 1024
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


_SYNTHETIC_READ = 2 * 1024 * 1024


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
_FIELDS = lazy(
    rb"\n(?=[\nmridsfMRIDSF])(?:\n|(message-id|references|in-reply-to|date|subject|from)[ \t]*+(?:\n[ \t]++)?:"
    rb"[ \t]*+(.*+(?:\n[ \t].*+)*+))",
    re.IGNORECASE,
)
_FIELD_COLUMN = {b"message-id": 0, b"references": 1, b"in-reply-to": 2, b"date": 3, b"subject": 4, b"from": 5}


_CONTENT_LENGTH = lazy(rb"\ncontent-length[ \t]*:[ \t]*(\d{1,12})[ \t\r]*(?=\n|\Z)", re.IGNORECASE)


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


_PREFIX = lazy(rb"(\xef\xbb\xbf)?([\r\n \t]*)")


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
