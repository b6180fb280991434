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
3. The rows are threaded (the shared JWZ threading) into summaries, newest activity first
   (:mod:`backends.imap.recent_threads`).

With ``limit`` the walk (or the cached rows, read the same way) stops once ``limit``
threads are known, exactly as an uncached first page would.

A row is a plain tuple laid out as :mod:`summary_cache` says (``sc.UID``…): the walk
makes it, the cache stores it, threading reads it as a record, so tens of thousands of
rows are never copied from one shape into another. The FETCH responses of the walk are
read by a parser of their common shape (:mod:`backends.imap.recent_rows`); anything else goes
through imapclient's parser, so the rows are the same either way, only made faster.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Iterable, Sequence

from imapclient.exceptions import ProtocolError
from imapclient.response_parser import parse_fetch_response, parse_response

from mailtriage.backends.errors import BackendFailure, ConnectionLost
from mailtriage.backends.imap import imaplib_private as private
from mailtriage.backends.imap import protocol
from mailtriage.backends.imap import summary_cache as sc
from mailtriage.backends.imap.headers import thread_root
from mailtriage.backends.imap.recent_rows import (NO_TIME, RECENT_ITEMS, Row, RowMaker, _list_filter,
                                                  complete_synthetic, fetch_rows, parse_rows)
from mailtriage.backends.imap.recent_threads import threads_at_least


WINDOW = 500  # messages per FETCH while walking a folder newest first
BULK = 25000  # messages per FETCH when the window's start is known (parsed as they arrive)


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
