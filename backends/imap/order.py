"""Whole-folder orders for IMAP (issue 35): the server's ``SORT`` and ``THREAD`` (RFC 5256)
and ``UID SEARCH UNSEEN``, so that sorting, folding and "next unread" cover the folder,
not the page the list has loaded.

Each read returns UIDs only (as message IDs), never headers: the list then fetches the
headers of the rows it shows, a page at a time (:func:`headers`). A server without
``SORT`` (or ``THREAD=REFERENCES``) is declined with ``NotSupported``; the front end then
falls back to its documented limit and says so.

* ``date`` is arrival (``ARRIVAL``, INTERNALDATE: what the list calls newest), newest first;
* ``sender`` is the display name (``DISPLAYFROM``, RFC 5957) where the server offers
  ``SORT=DISPLAY``, else the From address (``FROM``);
* ``subject`` is the base subject (``Re:``/``Fwd:`` removed by the server); ``size`` is
  largest first;
* threads (``THREAD REFERENCES``) are placed where their first member falls in the order,
  each as the server nests it (a parent before its replies).
"""

from __future__ import annotations

from typing import Sequence

from mailtriage.backends.errors import NotSupported
from mailtriage.backends.imap import protocol
from mailtriage.backends.imap.ids import MessageRef
from mailtriage.backends.imap.query import fetch_headers
from mailtriage.backends.mailbox_contract import FolderOrder, MailHeader

SORT_CRITERIA = {"date": "ARRIVAL", "sender": "FROM", "subject": "SUBJECT", "size": "SIZE"}
DESCENDING = frozenset({"date", "size"})


def _ids(mb, folder: str, uidvalidity: int, uids: Sequence[int]) -> tuple[str, ...]:
    return tuple(str(MessageRef(mb.account_id, folder, uidvalidity, uid)) for uid in uids)


def _sorted_uids(mb, sort: str | None, reverse: bool) -> tuple[list[int], str]:
    conn = mb.conn
    if sort is None and not reverse:
        found, _count = conn.call("UID SEARCH ALL", lambda c: protocol.search(c, [], esearch=conn.has("ESEARCH")))
        return sorted(found, reverse=True), "UID SEARCH ALL"
    if not conn.has("SORT"):
        raise NotSupported(mb.account_id, "order", "the server offers no SORT")
    key = sort or "date"
    if key not in SORT_CRITERIA:
        raise ValueError(f"sort must be one of {', '.join(SORT_CRITERIA)}, not {key!r}")
    criterion = SORT_CRITERIA[key]
    if key == "sender" and conn.has("SORT=DISPLAY"):
        criterion = "DISPLAYFROM"
    if (key in DESCENDING) != reverse:
        criterion = "REVERSE " + criterion
    uids = conn.call("UID SORT", lambda c: c.sort([criterion], "ALL", "UTF-8"))
    return [int(u) for u in uids], f"UID SORT ({criterion})"


def _flatten(node, depth: int, out: list[tuple[int, int]]) -> None:
    """One THREAD node, ``(3 6 (4 23)(44 7 96))``: each number is the parent of the next, a
    nested list is one branch under the number before it."""
    for item in node:
        if isinstance(item, (tuple, list)):
            _flatten(item, depth, out)
        else:
            out.append((int(item), depth))
            depth += 1


def _threads(mb, order: list[int]) -> list[list[tuple[int, int]]]:
    conn = mb.conn
    if not conn.has("THREAD=REFERENCES"):
        raise NotSupported(mb.account_id, "order", "the server offers no THREAD=REFERENCES")
    nested = conn.call("UID THREAD", lambda c: c.thread("REFERENCES", "ALL", "UTF-8"))
    position = {uid: n for n, uid in enumerate(order)}
    threads = []
    for node in nested:
        members: list[tuple[int, int]] = []
        _flatten(node if isinstance(node, (tuple, list)) else (node,), 0, members)
        members = [(uid, depth) for uid, depth in members if uid in position]
        if not members:
            continue
        top = min(depth for _uid, depth in members)
        # A thread whose root is gone (RFC 5256 leaves a dummy parent): its first member is the root.
        members = [(uid, depth - top if n == 0 else max(depth - top, 1)) for n, (uid, depth) in enumerate(members)]
        threads.append(members)
    threads.sort(key=lambda members: min(position[uid] for uid, _depth in members))
    return threads


def folder_order(mb, folder: str, sort: str | None, reverse: bool, threads: bool) -> FolderOrder:
    """See :meth:`MailboxAdapter.order`."""
    state = mb.conn.select(folder)
    if not state.exists:
        return FolderOrder((), (), "empty folder")
    uids, how = _sorted_uids(mb, sort, reverse)
    if not threads:
        return FolderOrder(_ids(mb, folder, state.uidvalidity, uids), (), how)
    grouped = _threads(mb, uids)
    flat = [member for members in grouped for member in members]
    return FolderOrder(_ids(mb, folder, state.uidvalidity, [uid for uid, _d in flat]),
                       tuple(depth for _uid, depth in flat), f"{how}, UID THREAD REFERENCES")


def unread_ids(mb, folder: str) -> FolderOrder:
    """See :meth:`MailboxAdapter.unread_ids`."""
    conn = mb.conn
    state = conn.select(folder)
    found, _count = conn.call("UID SEARCH UNSEEN",
                              lambda c: protocol.search(c, [b"UNSEEN"], esearch=conn.has("ESEARCH")))
    return FolderOrder(_ids(mb, folder, state.uidvalidity, sorted(found, reverse=True)), (), "UID SEARCH UNSEEN")


def headers(mb, message_ids: Sequence[str]) -> list[MailHeader]:
    """See :meth:`MailboxAdapter.headers`: one UID FETCH per folder (in chunks)."""
    refs = [mb.ref(i) for i in message_ids]
    by_folder: dict[str, list[MessageRef]] = {}
    for ref in refs:
        by_folder.setdefault(ref.folder, []).append(ref)
    found: dict[MessageRef, MailHeader] = {}
    for folder, members in by_folder.items():
        state = mb.conn.select(folder)
        for ref in members:
            ref.verify(state.uidvalidity)
        fetched = fetch_headers(mb, folder, state.uidvalidity, [ref.uid for ref in members])
        found.update({ref: fetched[ref.uid] for ref in members if ref.uid in fetched})
    return [found[ref] for ref in refs if ref in found]
