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
3. The rows are threaded (the shared JWZ threading) into summaries, newest activity first.

With ``limit`` the walk (or the cached rows, read the same way) stops once ``limit``
threads are known, exactly as an uncached first page would.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Iterable, Iterator

from imapclient.exceptions import ProtocolError
from imapclient.response_parser import parse_fetch_response, parse_response

from mailtriage.backends import mime
from mailtriage.backends.account_source import EPOCH
from mailtriage.backends.contract import Address, ThreadId, ThreadSummary
from mailtriage.backends.errors import BackendFailure, ConnectionLost
from mailtriage.backends.imap import protocol
from mailtriage.backends.imap import summary_cache as sc
from mailtriage.backends.imap.headers import aware, mime_synthetic_id, thread_root
from mailtriage.backends.thread_reconstruction import ThreadRecord, synthetic_kind, thread_records

RECENT_FIELDS = ("MESSAGE-ID", "REFERENCES", "IN-REPLY-TO", "SUBJECT", "FROM", "DATE", "TO", "CC", "LIST-ID",
                 "LIST-POST")
_RECENT_ITEM = f"BODY.PEEK[HEADER.FIELDS ({' '.join(RECENT_FIELDS)})]"
_RECENT_KEY = f"BODY[HEADER.FIELDS ({' '.join(RECENT_FIELDS)})]".encode()
RECENT_ITEMS = ["UID", "FLAGS", "INTERNALDATE", _RECENT_ITEM]
WINDOW = 500  # messages per FETCH while walking a folder newest first
BULK = 5000  # messages per FETCH when the window's start is known
_LIST_FIELDS = {b"to", b"cc", b"list-id", b"list-post"}
NO_TIME = float("-inf")


@dataclass
class Row:
    """One message seen by list_recent_threads (headers only)."""

    uid: int
    message_id: str
    references: tuple[str, ...]
    in_reply_to: str | None
    synthetic: bool
    subject: str
    sender: Address
    arrived: datetime | None
    seen: bool
    list_fields: bytes  # To, Cc, List-Id, List-Post, lower-cased: to tell list mail apart
    sent: datetime | None = None  # the Date header, as the sender wrote it

    def to_plain(self) -> tuple:
        return (self.uid, self.message_id, self.references, self.in_reply_to, self.synthetic, self.subject,
                self.sender.name, self.sender.email, self.arrived.timestamp() if self.arrived else None, self.seen,
                self.list_fields, self.sent.isoformat() if self.sent else None)

    @classmethod
    def from_plain(cls, p: tuple) -> "Row":
        arrived = datetime.fromtimestamp(p[sc.ARRIVED], timezone.utc) if p[sc.ARRIVED] is not None else None
        # The sender's own offset is kept (an ISO text): the list shows the date as written.
        sent = datetime.fromisoformat(p[sc.SENT]) if p[sc.SENT] else None
        return cls(p[sc.UID], p[sc.MESSAGE_ID], tuple(p[sc.REFERENCES]), p[sc.IN_REPLY_TO], p[sc.SYNTHETIC],
                   p[sc.SUBJECT], Address(p[sc.SENDER_NAME], p[sc.SENDER_EMAIL]), arrived, p[sc.SEEN],
                   p[sc.LIST_FIELDS], sent)


def row_from_fetch(item: dict) -> Row:
    block = item.get(_RECENT_KEY) or b""
    fields = mime.header_fields(block)
    message_id = mime.extract_msgid(fields.get(b"message-id"))
    subject, _notes = mime.decode_header_text(fields.get(b"subject"))
    flags = {f.lower() for f in item.get(b"FLAGS", ())}
    return Row(
        uid=int(item[b"UID"]),
        # Without a Message-ID: a stand-in now, the MIME parser's synthetic ID once the full header is read.
        message_id=message_id or mime_synthetic_id(block),
        references=mime.extract_msgids(fields.get(b"references")),
        in_reply_to=mime.extract_msgid(fields.get(b"in-reply-to")),
        synthetic=message_id is None,
        subject=subject,
        sender=mime.parse_address(fields.get(b"from")),
        arrived=aware(item.get(b"INTERNALDATE")),
        seen=b"\\seen" in flags,
        list_fields=b" ".join(v for k, v in fields.items() if k in _LIST_FIELDS).lower(),
        sent=mime.parse_date(fields.get(b"date")),
    )


def on_list(row: Row, address: str) -> bool:
    """Is the message to (or archived by) the list? To, Cc, List-Post and List-Id are checked."""
    local, _, domain = address.partition("@")
    needles = [address.encode()]
    if domain:
        needles.append(f"{local}.{domain}".encode())  # List-Id: <security.example.org>
    return any(n in row.list_fields for n in needles)


def fetch_recent(client, seqset: str, *, uid: bool = False) -> dict[int, dict]:
    """FETCH the listing's items for ``seqset``; a message the parser chokes on is skipped."""
    try:
        return protocol.fetch(client, seqset, RECENT_ITEMS, uid=uid)
    except ProtocolError:
        # One message the parser chokes on must not hide the others: go one by one.
        out: dict[int, dict] = {}
        for number in protocol.expand(seqset):
            try:
                out.update(protocol.fetch(client, str(number), RECENT_ITEMS, uid=uid))
            except ProtocolError:
                continue
        return out


def complete_synthetic(conn, rows: Iterable[Row]) -> None:
    """Give rows without a Message-ID the MIME parser's synthetic ID (one FETCH of their headers)."""
    missing = [r for r in rows if r.synthetic]
    if not missing:
        return
    uids = protocol.compress(r.uid for r in missing)
    data = conn.call("UID FETCH header", lambda c: protocol.fetch(c, uids, ["UID", "BODY.PEEK[HEADER]"]))
    blocks = {item.get(b"UID", k): item.get(b"BODY[HEADER]") for k, item in data.items()}
    for row in missing:
        if blocks.get(row.uid):
            row.message_id = mime_synthetic_id(blocks[row.uid])


# -- choosing rows -------------------------------------------------------------------------

def window_size(limit: int | None) -> int:
    return min(WINDOW, max(100, 3 * limit)) if limit else WINDOW


def pick(rows_newest_first: Iterable[Row], since: datetime, wanted: str | None, limit: int | None,
         *, exhausted: bool) -> list[Row] | None:
    """The rows a newest-first walk in windows keeps, read from rows already known
    (``rows_newest_first`` holds every message from the top of the folder down; it is
    consumed only as far as the walk goes).

    Returns None when the known rows end before the walk would stop and ``exhausted``
    is false (more, older messages are on the server only)."""
    window = window_size(limit)
    out: list[Row] = []
    roots: set[str] = set()
    reached_older = False
    for seen, row in enumerate(rows_newest_first, 1):
        if row.arrived is not None and row.arrived < since:
            reached_older = True
        elif not wanted or on_list(row, wanted):
            out.append(row)
            roots.add(thread_root(row.message_id, row.references, row.in_reply_to))
        if seen % window == 0 and (reached_older or (limit and len(roots) >= limit)):
            return out  # the end of a window where the walk stops
    if reached_older or (limit and len(roots) >= limit):
        return out
    return out if exhausted else None


def summaries(rows: list[Row], kind: str) -> list[ThreadSummary]:
    rows = sorted(rows, key=lambda r: r.uid)  # oldest first: the first member is the earliest seen
    records = [ThreadRecord(r.message_id, r.references, r.in_reply_to, r.synthetic) for r in rows]
    out = []
    for group in thread_records(records):
        members = [rows[i] for i in group.members]
        root = next((m for m in members if m.message_id == group.root_id), None)
        # Without its root the walk holds replies only: the thread started before `since`.
        continued = root is None
        root = root or members[0]
        arrivals = [m.arrived for m in members if m.arrived is not None]
        latest = max((m for m in members if m.arrived is not None), key=lambda m: m.arrived, default=None)
        participants = tuple(dict.fromkeys(m.sender.email for m in members if m.sender.email))
        out.append(ThreadSummary(
            thread_id=ThreadId(synthetic_kind(kind) if group.synthetic else kind, group.root_id),
            subject=root.subject,
            root_message_id=group.root_id,
            sender=root.sender,
            last_activity=max(arrivals) if arrivals else None,
            sent=latest.sent if latest is not None else None,
            message_count=len(members),
            participants=participants,
            unread=any(not m.seen for m in members),
            continued=continued,
        ))
    out.sort(key=lambda s: (s.last_activity or EPOCH, s.root_message_id), reverse=True)
    return out


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
    roots: set[str] = set()
    hi = state.exists
    window = window_size(limit)
    start = window_start(conn, since) if not limit else None
    if start == 0:  # nothing arrived since `since`
        return Walk([], state.uidnext or 1, True)
    complete = bottom = False
    while hi >= 1:
        if start is not None:
            lo = max(1, start, hi - BULK + 1)
        else:
            lo = max(1, hi - window + 1)
        data = conn.call("FETCH recent headers", lambda c: fetch_recent(c, f"{lo}:{hi}"))
        reached_older = False
        for seq in sorted(data, reverse=True):
            item = data[seq]
            if not lo <= seq <= hi or b"UID" not in item:
                continue
            row = row_from_fetch(item)
            rows.append(row)
            if row.arrived is not None and row.arrived < since:
                reached_older = True
                continue
            if wanted and not on_list(row, wanted):
                continue
            roots.add(thread_root(row.message_id, row.references, row.in_reply_to))
        hi = lo - 1
        if start is not None:
            # The server said where the window starts: read down to it, whatever the arrival
            # times on the way (arrival is not always UID order).
            reached_older = hi < start
        if reached_older:
            complete = True
            break
        if limit and len(roots) >= limit:
            break
    if hi < 1:
        complete = bottom = True  # the whole folder
    complete_synthetic(conn, rows)
    floor = 1 if bottom else min((r.uid for r in rows), default=state.uidnext or 1)
    return Walk(rows, floor, complete, bottom)


def window_start(conn, since: datetime) -> int | None:
    """The sequence number of the oldest message that arrived since ``since`` (ESEARCH +
    WITHIN: one round trip, exact to the second), or None when the server cannot say.
    0 when no message arrived since."""
    if not (conn.has("ESEARCH") and conn.has("WITHIN")):
        return None
    seconds = max(1, int((datetime.now(timezone.utc) - since).total_seconds()) + 1)  # inclusive; trimmed later
    try:
        data = conn.call("SEARCH window", lambda c: c._raw_command_untagged(
            b"SEARCH", [b"RETURN", b"(MIN COUNT)", b"YOUNGER", str(seconds).encode()], response_name="ESEARCH",
            uid=False))
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

def reconcile(conn, state, cache: sc.FolderCache, note: Callable[[str], None]) -> str:
    """Bring ``cache`` up to the server's state ``state`` (just selected): ``"same"`` when
    nothing changed, ``"changed"`` when it was brought up to date, ``"drop"`` when it cannot
    be kept (the caller then walks and replaces it)."""
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
    if top >= cache.floor_uid and cache.rows:
        # Expunged since: the cached UID range as the server has it now (compact with ESEARCH).
        esearch = conn.has("ESEARCH")
        keys = [b"UID", f"{cache.floor_uid}:{top}".encode()]
        present, count = conn.call("UID SEARCH cached range", lambda c: protocol.search(c, keys, esearch=esearch))
        if count != len(cache.rows):
            keep = set(present)
            for uid in [u for u in cache.rows if u not in keep]:
                del cache.rows[uid]
                gone += 1
        if state.highestmodseq > cache.highestmodseq and cache.rows:
            modseq = cache.highestmodseq
            data = conn.call("UID FETCH CHANGEDSINCE", lambda c: _changed_flags(c, f"{cache.floor_uid}:{top}", modseq))
            for key, item in data.items():
                uid = int(item.get(b"UID", key))
                old = cache.rows.get(uid)
                if old is not None and b"FLAGS" in item:
                    seen = any(f.lower() == b"\\seen" for f in item[b"FLAGS"])
                    if seen != old[sc.SEEN]:
                        cache.rows[uid] = (*old[:sc.SEEN], seen, *old[sc.SEEN + 1:])
                        changed += 1
    if uidnext > cache.uidnext:
        first = max(cache.uidnext, cache.floor_uid)
        data = conn.call("UID FETCH new", lambda c: fetch_recent(c, f"{first}:*", uid=True))
        fresh = [row_from_fetch({**item, b"UID": int(item.get(b"UID", key))}) for key, item in data.items()
                 if int(item.get(b"UID", key)) >= first]  # keyed by UID (imapclient drops the UID item then)
        complete_synthetic(conn, fresh)
        for row in fresh:
            cache.rows[row.uid] = row.to_plain()
        new = len(fresh)
    note(f"reconciled: {new} new, {changed} flag change(s), {gone} expunged "
         f"(HIGHESTMODSEQ {cache.highestmodseq} -> {state.highestmodseq})")
    cache.highestmodseq, cache.uidnext, cache.exists = state.highestmodseq, max(uidnext, cache.uidnext), state.exists
    return "changed"


def _changed_flags(client, seqset: str, modseq: int) -> dict[int, dict]:
    imap = client._imap
    tag = imap._command("UID", "FETCH", seqset, "(UID FLAGS)", f"(CHANGEDSINCE {modseq})")
    typ, data = imap._command_complete("FETCH", tag)
    client._checkok("fetch", typ, data)
    typ, data = imap._untagged_response(typ, data, "FETCH")
    return dict(parse_fetch_response(data, False, True))


def newest_first(cache: sc.FolderCache) -> Iterator[Row]:
    """The cached rows, newest first, made into rows only as they are read."""
    rows = cache.rows
    return (Row.from_plain(rows[uid]) for uid in sorted(rows, reverse=True))


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
        rows = cache.rows
        fresh = (rows[uid] for uid in sorted(rows, reverse=True))
        found = [Row.from_plain(p) for p in fresh if p[sc.ARRIVED] is None or p[sc.ARRIVED] >= since_epoch]
        return [r for r in found if on_list(r, wanted)] if wanted else found
    return pick(newest_first(cache), since, wanted, limit, exhausted=complete or cache.floor_uid <= 1)


def cache_from_walk(state, result: Walk, since: datetime) -> sc.FolderCache:
    complete_since = None
    if result.complete:
        complete_since = NO_TIME if result.bottom else since.timestamp()
    return sc.FolderCache(state.uidvalidity, state.highestmodseq, state.uidnext or 0, state.exists,
                          result.floor_uid, complete_since, {r.uid: r.to_plain() for r in result.rows})
