"""``list(MailQuery)`` for IMAP: newest first, a message total, only the page fetched.

"Newest" is arrival order in the folder: IMAP UIDs strictly increase as mail arrives
(RFC 3501 §2.3.1.1), and sequence numbers follow UIDs. So:

* an unfiltered folder page needs no SEARCH or SORT at all: the total is the folder's
  EXISTS count (kept live by the connection) and the page is one FETCH of a sequence
  range counted from the top — the cost follows the page, not the folder;
* a filtered page runs one server-side ``UID SEARCH`` (``RETURN (ALL COUNT)`` with
  ESEARCH), slices the UIDs newest first and fetches envelopes for that slice only,
  in chunks;
* ``since`` uses ``YOUNGER`` (WITHIN, exact to the second) when advertised, else
  ``SINCE`` (whole days, as IMAP defines it) trimmed by the arrival time of the
  messages on the boundary days;
* a ``{label}`` source searches every selectable folder except Trash and Junk and
  merges them with the multi-source rule (first (page+1)*pageSize of each, merge by
  date, slice once, sum totals).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

from imapclient.exceptions import ProtocolError

from mailtriage.backends.imap import protocol
from mailtriage.backends.imap.headers import (HEADER_ITEMS, SYNTHETIC_ITEMS, aware, header_from_fetch,
                                              synthetic_id_from_fetch, synthetic_message_id, thread_root)
from mailtriage.backends.imap.ids import MessageRef
from mailtriage.backends.mailbox_contract import (InvalidQuery, MailHeader, MailPage, MailQuery, merge_pages,
                                        with_thread_counts)
from mailtriage.backends.contract import Address
from mailtriage.backends.imap.mutations import check_keyword


def criteria_for(query: MailQuery, *, within: bool, now: datetime | None = None) -> list[bytes]:
    """IMAP SEARCH keys for the filters of ``query`` (empty when unfiltered)."""
    keys: list[bytes] = []
    if query.label is not None:
        keys += [b"KEYWORD", check_keyword(query.label).encode("ascii")]
    if query.text:
        keys += [b"TEXT", protocol.quote(query.text)]
    if query.from_:
        keys += [b"FROM", protocol.quote(query.from_)]
    if query.unread is not None:
        keys.append(b"UNSEEN" if query.unread else b"SEEN")
    if query.flagged is not None:
        keys.append(b"FLAGGED" if query.flagged else b"UNFLAGGED")
    if query.has_attachment is not None:
        # Same rule as the header's hasAttachments: the server's $HasAttachment keyword when it
        # sets one, else a multipart/mixed body.
        has = [b"OR", b"KEYWORD", b"$HasAttachment",
               b"(NOT KEYWORD $HasNoAttachment HEADER Content-Type \"multipart/mixed\")"]
        keys += has if query.has_attachment else [b"NOT", b"(" + b" ".join(has) + b")"]
    if query.since is not None:
        since = aware(query.since)
        if within:
            now = now or datetime.now(timezone.utc)
            seconds = max(1, int((now - since).total_seconds()))
            keys += [b"YOUNGER", str(seconds).encode()]
        else:
            keys += [b"SINCE", protocol.imap_date(since)]
    return keys


def complete_synthetic(mb, headers: dict[int, MailHeader], uidvalidity: int) -> dict[int, MailHeader]:
    """Give messages without a Message-ID the same synthetic ID the MIME parser gives them
    (a hash of the raw header), with one extra FETCH for just those messages."""
    missing = [uid for uid, h in headers.items() if h.synthetic_id and h.size is not None]
    if not missing:
        return headers
    try:
        data = mb.conn.call("UID FETCH header", lambda c: protocol.fetch(c, protocol.compress(missing),
                                                                         SYNTHETIC_ITEMS))
    except ProtocolError:
        return headers
    for key, item in data.items():
        uid = item.get(b"UID", key)
        mid = synthetic_id_from_fetch(item)
        if uid in missing and mid is not None:
            old = headers[uid]
            headers[uid] = replace(old, message_id=mid, thread_key=thread_root(mid, old.references, old.in_reply_to))
    return headers


def fetch_headers(mb, folder: str, uidvalidity: int, uids: list[int]) -> dict[int, MailHeader]:
    """Headers of ``uids`` (chunked). A message the server cannot describe gets a placeholder
    header with a note instead of failing the page."""
    out: dict[int, MailHeader] = {}
    for chunk in protocol.chunks(sorted(uids)):
        try:
            data = mb.conn.call("UID FETCH headers", lambda c: protocol.fetch(c, protocol.compress(chunk), HEADER_ITEMS))
        except ProtocolError:
            data = {}
            for uid in chunk:  # one bad response must not take the others with it
                try:
                    data.update(mb.conn.call("UID FETCH header", lambda c: protocol.fetch(c, str(uid), HEADER_ITEMS)))
                except ProtocolError as exc:
                    ref = MessageRef(mb.account_id, folder, uidvalidity, uid)
                    out[uid] = placeholder(ref, f"the server's description of this message could not be read: {exc}")
        for key, item in data.items():
            uid = item.get(b"UID", key)
            if uid in out or uid not in chunk:
                continue
            ref = MessageRef(mb.account_id, folder, uidvalidity, uid)
            out[uid] = header_from_fetch(ref, item)
    return complete_synthetic(mb, out, uidvalidity)


def placeholder(ref: MessageRef, note: str) -> MailHeader:
    mid = synthetic_message_id(ref)
    return MailHeader(str(ref), ref.account_id, ref.folder, "", Address("", ""), (), (), None, None, mid, None, (),
                      False, False, False, False, (), False, mid, 1, None, None, True, (note,))


def folder_window(mb, folder: str, query: MailQuery, start: int, count: int) -> tuple[list[MailHeader], int]:
    """Headers at newest-first positions [start, start+count) of ``folder`` under ``query``'s
    filters, and the folder's matching total."""
    conn = mb.conn
    state = conn.select(folder)
    keys = criteria_for(query, within=conn.has("WITHIN"))
    if not keys:
        total = state.exists
        hi = total - start
        if hi < 1 or count < 1:
            return [], total
        lo = max(1, hi - count + 1)
        # One FETCH of a sequence range from the top: no SEARCH, no SORT, no UID list.
        try:
            data = conn.call("FETCH page", lambda c: protocol.fetch(c, f"{lo}:{hi}", HEADER_ITEMS, uid=False))
        except ProtocolError:
            data = conn.call("FETCH page UIDs", lambda c: protocol.fetch(c, f"{lo}:{hi}", ["UID"], uid=False))
            uids = sorted((item[b"UID"] for item in data.values() if b"UID" in item), reverse=True)
        else:
            headers = {}
            for seq, item in data.items():
                if lo <= seq <= hi and b"UID" in item:
                    ref = MessageRef(mb.account_id, folder, state.uidvalidity, item[b"UID"])
                    headers[ref.uid] = header_from_fetch(ref, item)
            headers = complete_synthetic(mb, headers, state.uidvalidity)
            return [headers[u] for u in sorted(headers, reverse=True)], total
    else:
        found, total = conn.call("UID SEARCH", lambda c: protocol.search(c, keys, esearch=conn.has("ESEARCH")))
        if query.since is not None and not conn.has("WITHIN"):
            early = _arrived_before(mb, keys, aware(query.since))
            if early:
                found = [u for u in found if u not in early]
                total = len(found)
        uids = sorted(found, reverse=True)[start:start + count]
    if not uids:
        return [], total
    headers = fetch_headers(mb, folder, state.uidvalidity, uids)
    return [headers[u] for u in uids if u in headers], total


def _arrived_before(mb, keys: list[bytes], since: datetime) -> set[int]:
    """UIDs that SINCE (whole days) let in although they arrived before ``since``: only
    the boundary days can hold them, so only those are searched and their arrival read."""
    conn = mb.conn
    edge_keys = [*keys, b"BEFORE", protocol.imap_date(since + timedelta(days=2))]
    edge, _count = conn.call("UID SEARCH boundary", lambda c: protocol.search(c, edge_keys,
                                                                              esearch=conn.has("ESEARCH")))
    early: set[int] = set()
    for chunk in protocol.chunks(edge):
        seqset = protocol.compress(chunk)
        data = conn.call("UID FETCH INTERNALDATE", lambda c: protocol.fetch(c, seqset, ["UID", "INTERNALDATE"]))
        for key, item in data.items():
            arrived = aware(item.get(b"INTERNALDATE"))
            if arrived is not None and arrived < since:
                early.add(int(item.get(b"UID", key)))
    return early


def list_messages(mb, query: MailQuery) -> MailPage:
    if query.folder is not None:
        mb.folders.info(query.folder)  # a clear error for an unknown folder
        headers, total = folder_window(mb, query.folder, query, query.offset, query.page_size)
        return MailPage(tuple(with_thread_counts(headers)), total, query.page, query.page_size)
    if mb.labels.folder_backed:
        # Gmail (X-GM-EXT-1): a label *is* a folder; its mail carries no keyword to search.
        info = mb.folders.info(query.label)
        if not info.selectable:
            raise InvalidQuery(f"label {query.label!r} is a folder that cannot hold mail")
        as_folder = replace(query, folder=query.label, label=None)
        headers, total = folder_window(mb, query.label, as_folder, query.offset, query.page_size)
        return MailPage(tuple(with_thread_counts(headers)), total, query.page, query.page_size)
    # {label}: every selectable folder except Trash and Junk, merged by the multi-source rule.
    pages = []
    need = (query.page + 1) * query.page_size
    for info in mb.folders.infos():
        if not info.selectable or info.role in ("trash", "junk"):
            continue
        headers, total = folder_window(mb, info.name, query, 0, need)
        pages.append(MailPage(tuple(headers), total, 0, need))
    return merge_pages(pages, query.page, query.page_size)
