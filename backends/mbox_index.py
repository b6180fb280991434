"""The archive index: one row per message, in archive order, and the rules that fill a row.

Moved out of :mod:`backends.mbox` (issue 36).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping

from mailtriage.backends.contract import Address
from mailtriage.backends.mime_dates import parse_date_epoch
from mailtriage.backends.mime_header_text import parse_address
from mailtriage.backends.mime_headers import message_synthetic_id, split_header_block
from mailtriage.backends.mime_ids import REFERENCE_ID, ignored_references
from mailtriage.backends.thread_reconstruction import Links, ThreadGroup, group_ids
from mailtriage.core.lazy_re import lazy

__all__ = ["ArchiveIndex"]


# Whitespace spelt out (\s as a set is slower in the scans hot loop; same bytes).
_ID = re.compile(rb"<[^<> \t\n\r\f\v]+>")
_REF_ID = REFERENCE_ID  # a reference must hold an "@" (mime_ids.extract_msgids' rule)


_MBOXRD_QUOTED = lazy(rb"^>(>*From )", re.MULTILINE)
_UNDATED_NOTE = "no usable Date header; the archive's delivery time is used"
_BARE_ID = re.compile(rb"[^\s<>,;\"()]+@[^\s<>,;\"()]+")
# asctime in an mbox From_ line: "From sender Tue Jan  2 10:00:00 2024"
_ENVELOPE_DATE = lazy(rb"From \S*\s+[A-Za-z]{3}\s+([A-Za-z]{3})\s+(\d{1,2})\s+(\d{1,2}:\d{2}(?::\d{2})?)\s+(\d{4})")


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


_ADDRESS_CACHE: dict[bytes, Address] = {}
_EMAIL_CACHE: dict[bytes | None, str] = {}


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
