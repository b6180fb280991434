"""Inbox polling: a silent baseline first, then new headers and the next cursor.

The cursor is ``imap:<uidvalidity>:<last uid>`` of the inbox. ``poll(None)`` sets a
silent baseline (no messages). A later poll returns the headers of mail whose UID is
above the cursor, and the cursor after them; the caller persists it only after
delivering them. When the inbox was reset (UIDVALIDITY changed) the old UIDs mean
nothing, so the poll sets a new silent baseline instead of guessing.
"""

from __future__ import annotations

import re

from mailtriage.backends.errors import BackendFailure
from mailtriage.backends.imap import protocol
from mailtriage.backends.mailbox_contract import PollResult

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


def poll(mb, cursor: str | None) -> PollResult:
    folder = _inbox(mb)
    mb.conn.state = None  # a fresh SELECT: UIDNEXT and UIDVALIDITY as of now
    state = mb.conn.select(folder)
    if cursor is None:
        return PollResult(f"imap:{state.uidvalidity}:{_last_uid(mb, state)}", (), baseline=True)
    match = _CURSOR.match(cursor)
    if not match:
        raise BackendFailure(mb.account_id, f"not an IMAP poll cursor: {cursor!r} (imap:<uidvalidity>:<uid>)")
    validity, last = int(match.group(1)), int(match.group(2))
    if validity != state.uidvalidity:
        return PollResult(f"imap:{state.uidvalidity}:{_last_uid(mb, state)}", (), baseline=True)
    found, _count = mb.conn.call("UID SEARCH new", lambda c: protocol.search(
        c, [b"UID", f"{last + 1}:*".encode()], esearch=mb.conn.has("ESEARCH")))
    new = sorted(uid for uid in found if uid > last)[:MAX_PER_POLL]  # "n:*" always matches the last UID
    if not new:
        return PollResult(cursor, (), baseline=False)
    from mailtriage.backends.imap.query import fetch_headers

    headers = fetch_headers(mb, folder, state.uidvalidity, new)
    ordered = tuple(headers[uid] for uid in new if uid in headers)
    return PollResult(f"imap:{state.uidvalidity}:{new[-1]}", ordered, baseline=False)


def wait_for_mail(mb, timeout: float) -> bool:
    """Block up to ``timeout`` seconds for new inbox mail (IMAP IDLE when advertised, else
    one NOOP). True when the server announced new mail."""
    folder = _inbox(mb)
    state = mb.conn.select(folder)
    before = state.exists
    if not mb.conn.has("IDLE"):
        mb.conn.select(folder)
        return (mb.conn.state.exists if mb.conn.state else before) > before

    def idle(client) -> bool:
        import time

        deadline = time.monotonic() + timeout
        client.idle()
        try:
            # Other untagged responses (FLAGS, RECENT, "still here") end one check, not the wait.
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                client.idle_check(timeout=remaining)
                current = mb.conn.state
                if current is not None and current.exists > before:
                    return True
        finally:
            client.idle_done()

    return mb.conn.call("IDLE", idle)
