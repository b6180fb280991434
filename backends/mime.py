"""MIME decoding shared by every mail backend: raw RFC 5322 bytes -> contract ``Message``.

Built on the stdlib ``email`` package with ``policy.default``. Mail is hostile or
broken often enough that nothing here may raise for bad *content*: RFC 2047 words
in unknown or wrong charsets, 8-bit headers, broken base64 / quoted-printable,
defective MIME structure and CR-only line ends each become a visible note (on the
part, ``TextPart.note`` / ``AttachmentInfo.note``, or on the message,
``Message.notes``) and the rest of the message is still shown.

HTML-only mail becomes text through html2text. Nothing remote is ever fetched:
html2text only rewrites markup, and List-Unsubscribe targets are parsed, never
opened.

The small byte-level helpers (:func:`split_header_block`, :func:`header_fields`,
:func:`extract_msgid`, :func:`extract_msgids`, :func:`parse_date`,
:func:`decode_header_text`, :func:`synthetic_message_id`) are what both the full
parser and the fast listing paths of the backends use, so a fast path and the
full parse agree on IDs, dates and subjects by construction.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import hashlib
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from mailtriage.backends.contract import Address, AttachmentInfo, Message, TextPart
from mailtriage.backends.errors import MailError
from mailtriage.core.inert import header_text

if TYPE_CHECKING:
    from email.message import EmailMessage
    from email.policy import EmailPolicy

    from mailtriage.backends.pgp_status import PgpMaterial

# The stdlib's full parser (email.policy, email.parser, email.generator: ~11 ms of imports,
# python -X importtime), email.utils (~3 ms, with socket) and pgp_status (~3 ms of
# dataclasses) load where a body is parsed, an unusual address or date is read, or OpenPGP
# is met, not with this module: listing from headers (mbox, IMAP) needs none of them.

__all__ = [
    "SYNTHETIC_DOMAIN",
    "AttachmentNotFound",
    "all_attachment_bytes",
    "attachment_bytes",
    "decode_header_text",
    "extract_msgid",
    "extract_msgids",
    "header_fields",
    "list_unsubscribe",
    "normalize_line_ends",
    "parse_address",
    "parse_date",
    "parse_date_epoch",
    "parse_date_epochs",
    "parse_message",
    "parse_message_headers",
    "split_header_block",
    "synthetic_message_id",
    "message_synthetic_id",
]

SYNTHETIC_DOMAIN = "mailtriage.invalid"

_EMAIL: dict[str, object] = {}  # the policies, made on first use (see _policy)

# Charsets we fall back to, in order, when a label is missing, unknown or wrong.
# windows-1252 decodes every byte except five, latin-1 decodes every byte: the last
# resort never fails, so a part is always shown.
_FALLBACK_CHARSETS = ("utf-8", "windows-1252", "latin-1")

# Labels seen in the wild that mean "the sender did not know"; treated as unlabelled.
_MEANINGLESS_CHARSETS = {"unknown-8bit", "x-unknown", "unknown", "default", "x-user-defined", ""}


class AttachmentNotFound(MailError, LookupError):
    """:func:`attachment_bytes` was asked for an index the message does not have."""


# ---------------------------------------------------------------------------
# Line ends and the header block
# ---------------------------------------------------------------------------

def normalize_line_ends(raw: bytes) -> tuple[bytes, str | None]:
    """Turn CR-only line ends (old Mac mail) into LF; return the bytes and a note.

    CRLF and LF are left alone (the parser reads both); a message with more bare
    carriage returns than line feeds (one stored in an mbox gains a final LF) is
    rewritten.
    """
    if b"\r" not in raw:
        return raw, None
    bare_cr = raw.count(b"\r") - raw.count(b"\r\n")
    if bare_cr > raw.count(b"\n"):
        return (raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n"),
                "the message used CR-only line ends; read as LF")
    return raw, None


class _Later:
    """A pattern compiled when first used, for what listing mail never needs (HTML parts, the
    mbox scan's dates): ``_X()`` is the compiled pattern. Compiling them with the module cost
    2-3 ms of every backend's import (python -X importtime)."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, *args: object) -> None:
        self._args = args
        self._compiled: re.Pattern | None = None

    def __call__(self) -> re.Pattern:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(*self._args)  # two threads at once: equal patterns
        return compiled


_BLANK_LINE = re.compile(rb"\r?\n\r?\n")


def split_header_block(raw: bytes) -> tuple[bytes, int]:
    """Return ``(header_block, body_offset)`` for raw message bytes.

    The header block runs up to (not including) the first blank line; ``body_offset``
    is where the body starts (``len(raw)`` when there is no body). CRLF, LF and
    CR-only line ends are all recognised. A message that starts with an empty line
    has no headers.
    """
    if raw[:1] == b"\n":
        return b"", 1
    if raw[:2] == b"\r\n":
        return b"", 2
    if raw[:1] == b"\r":
        return b"", 1
    if b"\r" not in raw:
        end = raw.find(b"\n\n")
        if end < 0:
            return raw, len(raw)
        return raw[: end + 1], end + 2
    if b"\n" not in raw:  # CR-only
        end = raw.find(b"\r\r")
        if end < 0:
            return raw, len(raw)
        return raw[: end + 1], end + 2
    match = _BLANK_LINE.search(raw)
    if match is None:
        return raw, len(raw)
    return raw[: match.start() + (2 if raw[match.start()] == 13 else 1)], match.end()


# How much of a body the synthetic ID hashes: enough to tell messages apart, bounded
# so every reader (including the mbox scan, which sees a message in one buffer) can.
_SYNTHETIC_BODY_BYTES = 256 * 1024


def synthetic_message_id(header_block: bytes, body: bytes | None = None) -> str:
    """A stable Message-ID for a message that has none: a hash of its headers (and body).

    Line ends are normalised first so the same message gives the same ID whether
    it was stored with LF, CRLF or CR line ends. With ``body`` (the offline archives,
    which always have it: the mbox reader hashes it after undoing ``>From ``
    quoting) the body counts too, so two alerts with identical headers stay two
    messages, and the same bytes give the same ID in an mbox, a Maildir or a
    ``.eml`` file. Without it (backends that list from headers alone) only the
    headers are hashed, as before. The domain ``mailtriage.invalid`` can never
    collide with a real Message-ID.
    """
    normalized = header_block.replace(b"\r\n", b"\n").replace(b"\r", b"\n").rstrip(b"\n")
    if body is None:
        return f"<synthetic-{hashlib.sha256(normalized).hexdigest()[:24]}@{SYNTHETIC_DOMAIN}>"
    text = body[: 4 * _SYNTHETIC_BODY_BYTES]
    text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")[:_SYNTHETIC_BODY_BYTES].strip(b"\n")
    digest = hashlib.sha256(normalized + b"\n\n" + text).hexdigest()[:24]
    return f"<synthetic-{digest}@{SYNTHETIC_DOMAIN}>"


def message_synthetic_id(raw: bytes) -> str:
    """The synthetic Message-ID :func:`parse_message` gives ``raw`` with ``hash_body``.

    ``raw`` is the whole message, or a prefix of it holding the header block and the
    first MiB of the body (what an IMAP FETCH of ``BODY[HEADER]`` and ``BODY[TEXT]<0.1048576>``
    gives): the same bytes give the same ID whichever backend read them (issue 33).
    """
    raw = unfold_header_names(normalize_line_ends(raw)[0])[0]
    header, offset = split_header_block(raw)
    return synthetic_message_id(header, raw[offset: offset + 4 * _SYNTHETIC_BODY_BYTES])


# A header field: name at the start of a line, optional blanks, colon, then the value
# with its continuation lines (their line breaks kept; decoding unfolds them). A name
# folded away from its colon ("From\n : <x@y>", seen in the wild) is the same field.
_HEADER_FIELD = re.compile(rb"^([!-9;-~]+)[ \t]*(?:\n[ \t]+)?:[ \t]*(.*(?:\n[ \t].*)*)", re.MULTILINE)
# A line of the header block that is neither a field nor a continuation: a strict
# reader (the stdlib parser, RFC 5322) ends the header block there, so nothing after
# it may become a header (a "From:" after it is body text, not a sender).
_NOT_A_FIELD = re.compile(rb"^(?![!-9;-~]+[ \t]*(?:\n[ \t]+)?:|[ \t])[^\n]+", re.MULTILINE)
_FOLDED_NAME = re.compile(rb"^([!-9;-~]+)[ \t]*\n[ \t]+:", re.MULTILINE)


def malformed_header_line(header_block: bytes) -> int | None:
    """Offset (in the LF form of the block) of the first line that is not a header field.

    A leading mbox ``From `` line is not counted. None when the block is well formed.
    """
    block = header_block
    if b"\r" in block:
        block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    start = block.find(b"\n") + 1 if block.startswith(b"From ") else 0
    match = _NOT_A_FIELD.search(block, start) if start or block else None
    return match.start() if match is not None else None


def header_fields(header_block: bytes, wanted: frozenset[bytes] | set[bytes] | None = None) -> dict[bytes, bytes]:
    """Byte-level header scan: ``{lowercased name: raw value}``; the first occurrence wins.

    The value keeps folded line breaks; no decoding happens here, callers decode
    only what they show. ``wanted`` (lowercased names) limits what is kept. Line
    ends may be LF, CRLF or CR. A leading mbox ``From `` line is skipped; the block
    ends at the first other line that is not a field (as for a strict parser), so a
    lenient reading never finds a header a strict one does not. The mbox fast path
    reads the same fields with the same rules, so both agree on every ID, date and
    subject.
    """
    block = header_block
    if b"\r" in block:
        block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    end = malformed_header_line(block)
    if end is not None:
        block = block[:end]
    fields: dict[bytes, bytes] = {}
    for match in _HEADER_FIELD.finditer(block):
        name = match.group(1).lower()
        if (wanted is None or name in wanted) and name not in fields:
            fields[name] = match.group(2)
    return fields


def header_values(header_block: bytes, name: bytes) -> list[bytes]:
    """Every value of header ``name`` (lowercase) in the block, in order (same rules as header_fields)."""
    block = header_block
    if b"\r" in block:
        block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    end = malformed_header_line(block)
    if end is not None:
        block = block[:end]
    return [m.group(2) for m in _HEADER_FIELD.finditer(block) if m.group(1).lower() == name]


def unfold_header_names(raw: bytes) -> tuple[bytes, bool]:
    """Join a header name folded away from its colon (``From\\n : x``) in the header block."""
    header, offset = split_header_block(raw)
    if b":" not in header or _FOLDED_NAME.search(header.replace(b"\r\n", b"\n")) is None:
        return raw, False
    crlf = b"\r\n" in header
    fixed = _FOLDED_NAME.sub(rb"\1:", header.replace(b"\r\n", b"\n"))
    if crlf:
        fixed = fixed.replace(b"\n", b"\r\n")
    return fixed + raw[len(header):], True


# ---------------------------------------------------------------------------
# Message-IDs
# ---------------------------------------------------------------------------

_BRACKETED_ID = re.compile(rb"<[^<>\s]+>")
_BARE_ID = re.compile(rb"[^\s<>,;\"()]+@[^\s<>,;\"()]+")


def _id_text(raw: bytes) -> str:
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace")


# A reference must look like a Message-ID (RFC 5322: id-left "@" id-right). Values
# such as git-send-email's leftover "<yes>" would otherwise join unrelated threads.
REFERENCE_ID = re.compile(rb"<[^<>@ \t\n\r\f\v]*+@[^<> \t\n\r\f\v]++>")  # \s spelt out: faster


def extract_msgid(value: bytes | str | None, *, reference: bool = False) -> str | None:
    """The Message-ID in a header value, angle brackets kept; None when there is none.

    Takes the first ``<...>`` token; a bare ``local@domain`` (seen from broken
    clients) is wrapped in brackets. Anything else is no ID. With ``reference``
    (an In-Reply-To value) a token without ``@`` is no ID either.
    """
    if not value:
        return None
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    match = (REFERENCE_ID if reference else _BRACKETED_ID).search(value)
    if match is not None:
        return _id_text(match.group())
    match = _BARE_ID.search(value)
    if match is not None:
        return f"<{_id_text(match.group())}>"
    return None


def extract_msgids(value: bytes | str | None) -> tuple[str, ...]:
    """Every ``<...@...>`` Message-ID in a References value, in order, deduplicated.

    Tokens without ``@`` are not Message-IDs and are left out (see :func:`ignored_references`).
    """
    if not value:
        return ()
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    seen: dict[str, None] = {}
    for token in REFERENCE_ID.findall(value):
        seen.setdefault(_id_text(token), None)
    return tuple(seen)


def ignored_references(value: bytes | str | None) -> list[str]:
    """The ``<...>`` tokens of a References / In-Reply-To value that are not Message-IDs (no ``@``)."""
    if not value:
        return []
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    return [_id_text(t) for t in _BRACKETED_ID.findall(value) if b"@" not in t]


# ---------------------------------------------------------------------------
# Dates
# ---------------------------------------------------------------------------

_MONTHS = {m: i for i, m in enumerate(
    (b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov", b"dec"), 1)}
# The RFC 5322 shape almost every message uses: [Day, ]DD Mon YYYY HH:MM[:SS] +ZZZZ
_RFC5322_DATE = re.compile(
    rb"\s*(?:[A-Za-z]{3},?\s*)?(\d{1,2})\s+([A-Za-z]{3})[a-z]*\s+(\d{4})\s+"
    rb"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([+-]\d{4})?\s*(?:\(.*)?$",
    re.DOTALL,
)


def parse_date(value: bytes | str | None) -> datetime | None:
    """Parse a Date header into an aware datetime (UTC when the zone is missing or -0000).

    A fast path reads the common RFC 5322 shape; anything else goes through
    ``email.utils.parsedate_to_datetime``. Returns None when the value is not a date.
    """
    if not value:
        return None
    raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
    match = _RFC5322_DATE.match(raw)
    if match is not None:
        day, mon, year, hour, minute, second, zone = match.groups()
        month = _MONTHS.get(mon.lower())
        if month is not None:
            try:
                if zone is None or zone == b"-0000":
                    tz = timezone.utc
                else:
                    offset = int(zone[1:3]) * 60 + int(zone[3:5])
                    tz = timezone(timedelta(minutes=-offset if zone[0] == 45 else offset))
                return datetime(int(year), month, int(day), int(hour), int(minute),
                                int(second) if second else 0, tzinfo=tz)
            except ValueError:
                pass  # e.g. 31 Feb or +9999: let the stdlib have a go
    try:
        text = raw.decode("ascii", "replace")
        from email.utils import parsedate_to_datetime  # rare dates only; email.utils costs ~3 ms at import

        parsed = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    if 100 <= parsed.year < 1000:  # RFC 5322 section 4.3: a three-digit year is 1900 + it
        try:
            parsed = parsed.replace(year=parsed.year + 1900)
        except ValueError:  # 29 Feb of a year that is no leap year once moved
            return None
    return parsed


# Dates outside this window are probably wrong (a clock at 1970, a typo, a spoof).
PLAUSIBLE_SINCE = datetime(1990, 1, 1, tzinfo=timezone.utc).timestamp()
PLAUSIBLE_AHEAD_SECONDS = 86400.0


def implausible_date(epoch: float | None, now: float | None = None) -> str | None:
    """Why a date is implausible (before 1990, more than a day ahead), or None."""
    if epoch is None or epoch == float("-inf"):
        return None
    if epoch < PLAUSIBLE_SINCE:
        return "before 1990"
    if now is None:
        now = datetime.now(timezone.utc).timestamp()
    if epoch > now + PLAUSIBLE_AHEAD_SECONDS:
        return "more than a day ahead of now"
    return None


_DAY_EPOCH: dict[tuple[bytes, bytes, bytes], int | None] = {}
_ZONE_SECONDS: dict[bytes, int | None] = {}


def _day_epoch(day: bytes, mon: bytes, year: bytes) -> int | None:
    key = (day, mon, year)
    if key in _DAY_EPOCH:
        return _DAY_EPOCH[key]
    month = _MONTHS.get(mon.lower())
    try:
        value = None if month is None else int(
            datetime(int(year), month, int(day), tzinfo=timezone.utc).timestamp())
    except (ValueError, OverflowError):
        value = None
    if len(_DAY_EPOCH) < 100_000:
        _DAY_EPOCH[key] = value
    return value


def _zone_seconds(zone: bytes) -> int | None:
    seconds = _ZONE_SECONDS.get(zone)
    if seconds is None and zone not in _ZONE_SECONDS:
        hours, minutes = int(zone[1:3]), int(zone[3:5])
        seconds = None if hours > 23 or minutes > 59 else (hours * 3600 + minutes * 60) * (-1 if zone[0] == 45 else 1)
        _ZONE_SECONDS[zone] = seconds
    return seconds


_DAY_NAME = re.compile(rb"[A-Za-z]{3},?")
_DAY_NUMBER = re.compile(rb"\d{1,2}")
_MONTH_TOKEN = re.compile(rb"[A-Za-z]{3}[a-z]*")
_YEAR = re.compile(rb"\d{4}")
_CLOCK = re.compile(rb"(\d{1,2}):(\d{2})(?::(\d{2}))?")
_ZONE = re.compile(rb"[+-]\d{4}")
_DATE_PART: dict[tuple[bytes, bytes, bytes], int | None] = {}
_CLOCK_SECONDS: dict[bytes, int | None] = {}
_ZONE_OFFSET: dict[bytes, int | None] = {}
_DAY_NAMES: dict[bytes, bool] = {}


def _date_part(day: bytes, mon: bytes, year: bytes) -> int | None:
    value = None
    if _DAY_NUMBER.fullmatch(day) and _MONTH_TOKEN.fullmatch(mon) and _YEAR.fullmatch(year):
        value = _day_epoch(day, mon[:3], year)
    if len(_DATE_PART) < 100_000:
        _DATE_PART[(day, mon, year)] = value
    return value


def _clock_seconds(clock: bytes) -> int | None:
    """Seconds into the day of ``H:MM[:SS]``; hours and minutes are cached (1,440 of them)."""
    minutes = _CLOCK_SECONDS.get(clock[:-3] if clock.count(b":") == 2 else clock, -1)
    if minutes == -1:
        match = _CLOCK.fullmatch(clock)
        if match is None:
            return None
        h, m = int(match.group(1)), int(match.group(2))
        minutes = h * 3600 + m * 60 if h < 24 and m < 60 else None
        if len(_CLOCK_SECONDS) < 10_000:
            _CLOCK_SECONDS[match.group(1) + b":" + match.group(2)] = minutes
    if minutes is None:
        return None
    if clock.count(b":") == 2:
        tail = clock[-3:]
        if tail[0] != 58 or not tail[1:].isdigit():  # ":SS"
            return None
        seconds = int(tail[1:])
        return minutes + seconds if seconds < 60 else None
    return minutes


def _zone_offset(zone: bytes) -> int | None:
    value = _zone_seconds(zone) if _ZONE.fullmatch(zone) else None
    if len(_ZONE_OFFSET) < 10_000:
        _ZONE_OFFSET[zone] = value
    return value


def parse_date_epoch(value: bytes | str | None) -> float | None:
    """Seconds since the epoch of a Date header: ``parse_date(value).timestamp()``, faster.

    Listing paths compare thousands of dates and never show most of them, so they
    skip building datetime objects. The common shapes (``Tue, 02 Jan 2024
    10:00:00 +0100`` with or without the day name) are read token by token through
    small caches that only ever hold values checked against the same rules as
    :func:`parse_date`; anything else goes through :func:`parse_date` itself, so the
    result is always exactly what :func:`parse_date` gives.
    """
    if not value:
        return None
    raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
    tokens = raw.split()
    count = len(tokens)
    if count == 6 or count == 5:
        if count == 6 or not tokens[0][:1].isdigit():
            name = tokens[0]
            known = _DAY_NAMES.get(name)
            if known is None:
                known = bool(_DAY_NAME.fullmatch(name))
                if len(_DAY_NAMES) < 1000:
                    _DAY_NAMES[name] = known
            if not known:
                return _slow_date_epoch(raw)
            tokens = tokens[1:]
        if len(tokens) == 5 or len(tokens) == 4:
            day = _DATE_PART.get((tokens[0], tokens[1], tokens[2]), -1)
            if day == -1:
                day = _date_part(tokens[0], tokens[1], tokens[2])
            clock = _clock_seconds(tokens[3])
            if day is not None and clock is not None:
                if len(tokens) == 4:
                    return float(day + clock)
                zone = tokens[4]
                if zone == b"-0000":
                    return float(day + clock)
                offset = _ZONE_OFFSET.get(zone, -1)
                if offset == -1:
                    offset = _zone_offset(zone)
                if offset is not None:
                    return float(day + clock - offset)
    return _slow_date_epoch(raw)


# One Date value per line, in the shape almost all mail uses (single spaces); every
# other line matches the empty second branch and goes through parse_date_epoch.
_DATE_LINE = _Later(
    rb"^(?:[A-Za-z]{3},? )?(\d{1,2} [A-Za-z]{3}[a-z]* \d{4}) (\d{1,2}:\d{2})(?::(\d{2}))?(?: ([+-]\d{4}))?$|^.*$",
    re.MULTILINE,
)
_DAY_KEY: dict[bytes, int | None] = {}


def parse_date_epochs(values: list[bytes | None]) -> list[float | None]:
    """:func:`parse_date_epoch` of many Date values at once (the mbox scan's hot path).

    One regular-expression pass reads every value of the common shape; the rest go
    through :func:`parse_date_epoch` one by one, so each result is exactly what
    :func:`parse_date` gives.
    """
    lines = [v or b"" for v in values]
    joined = b"\n".join(lines)
    parts = _DATE_LINE().findall(joined) if joined.count(b"\n") == len(lines) - 1 else None
    if parts is None or len(parts) != len(lines):
        return [parse_date_epoch(v) for v in values]
    day_key = _DAY_KEY
    minute_of_day = _CLOCK_SECONDS
    zone_offset = _ZONE_OFFSET
    result: list[float | None] = []
    append = result.append
    for (day_text, hour_minute, second, zone), value in zip(parts, lines):
        if day_text:
            day = day_key.get(day_text, -1)
            if day == -1:
                day_number, mon, year = day_text.split()
                day = _date_part(day_number, mon, year)
                if len(day_key) < 100_000:
                    day_key[day_text] = day
            seconds = minute_of_day.get(hour_minute, -1)
            if seconds == -1:
                seconds = _clock_seconds(hour_minute)
            if seconds is not None and second:
                seconds = seconds + int(second) if second < b"60" else None
            if day is not None and seconds is not None:
                if not zone or zone == b"-0000":
                    append(float(day + seconds))
                    continue
                offset = zone_offset.get(zone, -1)
                if offset == -1:
                    offset = _zone_offset(zone)
                if offset is not None:
                    append(float(day + seconds - offset))
                    continue
        append(parse_date_epoch(value) if value else None)
    return result


def _slow_date_epoch(raw: bytes) -> float | None:
    parsed = parse_date(raw)
    return parsed.timestamp() if parsed is not None else None


# ---------------------------------------------------------------------------
# Header text (RFC 2047) and addresses
# ---------------------------------------------------------------------------

_ENCODED_WORD = re.compile(r"=\?([^?\s]+)\?([bBqQ])\?([^?\s]*)\?=")
_BETWEEN_WORDS = re.compile(r"(\?=)\s+(?==\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=)")
_QP_ESCAPE = re.compile(rb"=([0-9A-Fa-f]{2})")


# Labels whose text is usually written in a superset (GB2312 mail is mostly GBK or
# GB18030 in practice, and GB18030 decodes all of them), or that Python spells
# differently.
_CHARSET_ALIASES = {"gb2312": "gb18030", "gbk": "gb18030", "euc-cn": "gb18030", "x-gbk": "gb18030",
                    "cp936": "gb18030", "x-utf-7": "utf-7", "x-utf7": "utf-7"}


def _codec_name(label: str | None) -> str | None:
    """Python codec name for a charset label, or None when unknown/meaningless."""
    if label is None:
        return None
    label = label.strip().strip('"').lower()
    if label in _MEANINGLESS_CHARSETS:
        return None
    label = _CHARSET_ALIASES.get(label, label)
    try:
        name = codecs.lookup(label).name
    except (LookupError, ValueError):  # ValueError: a NUL in the label
        return None
    return _CHARSET_ALIASES.get(name, name)


# A part in a multibyte charset with a few bad bytes is still that charset: decode it
# with replacement characters rather than as latin-1 mojibake (at most this share of
# the bytes may be bad).
_REPLACE_AT_MOST = 0.02
_UTF8_MULTIBYTE = re.compile(rb"[\xc2-\xf4][\x80-\xbf]+")


def _decode_with_replacement(data: bytes, codec: str) -> tuple[str, int] | None:
    """``data`` decoded in ``codec`` with U+FFFD for bad bytes, when few are bad; else None."""
    if codec in ("ascii", "latin-1", "iso8859-1", "cp1252", "utf-7"):
        return None  # single-byte labels are better served by the fallback charsets
    if codec == "utf-8" and _UTF8_MULTIBYTE.search(data) is None:
        return None  # no valid multibyte sequence at all: not utf-8, a mislabel
    try:
        text = data.decode(codec, "replace")
    except LookupError:
        return None
    bad = text.count("\ufffd") - data.decode(codec, "ignore").count("\ufffd")
    if bad <= 0 or bad > max(1, int(len(data) * _REPLACE_AT_MOST)):
        return None
    return text, bad


def decode_bytes(data: bytes, label: str | None) -> tuple[str, str | None]:
    """Decode ``data`` declared as charset ``label``; return ``(text, note)``.

    Never raises. A note says when the label was unknown or wrong and which charset
    was used instead; pure ASCII is always fine whatever the label.
    """
    codec = _codec_name(label)
    if codec is not None:
        try:
            return data.decode(codec), None
        except (UnicodeDecodeError, LookupError):
            pass
        replaced = _decode_with_replacement(data, codec)
        if replaced is not None:
            text, bad = replaced
            return text, (f"{bad} byte{'s' if bad > 1 else ''} invalid in the declared charset {label}; "
                          "replaced with U+FFFD")
    elif label is None or label.strip().lower() in _MEANINGLESS_CHARSETS:
        try:
            return data.decode("ascii"), None
        except UnicodeDecodeError:
            pass
    for fallback in _FALLBACK_CHARSETS:
        if fallback == codec:
            continue
        try:
            text = data.decode(fallback)
        except UnicodeDecodeError:
            continue
        if codec is not None:
            note = f"declared charset {label} does not match the content; decoded as {fallback}"
        elif label is None or label.strip().lower() in _MEANINGLESS_CHARSETS:
            note = f"no charset declared for 8-bit text; decoded as {fallback}"
        else:
            note = f"unknown charset {label!r}; decoded as {fallback}"
        return text, note
    return data.decode("latin-1"), None  # unreachable: latin-1 decodes every byte


def _encoded_word_bytes(encoding: str, payload: str) -> bytes | None:
    """The bytes an encoded word carries; None when its base64 is broken."""
    data = payload.encode("utf-8", "surrogateescape")  # raw 8-bit inside a word: keep its bytes
    if encoding in "bB":
        padded = data + b"=" * (-len(data) % 4)
        try:
            return base64.b64decode(padded, validate=False)
        except (binascii.Error, ValueError):
            return None
    return _QP_ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), data.replace(b"_", b" "))


def _decode_encoded_word(charset: str, encoding: str, payload: str) -> tuple[str, str | None]:
    raw = _encoded_word_bytes(encoding, payload)
    if raw is None:
        return f"=?{charset}?{encoding}?{payload}?=", "a base64 encoded-word in a header is broken; shown as is"
    text, charset_note = decode_bytes(raw, charset.split("*", 1)[0])  # RFC 2231 language suffix: utf-8*en
    return text, (f"encoded-word: {charset_note}" if charset_note else None)


# Raw 8-bit header bytes shaped like a double-byte EUC charset: every run of non-ASCII bytes is
# pairs of bytes in 0xA1-0xFE. GB2312 (EUC-CN) is the commonest such header in mail and GB18030
# decodes it (and GBK); EUC-KR and EUC-JP share the shape but cannot be told apart from it, so
# they are read as GB18030 only when the message declares no charset of its own. Latin text
# (an accented letter between ASCII ones, a run of odd length or with bytes below 0xA1) is not
# EUC-shaped and keeps the windows-1252 fallback.
_HIGH_RUN = re.compile(rb"[\x80-\xff]+")
_EUC_PAIRS = re.compile(rb"(?:[\xa1-\xfe][\xa1-\xfe])+")


def _euc_shaped(value: bytes) -> bool:
    runs = _HIGH_RUN.findall(value)
    return bool(runs) and all(_EUC_PAIRS.fullmatch(run) for run in runs)


def _decode_raw_header(value: bytes, charset: str | None, notes: list[str]) -> str:
    """A header with raw 8-bit bytes: the body's declared charset, then utf-8, then GB18030 when
    the bytes are EUC-shaped (see ``_euc_shaped``), then windows-1252."""
    codec = _codec_name(charset)
    if codec is not None and codec not in ("ascii", "utf-8"):
        try:
            text = value.decode(codec)
            notes.append(f"raw 8-bit characters in the header; read as {charset}, the body's charset")
            return text
        except (UnicodeDecodeError, LookupError):
            pass
    try:
        text = value.decode("utf-8")
        notes.append("raw 8-bit characters in the header; read as utf-8")
        return text
    except UnicodeDecodeError:
        pass
    if _euc_shaped(value):
        try:
            text = value.decode("gb18030")
            notes.append("raw 8-bit characters in the header, not utf-8, shaped like GB2312/EUC; "
                         "read as gb18030 (a guess)")
            return text
        except UnicodeDecodeError:
            pass
    text = value.decode("windows-1252", "replace")
    notes.append("raw 8-bit characters in the header, not utf-8; read as windows-1252")
    return text


# A UTF-7 shift sequence (``+AD4-`` is ``>``): an ASCII header of a message whose body declares
# UTF-7 was written in UTF-7 by the same client. Only with the ``-`` that ends it, so ``C++``
# or ``a+b`` stay as they are.
_UTF7_SHIFT = re.compile(rb"\+[A-Za-z0-9+/]+-")


def header_needs_charset(value: bytes | None) -> bool:
    """Whether decoding header ``value`` depends on the charset the message body declares
    (raw 8-bit bytes, or a UTF-7 shift sequence)."""
    return bool(value) and (not value.isascii() or _UTF7_SHIFT.search(value) is not None)


def _decode_utf7_header(text: str, charset: str | None, notes: list[str]) -> str:
    if charset is None or _codec_name(charset) != "utf-7" or _UTF7_SHIFT.search(text.encode("ascii")) is None:
        return text
    try:
        decoded = text.encode("ascii").decode("utf-7")
    except UnicodeDecodeError:
        return text
    notes.append(f"the header is written in UTF-7, the body's charset ({charset}); decoded")
    return decoded


def decode_header_text(value: bytes | str | None, charset: str | None = None) -> tuple[str, list[str]]:
    """Decode an unstructured header (Subject, a display name) into text and notes.

    Handles RFC 2047 encoded-words in any charset Python knows (adjacent words in one
    charset are joined before decoding, RFC 2047 section 6.2, so a character split
    over two words survives), falls back (with a note) for unknown or mislabelled
    charsets, decodes raw 8-bit headers (``charset``, the body's declared charset,
    then utf-8, then GB18030 for EUC-shaped bytes, then windows-1252) with a note, reads
    an ASCII header with UTF-7 shift sequences as UTF-7 when ``charset`` is UTF-7, and
    unfolds continuation lines.
    """
    notes: list[str] = []
    if value is None:
        return "", notes
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    try:
        text = _decode_utf7_header(value.decode("ascii"), charset, notes)
    except UnicodeDecodeError:
        text = _decode_raw_header(value, charset, notes)
    if "\n" in text or "\r" in text:
        text = re.sub(r"\r?\n|\r", "", text)
    text = text.strip()
    if "=?" not in text:
        return text, notes
    text = _BETWEEN_WORDS.sub(r"\1", text)
    out: list[str] = []
    position = 0
    matches = list(_ENCODED_WORD.finditer(text))
    i = 0
    while i < len(matches):
        match = matches[i]
        out.append(text[position:match.start()])
        charset_label, encoding = match.group(1), match.group(2)
        # Adjacent words of one charset form one run of bytes.
        run = [match]
        while (i + len(run) < len(matches) and matches[i + len(run)].start() == run[-1].end()
               and matches[i + len(run)].group(1).lower() == charset_label.lower()):
            run.append(matches[i + len(run)])
        chunks = [_encoded_word_bytes(m.group(2), m.group(3)) for m in run]
        if len(run) > 1 and None not in chunks:
            decoded, charset_note = decode_bytes(b"".join(chunks), charset_label.split("*", 1)[0])
            note = f"encoded-word: {charset_note}" if charset_note else None
        else:
            run = [match]
            decoded, note = _decode_encoded_word(charset_label, encoding, match.group(3))
        if note and note not in notes:
            notes.append(note)
        out.append(decoded)
        position = run[-1].end()
        i += len(run)
    out.append(text[position:])
    return "".join(out), notes


_ADDR_SPEC = r'[^\s<>"(),;:@\[\]\\]+@[^\s<>"(),;:@\[\]\\]+'
_NAME_ADDR = re.compile(r'\s*([^"(),;:<>@\[\]\\]*?)\s*<(' + _ADDR_SPEC + r')>\s*')
_BARE_ADDR = re.compile(r"\s*(" + _ADDR_SPEC + r")\s*")


def is_plain_address(text: str) -> bool:
    """Is ``text`` one bare addr-spec (no quotes, commas, encoded words, names)? Only such
    a value may become a recipient: anything else can turn into other recipients once a
    header is serialised (an encoded word decodes to ``a@x, b@y``)."""
    return re.fullmatch(_ADDR_SPEC, text) is not None and "=?" not in text


# -- headers we compose from mail content ----------------------------------------------------

_COMPOSED_ID = re.compile(r"<[^\s<>\x00-\x1f\x7f]{1,250}>")
_MAX_REFERENCES = 30  # RFC 5322 §3.6.4 allows trimming; keep the root and the newest ones


def composed_ids(ids) -> list[str]:
    """Message-IDs fit for In-Reply-To/References: well-formed ones only, no duplicates,
    the root plus the newest when there are many (a reporter can send hundreds)."""
    kept = [i for i in dict.fromkeys(ids or ()) if i and _COMPOSED_ID.fullmatch(i)]
    if len(kept) > _MAX_REFERENCES:
        kept = kept[:1] + kept[-(_MAX_REFERENCES - 1):]
    return kept


def composed_addresses(values) -> str:
    """An address header from recipient strings: display names cleaned to one line (a
    decoded CR/LF cannot add a header), only plain addr-specs kept."""
    from email.utils import formataddr, getaddresses  # composing only; email.utils costs ~3 ms at import

    out = []
    for name, addr in getaddresses([header_text(v, 2000) for v in values or ()]):
        if addr and is_plain_address(addr):
            out.append(formataddr((header_text(name, 200), addr)))
    return ", ".join(out)


def set_composed_header(msg: EmailMessage, name: str, value: str) -> None:
    """Set a header built from mail content. The value is made one clean, bounded line
    (the serializer folds it), so it never raises; an address header keeps only what
    parses as addresses."""
    if name.lower() in ("to", "cc", "bcc", "reply-to"):
        value = composed_addresses([value])
    elif name.lower() in ("in-reply-to", "references"):
        value = " ".join(composed_ids(str(value).split()))
    else:
        value = header_text(value)
    if not value and name.lower() != "subject":
        return
    try:
        msg[name] = value
    except (ValueError, TypeError, IndexError):  # a value the header parser still refuses
        msg[name] = value.encode("ascii", "replace").decode("ascii")


def parse_address(value: bytes | str | None, charset: str | None = None) -> Address:
    """The first address of a From-like header; ``Address('', '')`` when there is none."""
    addresses = parse_address_list(value, charset)
    return addresses[0] if addresses else Address("", "")


# An obsolete source route (RFC 5322 obs-route): "<@a.example,@b.example:user@host>".
_SOURCE_ROUTE = re.compile(r"<\s*@[^<>:\s,]+(?:\s*,\s*@[^<>:\s,]+)*\s*:\s*")
# Pipermail's obfuscation: "user at example.com (Name)".
_PIPERMAIL = re.compile(r"\s*([^\s@<>()\",;:]+) at ([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)\s*(?:\((.*)\))?\s*")


def _clean_email(email: str, charset: str | None) -> str:
    """Raw 8-bit bytes in an address are kept as surrogates while parsing; decode them."""
    if email.isascii():
        return email
    raw = email.encode("utf-8", "surrogateescape")
    return raw.decode("utf-8") if raw.isascii() else _decode_raw_header(raw, charset, [])


def _address_of_text(text: str) -> Address:
    """An address read from decoded text (a From that was only an encoded word)."""
    match = _NAME_ADDR.fullmatch(text)
    if match is not None:
        return Address(" ".join(match.group(1).split()).strip('" '), match.group(2))
    match = _BARE_ADDR.fullmatch(text)
    if match is not None:
        return Address("", match.group(1))
    return Address(text.strip(), "")


def parse_address_list(value: bytes | str | None, charset: str | None = None) -> tuple[Address, ...]:
    """Every address in a To/Cc-like header, display names decoded (never raises).

    The raw value is split first and display names decoded after, so an encoded
    comma inside a name cannot split an address. ``charset`` is the body's declared
    charset, tried first for raw 8-bit display names. Source routes are dropped
    (the mailbox is what follows the colon), pipermail's ``user at host (Name)`` is
    read as ``user@host``, and a value that is only an encoded word is decoded
    before it is read (never lower-cased or trimmed first).
    """
    if not value:
        return ()
    raw_text = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
    if "\n" in raw_text or "\r" in raw_text:
        raw_text = re.sub(r"\r?\n|\r", "", raw_text)
    if "<@" in raw_text or "< @" in raw_text:
        raw_text = _SOURCE_ROUTE.sub("<", raw_text)
    # The common single-address shapes, read as getaddresses reads them (a test
    # checks that on many generated values); anything else goes to getaddresses.
    match = _NAME_ADDR.fullmatch(raw_text)
    if match is not None:
        display, _ = decode_header_text(" ".join(match.group(1).split()), charset)
        return (Address(display.strip(), _clean_email(match.group(2), charset)),)
    match = _BARE_ADDR.fullmatch(raw_text)
    if match is not None:
        return (Address("", _clean_email(match.group(1), charset)),)
    if "<" not in raw_text and "," not in raw_text and ";" not in raw_text and "(" not in raw_text:
        tokens = raw_text.split()
        if len(tokens) > 1 and all(_BARE_ADDR.fullmatch(t) for t in tokens):
            # Addresses listed without commas ("a@x b@y"): each is an address.
            return tuple(Address("", _clean_email(t, charset)) for t in tokens)
    if "@" not in raw_text:
        match = _PIPERMAIL.fullmatch(raw_text)
        if match is not None:
            display, _ = decode_header_text(match.group(3) or "", charset)
            return (Address(display.strip(), f"{match.group(1)}@{match.group(2)}"),)
        if "=?" in raw_text:
            decoded, _ = decode_header_text(raw_text, charset)
            if "=?" not in decoded:
                return (_address_of_text(decoded),)
    if "\\@" in raw_text:  # an escaped "@": getaddresses takes what follows the last "@" for the address
        return _strict_addresses(raw_text, charset)
    from email.utils import getaddresses  # unusual address shapes only; email.utils costs ~3 ms at import

    try:
        pairs = getaddresses([raw_text])
    except (TypeError, ValueError, IndexError):
        return (_unreadable_address(raw_text, charset),)
    result = []
    for name, email in pairs:
        if not name and not email:
            continue
        email = email.strip()
        if "@" in email and not _HAS_LOCAL_AND_DOMAIN.fullmatch(email):
            # "@host" or "user@": a piece of something getaddresses could not read, not an address.
            return _strict_addresses(raw_text, charset)
        display, _ = decode_header_text(name, charset)
        result.append(Address(display.strip(), _clean_email(email, charset)))
    return tuple(result)


_HAS_LOCAL_AND_DOMAIN = re.compile(r".*[^@\s]@[^@\s]+")


def _unreadable_address(raw_text: str, charset: str | None) -> Address:
    """A From-like value with no readable address: its raw text as the name (shown through the
    inert sinks like any name), no address (never one made from a piece of it)."""
    text, _ = decode_header_text(" ".join(raw_text.split()), charset)
    return Address(text.strip(), "")


def _strict_addresses(raw_text: str, charset: str | None) -> tuple[Address, ...]:
    """The addresses ``policy.default`` reads in a value the legacy parser misreads (a quoted-pair
    outside quotes: ``<Postmaster\\@example.com@xxx.com>`` is ``xxx.com`` to ``getaddresses``).
    The valid addresses it finds are kept; for an invalid one the raw value stands (after them)
    as a name with no address."""
    try:
        header = _policy().header_factory("to", raw_text)
        found = [(a.display_name, a.username, a.domain, a.addr_spec) for a in header.addresses]
        defects = header.defects
    except Exception:  # noqa: BLE001 - the header classes raise on some inputs
        return (_unreadable_address(raw_text, charset),)
    valid = tuple(Address(" ".join(name.split()), _clean_email(spec, charset))
                  for name, user, domain, spec in found if user and domain)
    if len(valid) < len(found) or not valid and defects:
        return valid + (_unreadable_address(raw_text, charset),)
    return valid


# ---------------------------------------------------------------------------
# List-Unsubscribe
# ---------------------------------------------------------------------------

def list_unsubscribe(value: str | bytes | None) -> dict[str, list[str]]:
    """Parse List-Unsubscribe into ``{"https": [...], "mailto": [...], "other": [...]}``.

    Targets are only parsed, never fetched or sent to. Plain ``http:`` targets go to
    ``other``: they are shown, but are not a safe one-click target.
    """
    result: dict[str, list[str]] = {"https": [], "mailto": [], "other": []}
    if not value:
        return result
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    for target in re.findall(r"<([^<>]+)>", value):
        target = re.sub(r"\s+", "", target)
        scheme = target.split(":", 1)[0].lower()
        if scheme == "https":
            result["https"].append(target)
        elif scheme == "mailto":
            result["mailto"].append(target)
        else:
            result["other"].append(target)
    return result


# ---------------------------------------------------------------------------
# Full parse
# ---------------------------------------------------------------------------

def _policy(name: str = "default") -> EmailPolicy:
    """``email.policy.default`` (``"default"``), or the canonical form of a signed entity
    (``"canonical"``: lines end CRLF, headers written back as they came, no refolding)."""
    made = _EMAIL.get(name)
    if made is None:
        from email import policy  # the first full parse loads it: ~11 ms at import (see the top)

        made = policy.default if name == "default" else policy.default.clone(
            linesep="\r\n", max_line_length=0, refold_source="none")
        _EMAIL[name] = made
    return made  # type: ignore[return-value]


def _parse(raw: bytes, headersonly: bool = False) -> EmailMessage:
    """The stdlib parser with ``policy.default`` (a parser per call: it keeps no state)."""
    from email.parser import BytesParser  # with email.policy, on the first full parse (see the top)

    return BytesParser(policy=_policy()).parsebytes(raw, headersonly=headersonly)  # type: ignore[return-value]


_KEY_FIELDS = frozenset((b"message-id", b"references", b"in-reply-to", b"date", b"subject", b"from", b"to", b"cc",
                         b"content-type"))
_ADDRESS_HEADERS = ("to", "cc")


@dataclass
class _Walk:
    """What a walk over the MIME tree found, in display order."""

    text_parts: list[TextPart]
    attachments: list[AttachmentInfo]
    attachment_parts: list[EmailMessage]
    notes: list[str]
    pgp: list[PgpMaterial] = field(default_factory=list)  # OpenPGP pieces, for backends/pgp.py
    raw: bytes = b""  # the message as parsed: a signature is checked on its original bytes
    forwarded: int = 0  # how many message/rfc822 levels the walk is inside (a forwarded message's pieces)


def _raw_header_items(msg: EmailMessage) -> list[tuple[str, bytes]]:
    items = []
    for name, value in msg.raw_items():
        if not isinstance(value, str):  # already a header object (not from the parser)
            value = str(value)
        # utf-8 + surrogateescape gives back the original bytes of an 8-bit header.
        items.append((name, value.encode("utf-8", "surrogateescape")))
    return items


def _address_text(address: Address) -> str:
    return f"{address.name} <{address.email}>" if address.name else (address.email or "(no address)")


def _display_header(name: str, raw: bytes, notes: list[str], charset: str | None = None) -> str:
    lname = name.lower()
    if lname in ("message-id", "in-reply-to", "references", "date", "received", "dkim-signature",
                 "arc-seal", "arc-message-signature", "authentication-results"):
        text = raw.decode("utf-8", "replace")
        return re.sub(r"\r?\n|\r", "", text)
    text, header_notes = decode_header_text(raw, charset)
    for note in header_notes:
        notes.append(f"{name}: {note}")
    return text


def _defect_text(defect: object) -> str:
    text = str(defect).strip() or type(defect).__name__
    name = type(defect).__name__
    return text if text == name else f"{name}: {text}"


def _part_label(part: EmailMessage) -> str:
    filename = None
    try:
        filename = part.get_filename()
    except Exception:  # noqa: BLE001 - a broken parameter must not lose the part
        filename = None
    label = part.get_content_type()
    return f"{label} ({filename})" if filename else label


def _payload_bytes(part: EmailMessage) -> tuple[bytes, list[str]]:
    """Decoded transfer-encoding of one leaf part, with notes for what was broken."""
    notes: list[str] = []
    before = len(part.defects)
    cte = str(part.get("content-transfer-encoding", "7bit")).strip().lower()
    try:
        data = part.get_payload(decode=True)
    except Exception as exc:  # noqa: BLE001 - decoding must never lose the message
        raw = part.get_payload(decode=False)
        data = raw.encode("ascii", "surrogateescape") if isinstance(raw, str) else b""
        notes.append(f"could not decode {cte}: {exc}; shown undecoded")
    if data is None:
        data = b""
    for defect in part.defects[before:]:
        name = type(defect).__name__
        if name == "InvalidBase64LengthDefect":
            salvaged = _salvage_base64(part)
            if salvaged is None:
                notes.append("broken base64 (invalid length); shown undecoded")
            else:
                data, dropped = salvaged
                notes.append(f"broken base64 (invalid length); the last {dropped} characters "
                             "could not be decoded and were dropped")
        elif name == "InvalidBase64PaddingDefect":
            notes.append("base64 padding was wrong; decoded anyway")
        elif name == "InvalidBase64CharactersDefect":
            notes.append("base64 contained invalid characters; they were skipped")
        else:
            notes.append(_defect_text(defect))
    if cte == "quoted-printable":
        raw = part.get_payload(decode=False)
        if isinstance(raw, str) and re.search(r"=(?![0-9A-Fa-f]{2}|\r?\n|\r|$)", raw, re.MULTILINE):
            notes.append("quoted-printable contained invalid escapes; kept as written")
    elif cte not in ("7bit", "8bit", "binary", "base64", "quoted-printable", "x-uuencode", "uuencode",
                     "x-uue", "uue", ""):
        notes.append(f"unknown Content-Transfer-Encoding {cte!r}; shown undecoded")
    return data, notes


_BASE64_ALPHABET = re.compile(rb"[^A-Za-z0-9+/]")


def _salvage_base64(part: EmailMessage) -> tuple[bytes, int] | None:
    """Decode the longest whole prefix of a base64 body whose length is wrong."""
    raw = part.get_payload(decode=False)
    if not isinstance(raw, str):
        return None
    clean = _BASE64_ALPHABET.sub(b"", raw.encode("ascii", "ignore"))
    usable = len(clean) - len(clean) % 4
    try:
        return base64.b64decode(clean[:usable]), len(clean) - usable
    except (binascii.Error, ValueError):
        return None


# Inline styles that hide text from the reader while a filter (or a model) still sees it.
_HIDDEN_STYLE = _Later(
    r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0*(?:\.0+)?(?:px|pt|em|rem|%)?\s*(?:;|$|!)"
    r"|opacity\s*:\s*0(?:\.0+)?\s*(?:;|$)",
    re.IGNORECASE)
_WHITE_TEXT = _Later(r"(?<![-\w])color\s*:\s*(?:#fff(?:fff)?\b|white\b|rgba?\(\s*255\s*,\s*255\s*,\s*255)",
                         re.IGNORECASE)
_DARK_BACKGROUND = _Later(r"background(?:-color)?\s*:\s*(?!#fff|white|transparent|none)[#\w]", re.IGNORECASE)
_TAG = _Later(r"<(/?)([A-Za-z][A-Za-z0-9]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>")
_STYLE_ATTR = _Later(r"""\bstyle\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
_FONT_WHITE = _Later(r"""\bcolor\s*=\s*["']?\s*(?:#fff(?:fff)?|white)\b""", re.IGNORECASE)
_VOID_TAGS = frozenset(("br", "img", "hr", "meta", "link", "input", "col", "area", "base", "wbr", "source"))
HIDDEN_OPEN, HIDDEN_CLOSE = "[hidden text: ", "]"


def _is_hidden(tag: str, attrs: str) -> bool:
    match = _STYLE_ATTR().search(attrs)
    style = next((g for g in match.groups() if g is not None), "") if match else ""
    if style and _HIDDEN_STYLE().search(style):
        return True
    # White text is hidden on the usual white page, not on a background it sets itself.
    if style and _WHITE_TEXT().search(style) and not _DARK_BACKGROUND().search(style):
        return True
    if re.search(r"(?:^|\s)hidden(?:\s|=|$)", attrs, re.IGNORECASE):
        return True
    return tag == "font" and _FONT_WHITE().search(attrs) is not None


def _mark_hidden(html: str) -> tuple[str, int]:
    """Wrap the text of elements hidden by their style in visible markers; count them."""
    if "<" not in html:
        return html, 0
    out: list[str] = []
    position = 0
    stack: list[tuple[str, bool]] = []
    hidden_depth = 0
    count = 0
    for match in _TAG().finditer(html):
        closing, tag, attrs = match.group(1), match.group(2).lower(), match.group(3)
        if tag in ("style", "script", "head", "title"):
            continue
        if not closing:
            if tag in _VOID_TAGS or attrs.rstrip().endswith("/"):
                continue
            hidden = hidden_depth == 0 and _is_hidden(tag, attrs)
            stack.append((tag, hidden))
            if hidden:
                hidden_depth += 1
                count += 1
                out.append(html[position:match.end()])
                out.append(HIDDEN_OPEN)
                position = match.end()
            continue
        # A closing tag closes the nearest open element of that name (and any left open inside it).
        for depth in range(len(stack) - 1, -1, -1):
            if stack[depth][0] == tag:
                closed = stack[depth:]
                del stack[depth:]
                if any(h for _, h in closed):
                    hidden_depth = 0
                    out.append(html[position:match.start()])
                    out.append(HIDDEN_CLOSE)
                    position = match.start()
                break
    out.append(html[position:])
    if hidden_depth:
        out.append(HIDDEN_CLOSE)
    return "".join(out), count


def _html_to_text(html: str) -> tuple[str, str | None]:
    """HTML to readable text. html2text only rewrites markup; nothing is fetched.

    Text the HTML hides from its reader (display:none, zero-size fonts, white text,
    ...) is kept and wrapped in ``[hidden text: ...]`` with a note: it is what a
    lure hides from a person and shows to a filter.
    """
    notes = []
    try:
        html, hidden = _mark_hidden(html)
    except Exception:  # noqa: BLE001 - marking is best effort; the text itself must not be lost
        hidden = 0
    if hidden:
        notes.append(f"the HTML hides text from its reader ({hidden} element{'s' if hidden > 1 else ''}: "
                     "display:none, zero-size, white or invisible); shown marked [hidden text: ...]")
    try:
        # Lazy: html2text costs about 50 ms to import and only HTML-only mail needs it.
        import html2text
    except ImportError:  # pragma: no cover - a declared dependency
        notes.append("html2text is not installed; tags stripped")
        return re.sub(r"<[^>]+>", "", html), "; ".join(notes)
    converter = html2text.HTML2Text()
    converter.body_width = 0
    converter.ignore_images = False  # keep alt text and the target visible, never load it
    converter.images_to_alt = True
    converter.unicode_snob = True
    try:
        return converter.handle(html).strip("\n") + "\n", "; ".join(notes) or None
    except Exception as exc:  # noqa: BLE001 - hostile HTML must not lose the message
        notes.append(f"HTML could not be converted ({exc}); tags stripped")
        return re.sub(r"<[^>]+>", "", html), "; ".join(notes)


def _strip_cr(text: str) -> str:
    """Line ends of decoded text as LF: CRs left over from CRLF files (inside base64, say) go."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _text_part(part: EmailMessage, content_type: str) -> TextPart:
    data, notes = _payload_bytes(part)
    label = part.get_param("charset")
    if isinstance(label, tuple):  # RFC 2231 charset*=
        label = label[2]
    text, charset_note = decode_bytes(data, label if isinstance(label, str) else None)
    if charset_note:
        notes.append(charset_note)
    text = _strip_cr(text)
    from_html = False
    if content_type == "text/html":
        text, html_note = _html_to_text(text)
        text = _strip_cr(text)
        from_html = True
        if html_note:
            notes.append(html_note)
    return TextPart(content_type=content_type, text=text, note="; ".join(notes) or None, from_html=from_html)


_HREF = _Later(r"""\bhref\s*=\s*(?:"([^"<>]*)"|'([^'<>]*)'|([^\s>"']+))""", re.IGNORECASE)


def _html_only_links(html_part: EmailMessage, plain_text: str) -> list[str]:
    """Link targets of an HTML alternative that its text/plain sibling does not show."""
    try:
        data, _ = _payload_bytes(html_part)
        label = html_part.get_param("charset")
        html, _ = decode_bytes(data, label if isinstance(label, str) else None)
    except Exception:  # noqa: BLE001 - a comparison only; never lose the message over it
        return []
    plain = " ".join(plain_text.split())
    links = []
    for match in _HREF().finditer(html):
        target = next(g for g in match.groups() if g is not None).strip()
        if not target or target.startswith("#") or target.lower().startswith("mailto:"):
            continue
        from html import unescape  # links of an HTML part only; html.entities costs ~1 ms at import

        target = unescape(target)
        if target not in plain and target.rstrip("/") not in plain and target not in links:
            links.append(target)
    return links


def _header_summary_text(msg: EmailMessage) -> str:
    lines = []
    for name in ("From", "To", "Cc", "Date", "Subject"):
        raw = msg.get(name)
        if raw is not None:
            text, _ = decode_header_text(str(raw))
            lines.append(f"{name}: {text}")
    return "\n".join(lines) + "\n"


def _walk(msg: EmailMessage, raw: bytes = b"") -> _Walk:
    result = _Walk([], [], [], [], raw=raw)
    _walk_into(msg, result, depth=0)
    return result


def _attach(part: EmailMessage, result: _Walk, extra_notes: list[str] | None = None) -> None:
    notes = list(extra_notes or [])
    index = len(result.attachments)
    filename = None
    try:
        filename = part.get_filename()
    except Exception as exc:  # noqa: BLE001
        notes.append(f"filename unreadable: {exc}")
    if filename and "=?" in filename:
        filename, name_notes = decode_header_text(filename)
        notes.extend(name_notes)
    if not filename:
        filename = f"unnamed-{index + 1}"
        notes.append("the part names no file; name made up")
    data, payload_notes = _payload_bytes(part)
    data = _as_saved(part, data)
    notes.extend(payload_notes)
    if part.get_content_type() == "application/pgp-keys":
        from mailtriage.backends.pgp_status import PgpMaterial  # OpenPGP pieces only (see the top)

        result.pgp.append(PgpMaterial("key", -1, -1, data, label=filename))  # offered for import, on request
    result.attachments.append(AttachmentInfo(
        filename=filename, content_type=part.get_content_type(), size=len(data),
        note="; ".join(notes) or None))
    result.attachment_parts.append(part)


def _message_bytes(part: EmailMessage) -> bytes:
    """The bytes of the message a message/rfc822 part carries."""
    children = part.get_payload()
    inner = children[0] if isinstance(children, list) and children else None
    if inner is None:
        return b""
    try:
        return inner.as_bytes()
    except Exception:  # noqa: BLE001 - a broken inner header must not lose the message
        return inner.as_string().encode("utf-8", "surrogateescape")


def _attach_message(part: EmailMessage, result: _Walk) -> None:
    """List a forwarded message (message/rfc822) as an attachment named after its subject."""
    data = _message_bytes(part)
    children = part.get_payload()
    inner = children[0] if isinstance(children, list) and children else None
    subject = ""
    if inner is not None:
        try:
            subject, _ = decode_header_text(str(inner.get("subject", "") or ""))
        except Exception:  # noqa: BLE001
            subject = ""
    name = part.get_filename() or (re.sub(r"[\x00-\x1f/\\]+", " ", subject).strip()[:80] or "forwarded message") + ".eml"
    result.attachments.append(AttachmentInfo(filename=name, content_type="message/rfc822", size=len(data)))
    result.attachment_parts.append(part)


def _walk_into(part: EmailMessage, result: _Walk, depth: int) -> None:
    """Walk one part; a part the stdlib cannot read becomes raw text with a note."""
    try:
        _walk_part(part, result, depth)
    except Exception as exc:  # noqa: BLE001 - e.g. a NUL in a parameter makes the header classes raise
        note = f"a MIME part could not be read ({type(exc).__name__}: {exc}); its raw text is shown"
        result.notes.append(note)
        try:
            raw = part.get_payload(decode=False)
        except Exception:  # noqa: BLE001
            raw = None
        if isinstance(raw, str):
            text, charset_note = decode_bytes(raw.encode("utf-8", "surrogateescape"), None)
            result.text_parts.append(TextPart("text/plain", text, note="; ".join(filter(None, (note, charset_note)))))


def _walk_part(part: EmailMessage, result: _Walk, depth: int) -> None:
    if depth > 50:
        result.notes.append("MIME nesting deeper than 50 levels; the rest is not shown")
        return
    for defect in part.defects:
        note = f"{_part_label(part)}: {_defect_text(defect)}"
        if note not in result.notes:
            result.notes.append(note)
    content_type = part.get_content_type()
    maintype = part.get_content_maintype()
    disposition = part.get_content_disposition()

    if part.is_multipart():
        children = part.get_payload()
        if not isinstance(children, list):
            children = []
        if content_type == "message/delivery-status":
            blocks = []
            for block in children:
                blocks.append("\n".join(f"{k}: {v}" for k, v in block.items()))
            result.text_parts.append(TextPart(content_type=content_type, text="\n\n".join(blocks) + "\n"))
            return
        if content_type == "message/external-body":
            result.text_parts.append(_external_reference(part, children))
            return
        if content_type == "message/rfc822" or maintype == "message":
            if content_type == "message/rfc822":
                _attach_message(part, result)  # a forwarded message is listed and fetchable, as bytes
            result.forwarded += 1
            for inner in children:
                result.text_parts.append(TextPart(
                    content_type="message/rfc822",
                    text="---- attached message ----\n" + _header_summary_text(inner)))
                _walk_into(inner, result, depth + 1)
            result.forwarded -= 1
            return
        if content_type == "multipart/alternative" and children:
            chosen = _choose_alternative(children)
            html = next((c for c in children if c.get_content_type() == "text/html"
                         and c.get_content_disposition() != "attachment"), None)
            before = len(result.text_parts)
            _walk_into(chosen, result, depth + 1)
            if html is not None and chosen is not html and chosen.get_content_type() == "text/plain" \
                    and len(result.text_parts) == before + 1:
                plain = result.text_parts[-1]
                if not plain.text.strip():
                    # An empty text alternative hides the message: show the HTML one.
                    del result.text_parts[-1]
                    _walk_into(html, result, depth + 1)
                    if len(result.text_parts) == before + 1:
                        shown = result.text_parts[-1]
                        note = "the text/plain alternative is empty; the HTML alternative is shown"
                        result.text_parts[-1] = TextPart(shown.content_type, shown.text,
                                                         note="; ".join(filter(None, (note, shown.note))),
                                                         from_html=shown.from_html)
                else:
                    extra = _html_only_links(html, plain.text)
                    if extra:
                        listed = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
                        note = (f"the alternatives differ: links only in the HTML alternative "
                                f"(not shown here): {listed}")
                        result.text_parts[-1] = TextPart(plain.content_type, plain.text,
                                                         note="; ".join(filter(None, (plain.note, note))),
                                                         from_html=plain.from_html)
            for other in children:
                # Alternatives that are not text (e.g. a calendar invite) stay reachable.
                if other is not chosen and other.get_content_maintype() not in ("text", "multipart"):
                    _attach(other, result)
            return
        if _pgp_mime(part, children):
            _walk_pgp(part, children, result, depth)
            return
        if depth == 0 and content_type == "multipart/mixed" and _exchange_mangled(children):
            data, _ = _payload_bytes(children[-1])
            note = ("PGP/MIME encrypted (RFC 3156), rewritten by Exchange into multipart/mixed: "
                    "read as multipart/encrypted")
            result.notes.append(note)
            _whole_encrypted(data, result, note)
            return
        if not children:
            result.notes.append(f"{content_type} has no parts")
        for child in children:
            _walk_into(child, result, depth + 1)
        return

    if maintype == "multipart":
        # Declared multipart but unsplittable (no or wrong boundary): show the raw text.
        text_part = _text_part(part, "text/plain")
        note = f"{content_type} could not be split into parts; shown as raw text"
        result.text_parts.append(TextPart("text/plain", text_part.text,
                                          note="; ".join(filter(None, (note, text_part.note)))))
        return
    if disposition == "attachment":
        _attach(part, result)
        return
    if maintype == "text" or content_type in ("message/rfc822-headers",):
        if content_type in ("text/plain", "text/html") or part.get_filename() is None:
            result.text_parts.append(_text_part(part, content_type))
            if content_type == "text/plain" and "-----BEGIN PGP " in result.text_parts[-1].text:
                _keep_inline_armor(part, result)
            elif content_type == "text/html":
                _keep_html_armor(part, result)
            return
    if content_type == "message/external-body":
        result.text_parts.append(_external_reference(part, []))
        return
    _attach(part, result)


# RFC 2046 §5.2.3 / RFC 2017: the parameters that say where an external body is.
_EXTERNAL_PARAMETERS = ("access-type", "url", "site", "directory", "name", "server", "subject", "mode",
                        "size", "expiration")


def _external_reference(part: EmailMessage, children: list) -> TextPart:
    """A message/external-body part: where its body is said to be, as text (never fetched, never
    an attachment: the part holds no bytes, and saving it gave an empty file)."""
    lines = ["[external reference: the body is not in this message and is not fetched]"]
    for name in _EXTERNAL_PARAMETERS:
        value = part.get_param(name, header="content-type")
        if value:
            text = value if isinstance(value, str) else str(value[2] if isinstance(value, tuple) else value)
            lines.append(f"{name}: {' '.join(text.split())}")
    inner = children[0] if children else None
    if inner is not None:
        try:
            lines.append(f"content-type: {inner.get_content_type()}")
            filename = inner.get_filename() or part.get_filename()
        except Exception:  # noqa: BLE001 - a broken inner header: the reference is still shown
            filename = None
        if filename:
            lines.append(f"filename: {' '.join(str(filename).split())}")
    return TextPart(content_type="message/external-body", text="\n".join(lines) + "\n",
                    note="message/external-body points elsewhere; nothing is fetched or saved")


# RFC 3156: the protocol parameter names what the second part of the pair holds.
_PGP_PROTOCOLS = {"multipart/encrypted": "application/pgp-encrypted",
                  "multipart/signed": "application/pgp-signature"}
# What an encrypted part shows until backends/pgp.py opens it (or says why it could not).
ENCRYPTED_PLACEHOLDER = "application/pgp-encrypted"
ATTACHED_ENCRYPTED_TEXT = "[attached encrypted part: not decrypted, see the attachments]\n"
ATTACHED_ENCRYPTED_NOTE = ("an encrypted part inside a clear mail: not decrypted (only an encryption of the whole "
                           "message is opened)")


def _pgp_mime(part: EmailMessage, children: list[EmailMessage]) -> bool:
    """An RFC 3156 pair: the protocol parameter and the part it names are both there (else walked as usual)."""
    protocol = _PGP_PROTOCOLS.get(part.get_content_type())
    if protocol is None or len(children) != 2:
        return False
    if str(part.get_param("protocol", "") or "").strip().lower() != protocol:
        return False
    # multipart/encrypted: the first part is the protocol's; multipart/signed: the second.
    named = children[0] if part.get_content_type() == "multipart/encrypted" else children[1]
    return named.get_content_type() == protocol


def signed_entity_bytes(part: EmailMessage) -> bytes:
    """The bytes a PGP/MIME signature covers: the first part as written, in CRLF form (RFC 3156 §5)."""
    from email.generator import BytesGenerator  # signed messages only (see the top)
    from io import BytesIO  # with it

    buffer = BytesIO()
    BytesGenerator(buffer, mangle_from_=False, policy=_policy("canonical")).flatten(part, linesep="\r\n")
    data = buffer.getvalue()
    # The generator may leave bare LFs inside a body it kept verbatim.
    return re.sub(rb"(?<!\r)\n", b"\r\n", data)


def _keep_inline_armor(part: EmailMessage, result: _Walk) -> None:
    """Inline armor: keep the part's transfer-decoded bytes and charset, so gpg checks a clearsigned
    text on the bytes that were signed (a latin-1 or koi8-r text re-encoded as UTF-8 reads BAD)."""
    from mailtriage.backends.pgp_status import PgpMaterial  # OpenPGP pieces only (see the top)

    data, _ = _payload_bytes(part)
    index = len(result.text_parts) - 1
    result.pgp.append(PgpMaterial("inline", index, index + 1, data, label=_part_charset(part),
                                  forwarded=result.forwarded > 0))


def _part_charset(part: EmailMessage) -> str:
    label = part.get_param("charset")
    if isinstance(label, tuple):  # RFC 2231 charset*=
        label = label[2]
    return label if isinstance(label, str) else ""


HTML_ARMOR_NOTE = ("OpenPGP armor in HTML: shown as the text extracted from the HTML (entities decoded, <br> and "
                   "blocks as line ends)")


def _keep_html_armor(part: EmailMessage, result: _Walk) -> None:
    """Inline armor in an HTML part (webmail sends it so): the part shows the text extracted from
    the HTML, and gpg reads the armor in that text (in the part's charset), as in text/plain.
    html2text's rendering would rewrap or escape the armor; text the HTML hides is kept, marked."""
    data, _ = _payload_bytes(part)
    label = _part_charset(part)
    markup, _ = decode_bytes(data, label or None)
    if "BEGIN PGP" not in markup:
        return
    marked, hidden = _mark_hidden(markup)
    text = html_armor_text(marked)
    if "-----BEGIN PGP " not in text:
        return
    from mailtriage.backends.pgp_status import PgpMaterial  # OpenPGP pieces only (see the top)

    shown = result.text_parts[-1]
    notes = [shown.note, HTML_ARMOR_NOTE]
    if hidden:
        notes.append(f"the HTML hides text from its reader ({hidden} element{'s' if hidden > 1 else ''}); "
                     "shown marked [hidden text: ...]")
    links = _html_only_links(part, text)  # the extracted text shows anchor text only: name the real targets
    if links:
        listed = ", ".join(links[:5]) + (f" and {len(links) - 5} more" if len(links) > 5 else "")
        notes.append(f"links in the HTML whose targets the text does not show: {listed}")
    result.text_parts[-1] = TextPart(shown.content_type, text, note="; ".join(dict.fromkeys(filter(None, notes))),
                                     from_html=True)
    try:
        encoded = text.encode(label or "utf-8")
    except (LookupError, UnicodeError):
        encoded, label = text.encode("utf-8"), "utf-8"
    index = len(result.text_parts) - 1
    result.pgp.append(PgpMaterial("inline", index, index + 1, encoded, label=label, forwarded=result.forwarded > 0))


_HTML_DROPPED = _Later(r"<!--.*?(?:-->|$)|<(script|style|head|title)\b[^>]*>.*?(?:</\1\s*>|$)",
                       re.IGNORECASE | re.DOTALL)
_HTML_BLOCKS = frozenset(("address", "article", "blockquote", "body", "center", "dd", "div", "dl", "dt", "footer",
                          "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "html", "li", "ol", "p", "pre",
                          "section", "table", "td", "th", "tr", "ul"))
_HTML_SPACE = re.compile(r"[ \t\r\n\f]+")  # not \s: a non-breaking space is never collapsed


def html_armor_text(markup: str) -> str:
    """The text of HTML as a browser lays it out, for reading armor out of it: comments, scripts
    and styles dropped, whitespace collapsed (kept inside <pre>), <br> as a line end and a block
    element as the start of a new line, entities decoded, non-breaking spaces as spaces."""
    from html import unescape  # HTML holding armor only (see _html_only_links)

    out: list[str] = []

    def line_end() -> None:
        if out and not out[-1].endswith("\n"):
            out[-1] = out[-1].rstrip(" ")
            out.append("\n")

    def add(chunk: str, pre: bool) -> None:
        if not pre:
            chunk = _HTML_SPACE.sub(" ", chunk)
            if not out or out[-1].endswith("\n"):
                chunk = chunk.lstrip(" ")  # a browser shows no space at the start of a line
        if chunk:
            out.append(unescape(chunk).replace("\xa0", " "))

    markup = _HTML_DROPPED().sub("", _strip_cr(markup))
    pre = 0
    position = 0
    pre_opened = False
    for match in _TAG().finditer(markup):
        chunk = markup[position:match.start()]
        if pre_opened and chunk.startswith("\n"):
            chunk = chunk.split("\n", 1)[1]  # a browser does not show the line end right after <pre>
        add(chunk, pre > 0)
        position = match.end()
        closing, tag = match.group(1), match.group(2).lower()
        pre_opened = tag == "pre" and not closing
        if tag == "br":
            if out and not pre:
                out[-1] = out[-1].rstrip(" ")
            out.append("\n")
        elif tag in _HTML_BLOCKS:
            line_end()
        if tag == "pre":
            pre = max(0, pre - 1) if closing else pre + 1
    add(markup[position:], pre > 0)
    return "".join(out).strip("\n") + "\n"


_MAX_BOUNDARY_TRIES = 50


def raw_first_part(raw: bytes, part: EmailMessage, first: EmailMessage) -> bytes | None:
    """The first body part of the multipart ``part`` exactly as ``raw`` carries it, in CRLF form.

    RFC 3156 §5: a signature covers the signed part as sent. The email generator writes a part
    back in its own way (a space after each colon, an empty value, a final line end), which reads
    as a BAD signature; so the part is cut out of the raw bytes between its boundaries. The cut
    is taken only when it parses back to the same part (a boundary string repeated elsewhere in
    the mail cannot swap in other bytes); None when no cut does.
    """
    boundary = part.get_boundary()
    if not boundary or not raw:
        return None
    delimiter = re.escape(b"--" + boundary.encode("utf-8", "surrogateescape"))
    opening = re.compile(rb"(?:^|(?<=\n))" + delimiter + rb"[ \t]*\r?\n")
    closing = re.compile(rb"\r?\n" + delimiter)
    expected = None
    for tried, start in enumerate(opening.finditer(raw)):
        if tried >= _MAX_BOUNDARY_TRIES:
            break  # a mail full of look-alike delimiters: the generator's bytes are checked instead
        end = closing.search(raw, start.end())
        if end is None:
            break
        candidate = raw[start.end():end.start()]
        if expected is None:
            expected = signed_entity_bytes(first)
        if signed_entity_bytes(_parse(candidate)) == expected:
            return re.sub(rb"(?<!\r)\n", b"\r\n", candidate)
    return None


def _whole_encrypted(data: bytes, result: _Walk, note: str) -> None:
    """The message is one encryption: a placeholder part and the ciphertext for backends/pgp.py."""
    from mailtriage.backends.pgp_status import PgpMaterial  # PGP/MIME only (see the top)

    first = len(result.text_parts)
    result.text_parts.append(TextPart(ENCRYPTED_PLACEHOLDER, "[encrypted part: not decrypted]\n", note=note))
    result.pgp.append(PgpMaterial("encrypted", first, first + 1, data))


def _exchange_mangled(children: list[EmailMessage]) -> bool:
    """Exchange's rewrite of a multipart/encrypted message: multipart/mixed of an (optional) empty
    text part, the application/pgp-encrypted version part and the armored ciphertext."""
    if len(children) == 3:
        if children[0].get_content_type() != "text/plain" or _payload_bytes(children[0])[0].strip():
            return False
        children = children[1:]
    if len(children) != 2 or children[0].get_content_type() != "application/pgp-encrypted":
        return False
    if b"Version: 1" not in _payload_bytes(children[0])[0]:
        return False
    return _payload_bytes(children[1])[0].lstrip().startswith(b"-----BEGIN PGP MESSAGE-----")


def _walk_pgp(part: EmailMessage, children: list[EmailMessage], result: _Walk, depth: int) -> None:
    """RFC 3156 pairs: keep the ciphertext or the signed bytes for the decryption step.

    Nothing is decrypted here (this runs on every parse); an encrypted pair shows as one
    placeholder part, a signed pair shows its first part as any part and hides the signature.
    """
    from mailtriage.backends.pgp_status import PgpMaterial  # PGP/MIME only (see the top)

    if part.get_content_type() == "multipart/encrypted":
        data, _ = _payload_bytes(children[1])
        first = len(result.text_parts)
        if depth == 0:
            _whole_encrypted(data, result, "PGP/MIME encrypted (RFC 3156)")
            return
        # Only an encryption of the whole message is the sender's report: one inside a clear mail
        # (a part, a forwarded message) may be anyone's old ciphertext, wrapped to be decrypted and
        # quoted back. It is listed as an attachment and never opened into the text.
        result.text_parts.append(TextPart(ENCRYPTED_PLACEHOLDER, ATTACHED_ENCRYPTED_TEXT, note=ATTACHED_ENCRYPTED_NOTE))
        _attach(children[1], result, [ATTACHED_ENCRYPTED_NOTE])
        result.pgp.append(PgpMaterial("attached-encrypted", first, first + 1, data))
        return
    first = len(result.text_parts)
    _walk_into(children[0], result, depth + 1)
    try:
        signed = raw_first_part(result.raw, part, children[0]) or signed_entity_bytes(children[0])
    except Exception as exc:  # noqa: BLE001 - a part the generator cannot write is still shown
        result.notes.append(f"the signed part could not be written back for checking ({type(exc).__name__})")
        return
    signature, _ = _payload_bytes(children[1])
    result.pgp.append(PgpMaterial("signed", first, len(result.text_parts), signed, signature,
                                  forwarded=result.forwarded > 0))


def _choose_alternative(children: list[EmailMessage]) -> EmailMessage:
    """Prefer text/plain, then a multipart holding text, then HTML, then the last."""
    for child in children:
        if child.get_content_type() == "text/plain" and child.get_content_disposition() != "attachment":
            return child
    for child in children:
        if child.is_multipart():
            return child
    for child in children:
        if child.get_content_type() == "text/html":
            return child
    return children[-1]


def _truncate(raw: bytes, max_bytes: int) -> tuple[bytes, str]:
    header, body_offset = split_header_block(raw)
    keep = max(0, max_bytes - len(header))
    note = (f"message is {len(raw):,} bytes, over the size cap of {max_bytes:,}; "
            f"body truncated to its first {keep:,} bytes")
    return raw[: body_offset + keep], note


def parse_message(raw: bytes, *, backend_ref: str | None = None, max_bytes: int | None = None,
                  hash_body: bool = False) -> Message:
    """Parse raw RFC 5322 bytes into a contract :class:`Message` (never raises for content).

    ``max_bytes`` caps how much of an oversized message is decoded: the headers are
    always read in full, the body is cut, and a message note says so. ``hash_body``:
    a synthetic Message-ID hashes the body too (the offline archives; backends that
    list from headers alone leave it off so listing and reading agree).

    Raises:
        TypeError: ``raw`` is not bytes.
    """
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise TypeError(f"parse_message needs bytes, not {type(raw).__name__}")
    raw = bytes(raw)
    notes: list[str] = []
    raw, line_note = normalize_line_ends(raw)
    if line_note:
        notes.append(line_note)
    raw = _fix_header_block(raw, notes)
    header_block, body_offset = split_header_block(raw)
    # For a synthetic ID, taken before any cap.
    body_head = raw[body_offset: body_offset + 4 * _SYNTHETIC_BODY_BYTES] if hash_body else None
    if max_bytes is not None and len(raw) > max_bytes:
        raw, cap_note = _truncate(raw, max_bytes)
        notes.append(cap_note)
    try:
        msg = _parse(raw)
    except Exception as exc:  # noqa: BLE001 - the stdlib parser is lenient; keep the mail anyway
        notes.append(f"MIME structure could not be parsed ({exc}); body shown as raw text")
        base = _message_from_headers(header_block, notes, backend_ref, body=body_head)
        body = raw[len(header_block):]
        text, note = decode_bytes(body, None)
        return _replace(base, text_parts=(TextPart("text/plain", _strip_cr(text), note=note),))
    try:
        base = _message_from_headers(header_block, notes, backend_ref, parsed=msg, body=body_head)
    except Exception as exc:  # noqa: BLE001 - fall back to the byte-level header scan
        notes.append(f"headers could not be parsed ({type(exc).__name__}: {exc})")
        base = _message_from_headers(header_block, notes, backend_ref, parsed=None, use_parser=False,
                                     body=body_head)
    walk = _walk(msg, raw)
    notes.extend(walk.notes)
    return _replace(base, text_parts=tuple(walk.text_parts), attachments=tuple(walk.attachments),
                    notes=tuple(dict.fromkeys(notes)), pgp=tuple(walk.pgp))


def _replace(message: Message, **changes: object) -> Message:
    return replace(message, **changes)


def parse_message_headers(raw: bytes, *, backend_ref: str | None = None, hash_body: bool = False) -> Message:
    """The cheap variant for listing: headers only, no body decoding.

    ``raw`` may be the whole message or just its header block. The result has no
    text parts or attachments. ``hash_body`` as for :func:`parse_message`.
    """
    raw = bytes(raw)
    notes: list[str] = []
    raw, line_note = normalize_line_ends(raw)
    if line_note:
        notes.append(line_note)
    raw = _fix_header_block(raw, notes)
    header_block, body_offset = split_header_block(raw)
    return _message_from_headers(header_block, notes, backend_ref, body=raw[body_offset:] if hash_body else None)


def _fix_header_block(raw: bytes, notes: list[str]) -> bytes:
    """Unfold header names folded away from their colon, and say when the block is malformed."""
    raw, unfolded = unfold_header_names(raw)
    if unfolded:
        notes.append("the header block is malformed: a field name is folded over lines; read as one field")
    header_block, _ = split_header_block(raw)
    bad = malformed_header_line(header_block)
    if bad is not None:
        block = header_block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        line = block[bad:].split(b"\n", 1)[0][:60].decode("utf-8", "replace")
        notes.append(f"the header block is malformed: the line {line!r} is not a header field; "
                     "the headers end there and the rest is read as the body")
    return raw


_CHARSET_PARAM = re.compile(rb"""charset\s*=\s*["']?([^"';\s]+)""", re.IGNORECASE)


def body_charset(content_type: bytes | None) -> str | None:
    """The charset a message's top Content-Type declares (for raw 8-bit headers): the read
    path and every listing decode raw header text with it first."""
    if not content_type:
        return None
    match = _CHARSET_PARAM.search(content_type)
    return match.group(1).decode("ascii", "replace") if match else None


_body_charset = body_charset  # the name backends/mbox.py imports


def _message_from_headers(header_block: bytes, notes: list[str], backend_ref: str | None,
                          parsed: EmailMessage | None = None, use_parser: bool = True,
                          body: bytes | None = None) -> Message:
    if parsed is None and use_parser:
        try:
            parsed = _parse(header_block + b"\n", headersonly=True)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"headers could not be parsed ({exc})")
            parsed = None
    items: list[tuple[str, bytes]] = _raw_header_items(parsed) if parsed is not None else []
    if parsed is not None:
        for defect in parsed.defects:
            if type(defect).__name__ in ("MissingHeaderBodySeparatorDefect",):
                notes.append(f"message: {_defect_text(defect)}")
    # The fields that identify and place a message come from the byte-level scan the
    # listing fast paths use too, so a listed message and its full parse agree.
    first = {k.decode("ascii"): v for k, v in header_fields(header_block, _KEY_FIELDS).items()}
    charset = _body_charset(first.get("content-type"))
    headers = tuple((name, _display_header(name, value, notes, charset)) for name, value in items)

    message_id = extract_msgid(first.get("message-id"))
    synthetic = False
    if message_id is None:
        if "message-id" in first:
            notes.append("the Message-ID header is unreadable; a synthetic ID stands in")
        message_id = synthetic_message_id(header_block, body)
        synthetic = True
    subject, subject_notes = decode_header_text(first.get("subject"), charset)
    sender = parse_address(first.get("from"), charset)
    senders = header_values(header_block, b"from")
    if len(senders) > 1:
        shown = "; ".join(_address_text(parse_address(v, charset)) for v in senders)
        notes.append(f"the message has {len(senders)} From headers: {shown}; the first is shown as the sender")
    to = parse_address_list(first.get("to"), charset)
    cc = parse_address_list(first.get("cc"), charset)
    date = parse_date(first.get("date"))
    if first.get("date") and date is None:
        notes.append(f"the Date header is not a date: {first['date'].decode('utf-8', 'replace')!r}")
    odd = implausible_date(date.timestamp() if date is not None else None)
    if odd:
        notes.append(f"the Date header ({date.isoformat()}) is {odd}; it may be wrong")
    in_reply_to = extract_msgid(first.get("in-reply-to"), reference=True)
    references = extract_msgids(first.get("references"))
    ignored = ignored_references(first.get("in-reply-to")) + ignored_references(first.get("references"))
    if ignored:
        notes.append(f"reference values that are not Message-IDs (no @) are ignored: "
                     f"{', '.join(dict.fromkeys(ignored))}")
    return Message(
        message_id=message_id,
        subject=subject,
        sender=sender,
        to=to,
        cc=cc,
        date=date,
        in_reply_to=in_reply_to,
        references=references,
        headers=headers,
        notes=tuple(dict.fromkeys(notes)),
        synthetic_id=synthetic,
        backend_ref=backend_ref,
    )


def attachment_bytes(raw: bytes, index: int) -> bytes:
    """The decoded bytes of attachment ``index`` (as numbered in ``Message.attachments``).

    Raises:
        AttachmentNotFound: the message has no attachment with that index.
    """
    parts = _attachment_parts(raw)
    if not 0 <= index < len(parts):
        raise AttachmentNotFound(f"no attachment {index}; the message has {len(parts)}")
    return _attachment_data(parts[index])


def all_attachment_bytes(raw: bytes) -> list[bytes]:
    """The decoded bytes of every attachment, numbered as in ``Message.attachments`` (one parse:
    what OpenPGP keeps in memory of a decrypted message)."""
    return [_attachment_data(part) for part in _attachment_parts(raw)]


def _attachment_parts(raw: bytes) -> list:
    raw, _ = normalize_line_ends(bytes(raw))
    return _walk(_parse(raw)).attachment_parts


def _attachment_data(part) -> bytes:
    if part.get_content_type() == "message/rfc822" and part.is_multipart():
        return _message_bytes(part)
    data, _ = _payload_bytes(part)
    return _as_saved(part, data)


# Transfer encodings whose line breaks are the wire's (RFC 5322 lines end CRLF; IMAP and a
# CRLF mbox or .eml keep them), not the sender's file: base64 carries the file's own bytes.
_LINE_ENCODINGS = frozenset({"", "7bit", "8bit", "binary", "quoted-printable"})


def _as_saved(part: EmailMessage, data: bytes) -> bytes:
    """An attachment's bytes as saved: a text part sent in a line encoding gets LF line ends
    (the sender's file had them: a Unix PoC's ``#!/bin/sh\r`` shebang would break otherwise),
    so IMAP, a CRLF mbox and an LF mbox give the same file. Base64 and non-text parts are
    saved byte for byte."""
    if part.get_content_maintype() != "text" or b"\r\n" not in data:
        return data
    encoding = str(part.get("content-transfer-encoding", "") or "").strip().lower()
    return data.replace(b"\r\n", b"\n") if encoding in _LINE_ENCODINGS else data
