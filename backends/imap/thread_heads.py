"""The Message-ID and Date of every message of many listed threads at once (issue 39 §2).

A sync asks, for each linked thread, whether a message came that its rollup does not
cover. Reading each thread costs about eight round trips; at 10,000 issues that was
167 s. The listing already holds every list-folder message's Message-ID and Date (its
rows), threaded exactly as :meth:`ImapSource.read_thread` threads a listed thread, so
these heads come from the rows plus two reads in all: what arrived since the listing
(one UID FETCH) and the Sent folder's rows (one STATUS when unchanged).

A thread gets heads only where they are exactly the messages a read would return: it is
listed with its root among its rows, none of its rows lacks a Message-ID, and no message
of Sent (other than a copy of a list message) or that arrived since names any of its
messages. Any other thread is left out: the caller reads it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Iterable, Sequence

from mailtriage.backends.contract import MESSAGE_ID_KIND, ThreadId
from mailtriage.backends.imap import message_reads, recent_rows
from mailtriage.backends.imap import summary_cache as sc
from mailtriage.backends.imap.listed import ListedThreads, SentRows
from mailtriage.core.lean_dataclass import frozen_dataclass


@frozen_dataclass
class ThreadHead:
    """One message of a thread as a sync compares it with the rollup."""

    message_id: str
    date: datetime | None  # the Date header (None when it has none, or not a date): as Message.date


def _named(rows: Iterable[tuple]) -> set[str]:
    """Every Message-ID ``rows`` carry or point at (References, In-Reply-To)."""
    out: set[str] = set()
    for row in rows:
        out.add(row[sc.MESSAGE_ID])
        out.update(row[sc.REFERENCES] or ())
        if row[sc.IN_REPLY_TO]:
            out.add(row[sc.IN_REPLY_TO])
    return out


def listed_heads(mb, listed: ListedThreads, sent: str | None, sent_kept: SentRows | None,
                 thread_ids: Sequence[ThreadId]) -> tuple[dict[ThreadId, tuple[ThreadHead, ...]], SentRows | None]:
    """Heads of the threads of ``thread_ids`` this listing can vouch for, and Sent's rows now."""
    state = mb.conn.select(listed.folder)
    if state.uidvalidity != listed.uidvalidity:
        return {}, sent_kept
    first = listed.uidnext
    data = mb.conn.call("UID FETCH new",
                        lambda c: recent_rows.fetch_rows(c, f"{first}:*", recent_rows.RowMaker(), uid=True))
    touched = _named(row for uid, row in data.items() if uid >= first)
    if sent and sent != listed.folder:
        sent_kept = message_reads.sent_rows(mb, sent, sent_kept)
        if sent_kept is not None:
            own = {row[sc.MESSAGE_ID] for row in listed.rows if not row[sc.SYNTHETIC]}
            # A copy of a list message (our reply received back) is dropped by a read: it adds nothing.
            touched |= _named(row for row in sent_kept.rows.values()
                              if row[sc.SYNTHETIC] or row[sc.MESSAGE_ID] not in own)
    out: dict[ThreadId, tuple[ThreadHead, ...]] = {}
    for tid in thread_ids:
        if tid.kind != MESSAGE_ID_KIND:
            continue
        rows = listed.members(tid)
        if not rows or any(row[sc.SYNTHETIC] for row in rows):
            continue
        ids = [row[sc.MESSAGE_ID] for row in rows]
        if tid.value not in ids or touched.intersection(ids):
            continue
        out[tid] = tuple(ThreadHead(row[sc.MESSAGE_ID], datetime.fromisoformat(row[sc.SENT]) if row[sc.SENT] else None)
                         for row in rows)
    return out, sent_kept
