"""``list_recent_threads`` over IMAP: the newest threads of the list folder, fast.

Three ways to the rows (headers only: the fields threading and a list row need), chosen
in this order:

1. **The summary cache** (:mod:`backends.imap.summary_cache`), reconciled with the server
   first: one SELECT; when HIGHESTMODSEQ, UIDNEXT and EXISTS are those the cache was saved
   with, nothing else is asked; otherwise only what changed is read (new UIDs, ``CHANGEDSINCE``
   flags, expunged UIDs by one ESEARCH). A UIDVALIDITY change drops the cache.
2. **A walk of the folder newest first**, in windows of sequence numbers (arrival order:
   the newest message is the highest sequence number, RFC 3501 §2.3.1), so no SORT is
   needed and the cost follows what is returned. With ESEARCH and WITHIN the server first
   says where the window starts (``SEARCH RETURN (MIN COUNT) YOUNGER n``), and the whole
   window is read in a few large FETCHes instead of many small ones.
   A cache that holds the window's newest part only (the first page's walk: the app lists
   a first page, then the whole window) is extended instead (:func:`walk_below`): only
   the messages below its floor are read, so no message is read twice.
3. The rows are threaded (the shared JWZ threading) into summaries, newest activity first.

With ``limit`` the walk (or the cached rows, read the same way) stops once ``limit``
threads are known, exactly as an uncached first page would.

A row is a plain tuple laid out as :mod:`summary_cache` says (``sc.UID``…): the walk
makes it, the cache stores it, threading reads it as a record, so tens of thousands of
rows are never copied from one shape into another. The FETCH responses of the walk are
read by a parser of their common shape (:func:`parse_rows`); anything else goes through
imapclient's parser, so the rows are the same either way, only made faster.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_left, insort
from dataclasses import dataclass
from heapq import heapify, heappop, heappush
from datetime import datetime, timezone
from operator import itemgetter
from typing import Callable, Iterable, Sequence

from imapclient.datetime_util import parse_to_datetime
from imapclient.exceptions import ProtocolError
from imapclient.response_parser import parse_fetch_response, parse_response

from mailtriage.backends import mime, mime_dates, mime_header_text, mime_headers, mime_ids
from mailtriage.backends.contract import (LEGACY_KINDS, MESSAGE_ID_KIND, SYNTHETIC_MESSAGE_ID_KIND, Address, ThreadId,
                                          ThreadSummary)
from mailtriage.backends.errors import BackendFailure, ConnectionLost
from mailtriage.backends.imap import imaplib_private as private
from mailtriage.backends.imap import protocol
from mailtriage.backends.imap import summary_cache as sc
from mailtriage.backends.imap.headers import (SYNTHETIC_ITEMS, mime_synthetic_id, synthetic_id_from_fetch,
                                              thread_root)
from mailtriage.backends.thread_reconstruction import is_synthetic_root, link_records, root_members, synthetic_kind

# CONTENT-TYPE: its charset is what raw 8-bit (or UTF-7) Subject and From text is read in, as
# the read path reads it (mime._message_from_headers), so a row and its message agree.
RECENT_FIELDS = ("MESSAGE-ID", "REFERENCES", "IN-REPLY-TO", "SUBJECT", "FROM", "DATE", "TO", "CC", "LIST-ID",
                 "LIST-POST", "CONTENT-TYPE")
_RECENT_ITEM = f"BODY.PEEK[HEADER.FIELDS ({' '.join(RECENT_FIELDS)})]"
_RECENT_KEY = f"BODY[HEADER.FIELDS ({' '.join(RECENT_FIELDS)})]".encode()
RECENT_ITEMS = ["UID", "FLAGS", "INTERNALDATE", _RECENT_ITEM]
WINDOW = 500  # messages per FETCH while walking a folder newest first
BULK = 25000  # messages per FETCH when the window's start is known (parsed as they arrive)
_LIST_FIELDS = {b"to", b"cc", b"list-id", b"list-post"}
NO_TIME = float("-inf")

Row = tuple  # one message seen by list_recent_threads (headers only), laid out as summary_cache says
_BY_UID = itemgetter(sc.UID)
(_MESSAGE_ID, _SYNTHETIC, _ARRIVED, _SEEN, _SENDER_EMAIL) = (
    itemgetter(sc.MESSAGE_ID), itemgetter(sc.SYNTHETIC), itemgetter(sc.ARRIVED), itemgetter(sc.SEEN),
    itemgetter(sc.SENDER_EMAIL))


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


# -- choosing rows -------------------------------------------------------------------------

def window_size(limit: int | None) -> int:
    return min(WINDOW, max(100, 3 * limit)) if limit else WINDOW


def pick(rows_newest_first: Iterable[Row], since: datetime, wanted: str | None, limit: int | None,
         *, exhausted: bool) -> list[Row] | None:
    """The rows a newest-first walk in windows keeps, read from rows already known
    (``rows_newest_first`` holds every message from the top of the folder down; it is
    consumed only as far as the walk goes): every message of the window on the list, down
    to the end of the window where ``limit`` threads are known (:func:`walk`). A message
    older than ``since`` is passed over, not taken for the window's end (arrival is not
    always sequence order: a mail moved back from an archive keeps its old arrival time).

    Returns None when the known rows end before ``limit`` threads and ``exhausted`` is
    false (more, older messages are on the server only)."""
    window = window_size(limit)
    since_epoch = since.timestamp()
    keep = _list_filter(wanted)
    out: list[Row] = []
    roots: set[str] = set()
    for seen, row in enumerate(rows_newest_first, 1):
        arrived = row[sc.ARRIVED]
        if (arrived is None or arrived >= since_epoch) and (keep is None or keep(row)):
            out.append(row)
            if limit:
                roots.add(thread_root(row[sc.MESSAGE_ID], row[sc.REFERENCES], row[sc.IN_REPLY_TO]))
        if limit and seen % window == 0 and len(roots) >= limit and threads_at_least(out, limit):
            return out  # the end of a window where the walk stops
    if exhausted or (limit and len(roots) >= limit and threads_at_least(out, limit)):
        return out
    return None


def threads_at_least(rows: list[Row], limit: int) -> bool:
    """Whether ``rows`` make at least ``limit`` threads as :func:`summaries` groups them. A
    root counted per message (``thread_root``) can over-count (two replies naming different
    ancestors of one thread): a page cut there would be short, and a short page is taken for
    the whole window."""
    ordered = sorted(rows, key=_BY_UID)
    grouped = root_members(list(map(_MESSAGE_ID, ordered)), list(map(_SYNTHETIC, ordered)), link_records(ordered))
    return len(grouped) >= limit


class SummaryMemo:
    """What one call of :func:`summaries` made, for the next call on (mostly) the same rows
    (issue 39: a poll in a storm lists thousands of threads each time and a few changed).

    The rows are split into *components*: rows joined, directly or not, by a Message-ID one
    has and another names (References, In-Reply-To). Threading never links rows of different
    components, and it threads a component the same whatever else is listed (its rows in UID
    order decide every link, every first guess and every cut loop), so a call regroups and
    sums up only the components that a row arrived in, left or changed in (a flag: a new row
    object), and takes every other component's summaries as they were.

    A first call (or one where much changed: a first page, then the whole window) threads
    everything and keeps the rows only; the next call with few changes threads everything
    once more and keeps the components; from then on only what changed is regrouped."""

    __slots__ = ("kind", "rows", "comp_of", "comps", "regrouped", "ranked", "answer", "delta", "version")

    def __init__(self) -> None:
        self.kind = ""
        self.rows: dict[int, Row] | None = None  # the last call's rows by UID
        self.comp_of: dict | None = None  # node (a Message-ID, or (ID,) for a synthetic one) -> _Component
        self.comps: set | None = None
        self.regrouped = 0  # rows the last call threaded (a measure for tests and benchmarks)
        self.ranked: list | None = None  # every kept component's (summary, time, -first UID), by _RANK ascending
        # (cache, wanted, since, heap of (arrival, UID)) of the rows last answered (memo.rows), for
        # summaries_of_changes; None when they were not answered from a cache that way
        self.answer: tuple | None = None
        # What the last call changed in the ranking: (entries that left, entries that came), or
        # None when it ranked everything anew (a change feed then answers whole)
        self.delta: tuple[list, list] | None = None
        # Counts the changes made to ``rows`` in place (summaries_of_changes): what a listing
        # kept of them without a copy (ListedThreads) is theirs while it holds
        self.version = 0


class _Component:
    __slots__ = ("rows", "out")

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows  # in UID order
        self.out: list[tuple] = []  # (summary, time, -first UID) of each of its threads


#: Where more rows than this share of the listing changed, a call threads everything anew.
_REGROUP_SHARE = 8


def summaries(rows: list[Row], kind: str, memo: SummaryMemo | None = None) -> list[ThreadSummary]:
    """The threads of ``rows``, most recent activity first. With ``memo``, only the threads
    of what changed since the last call with that memo are regrouped (see :class:`SummaryMemo`);
    the result is that of a call without it.

    Threaded as :func:`thread_records` threads them (``rows`` sorted by UID are the
    records); each group is summed up from columns of the rows (one or two members
    directly, more with builtins: max, all, dict.fromkeys) rather than a loop over its
    members; the general loop is kept for the rare inputs where those would not give the
    same (an arrival time missing, an empty sender address). tests/imap/test_summaries.py
    compares it with the loop it replaced, and a memo's result with a call without."""
    if memo is None:
        return _ranked(*_summed(sorted(rows, key=_BY_UID), kind))
    by_uid = {row[sc.UID]: row for row in rows}
    old = memo.rows if memo.kind == kind else None
    if old is None or len(by_uid) != len(rows):
        memo.kind, memo.rows, memo.comp_of, memo.comps, memo.ranked, memo.answer = kind, by_uid, None, None, None, None
        memo.delta = None
        memo.regrouped = len(rows)
        return _ranked(*_summed(sorted(rows, key=_BY_UID), kind))
    get_old, get_new = old.get, by_uid.get
    added = [row for uid, row in by_uid.items() if get_old(uid) is not row]
    removed = [row for uid, row in old.items() if get_new(uid) is not row]
    memo.rows = by_uid
    memo.answer = None  # these rows were not answered by summaries_of_changes' bookkeeping
    return _changed(memo, kind, rows, added, removed)


def _changed(memo: SummaryMemo, kind: str, rows: Iterable[Row], added: list[Row], removed: list[Row],
             *, whole: bool = True) -> list[ThreadSummary]:
    """The summaries of ``memo.rows`` (``rows``: the same rows), regrouping the components
    ``added`` and ``removed`` rows touch (or everything, when many changed or no components
    are kept yet). The threads are kept ranked (``memo.ranked``, ascending): a call that
    regrouped a few components moves their entries only."""
    memo.delta = None
    if len(added) + len(removed) > max(64, len(memo.rows or ()) // _REGROUP_SHARE):
        memo.comp_of = memo.comps = memo.ranked = None
        ordered = sorted(rows, key=_BY_UID)
        memo.regrouped = len(ordered)
        return _ranked(*_summed(ordered, kind))
    if memo.comp_of is None or memo.ranked is None:
        comp_of, comps = memo.comp_of, memo.comps = {}, set()
        _regroup(sorted(rows, key=_BY_UID), kind, comp_of, comps)
        memo.regrouped = len(memo.rows or ())
        memo.ranked = sorted((entry for comp in comps for entry in comp.out), key=_RANK)
    elif added or removed:
        comp_of, comps, ranked = memo.comp_of, memo.comps, memo.ranked
        touched = {comp_of[_node(row)] for row in removed}
        for row in added:
            for node in _nodes(row):
                comp = comp_of.get(node)
                if comp is not None:
                    touched.add(comp)
        gone = {row[sc.UID] for row in removed}
        subset = [row for comp in touched for row in comp.rows if row[sc.UID] not in gone]
        for comp in touched:
            comps.discard(comp)
            for row in comp.rows:
                for node in _nodes(row):
                    comp_of.pop(node, None)
            for entry in comp.out:  # its threads leave the ranking (each entry's rank is unique)
                at = bisect_left(ranked, _RANK(entry), key=_RANK)
                if at < len(ranked) and ranked[at] is entry:
                    del ranked[at]
                else:  # (never: the ranking holds every kept entry) ranked again, whole
                    ranked.remove(entry)
        subset.extend(added)
        subset.sort(key=_BY_UID)
        made: list[_Component] = []
        _regroup(subset, kind, comp_of, comps, made)
        for comp in made:
            for entry in comp.out:
                insort(ranked, entry, key=_RANK)
        memo.regrouped = len(subset)
        memo.delta = ([entry for comp in touched for entry in comp.out], [entry for comp in made for entry in comp.out])
    else:
        memo.regrouped = 0
        memo.delta = ([], [])
    if not whole:
        return []
    return list(map(_SUMMARY, reversed(memo.ranked)))


_SUMMARY = itemgetter(0)


def ranked_delta(memo: SummaryMemo) -> tuple[list[ThreadSummary], list] | None:
    """What the last call with ``memo`` changed, as a change feed says it (the summaries added
    or changed, most recent activity first, and the references of the threads gone), or None
    when it ranked everything anew. A thread regrouped to the very summary it had is left out."""
    delta = memo.delta
    if delta is None:
        return None
    left, came = delta
    before = {entry[0].thread_id: entry[0] for entry in left}
    after = {entry[0].thread_id for entry in came}
    changed = [entry[0] for entry in sorted(came, key=_RANK, reverse=True) if before.get(entry[0].thread_id) != entry[0]]
    return changed, [thread_id for thread_id in before if thread_id not in after]


def summaries_of_changes(memo: SummaryMemo, cache: sc.FolderCache, touched: Iterable[int], since: datetime,
                         wanted: str | None, kind: str, *, whole: bool = True) -> list[ThreadSummary] | None:
    """The summaries of the cached rows a listing since ``since`` answers, from the last
    answer of this memo and the UIDs that changed since (``touched``: added, flags changed or
    gone, as :func:`reconcile` reports them), without a pass over the window (issue 39: a poll
    in a storm answered and compared the whole window each time). Rows that aged out of the
    window (arrived before ``since``) leave by a heap of arrival times. None when the last
    answer was not of this cache and list, or ``since`` went back: the caller answers whole
    (:func:`answer_from_cache` and :func:`summaries`), which this call then continues from.

    ``whole=False``: where the ranking was changed in place (``memo.delta`` says how), the
    whole list is not made (``[]`` is returned): a change feed answers the delta only."""
    answer = memo.answer
    since_epoch = since.timestamp()
    if (answer is None or answer[0] is not cache or answer[1] != wanted or since_epoch < answer[2]
            or memo.kind != kind or memo.rows is None):
        return None
    answered, aging = memo.rows, answer[3]
    keep = _list_filter(wanted)
    rows = cache.rows
    added: list[Row] = []
    removed: list[Row] = []
    for uid in set(touched):
        row = rows.get(uid)
        old = answered.get(uid)
        arrived = row[sc.ARRIVED] if row is not None else None
        if row is not None and (arrived is None or arrived >= since_epoch) and (keep is None or keep(row)):
            if old is not row:
                if old is not None:
                    removed.append(old)
                added.append(row)
                answered[uid] = row
                if arrived is not None:
                    heappush(aging, (arrived, uid))
        elif old is not None:
            removed.append(old)
            del answered[uid]
    while aging and aging[0][0] < since_epoch:  # the window's lower edge moved on
        arrived, uid = heappop(aging)
        old = answered.get(uid)
        if old is not None and old[sc.ARRIVED] == arrived:
            removed.append(old)
            del answered[uid]
    memo.answer = (cache, wanted, since_epoch, aging)
    if added or removed:
        memo.version += 1
    return _changed(memo, kind, answered.values(), added, removed, whole=whole)


def answered_whole(memo: SummaryMemo, cache: sc.FolderCache, wanted: str | None, since: datetime) -> None:
    """Note that the last :func:`summaries` call with ``memo`` answered ``cache`` whole for
    ``wanted`` since ``since``: :func:`summaries_of_changes` continues from it."""
    if memo.rows is None:
        memo.answer = None
        return
    aging = [(row[sc.ARRIVED], uid) for uid, row in memo.rows.items() if row[sc.ARRIVED] is not None]
    heapify(aging)
    memo.answer = (cache, wanted, since.timestamp(), aging)


_TIME = itemgetter(1)


def _RANK(entry: tuple) -> tuple:
    return entry[1], entry[0].root_message_id, entry[2]


def _node(row: Row):
    """The threading node of a row: its Message-ID, or for a synthetic one the ID in a 1-tuple
    (never equal to a Message-ID another row names)."""
    return (row[sc.MESSAGE_ID],) if row[sc.SYNTHETIC] else row[sc.MESSAGE_ID]


def _nodes(row: Row) -> list:
    """The nodes a row joins: its own, the IDs its References and In-Reply-To name."""
    out = [_node(row), *row[sc.REFERENCES]]
    if row[sc.IN_REPLY_TO] is not None:
        out.append(row[sc.IN_REPLY_TO])
    return out


def _regroup(rows: list[Row], kind: str, comp_of: dict, comps: set, made: list | None = None) -> None:
    """Thread ``rows`` (in UID order: whole components) and file each component's rows and
    summaries under every node of it (the components made are added to ``made`` too)."""
    parent: dict = {}

    def find(node):  # union-find with path compression (a str and a 1-tuple are never equal)
        root = node
        up = parent.get(root)
        while up is not None:
            root = up
            up = parent.get(root)
        while node != root:
            up = parent[node]
            parent[node] = root
            node = up
        return root

    firsts: list = []
    for row in rows:
        nodes = _nodes(row)
        first = find(nodes[0])
        for node in nodes[1:]:
            other = find(node)
            if other != first:
                parent[other] = first
        firsts.append(nodes[0])
    by_root: dict = {}
    for row, node in zip(rows, firsts):
        root = find(node)
        comp = by_root.get(root)
        if comp is None:
            comp = by_root[root] = _Component([])
        comp.rows.append(row)
    out, times, first_rows = _summed(rows, kind, with_first=True)
    for summary, time, first in zip(out, times, first_rows):
        by_root[find(_node(first))].out.append((summary, time, -first[sc.UID]))
    if made is not None:
        made.extend(by_root.values())
    for comp in by_root.values():
        comps.add(comp)
        for row in comp.rows:
            for node in _nodes(row):
                comp_of[node] = comp


def _summed(rows: list[Row], kind: str, *, with_first: bool = False) -> tuple[list, list, list | None]:
    """The summaries of the threads of ``rows`` (in UID order), in the order threading makes
    the groups (of their first member), their times of activity and with ``with_first`` their
    first member rows."""
    message_ids = list(map(_MESSAGE_ID, rows))
    synthetic = list(map(_SYNTHETIC, rows))
    grouped = root_members(message_ids, synthetic, link_records(rows))
    any_synthetic = any(synthetic)
    arrivals = list(map(_ARRIVED, rows))
    seen = list(map(_SEEN, rows))
    emails = list(map(_SENDER_EMAIL, rows))
    plain = None not in arrivals and all(emails)  # else some groups take the general loop
    arrival_of, seen_of, email_of = arrivals.__getitem__, seen.__getitem__, emails.__getitem__
    # The kinds as ThreadId spells them (an old backend tag is read as its shape).
    real_kind, synthetic_kind_ = (LEGACY_KINDS.get(k, k) for k in (kind, synthetic_kind(kind)))
    # Threads named by their root Message-ID (as IMAP's are): made by the contract's fast path.
    message_id_kinds = (real_kind, synthetic_kind_) == (MESSAGE_ID_KIND, SYNTHETIC_MESSAGE_ID_KIND)
    of_message_id_root = ThreadSummary._of_message_id_root
    utc = timezone.utc
    from_timestamp = datetime.fromtimestamp
    from_iso = datetime.fromisoformat
    sent_at, name_at, email_at, subject_at = sc.SENT, sc.SENDER_NAME, sc.SENDER_EMAIL, sc.SUBJECT
    senders: dict[tuple[str, str], Address] = {}
    out: list[ThreadSummary] = []
    times: list[float] = []
    firsts: list[Row] | None = [] if with_first else None
    for key, indices in grouped.items():
        if any_synthetic and is_synthetic_root(key):
            root_id, synthetic_root = key[0], True
        else:
            root_id, synthetic_root = key, False
        first = indices[0]
        if len(indices) == 1:
            root = latest = rows[first]
            continued = message_ids[first] != root_id
            newest = arrivals[first]
            if newest is None:
                latest = None
            unread = not seen[first]
            email = emails[first]
            participants = (email,) if email else ()
        elif plain and len(indices) == 2:  # the most common thread (a report and a reply), without builtins
            second = indices[1]
            if message_ids[first] == root_id:
                root, continued = rows[first], False
            elif message_ids[second] == root_id:
                root, continued = rows[second], False
            else:
                root, continued = rows[first], True
            newest, later = arrivals[first], arrivals[second]
            if later > newest:  # else the first of the latest arrivals, as max() picks
                newest, latest = later, rows[second]
            else:
                latest = rows[first]
            unread = not (seen[first] and seen[second])
            email, other = emails[first], emails[second]
            participants = (email,) if email == other else (email, other)
        elif plain:
            if message_ids[first] == root_id:
                root, continued = rows[first], False
            else:
                root = next((rows[i] for i in indices if message_ids[i] == root_id), None)
                continued = root is None
                if root is None:
                    root = rows[first]
            latest = rows[max(indices, key=arrival_of)]  # the first of the latest arrivals
            newest = latest[sc.ARRIVED]
            unread = not all(map(seen_of, indices))
            participants = tuple(dict.fromkeys(map(email_of, indices)))
        else:
            root, latest, newest, unread, participants = _sum_up(rows, indices, root_id)
            # Without its root the walk holds replies only: the thread started before `since`.
            continued = root is None
            if root is None:
                root = rows[first]
        who = (root[name_at], root[email_at])
        sender = senders.get(who)
        if sender is None:
            sender = senders[who] = Address(*who)
        sent = latest[sent_at] if latest is not None else None
        last_activity = from_timestamp(newest, utc) if newest is not None else None
        # The latest message has no usable Date: its row shows the arrival, marked "?" as an
        # mbox row dated by its delivery time is.
        marker = "undated" if last_activity is not None and not sent else ""
        if message_id_kinds:
            out.append(of_message_id_root(synthetic_root, root_id, root[subject_at], sender,
                                          last_activity, len(indices), participants, unread, continued,
                                          from_iso(sent) if sent else None, marker))
        else:
            out.append(ThreadSummary(
                thread_id=ThreadId(synthetic_kind_ if synthetic_root else real_kind, root_id),
                subject=root[subject_at], root_message_id=root_id, sender=sender, last_activity=last_activity,
                message_count=len(indices), participants=participants, unread=unread, date_marker=marker,
                continued=continued, sent=from_iso(sent) if sent else None))
        times.append(newest if newest is not None else 0.0)  # 0.0: the epoch, for no date
        if firsts is not None:
            firsts.append(rows[first])
    return out, times, firsts


def _ranked(out: list[ThreadSummary], times: list[float], _firsts: object = None) -> list[ThreadSummary]:
    """``out`` most recent activity first (ties: the greater root ID first, then in ``out``'s order)."""
    if len(set(times)) == len(times):
        # No two times equal (nor one object twice): the root IDs would break no tie, so
        # sorting by the times alone gives the very order of (time, root ID) below.
        ranked = sorted(range(len(out)), key=times.__getitem__, reverse=True)
    else:
        order = list(zip(times, (s.root_message_id for s in out)))
        ranked = sorted(range(len(out)), key=order.__getitem__, reverse=True)
    return list(map(out.__getitem__, ranked))


def _sum_up(rows: list[Row], indices: list[int], root_id: str) -> tuple:
    """One group's root row (None when absent), latest row (None when no arrival time is
    known), latest arrival, whether any member is unread and its participants, member by
    member (the general case of :func:`summaries`)."""
    message_id_at, arrived_at, seen_at, email_at = sc.MESSAGE_ID, sc.ARRIVED, sc.SEEN, sc.SENDER_EMAIL
    root = latest = newest = None
    unread = False
    emails: dict[str, None] = {}
    for i in indices:
        member = rows[i]
        if root is None and member[message_id_at] == root_id:
            root = member
        arrived = member[arrived_at]  # the first of the latest arrivals, as max() picks
        if arrived is not None and (newest is None or arrived > newest):
            newest, latest = arrived, member
        if not member[seen_at]:
            unread = True
        email = member[email_at]
        if email:
            emails[email] = None
    return root, latest, newest, unread, tuple(emails)


# -- the walk ----------------------------------------------------------------------------------

@dataclass
class Walk:
    rows: list[Row]  # every message walked, newest first (older than `since` too)
    floor_uid: int  # every message from this UID up is in `rows` (1: the whole folder)
    complete: bool  # the walk ended by date (or at the bottom of the folder), not by `limit`
    bottom: bool = False  # it reached the folder's first message


def walk(conn, state, since: datetime, wanted: str | None, limit: int | None) -> Walk:
    """Walk the selected folder newest first until ``since`` (or ``limit`` threads)."""
    rows: list[Row] = []
    kept: list[Row] = []  # with ``limit``: the rows of the window on the list
    roots: set[str] = set()
    since_epoch = since.timestamp()
    keep = _list_filter(wanted)
    maker = RowMaker()
    hi = state.exists
    window = window_size(limit)
    start = window_start(conn, since) if not limit else None
    if start == 0:  # nothing arrived since `since`
        return Walk([], state.uidnext or 1, True)
    complete = bottom = False
    while hi >= 1:
        if start is not None:
            # A first page reads on in windows (it stops at `limit` threads); the whole window in bulk.
            lo = max(1, start, hi - (window if limit else BULK) + 1)
        else:
            lo = max(1, hi - window + 1)
        data = conn.call("FETCH recent headers", lambda c: fetch_rows(c, f"{lo}:{hi}", maker))
        reached_older = False
        for seq in sorted(data, reverse=True):
            if not lo <= seq <= hi:
                continue
            row = data[seq]
            rows.append(row)
            arrived = row[sc.ARRIVED]
            if arrived is not None and arrived < since_epoch:
                reached_older = True
                continue
            if limit and (keep is None or keep(row)):
                kept.append(row)
                roots.add(thread_root(row[sc.MESSAGE_ID], row[sc.REFERENCES], row[sc.IN_REPLY_TO]))
        hi = lo - 1
        if reached_older and start is None and limit and can_find_window(conn):
            # An older message is not the window's end (arrival is not always sequence order:
            # a mail moved back from an archive keeps its old arrival time, on top of the
            # folder): the server says where the window starts, and the page reads on down
            # to it (or to `limit` threads), so a short page is the whole window.
            start = window_start(conn, since)
            if start == 0:  # (the folder changed meanwhile) nothing arrived since `since`
                start = hi + 1
        if start is not None:
            # The server said where the window starts: read down to it, whatever the arrival
            # times on the way (arrival is not always UID order).
            reached_older = hi < start
        if reached_older:
            complete = True  # back to `since` (without WITHIN: down to the first older message)
            break
        if limit and len(roots) >= limit and threads_at_least(kept, limit):
            break
    if hi < 1:
        complete = bottom = True  # the whole folder
    complete_synthetic(conn, rows)
    floor = 1 if bottom else min((r[sc.UID] for r in rows), default=state.uidnext or 1)
    return Walk(rows, floor, complete, bottom)


def walk_below(conn, floor_uid: int, since: datetime, *, guess: int = 0) -> tuple[int, list[Row]] | None:
    """The messages of the window (arrived since ``since``) below ``floor_uid``, for a cache
    that holds every message from ``floor_uid`` up (a first page's walk): one UID SEARCH
    for the window's first UID (ESEARCH + WITHIN), and UID FETCHes of the UIDs from it to
    ``floor_uid - 1``, so nothing the cache holds is read again. Returns the new floor
    (every message from it up is then known) and the rows read, or None when the server
    cannot say where the window starts (the caller then walks the whole window).

    ``guess``: how many messages below the floor the window probably holds
    (:func:`guess_below`). The FETCH of that many (at most :data:`READ_AHEAD`) goes first, with
    the SEARCH sent behind it on the same connection: the server looks for the window's start
    while the rows are parsed (its search cost ~90 ms on a 100k folder, a round trip more on a
    distant one), and only the rest is fetched after. Rows below the window's start are
    dropped, as if never read."""
    if floor_uid <= 1:
        return floor_uid, []  # the cache holds the whole folder
    if not can_find_window(conn):
        return None
    maker = RowMaker()
    ahead = min(guess, READ_AHEAD, floor_uid - 1)
    data: dict[int, Row] = {}
    if ahead > 0:
        low = floor_uid - ahead
        data, first = conn.call("UID FETCH older headers + UID SEARCH window",
                                lambda c: _fetch_finding_window(c, f"{low}:{floor_uid - 1}", maker, since))
    else:
        low = floor_uid
        first = window_start(conn, since, uid=True)
    if first is None:
        return None
    if first == 0 or first >= floor_uid:
        return floor_uid, []  # every message of the window is at or above the floor
    if first < low:
        data.update(conn.call("UID FETCH older headers",
                              lambda c: fetch_rows(c, f"{first}:{low - 1}", maker, uid=True)))
    rows = [row for uid, row in data.items() if first <= uid < floor_uid]
    complete_synthetic(conn, rows)
    return first, rows


#: The most messages read below a cache's floor before the server has said where the window
#: starts (:func:`walk_below`): about 0.1 s of parsing, more than the search takes, while a
#: wrong guess costs at most that.
READ_AHEAD = 5000


def guess_below(rows: Iterable[Row], since: datetime) -> int:
    """How many messages of the window are probably below the rows a cache holds (the
    newest of the window): their arrival rate, carried on back to ``since``, a tenth less. 0
    when the rows cannot tell (fewer than 20 in the window, all at one instant)."""
    since_epoch = since.timestamp()
    arrived = sc.ARRIVED
    times = [t for t in (row[arrived] for row in rows) if t is not None and t >= since_epoch]
    if len(times) < 20:
        return 0
    oldest, newest = min(times), max(times)
    if newest <= oldest:
        return 0
    rate = (len(times) - 1) / (newest - oldest)
    return max(0, int(0.9 * rate * (oldest - since_epoch)))


def _fetch_finding_window(client, uids: str, maker: RowMaker, since: datetime) -> tuple[dict[int, Row], int | None]:
    """UID FETCH the listing's items for ``uids``, with the window's SEARCH (as
    :func:`window_start` asks it) sent right behind it, unanswered: the rows by UID, and the
    window's first UID (0: none, None: the server cannot say). The SEARCH's answer is read
    whatever the FETCH's end, so the connection stays in step."""
    imap = private.imap_of(client)
    out: dict[int, Row] = {}
    fetch_tag = private.send_command(imap, "UID", "FETCH", uids, "(" + " ".join(RECENT_ITEMS) + ")")
    search_tag = private.send_command(imap, "UID", "SEARCH", "RETURN", "(MIN COUNT)", "YOUNGER", str(_younger(since)))
    try:
        typ, data = protocol.stream_fetch(client, fetch_tag, lambda got: parse_rows(got, maker, uid=True, out=out),
                                          2000)
        private.check_ok(client, "fetch", typ, data)
    except (imap.abort, OSError):
        raise  # the connection is gone (or timed out): the caller drops it, nothing more is read
    except BaseException:
        # The server refused the FETCH (or its rows could not be used): the SEARCH's answer is
        # still read, so the connection stays in step, and dropped with the FETCH's error.
        try:
            private.wait_completion(imap, "SEARCH", search_tag)
        except imap.error:
            pass
        imap.untagged_responses.pop("ESEARCH", None)
        raise
    try:
        typ, data = private.wait_completion(imap, "SEARCH", search_tag)
    except imap.abort:
        raise
    except imap.error:  # BAD: refused (as window_start, the caller walks instead)
        typ, data = "BAD", []
    if typ != "OK":
        return out, None
    _, found = private.untagged(imap, typ, data, "ESEARCH")
    minimum = _esearch_min([line for line in found if line])
    return out, minimum if minimum is not None else 0


def _younger(since: datetime) -> int:
    """``since`` as SEARCH YOUNGER's seconds from now (inclusive; rows are trimmed later)."""
    return max(1, int((datetime.now(timezone.utc) - since).total_seconds()) + 1)


def can_find_window(conn) -> bool:
    """Whether the server can say where a window starts (ESEARCH and WITHIN)."""
    return conn.has("ESEARCH") and conn.has("WITHIN")


def window_start(conn, since: datetime, *, uid: bool = False) -> int | None:
    """The sequence number (the UID with ``uid``) of the oldest message that arrived since
    ``since`` (ESEARCH + WITHIN: one round trip, exact to the second), or None when the
    server cannot say. 0 when no message arrived since."""
    if not can_find_window(conn):
        return None
    seconds = _younger(since)
    try:
        data = conn.call("UID SEARCH window" if uid else "SEARCH window", lambda c: private.raw_command(
            c, b"SEARCH", [b"RETURN", b"(MIN COUNT)", b"YOUNGER", str(seconds).encode()], response_name="ESEARCH",
            uid=uid))
    except ConnectionLost:
        raise
    except (BackendFailure, ProtocolError):  # refused or unreadable: walk in windows instead
        return None
    found = _esearch_min(data)
    return found if found is not None else 0


def _esearch_min(data: list) -> int | None:
    for line in data:
        items = list(parse_response([line])) if line else []
        for i, item in enumerate(items[:-1]):
            if isinstance(item, bytes) and item.upper() == b"MIN":
                return int(items[i + 1])
    return None


# -- the cache ---------------------------------------------------------------------------------

#: Past this many changed UIDs named by a catch-up's MODSEQ search, their flags are read with
#: CHANGEDSINCE over the cached range rather than by a UID set that long.
CHANGED_BY_UID = 500


def reconcile(conn, state, cache: sc.FolderCache, note: Callable[[str], None], touched: list[int] | None = None,
              changed_uids: Sequence[int] | None = None) -> str:
    """Bring ``cache`` up to the server's state ``state`` (just selected): ``"same"`` when
    nothing changed, ``"changed"`` when it was brought up to date, ``"drop"`` when it cannot
    be kept (the caller then walks and replaces it). The UIDs of the rows it added, changed
    or dropped are added to ``touched``.

    ``changed_uids``: every message added or changed since ``cache.highestmodseq``, as a
    ``UID SEARCH MODSEQ`` named them to make ``state`` (``ImapSource._caught_up``): the flags
    of the cached ones among them are read by UID (none: nothing is asked) rather than with
    CHANGEDSINCE over the whole cached range."""
    if touched is None:
        touched = []
    if state.highestmodseq is None:
        return "drop"
    if state.uidvalidity != cache.uidvalidity:
        note(f"UIDVALIDITY changed ({cache.uidvalidity} -> {state.uidvalidity}); dropped")
        return "drop"
    if state.highestmodseq < cache.highestmodseq:
        note(f"the server's HIGHESTMODSEQ went back ({cache.highestmodseq} -> {state.highestmodseq}); dropped")
        return "drop"
    uidnext = state.uidnext or 0
    if (state.highestmodseq, uidnext, state.exists) == (cache.highestmodseq, cache.uidnext, cache.exists):
        return "same"
    top = cache.uidnext - 1
    changed = new = gone = 0
    arrived = 0  # messages the SELECT counted in EXISTS that came since the cache (UIDs cache.uidnext..uidnext-1)
    if uidnext > cache.uidnext:
        first = max(cache.uidnext, cache.floor_uid)
        data = conn.call("UID FETCH new", lambda c: fetch_rows(c, f"{first}:*", RowMaker(), uid=True))
        fresh = [row for uid, row in data.items() if uid >= first]
        complete_synthetic(conn, fresh)
        for row in fresh:
            cache.rows[row[sc.UID]] = row
            touched.append(row[sc.UID])
        new = len(fresh)
        arrived = sum(1 for uid in data if cache.uidnext <= uid < uidnext)
    if top >= cache.floor_uid and cache.rows:
        # Expunged since: EXISTS says whether any message left (issue 39: a poll in a storm
        # searched the whole cached range each time). What the cache counted, plus what came
        # since, less what the SELECT counts now, is what left: none, and nothing is asked. Any
        # other difference (mail that came or went after the SELECT, or below the cache's
        # floor) asks for the cached UID range as the server has it now (compact with ESEARCH).
        if cache.exists + arrived != state.exists:
            esearch = conn.has("ESEARCH")
            keys = [b"UID", f"{cache.floor_uid}:{top}".encode()]
            present, count = conn.call("UID SEARCH cached range", lambda c: protocol.search(c, keys, esearch=esearch))
            cached = [u for u in cache.rows if u <= top]
            if count != len(cached):
                keep = set(present)
                for uid in [u for u in cached if u not in keep]:
                    del cache.rows[uid]
                    touched.append(uid)
                    gone += 1
        if state.highestmodseq > cache.highestmodseq and cache.rows:
            modseq = cache.highestmodseq
            below = None if changed_uids is None else [u for u in changed_uids if cache.floor_uid <= u <= top]
            if below is not None and len(below) <= CHANGED_BY_UID:
                data = {}
                if below:
                    seqset, asked = protocol.compress(below), set(below)
                    fetched = conn.call("UID FETCH FLAGS", lambda c: protocol.fetch(c, seqset, ["UID", "FLAGS"]))
                    data = {uid: item for uid, item in fetched.items() if uid in asked}  # (keyed by UID)
            else:
                data = conn.call("UID FETCH CHANGEDSINCE",
                                 lambda c: _changed_flags(c, f"{cache.floor_uid}:{top}", modseq))
            for key, item in data.items():
                uid = int(item.get(b"UID", key))
                old = cache.rows.get(uid)
                if old is not None and b"FLAGS" in item:
                    seen = any(f.lower() == b"\\seen" for f in item[b"FLAGS"])
                    if seen != old[sc.SEEN]:
                        cache.rows[uid] = (*old[:sc.SEEN], seen, *old[sc.SEEN + 1:])
                        touched.append(uid)
                        changed += 1
    note(f"reconciled: {new} new, {changed} flag change(s), {gone} expunged "
         f"(HIGHESTMODSEQ {cache.highestmodseq} -> {state.highestmodseq})")
    cache.highestmodseq, cache.uidnext, cache.exists = state.highestmodseq, max(uidnext, cache.uidnext), state.exists
    return "changed"


def _changed_flags(client, seqset: str, modseq: int) -> dict[int, dict]:
    imap = private.imap_of(client)
    tag = private.send_command(imap, "UID", "FETCH", seqset, "(UID FLAGS)", f"(CHANGEDSINCE {modseq})")
    typ, data = private.wait_completion(imap, "FETCH", tag)
    private.check_ok(client, "fetch", typ, data)
    typ, data = private.untagged(imap, typ, data, "FETCH")
    return dict(parse_fetch_response(data, False, True))


def answer_from_cache(cache: sc.FolderCache, since: datetime, wanted: str | None,
                      limit: int | None) -> list[Row] | None:
    """The rows for (``since``, ``wanted``, ``limit``) from the cache alone, or None when the
    cache does not reach back far enough."""
    since_epoch = since.timestamp()
    complete = cache.complete_since is not None and cache.complete_since <= since_epoch
    if not limit:
        if not complete:
            return None
        # Every cached message that arrived since (arrival is not always UID order).
        keep = _list_filter(wanted)
        arrived = sc.ARRIVED
        found = [r for r in cache.rows.values() if r[arrived] is None or r[arrived] >= since_epoch]
        return [r for r in found if keep(r)] if keep is not None else found
    return pick(cache.newest_first(), since, wanted, limit, exhausted=complete or cache.floor_uid <= 1)


def cache_from_walk(state, result: Walk, since: datetime) -> sc.FolderCache:
    complete_since = None
    if result.complete:
        complete_since = NO_TIME if result.bottom else since.timestamp()
    return sc.FolderCache(state.uidvalidity, state.highestmodseq, state.uidnext or 0, state.exists,
                          result.floor_uid, complete_since, {r[sc.UID]: r for r in result.rows})


#: A window-only cache (a poller's, ``ImapSource.hold_window_only``) is trimmed when a walk
#: made it, then once the window moved on this far (not on every poll: trimming copies the rows).
TRIM_SLACK = 3600.0


def trim_to_window(cache: sc.FolderCache, since: datetime) -> None:
    """Drop the rows a listing since ``since`` never answers: those below the lowest UID of a
    message that arrived since (arrival is not always UID order, so rows above it stay whatever
    their arrival). The cache's promises still hold: every UID at or above the new floor is in
    it, and every message that arrived since ``since``."""
    since_epoch = since.timestamp()
    if cache.complete_since is None or cache.complete_since > since_epoch:
        return
    rows = cache.rows
    arrived = sc.ARRIVED
    floor = min((uid for uid, r in rows.items() if r[arrived] is None or r[arrived] >= since_epoch),
                default=max(cache.uidnext, cache.floor_uid))
    if floor > cache.floor_uid:
        cache.rows = {uid: r for uid, r in rows.items() if uid >= floor}
        cache.floor_uid = floor
    cache.complete_since = since_epoch
