"""The listing's rows read from FETCH responses (``list_recent_threads`` over IMAP, headers only).

A row is a plain tuple laid out as :mod:`summary_cache` says (``sc.UID``…): :class:`RowMaker`
makes it from a header block, sharing the values that repeat. The FETCH responses are read by
a parser of their common shape (:func:`parse_rows`); anything else goes through imapclient's
parser, so the rows are the same either way, only made faster. Which rows are on the list
(:func:`on_list`) and the synthetic IDs of rows without a Message-ID are read here too.

Moved out of :mod:`backends.imap.recent` (issue 36), which walks a folder with it.
"""

from __future__ import annotations

import re
import sys
from datetime import datetime, timezone
from typing import Callable

from imapclient.datetime_util import parse_to_datetime
from imapclient.exceptions import ProtocolError
from imapclient.response_parser import parse_fetch_response

from mailtriage.backends import mime, mime_dates, mime_header_text, mime_headers, mime_ids
from mailtriage.backends.imap import protocol
from mailtriage.backends.imap import summary_cache as sc
from mailtriage.backends.imap.headers import SYNTHETIC_ITEMS, mime_synthetic_id, synthetic_id_from_fetch


# CONTENT-TYPE: its charset is what raw 8-bit (or UTF-7) Subject and From text is read in, as
# the read path reads it (mime._message_from_headers), so a row and its message agree.
RECENT_FIELDS = ("MESSAGE-ID", "REFERENCES", "IN-REPLY-TO", "SUBJECT", "FROM", "DATE", "TO", "CC", "LIST-ID",
                 "LIST-POST", "CONTENT-TYPE")
_RECENT_ITEM = f"BODY.PEEK[HEADER.FIELDS ({' '.join(RECENT_FIELDS)})]"
_RECENT_KEY = f"BODY[HEADER.FIELDS ({' '.join(RECENT_FIELDS)})]".encode()
RECENT_ITEMS = ["UID", "FLAGS", "INTERNALDATE", _RECENT_ITEM]


_LIST_FIELDS = {b"to", b"cc", b"list-id", b"list-post"}
NO_TIME = float("-inf")

Row = tuple  # one message seen by list_recent_threads (headers only), laid out as summary_cache says


# -- reading FETCH responses -------------------------------------------------------------------

# The common shape of one response as imaplib hands it over ("* " and "FETCH" already
# taken off): the simple items, then the header fields as a literal, then ")". Anything
# else (another order of items, NIL, a quoted string, more items) goes to imapclient.
_SIMPLE_ITEMS = rb'(?:UID \d+|FLAGS \([^()"]*\)|INTERNALDATE "[^"]*"|MODSEQ \(\d+\))'
_FETCH_COMMON = re.compile(rb'(\d+) \(UID (\d+) FLAGS \(([^()"]*)\) INTERNALDATE "([^"]*)" '
                           rb'BODY\[HEADER\.FIELDS \([^()]*\)\] \{\d+\}\Z')
_FETCH_HEAD = re.compile(rb'(\d+) \(((?:' + _SIMPLE_ITEMS + rb' )*)BODY\[HEADER\.FIELDS \([^()]*\)\] \{\d+\}\Z')
_FETCH_TAIL = re.compile(rb'((?: ' + _SIMPLE_ITEMS + rb')*)\)\Z')
_ITEM = re.compile(rb'(UID|FLAGS|INTERNALDATE|MODSEQ) (?:(\d+)|\(([^()"]*)\)|"([^"]*)")')
# RFC 3501 date-time: "01-Nov-2026 14:44:47 +0000" (a day below 10 may start with a space).
_INTERNALDATE = re.compile(rb' ?(\d{1,2})-([A-Za-z]{3})-(\d{4}) (\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d)\Z')
# The usual INTERNALDATE, with a valid clock and offset: read as the day, the clock and
# the zone; the day with the zone is remembered as the epoch of its midnight in that zone.
_USUAL_INTERNALDATE = re.compile(rb"( ?\d{1,2}-[A-Za-z]{3}-\d{4}) ([01]\d|2[0-3]):([0-5]\d):([0-5]\d) "
                                 rb"([+-](?:[01]\d|2[0-3])[0-5]\d)\Z")
_MONTHS = {m: i for i, m in enumerate(
    (b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov", b"dec"), 1)}
# A header block where every line is "Name:value" (no folding, CRLF line ends, no other CR
# or LF), as servers send HEADER.FIELDS: split into lines and each line at its first colon
# (bytes.split and partition: several times faster than one regex over the block). A name
# is checked against this pattern the first time it is seen. Any other block goes to
# mime_headers.header_fields, which gives the same fields for this shape (the first occurrence
# of a name wins; blanks after the colon are not part of the value).
_FIELD_NAME = re.compile(rb"[!-9;-~]+")
_BRACKETED_ID = mime_ids._BRACKETED_ID  # mime_ids.extract_msgid's first choice
# The usual Date: "Tue, 01 Dec 2026 19:56:52 +0000" (the day name optional), with a valid
# clock: read as the day, the clock and the zone, each day's and each zone's ISO text
# remembered. Any other shape goes through the general reading (RowMaker.sent).
_USUAL_DATE = re.compile(rb"((?:[A-Z][a-z]{2}, )?\d{1,2} [A-Z][a-z]{2} \d{4}) ((?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d) "
                         rb"([+-]\d{4})\Z")


def _shared(text: str) -> str:
    """``text``, as one object with every equal text made so in this process (``sys.intern``:
    freed with its last user). A RowMaker shares values within one read; a poll makes a new one
    each time, so without this every poll's rows held their own copies of the senders, subjects
    and the Message-IDs they name (issue 39: a storm's rows grew faster than a fresh start's)."""
    return sys.intern(text) if type(text) is str else text


class RowMaker:
    """Makes rows from FETCH data. Values that repeat (senders, subjects, list fields, the
    Message-IDs that References and In-Reply-To name again, days and zones of dates) are
    decoded once and then shared, so rows take less memory and the cache file stores each
    once; the texts among them are shared across reads too (:func:`_shared`). Every value is
    exactly what the MIME helpers give (they are pure: a remembered value is theirs;
    tests/imap/test_recent_rows.py compares the two on generated headers)."""

    def __init__(self) -> None:
        self._senders: dict[bytes | None, tuple[str, str]] = {}
        self._subjects: dict[bytes | None, str] = {}
        self._lists: dict[bytes, bytes] = {}
        self._ids: dict[str, str] = {}
        self._tokens: dict[bytes, str] = {}  # a <...> token as read -> its Message-ID text (shared)
        self._days: dict[tuple, float | None] = {}
        self._names: dict[bytes, bytes] = {}
        self._dates: dict[tuple, str | None] = {}
        self._zones: dict[bytes | None, str | None] = {}
        self._day_heads: dict[bytes, str | None] = {}  # a Date's day -> "2026-12-01T" (None: not a date)
        self._midnights: dict[bytes, float | None] = {}  # an INTERNALDATE's day + zone -> its midnight's epoch

    def row(self, uid: int, seen: bool, arrived: float | None, block: bytes) -> Row:
        fields: dict[bytes, bytes] | None = None
        plain: dict[bytes, bytes] = {}
        listed: list[bytes] = []  # the values of To, Cc, List-Id, List-Post, in the block's order
        lines = block.split(b"\r\n")
        last = len(lines) - 1  # the CRLFs in the block
        # The plain shape: every CR and LF in a CRLF, the block ends with an empty line.
        if last >= 2 and not lines[last] and not lines[last - 1] and block.count(b"\n") == last == block.count(b"\r"):
            del lines[last - 1:]
            names = self._names
            fields = plain
            for line in lines:
                name, colon, value = line.partition(b":")
                if not colon:
                    fields = None
                    break
                lower = names.get(name)
                if lower is None:
                    if _FIELD_NAME.fullmatch(name) is None:
                        fields = None
                        break
                    lower = names[name] = name.lower()
                if lower not in plain:
                    value = plain[lower] = value.lstrip(b" \t")
                    if lower in _LIST_FIELDS:
                        listed.append(value)
        if fields is None:
            fields = mime_headers.header_fields(block)
            listed = [v for k, v in fields.items() if k in _LIST_FIELDS]
        get = fields.get
        message_id = self.message_id(get(b"message-id"))
        synthetic = message_id is None
        if synthetic:
            # A stand-in now, the MIME parser's synthetic ID once the full header is read.
            message_id = mime_synthetic_id(block)
        raw_references = get(b"references")
        references: tuple[str, ...] = ()
        if raw_references:
            # mime_ids.extract_msgids: every <...@...> token, in order, the first of equal ones kept.
            tokens = self._tokens
            found = [tokens.get(t) or self._token(t) for t in mime_ids.REFERENCE_ID.findall(raw_references)]
            references = tuple(dict.fromkeys(found) if len(found) > 1 else found)
        in_reply_to = self.reference(get(b"in-reply-to"))
        raw = get(b"subject")
        subject = self._subjects.get(raw)
        if subject is None:
            if mime_header_text.header_needs_charset(raw):  # read in the body's charset: not shared
                subject = mime_header_text.decode_header_text(raw, mime.body_charset(get(b"content-type")))[0]
            else:
                subject = self._subjects[raw] = _shared(mime_header_text.decode_header_text(raw)[0])
        raw = get(b"from")
        sender = self._senders.get(raw)
        if sender is None:
            if raw and not raw.isascii():  # read in the body's charset: not shared
                address = mime_header_text.parse_address(raw, mime.body_charset(get(b"content-type")))
                sender = (address.name, address.email)
            else:
                address = mime_header_text.parse_address(raw)
                sender = self._senders[raw] = (_shared(address.name), _shared(address.email))
        lists = b" ".join(listed).lower()
        lists = self._lists.setdefault(lists, lists)
        return (message_id, references, in_reply_to, synthetic, uid, subject, sender[0], sender[1], arrived, seen,
                lists, self.sent(get(b"date")))

    def message_id(self, raw: bytes | None) -> str | None:
        """``mime_ids.extract_msgid(raw)``, shared with every equal ID seen (a token seen
        before, as a Message-ID or in References, is not decoded again)."""
        if not raw:
            return None
        match = _BRACKETED_ID.search(raw)
        if match is None:
            found = mime_ids.extract_msgid(raw)  # a bare local@domain, or no ID
            return None if found is None else self._ids.setdefault(found, _shared(found))
        token = match.group()
        return self._tokens.get(token) or self._token(token)

    def reference(self, raw: bytes | None) -> str | None:
        """``mime_ids.extract_msgid(raw, reference=True)`` (an In-Reply-To: a token without
        ``@``, such as git-send-email's ``<yes>``, is no ID), shared as :meth:`message_id`."""
        if not raw:
            return None
        match = mime_ids.REFERENCE_ID.search(raw)
        if match is None:
            found = mime_ids.extract_msgid(raw, reference=True)  # a bare local@domain, or no ID
            return None if found is None else self._ids.setdefault(found, _shared(found))
        token = match.group()
        return self._tokens.get(token) or self._token(token)

    def _token(self, token: bytes) -> str:
        text = mime_ids._id_text(token)  # what extract_msgid and extract_msgids make of a token
        text = self._tokens[token] = self._ids.setdefault(text, _shared(text))
        return text

    def sent(self, raw: bytes | None) -> str | None:
        """``mime_dates.parse_date(raw).isoformat()`` (None when no date), written without the
        datetime: the usual shape from the day's and the zone's remembered ISO text and the
        clock as written; else the very pattern of parse_date's own fast path, with the
        same checks (a date, a time or an offset datetime refuses goes to parse_date)."""
        if not raw:
            return None
        usual = _USUAL_DATE.match(raw)
        if usual is not None:
            day, clock, zone = usual.groups()
            head = self._day_heads.get(day, "")
            if head == "":
                date = _iso_date(*day.split()[-3:])  # the day, month and year parse_date's pattern reads
                head = self._day_heads[day] = None if date is None else date + "T"
            offset = self._zones.get(zone, "")
            if offset == "":
                offset = self._zones[zone] = _iso_offset(zone)
            if head is not None and offset is not None:
                return head + clock.decode() + offset
        match = mime_dates._RFC5322_DATE.match(raw)  # parse_date's fast path: same pattern, same fields
        if match is not None:
            day, month, year, hour, minute, second, zone = match.groups()
            key = (day, month, year)
            date = self._dates.get(key, "")
            if date == "":
                date = self._dates[key] = _iso_date(day, month, year)
            offset = self._zones.get(zone, "")
            if offset == "":
                offset = self._zones[zone] = _iso_offset(zone)
            h, m, s = int(hour), int(minute), int(second) if second else 0
            if date is not None and offset is not None and h < 24 and m < 60 and s < 60:
                return f"{date}T{h:02d}:{m:02d}:{s:02d}{offset}"
        when = mime_dates.parse_date(raw)
        return when.isoformat() if when is not None else None

    def arrival(self, raw: bytes) -> float | None:
        """INTERNALDATE in seconds since the epoch, as imapclient reads it (None when it cannot)."""
        usual = _USUAL_INTERNALDATE.match(raw)
        if usual is not None:
            day, hour, minute, second, zone = usual.groups()
            key = day + zone
            base = self._midnights.get(key, NO_TIME)
            if base == NO_TIME:
                base = self._midnights[key] = _midnight_in(day, zone)
            if base is not None:  # whole seconds: the sum is exact, in any order
                return base + int(hour) * 3600 + int(minute) * 60 + int(second)
        match = _INTERNALDATE.match(raw)
        if match is not None:
            day, month, year, hour, minute, second, sign, zone_hours, zone_minutes = match.groups()
            key = (day, month, year)
            midnight = self._days.get(key, NO_TIME)
            if midnight == NO_TIME:
                midnight = self._days[key] = _midnight(day, month, year)
            h, m, s, zh, zm = int(hour), int(minute), int(second), int(zone_hours), int(zone_minutes)
            if midnight is not None and h < 24 and m < 60 and s < 60 and zh < 24 and zm < 60:
                offset = zh * 3600 + zm * 60
                return midnight + h * 3600 + m * 60 + s - (offset if sign == b"+" else -offset)
        return _slow_arrival(raw)

    def from_item(self, key: int, item: dict, *, uid: bool) -> Row | None:
        """A row from one message's imapclient-parsed FETCH data, or None without a UID."""
        number = key if uid else item.get(b"UID")
        if number is None:
            return None
        block = item.get(_RECENT_KEY)
        if block is None:
            block = next((v for k, v in item.items() if k.startswith(b"BODY[HEADER.FIELDS")), None)
        flags = {f.lower() for f in item.get(b"FLAGS", ())}
        arrived = item.get(b"INTERNALDATE")
        if arrived is not None:
            arrived = (arrived if arrived.tzinfo is not None else arrived.replace(tzinfo=timezone.utc)).timestamp()
        return self.row(int(number), b"\\seen" in flags, arrived,
                        block if isinstance(block, bytes) else b"")


def _midnight(day: bytes, month: bytes, year: bytes) -> float | None:
    number = _MONTHS.get(month.lower())
    if number is None or int(year) < 100:  # a 2-digit year: imapclient's century rules
        return None
    try:
        return datetime(int(year), number, int(day), tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def _midnight_in(day: bytes, zone: bytes) -> float | None:
    """The epoch of midnight of an INTERNALDATE's day (`` 1-Dec-2026``) in its zone (``+0530``)."""
    midnight = _midnight(*day.strip().split(b"-"))
    if midnight is None:
        return None
    offset = int(zone[1:3]) * 3600 + int(zone[3:5]) * 60
    return midnight - (offset if zone[:1] == b"+" else -offset)


def _iso_date(day: bytes, month: bytes, year: bytes) -> str | None:
    number = _MONTHS.get(month.lower())
    if number is None:
        return None
    try:
        return datetime(int(year), number, int(day)).date().isoformat()
    except ValueError:
        return None


def _iso_offset(zone: bytes | None) -> str | None:
    """The ISO form of a Date's zone as parse_date makes it (UTC when none or -0000)."""
    if zone is None or zone == b"-0000":
        return "+00:00"
    minutes = int(zone[1:3]) * 60 + int(zone[3:5])
    if minutes >= 24 * 60:
        return None  # parse_date's timezone() refuses it: its slower path decides
    sign = "-" if zone[:1] == b"-" and minutes else "+"
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _slow_arrival(raw: bytes) -> float | None:
    try:
        when = parse_to_datetime(raw, normalise=False)
        return (when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)).timestamp()
    except (ValueError, OverflowError):
        return None


def parse_rows(data: list, maker: RowMaker, *, uid: bool, out: dict[int, Row] | None = None) -> dict[int, Row]:
    """Rows from the untagged FETCH responses imaplib collected (``data``), keyed by UID
    when ``uid`` else by sequence number (added to ``out`` when given); a response
    without the header fields (an unsolicited flag change) updates the row it names, and
    one that imapclient's parser chokes on is skipped (one bad message must not hide the
    others)."""
    if out is None:
        out = {}
    common = _FETCH_COMMON.match
    row, arrival = maker.row, maker.arrival
    count = len(data)
    i = 0
    while i < count:
        entry = data[i]
        if type(entry) is tuple and i + 1 < count and data[i + 1] == b")":
            match = common(entry[0])
            if match is not None:
                seq, number, flags, when, = match.groups()
                number = int(number)
                out[number if uid else int(seq)] = row(number, b"\\seen" in flags.lower().split(), arrival(when),
                                                       entry[1])
                i += 2
                continue
        end = i
        while end < count and type(data[end]) is tuple:
            end += 1
        group = data[i:end + 1]
        i = end + 1
        if group == [None]:
            continue
        _parse_other(group, maker, uid, out)
    return out


def _parse_other(group: list, maker: RowMaker, uid: bool, out: dict[int, Row]) -> None:
    """One response of another shape: the general pattern, else imapclient's parser."""
    if len(group) == 2 and type(group[0]) is tuple and type(group[1]) is bytes:
        head = _FETCH_HEAD.match(group[0][0])
        tail = _FETCH_TAIL.match(group[1]) if head is not None else None
        if tail is not None:
            found: dict[bytes, bytes] = {}
            items = _ITEM.findall(head.group(2) + tail.group(1))
            for name, number, listed, quoted in items:
                found[name] = number or listed or quoted
            if len(items) == len(found) and {b"UID", b"FLAGS", b"INTERNALDATE"} <= found.keys():
                number = int(found[b"UID"])
                key = number if uid else int(head.group(1))
                out[key] = maker.row(number, b"\\seen" in found[b"FLAGS"].lower().split(),
                                     maker.arrival(found[b"INTERNALDATE"]), group[0][1])
                return
    try:
        parsed = parse_fetch_response(group, False, uid)
    except ProtocolError:
        return
    for key, item in parsed.items():
        has_header = any(isinstance(k, bytes) and k.startswith(b"BODY[HEADER.FIELDS") for k in item)
        if has_header:
            row = maker.from_item(key, item, uid=uid)
            if row is not None:
                out[key] = row
        elif key in out and b"FLAGS" in item:  # a later flag change of a message already read
            old = out[key]
            seen = b"\\seen" in {f.lower() for f in item[b"FLAGS"]}
            out[key] = (*old[:sc.SEEN], seen, *old[sc.SEEN + 1:])


def fetch_rows(client, seqset: str, maker: RowMaker, *, uid: bool = False) -> dict[int, Row]:
    """FETCH the listing's items for ``seqset``: rows keyed by UID when ``uid`` else by
    sequence number, parsed while the server sends the rest; the trace shows the first
    responses and their count."""
    out: dict[int, Row] = {}
    protocol.fetch_stream(client, seqset, RECENT_ITEMS, lambda data: parse_rows(data, maker, uid=uid, out=out), uid=uid)
    return out


def list_needles(address: str) -> tuple[bytes, ...]:
    """What :func:`on_list` looks for: the address, and its List-Id form."""
    local, _, domain = address.partition("@")
    needles = [address.encode()]
    if domain:
        needles.append(f"{local}.{domain}".encode())  # List-Id: <security.example.org>
    return tuple(needles)


def on_list(row: Row, address: str) -> bool:
    """Is the message to (or archived by) the list? To, Cc, List-Post and List-Id are checked."""
    listed = row[sc.LIST_FIELDS]
    return any(n in listed for n in list_needles(address))


def _list_filter(wanted: str | None) -> Callable[[Row], bool] | None:
    if not wanted:
        return None
    needles = list_needles(wanted)
    if len(needles) == 2:
        first, second = needles
        return lambda row: first in row[sc.LIST_FIELDS] or second in row[sc.LIST_FIELDS]
    (only,) = needles
    return lambda row: only in row[sc.LIST_FIELDS]


def complete_synthetic(conn, rows: list[Row]) -> None:
    """Give rows without a Message-ID the MIME parser's synthetic ID (one FETCH of their
    headers and body heads); ``rows`` is updated in place."""
    missing = [i for i, r in enumerate(rows) if r[sc.SYNTHETIC]]
    if not missing:
        return
    uids = protocol.compress(rows[i][sc.UID] for i in missing)
    data = conn.call("UID FETCH header", lambda c: protocol.fetch(c, uids, SYNTHETIC_ITEMS))
    named = {item.get(b"UID", k): synthetic_id_from_fetch(item) for k, item in data.items()}
    for i in missing:
        row = rows[i]
        if named.get(row[sc.UID]):
            rows[i] = (named[row[sc.UID]], *row[1:])
