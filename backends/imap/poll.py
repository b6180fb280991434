"""Inbox polling: a silent baseline first, then new headers and the next cursor.

The cursor is ``imap:<uidvalidity>:<last uid>`` of the inbox. ``poll(None)`` sets a
silent baseline (no messages). A later poll returns the headers of mail whose UID is
above the cursor, and the cursor after them; the caller persists it only after
delivering them. When the inbox was reset (UIDVALIDITY changed) the old UIDs mean
nothing, so the poll sets a new silent baseline instead of guessing.

:func:`read_new` is the same walk for a reader that wants whole messages of any folder
(the modes gateway's mailbox): it opens the folder read-only and returns the bytes.

:func:`wait_for_mail` waits for new mail in one folder (the inbox, or the folder that holds a
list: the mail source's waiter) with IMAP IDLE on the mailbox's connection.
"""

from __future__ import annotations

import re
import select
import socket
import threading
import time

from mailtriage.backends.errors import BackendFailure
from mailtriage.backends.imap import protocol
from mailtriage.backends.imap.connection import FolderState
from mailtriage.backends.imap.message_reads import fetch_full
from mailtriage.backends.imap.query import fetch_headers
from mailtriage.backends.mailbox_contract import PollResult
from mailtriage.core.lean_dataclass import frozen_dataclass

_CURSOR = re.compile(r"^imap:([1-9][0-9]*):([0-9]+)$")
MAX_PER_POLL = 500


def _inbox(mb) -> str:
    return mb.folders.role_folder("inbox") or "INBOX"


def _last_uid(mb, state) -> int:
    if state.uidnext is not None:
        return state.uidnext - 1
    if state.exists == 0:
        return 0
    data = mb.conn.call("FETCH * UID", lambda c: protocol.fetch(c, "*", ["UID"], uid=False))
    return max((item[b"UID"] for item in data.values() if b"UID" in item), default=0)


def _new_uids(mb, folder: str, after: tuple[int, int] | None, limit: int, *,
              readonly: bool = False) -> tuple[FolderState, int | None, list[int]]:
    """The folder freshly selected, and either a silent baseline (the last UID, when there is
    no ``after`` or its UIDVALIDITY is gone) or the UIDs above ``after``, at most ``limit``."""
    mb.conn.state = None  # a fresh SELECT: UIDNEXT and UIDVALIDITY as of now
    state = mb.conn.select(folder, readonly=readonly)
    if after is None or after[0] != state.uidvalidity:
        return state, _last_uid(mb, state), []
    last = after[1]
    found, _count = mb.conn.call("UID SEARCH new", lambda c: protocol.search(
        c, [b"UID", f"{last + 1}:*".encode()], esearch=mb.conn.has("ESEARCH")))
    return state, None, sorted(uid for uid in found if uid > last)[:limit]  # "n:*" always matches the last UID


def poll(mb, cursor: str | None) -> PollResult:
    folder = _inbox(mb)
    after = None
    if cursor is not None:
        match = _CURSOR.match(cursor)
        if not match:
            # Checked after the SELECT, as before: a bad cursor on an unreachable server is an outage first.
            mb.conn.state = None
            mb.conn.select(folder)
            raise BackendFailure(mb.account_id, f"not an IMAP poll cursor: {cursor!r} (imap:<uidvalidity>:<uid>)")
        after = (int(match.group(1)), int(match.group(2)))
    state, baseline, new = _new_uids(mb, folder, after, MAX_PER_POLL)
    if baseline is not None:
        return PollResult(f"imap:{state.uidvalidity}:{baseline}", (), baseline=True)
    if not new:
        return PollResult(cursor, (), baseline=False)
    headers = fetch_headers(mb, folder, state.uidvalidity, new)
    ordered = tuple(headers[uid] for uid in new if uid in headers)
    return PollResult(f"imap:{state.uidvalidity}:{new[-1]}", ordered, baseline=False)


@frozen_dataclass
class NewMail:
    """What one read of a folder after a cursor gave: whole messages, or a silent baseline."""

    uidvalidity: int
    items: tuple[tuple[int, bytes], ...]  # (UID, the message's bytes), oldest first
    baseline: int | None = None  # the last UID, when this read set a baseline instead


def read_new(mb, folder: str, after: tuple[int, int] | None, limit: int) -> NewMail:
    """The whole messages of ``folder`` above ``after`` (UIDVALIDITY, last UID), at most
    ``limit``, read under EXAMINE with ``BODY.PEEK[]``: nothing in the folder changes.

    No ``after``, or a UIDVALIDITY that changed, gives a silent baseline as :func:`poll`
    does, so mail that was there before anyone watched is never taken for new.
    """
    state, baseline, new = _new_uids(mb, folder, after, limit, readonly=True)
    if baseline is not None:
        return NewMail(state.uidvalidity, (), baseline=baseline)
    by_uid = {mb.ref(item.header.id).uid: item.raw for item in fetch_full(mb, folder, state.uidvalidity, new)}
    return NewMail(state.uidvalidity, tuple((uid, by_uid[uid]) for uid in new if uid in by_uid))


#: While another folder's wait may end this one (``cancel``), IDLE is checked this often.
CANCEL_CHECK_SECONDS = 0.5


def _arrived_since(seen: FolderState, state: FolderState) -> bool:
    """Whether ``state`` (the folder now) shows mail that came after ``seen`` (a listing's
    SELECT of it): the same session's state counts EXISTS/EXPUNGE since, a fresh SELECT
    has a higher UIDNEXT (or, without UIDNEXT, more messages)."""
    if state is seen:
        return seen.news > 0  # a change since the listing's SELECT: at worst one poll too many
    if seen.uidnext is not None and state.uidnext is not None:
        return state.uidnext > seen.uidnext
    return state.exists > seen.exists


def _closed(client) -> bool:
    """Whether the connection's peer closed it: its socket is readable and a peek at the plain
    socket reads its end. Never blocks (a socket with a timeout would wait in recv for it)."""
    sock = client.socket()
    try:
        if not select.select([sock], [], [], 0)[0]:
            return False
        return socket.socket.recv(sock, 1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError, socket.timeout):
        return False
    except (OSError, ValueError):  # closed here, or no longer a socket
        return True


def wait_for_mail(mb, timeout: float, folder: str | None = None, *, seen: FolderState | None = None,
                  cancel: threading.Event | None = None) -> bool:
    """Block up to ``timeout`` seconds for new mail in ``folder`` (the inbox by default): IMAP
    IDLE when advertised, else one NOOP after the time. True when the server announced new mail.

    ``seen`` is the folder as the caller last read it (its listing's SELECT): mail that came
    since, before IDLE starts, is new mail too. ``cancel`` ends the wait early (within
    :data:`CANCEL_CHECK_SECONDS`) with False: another folder's wait announced mail first.
    """
    folder = folder or _inbox(mb)
    # What this connection last knew of the folder (the poll's listing selected it). Mail that
    # arrived since then, before IDLE starts, is new mail too; IDLE alone announces only later
    # arrivals, so it would wait a whole poll interval.
    current = mb.conn.state
    known = current.exists if current is not None and current.name == folder and mb.conn.is_open else None
    state = mb.conn.select(folder)
    before = state.exists
    if known is not None and before > known:
        return True
    if seen is not None and seen.name == folder and _arrived_since(seen, state):
        return True
    if not mb.conn.has("IDLE"):
        # No IDLE: wait out the time (a waiter that returned at once would be called again at
        # once, a NOOP loop), then ask with one NOOP.
        (cancel or threading.Event()).wait(timeout)
        mb.conn.select(folder)
        return (mb.conn.state.exists if mb.conn.state else before) > before

    def idle(client) -> bool:
        deadline = time.monotonic() + timeout
        client.idle()
        try:
            # Other untagged responses (FLAGS, RECENT, "still here") end one check, not the wait.
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (cancel is not None and cancel.is_set()):
                    return False
                if not client.idle_check(timeout=min(remaining, CANCEL_CHECK_SECONDS) if cancel is not None
                                         else remaining) and _closed(client):
                    # idle_check swallows the end of the connection (and would return at once
                    # for the rest of the wait): a dropped connection ends the wait now.
                    raise EOFError("the server closed the connection during IDLE")
                current = mb.conn.state
                if current is not None and current.exists > before:
                    return True
        finally:
            client.idle_done()

    return mb.conn.call(f"IDLE ({folder})", idle)
