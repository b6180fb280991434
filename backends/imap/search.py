"""Server search over IMAP: ``SEARCH CHARSET UTF-8`` on TEXT, BODY, FROM or SUBJECT, newest first.

One folder is opened with EXAMINE (a search changes nothing, not even ``\\Recent``) and
searched with ``UID SEARCH RETURN (ALL COUNT) CHARSET UTF-8 <key> <text>`` when the server
advertises ESEARCH (a compact UID set and the count), else a plain ``UID SEARCH CHARSET
UTF-8``. Newest first is the highest UID first: UIDs strictly increase with arrival in a
folder (RFC 3501 §2.3.1.1), the order the folder listing uses too. ``SORT (REVERSE
ARRIVAL)`` is not used: it breaks ties by ascending sequence number, so mail that arrived
in the same second would come oldest first, and it costs the server a sort for nothing.

Only the requested page's headers are fetched. The first page of a large folder is
searched newest first in windows of sequence numbers (``UID SEARCH … 97961:100000
SUBJECT …``, then a window sized from the matches' density so far) until it is full, so
it costs what it shows, not what the folder holds; its total is then unknown (``None``) until the next page, which
searches the whole folder once. The ordered UIDs are kept per folder state (UIDVALIDITY,
UIDNEXT, EXISTS), so later pages run no second search while the folder is unchanged. Across the folders of an account every selectable folder is
examined in turn (``\\Noselect`` skipped); a folder that fails is named with why and the
others still answer, merged newest first by the multi-source rule.

The text is the user's: it goes as one IMAP string — quoted when it is printable ASCII,
a literal otherwise (8-bit, CR, LF, or anything a quoted string cannot hold) — never
spliced into the command line.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from datetime import datetime, timezone

from imapclient.response_parser import parse_message_list

from mailtriage.backends.errors import BackendFailure, ConnectionLost, MailError, NotSupported, Unavailable
from mailtriage.backends.imap import imaplib_private as private
from mailtriage.backends.imap import protocol
from mailtriage.backends.imap.headers import aware
from mailtriage.backends.imap.query import fetch_headers
from mailtriage.backends.mailbox_contract import InvalidQuery, MailHeader, with_thread_counts, _newest_first
from mailtriage.backends.search import SearchField, SearchPage, SearchRequest

_KEYS = {SearchField.TEXT: b"TEXT", SearchField.BODY: b"BODY", SearchField.FROM: b"FROM",
         SearchField.SUBJECT: b"SUBJECT"}
_CACHE_SIZE = 16
#: The first page is searched in windows of the newest messages, from this many up.
FIRST_WINDOW = 2000
#: … and at least this many messages per result wanted (a rare word needs a wide window).
WINDOW_PER_RESULT = 40

# Per mailbox object: (folder, folder state, criteria) -> (UIDs newest first, method).
_CACHES: "weakref.WeakKeyDictionary[object, OrderedDict]" = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()


def search_string(text: str) -> bytes:
    """One IMAP string argument for ``text``: quoted when printable ASCII, else a literal.

    A quoted string cannot hold CR, LF or 8-bit bytes; a literal carries any byte
    (``{n}`` then the bytes), so nothing in the text can end the command or start another.
    """
    raw = text.encode("utf-8")
    if all(32 <= b < 127 for b in raw):
        return b'"' + raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'
    return private.literal(raw)


def criteria(request: SearchRequest, *, within: bool, now: datetime | None = None) -> list[bytes]:
    """The SEARCH keys of ``request``: the field's key and the text, then the window."""
    keys = [_KEYS[request.field], search_string(request.query)]
    if request.since is not None:
        since = aware(request.since)
        if within:
            now = now or datetime.now(timezone.utc)
            keys += [b"YOUNGER", str(max(1, int((now - since).total_seconds()))).encode()]
        else:
            keys += [b"SINCE", protocol.imap_date(since)]
    return keys


def method_of(conn) -> str:
    """What the server is asked, in one line (the status line and the JSON show it)."""
    if conn.has("ESEARCH"):
        return "IMAP UID SEARCH RETURN (ALL COUNT) CHARSET UTF-8"
    return "IMAP UID SEARCH CHARSET UTF-8"


def _run(conn, keys: list[bytes]) -> list[int]:
    """UIDs matching ``keys`` in the selected folder, newest first."""
    found, _count = conn.call("UID SEARCH search", lambda c: _search(c, keys, esearch=conn.has("ESEARCH")))
    return sorted(found, reverse=True)


def _search(client, keys: list[bytes], *, esearch: bool) -> tuple[list[int], int]:
    charset = [b"CHARSET", b"UTF-8"]
    if esearch:
        data = private.raw_command(client, b"SEARCH", [b"RETURN", b"(ALL COUNT)", *charset, *keys],
                                   response_name="ESEARCH")
        return protocol.parse_esearch(data)
    uids = sorted(parse_message_list(private.raw_command(client, b"SEARCH", [*charset, *keys])))
    return uids, len(uids)


def _cache(mb) -> OrderedDict:
    with _CACHE_LOCK:
        cache = _CACHES.get(mb)
        if cache is None:
            cache = _CACHES[mb] = OrderedDict()
        return cache


def folder_matches(mb, folder: str, request: SearchRequest) -> tuple[list[int], int, str]:
    """(UIDs newest first, UIDVALIDITY, method) of the matches in ``folder``.

    Raises BackendFailure (the server refused the search, e.g. an unknown charset) and the
    connection's errors (Unavailable, SignInNeeded, ConnectionLost).
    """
    conn = mb.conn
    state = conn.select(folder, readonly=True)
    if state.exists == 0:
        return [], state.uidvalidity, method_of(conn)
    hit = _cached(mb, folder, state, request)
    if hit is not None:
        return hit[0], state.uidvalidity, hit[1]
    keys = criteria(request, within=conn.has("WITHIN"))
    try:
        uids = _run(conn, keys)
    except BackendFailure as exc:
        if isinstance(exc, ConnectionLost):
            raise
        raise BackendFailure(mb.account_id, f"the search in {folder!r} failed: {exc.detail}") from exc
    if request.since is not None and not conn.has("WITHIN"):
        uids = _drop_early(mb, uids, aware(request.since))
    method = method_of(conn)
    _keep(mb, _key(folder, state, request), uids, method)
    return uids, state.uidvalidity, method


def newest_matches(mb, folder: str, request: SearchRequest, need: int) -> tuple[list[int], int, str, bool]:
    """At least ``need`` of the newest matches in ``folder`` (fewer only when the folder has
    no more), searched newest first in windows of sequence numbers, so the first page
    costs what it shows rather than what the folder holds; and whether every match is known.

    Returns (UIDs newest first, UIDVALIDITY, method, complete). A complete answer is kept like
    :func:`folder_matches`' (the next page runs no search); otherwise the next page searches
    the whole folder once, for the exact total.
    """
    conn = mb.conn
    state = conn.select(folder, readonly=True)
    if state.exists <= 2 * FIRST_WINDOW or _cached(mb, folder, state, request) is not None:
        uids, uidvalidity, method = folder_matches(mb, folder, request)
        return uids, uidvalidity, method, True
    keys = criteria(request, within=conn.has("WITHIN"))
    found: list[int] = []
    hi, window = state.exists, max(FIRST_WINDOW, WINDOW_PER_RESULT * need)
    lo = hi + 1
    searched = 0
    while hi >= 1 and len(found) < need:
        lo = max(1, hi - window + 1)
        seqset = f"{lo}:{hi}".encode()
        try:
            found.extend(_run(conn, [seqset, *keys]))
        except BackendFailure as exc:
            if isinstance(exc, ConnectionLost):
                raise
            raise BackendFailure(mb.account_id, f"the search in {folder!r} failed: {exc.detail}") from exc
        searched += hi - lo + 1
        hi = lo - 1
        # The next window from the matches' density so far (half as much again, to land in
        # one more search); eight times as wide when nothing matched yet.
        window = (int((need - len(found)) * searched / len(found) * 1.5) + 1 if found else searched * 8)
    found = list(dict.fromkeys(found))  # a window never overlaps another, unless mail was expunged meanwhile
    complete = lo <= 1
    if request.since is not None and not conn.has("WITHIN"):
        found = _drop_early(mb, found, aware(request.since))
    method = method_of(conn) + (" (newest first, in windows)" if not complete else "")
    if complete:
        _keep(mb, _key(folder, state, request), found, method_of(conn))
    return found, state.uidvalidity, method, complete


def _key(folder: str, state, request: SearchRequest) -> tuple:
    since_key = request.since.isoformat() if request.since else None
    return (folder, state.uidvalidity, state.uidnext, state.exists, request.field, request.query, since_key)


def _cached(mb, folder: str, state, request: SearchRequest):
    cache = _cache(mb)
    key = _key(folder, state, request)
    with _CACHE_LOCK:
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
    return hit


def _keep(mb, key: tuple, uids: list[int], method: str) -> None:
    cache = _cache(mb)
    with _CACHE_LOCK:
        cache[key] = (uids, method)
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)


def _drop_early(mb, uids: list[int], since: datetime) -> list[int]:
    """SINCE counts whole days: drop the matches that arrived before ``since`` that day."""
    if not uids:
        return uids
    early: set[int] = set()
    for chunk in protocol.chunks(sorted(uids)):
        seqset = protocol.compress(chunk)
        data = mb.conn.call("UID FETCH INTERNALDATE", lambda c: protocol.fetch(c, seqset, ["UID", "INTERNALDATE"]))
        for k, item in data.items():
            arrived = aware(item.get(b"INTERNALDATE"))
            if arrived is not None and arrived < since:
                early.add(int(item.get(b"UID", k)))
    return [u for u in uids if u not in early]


def folder_window(mb, folder: str, request: SearchRequest, start: int, count: int
                  ) -> tuple[list[MailHeader], int, str]:
    """Headers of matches [start, start+count) of ``folder`` newest first, the total, the method."""
    uids, uidvalidity, method = folder_matches(mb, folder, request)
    window = uids[start:start + count]
    if not window:
        return [], len(uids), method
    headers = fetch_headers(mb, folder, uidvalidity, window)
    return [headers[u] for u in window if u in headers], len(uids), method


def search_folders(mb, folders: list[str], request: SearchRequest, backend: str) -> SearchPage:
    """One page of headers matching ``request`` across ``folders`` (MailHeader items).

    One folder: only the page is fetched. Several: each folder's first (page+1)*size
    matches, merged newest first, sliced once; totals summed. A folder that fails is
    listed in ``failed`` with why; when every folder fails, the first error is raised.
    """
    if len(folders) == 1 and request.page == 0:
        # The first page: the newest matches, searched in windows from the top of the folder.
        folder = folders[0]
        uids, uidvalidity, method, complete = newest_matches(mb, folder, request, request.page_size + 1)
        window = uids[:request.page_size]
        headers = fetch_headers(mb, folder, uidvalidity, window) if window else {}
        items = tuple(with_thread_counts([headers[u] for u in window if u in headers]))
        notes = () if complete else ("the newest matches first; the total is counted with the next page",)
        return SearchPage(backend, request, items, len(uids) if complete else None, len(uids) > request.page_size,
                          method=method, searched=(folder,), notes=notes)
    if len(folders) == 1:
        headers, total, method = folder_window(mb, folders[0], request, request.offset, request.page_size)
        return SearchPage(backend, request, tuple(with_thread_counts(headers)), total,
                          request.offset + request.page_size < total, method=method, searched=(folders[0],))
    need = request.offset + request.page_size
    merged: list[MailHeader] = []
    total = 0
    failed: list[tuple[str, str]] = []
    searched: list[str] = []
    first_error: MailError | None = None
    method = method_of(mb.conn)
    for folder in folders:
        try:
            headers, count, method = folder_window(mb, folder, request, 0, need)
        except (Unavailable, NotSupported, InvalidQuery):
            raise  # the account or the request, not the folder: nothing else would answer either
        except MailError as exc:
            first_error = first_error or exc
            failed.append((folder, getattr(exc, "detail", None) or str(exc)))
            continue
        searched.append(folder)
        merged.extend(headers)
        total += count
    if not searched and first_error is not None:
        raise first_error
    merged.sort(key=_newest_first)
    window = merged[request.offset:need]
    notes = (f"{len(failed)} of {len(folders)} folders could not be searched",) if failed else ()
    return SearchPage(backend, request, tuple(with_thread_counts(window)), total, need < total, method=method,
                      searched=tuple(searched), failed=tuple(failed), notes=notes)


def account_folders(mb) -> list[str]:
    """Every folder of the account that can hold mail (``\\Noselect`` ones are skipped)."""
    return [info.name for info in mb.folders.infos() if info.selectable]
