"""Reading whole messages and threads. Always ``BODY.PEEK[]``: reading never sets ``\\Seen``.

A thread is named by its root Message-ID; a message belongs to
the thread when its own ID is the root or the root is in its References /
In-Reply-To. Candidates come from one server-side header SEARCH per folder (the
source folder and Sent); the shared client-side threading (:mod:`backends.thread_reconstruction`)
then keeps exactly the messages whose thread root is that ID.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Iterable, Iterator

from mailtriage.backends import mime
from mailtriage.backends.errors import BackendFailure, ConnectionLost, MailError
from mailtriage.backends.imap import protocol
from mailtriage.backends.imap.headers import HEADER_ITEMS, SYNTHETIC_ITEMS, header_from_fetch, synthetic_id_from_fetch
from mailtriage.backends.mime_headers import SYNTHETIC_DOMAIN
from mailtriage.backends.imap.ids import MessageRef
from mailtriage.backends.mailbox_contract import MailAttachment, MailHeader, MailMessage, MailThread, StaleMessageId
from mailtriage.backends.thread_reconstruction import ThreadRecord, thread_records
from mailtriage.core.lean_dataclass import frozen_dataclass

if TYPE_CHECKING:
    from mailtriage.backends.imap.listed import ListedThreads, SentRows

FULL_ITEMS = [*HEADER_ITEMS, "BODY.PEEK[]"]
FULL_CHUNK = 50  # whole messages per FETCH: bounded memory per round trip


@frozen_dataclass
class FullMessage:
    header: MailHeader
    raw: bytes

    def parsed(self) -> MailMessage:
        content = mime.parse_message(self.raw, backend_ref=self.header.id, hash_body=True)
        attachments = tuple(MailAttachment(i, a.filename, a.content_type, a.size)
                            for i, a in enumerate(content.attachments))
        return MailMessage(self.header, content, attachments)

    @property
    def sort_key(self) -> tuple:
        when = self.header.sent_date or self.header.date or datetime(1970, 1, 1, tzinfo=timezone.utc)
        return (when, self.header.date or when, self.header.id)


def fetch_full(mb, folder: str, uidvalidity: int, uids: Iterable[int]) -> list[FullMessage]:
    """Whole messages (header + raw bytes) of ``uids`` in ``folder`` (already selected)."""
    out: list[FullMessage] = []
    for chunk in protocol.chunks(sorted(set(uids)), FULL_CHUNK):
        data = mb.conn.call("UID FETCH BODY.PEEK[]", lambda c: protocol.fetch(c, protocol.compress(chunk), FULL_ITEMS))
        for key, item in data.items():
            uid = item.get(b"UID", key)
            raw = item.get(b"BODY[]")
            if uid not in chunk or raw is None:
                continue
            ref = MessageRef(mb.account_id, folder, uidvalidity, uid)
            out.append(FullMessage(header_from_fetch(ref, item, raw), raw))
    return out


@contextmanager
def telling_a_reset(mb, ref: MessageRef) -> Iterator[None]:
    """Dovecot ends the session when the open folder is deleted under it, so the read fails
    as a lost connection. Re-created meanwhile, the folder has another UIDVALIDITY: that is
    what the caller must hear (StaleMessageId), not the drop. Reconnects to find out."""
    try:
        yield
    except ConnectionLost as lost:
        try:
            state = mb.conn.select(ref.folder)
        except MailError:
            raise lost from None
        ref.verify(state.uidvalidity)
        raise


def get_message(mb, message_id: str) -> MailMessage:
    """Raises ForeignMessageId, StaleMessageId (folder reset or message gone)."""
    ref, state = mb.open_ref(message_id)
    with telling_a_reset(mb, ref):
        found = fetch_full(mb, ref.folder, state.uidvalidity, [ref.uid])
    if not found:
        raise StaleMessageId(mb.account_id, message_id, f"no message with UID {ref.uid} in {ref.folder!r} any more")
    return found[0].parsed()


def raw_bytes(mb, message_id: str) -> bytes:
    """The message as the server holds it (BODY.PEEK[]: \\Seen is not set), never written to disk."""
    ref, state = mb.open_ref(message_id)
    with telling_a_reset(mb, ref):
        found = fetch_full(mb, ref.folder, state.uidvalidity, [ref.uid])
    if not found:
        raise StaleMessageId(mb.account_id, message_id, f"no message with UID {ref.uid} in {ref.folder!r} any more")
    return bytes(found[0].raw)


def attachment_bytes(mb, message_id: str, index: int) -> bytes:
    """The decoded bytes of attachment ``index`` of a message (never written to disk)."""
    ref, state = mb.open_ref(message_id)
    with telling_a_reset(mb, ref):
        found = fetch_full(mb, ref.folder, state.uidvalidity, [ref.uid])
    if not found:
        raise StaleMessageId(mb.account_id, message_id, f"no message with UID {ref.uid} in {ref.folder!r} any more")
    try:
        return mime.attachment_bytes(found[0].raw, index)
    except mime.AttachmentNotFound as exc:
        raise BackendFailure(mb.account_id, f"{message_id}: {exc}") from exc


def root_criteria(root: str, since_keys: list[bytes] | None = None) -> list[bytes]:
    """Messages naming ``root``. Message-ID and In-Reply-To are searched without the angle
    brackets (HEADER matches a substring): one written bare or unterminated is keyed
    ``<...>`` like any other (the MIME rule) and found too; the client-side threading then
    keeps the exact ones. References are read only bracketed, so searched so."""
    quoted = protocol.quote(root)
    bare = protocol.quote(root.strip("<>") or root)
    keys = [b"OR", b"HEADER", b"Message-ID", bare, b"OR", b"HEADER", b"References", quoted,
            b"HEADER", b"In-Reply-To", bare]
    return [*keys, *(since_keys or [])]


THREAD_SCAN_LIMIT = 20_000  # messages a THREAD=REFERENCES pass may cover; beyond, header search alone


def thread_members(mb, folder: str, root: str, since_keys: list[bytes] | None = None) -> list[FullMessage]:
    """Messages of ``folder`` in the thread rooted at ``root`` (a Message-ID with <>).

    A header SEARCH finds the messages naming the root. When the server offers
    THREAD=REFERENCES, it then threads the folder restricted by ``SINCE`` the oldest of
    those, so a reply that only names a mid-thread message in In-Reply-To (no
    References) is found too; the shared client-side threading confirms the root.
    """
    state = mb.conn.select(folder)
    if state.exists == 0:
        return []
    esearch = mb.conn.has("ESEARCH")
    if root.endswith(f"@{SYNTHETIC_DOMAIN}>"):
        return _synthetic_members(mb, folder, state, root, since_keys, esearch)
    uids, _count = mb.conn.call("UID SEARCH thread", lambda c: protocol.search(
        c, root_criteria(root, since_keys), esearch=esearch))
    if not uids:
        return []
    if since_keys is None and mb.conn.has("THREAD=REFERENCES"):
        uids = _server_thread(mb, uids, esearch)
    candidates = fetch_full(mb, folder, state.uidvalidity, uids)
    return [candidates[i] for i in members_of(candidates, root)]


ROOTS_PER_SEARCH = 40  # roots per ORed header SEARCH of threads_members (three keys each: ~9 KB a command)


def threads_members(mb, folder: str, roots: list[str],
                    since_keys: list[bytes] | None = None) -> dict[str, list[FullMessage]]:
    """:func:`thread_members` for many roots at once: one SELECT, one header SEARCH of ORed
    root keys per :data:`ROOTS_PER_SEARCH` roots, the server's threading once over all the
    candidates (as :func:`thread_members`), one FETCH of them, then the shared client-side
    threading keeps each root's own. A synthetic root is searched on its own. Every root gets
    an entry (empty when nothing in ``folder`` names it), but one the server refuses to search
    for (BAD: a NUL in it), which is left out."""
    wanted = list(dict.fromkeys(roots))
    out: dict[str, list[FullMessage]] = {root: [] for root in wanted}
    if not wanted or is_empty(mb, folder):
        return out
    state = mb.conn.select(folder)
    if state.exists == 0:
        return out
    esearch = mb.conn.has("ESEARCH")
    named = [root for root in wanted if not root.endswith(f"@{SYNTHETIC_DOMAIN}>")]
    for root in wanted:
        if root not in named:
            out[root] = _synthetic_members(mb, folder, state, root, since_keys, esearch)
    uids: set[int] = set()
    refused: set[str] = set()
    for start in range(0, len(named), ROOTS_PER_SEARCH):
        chunk = named[start:start + ROOTS_PER_SEARCH]
        try:
            uids.update(_search_roots(mb, chunk, since_keys, esearch))
        except ConnectionLost:
            raise
        except BackendFailure:
            # The server refused the command (BAD: a root with NUL, say): root by root, so
            # only the one it cannot take is left out, not the marks of the whole chunk.
            for root in chunk:
                try:
                    uids.update(_search_roots(mb, [root], since_keys, esearch))
                except ConnectionLost:
                    raise
                except BackendFailure:
                    refused.add(root)
    for root in refused:
        del out[root]  # not told (the contract: a thread left out of the answer)
    if not uids:
        return out
    ordered = sorted(uids)
    if since_keys is None and mb.conn.has("THREAD=REFERENCES"):
        ordered = _server_thread(mb, ordered, esearch)
    candidates = fetch_full(mb, folder, state.uidvalidity, ordered)
    for root in named:
        if root not in refused:
            out[root] = [candidates[i] for i in members_of(candidates, root)]
    return out


def is_empty(mb, folder: str) -> bool:
    """Whether ``folder``, not the one selected, holds no message: one STATUS tells, so an
    empty Drafts or Sent (the row marks ask both for every screen) does not unselect the list
    folder, whose SELECT costs 0.6-1.2 s at 100k messages in Dovecot (issue 33)."""
    state = mb.conn.state
    if state is not None and state.name == folder:
        return False  # selected: its SELECT's NOOP tells
    status = mb.conn.call(f"STATUS {folder}", lambda c: c.folder_status(folder, [b"MESSAGES"]))
    return int(status.get(b"MESSAGES") or 0) == 0


def _search_roots(mb, roots: list[str], since_keys: list[bytes] | None, esearch: bool) -> list[int]:
    """The UIDs of the messages naming any of ``roots`` (one ORed header SEARCH)."""
    keys = protocol.any_of([root_criteria(root) for root in roots])
    found, _count = mb.conn.call("UID SEARCH threads", lambda c: protocol.search(
        c, [*keys, *(since_keys or [])], esearch=esearch))
    return found


def _synthetic_members(mb, folder: str, state, root: str, since_keys, esearch: bool) -> list[FullMessage]:
    """A thread rooted at a message without a Message-ID is that one message: nothing can
    refer to it. Find it among the folder's messages that lack the header."""
    keys = [b"NOT", b"HEADER", b"Message-ID", b'""', *(since_keys or [])]
    uids, _count = mb.conn.call("UID SEARCH no Message-ID", lambda c: protocol.search(c, keys, esearch=esearch))
    matching = []
    for chunk in protocol.chunks(uids):
        data = mb.conn.call("UID FETCH header", lambda c: protocol.fetch(c, protocol.compress(chunk), SYNTHETIC_ITEMS))
        for key, item in data.items():
            if synthetic_id_from_fetch(item) == root:
                matching.append(item.get(b"UID", key))
    return fetch_full(mb, folder, state.uidvalidity, matching) if matching else []


def _server_thread(mb, uids: list[int], esearch: bool) -> list[int]:
    """``uids`` plus every message the server threads with them (THREAD=REFERENCES, SINCE-bounded)."""
    dates = mb.conn.call("UID FETCH INTERNALDATE", lambda c: protocol.fetch(
        c, protocol.compress(uids), ["UID", "INTERNALDATE"]))
    known = [item[b"INTERNALDATE"] for item in dates.values() if item.get(b"INTERNALDATE")]
    if not known:
        return uids
    since = [b"SINCE", protocol.imap_date(min(known) - timedelta(days=1))]
    _found, count = mb.conn.call("UID SEARCH SINCE", lambda c: protocol.search(c, since, esearch=esearch))
    if count > THREAD_SCAN_LIMIT:
        return uids
    trees = mb.conn.call("UID THREAD REFERENCES", lambda c: c.thread("REFERENCES", since))
    wanted, out = set(uids), set(uids)
    for tree in trees:
        members = set(_flatten(tree))
        if members & wanted:
            out |= members
    return sorted(out)


def _flatten(tree) -> list[int]:
    if isinstance(tree, int):
        return [tree]
    out: list[int] = []
    for item in tree:
        out.extend(_flatten(item))
    return out


def members_of(messages: list[FullMessage], root: str) -> list[int]:
    """Indices of ``messages`` whose thread root (shared JWZ threading) is ``root``."""
    records = [ThreadRecord(m.header.message_id, m.header.references, m.header.in_reply_to, m.header.synthetic_id)
               for m in messages]
    groups = thread_records(records)
    for group in groups:
        if group.root_id == root and not group.synthetic:
            return group.members
    # No thread is rooted there (References that loop were cut elsewhere among these
    # candidates than in the whole folder): the thread that holds the message itself.
    for group in groups:
        if any(messages[i].header.message_id == root for i in group.members):
            return group.members
    return []


def listed_members(mb, listed: ListedThreads, rows: list, root: str,
                   synthetic: bool) -> tuple[list[FullMessage], list] | None:
    """The messages of a listed thread, and their rows: the listing's rows of it (``rows``)
    and what arrived in its folder since and joins it, fetched by UID (no SEARCH). None
    when the folder was reset (another UIDVALIDITY) or none of them is there any more
    (the caller searches)."""
    # lazy: the listing's modules (ImapSource has them loaded); the mailbox alone never needs them
    from mailtriage.backends.imap import recent_rows
    from mailtriage.backends.imap.listed import thread_rows
    from mailtriage.backends.imap.summary_cache import UID

    conn = mb.conn
    state = conn.select(listed.folder)
    if state.uidvalidity != listed.uidvalidity:
        return None
    first = listed.uidnext
    data = conn.call("UID FETCH new",
                     lambda c: recent_rows.fetch_rows(c, f"{first}:*", recent_rows.RowMaker(), uid=True))
    fresh = [row for uid, row in data.items() if uid >= first]  # "n:*" names the last message when none is new
    if fresh:
        recent_rows.complete_synthetic(conn, fresh)
        if listed.wanted:
            fresh = [row for row in fresh if recent_rows.on_list(row, listed.wanted)]
        rows = thread_rows(rows, fresh, root, synthetic)
    found = fetch_full(mb, listed.folder, state.uidvalidity, [row[UID] for row in rows])
    return (found, rows) if found else None


def sent_rows(mb, sent: str, kept: SentRows | None) -> SentRows | None:
    """The Sent folder's header rows, brought up to date (``kept``: those of the last read).

    One STATUS when nothing changed; else Sent is selected and only what is new read
    (everything when its UIDVALIDITY changed). None when Sent is empty."""
    # lazy: the listing's modules (ImapSource has them loaded); the mailbox alone never needs them
    from mailtriage.backends.imap import recent_rows
    from mailtriage.backends.imap.listed import SentRows

    conn = mb.conn
    status = conn.call(f"STATUS {sent}", lambda c: c.folder_status(sent, [b"MESSAGES", b"UIDNEXT", b"UIDVALIDITY"]))
    messages, uidnext, uidvalidity = (int(status.get(k) or 0) for k in (b"MESSAGES", b"UIDNEXT", b"UIDVALIDITY"))
    if messages == 0:
        return None
    if kept is not None and kept.current(uidvalidity, uidnext, messages):
        return kept
    state = conn.select(sent)
    if kept is None or kept.uidvalidity != state.uidvalidity:
        kept = SentRows(state.uidvalidity, 1, {})
    rows = dict(kept.rows)
    first = kept.uidnext
    data = conn.call("UID FETCH Sent",
                     lambda c: recent_rows.fetch_rows(c, f"{first}:*", recent_rows.RowMaker(), uid=True))
    fresh = [row for uid, row in data.items() if uid >= first]
    recent_rows.complete_synthetic(conn, fresh)
    rows.update((row[recent_rows.sc.UID], row) for row in fresh)
    if len(rows) != state.exists:  # some were expunged: keep those still there
        esearch = conn.has("ESEARCH")
        present = set(conn.call("UID SEARCH Sent", lambda c: protocol.search(c, [b"ALL"], esearch=esearch))[0])
        rows = {uid: row for uid, row in rows.items() if uid in present}
    top = max(rows, default=0) + 1
    return SentRows(state.uidvalidity, max(state.uidnext or top, top), rows)


def sent_replies(mb, sent: str, kept: SentRows, members: list, root: str, synthetic: bool) -> list[FullMessage]:
    """The messages of Sent that thread with a listed thread's ``members`` rows."""
    # lazy: the listing's modules (ImapSource has them loaded); the mailbox alone never needs them
    from mailtriage.backends.imap.listed import joining
    from mailtriage.backends.imap.summary_cache import UID

    uids = [row[UID] for row in joining(members, list(kept.rows.values()), root, synthetic)]
    if not uids:
        return []
    state = mb.conn.select(sent)
    return fetch_full(mb, sent, state.uidvalidity, uids)


def thread_of(mb, root: str, folder: str, *, include_sent: bool = True,
              found: list[FullMessage] | None = None) -> list[FullMessage]:
    """The thread across ``folder`` and the Sent folder, chronological, one copy per message.

    ``found``: the thread's messages in ``folder`` when already known (a listed thread)."""
    if found is None:
        found = thread_members(mb, folder, root)
    sent = mb.folders.role_folder("sent")
    if include_sent and sent and sent != folder:
        found += sent_copies_dropped(found, thread_members(mb, sent, root))
    return sorted(found, key=lambda m: m.sort_key)


def sent_copies_dropped(listed: list[FullMessage], sent: list[FullMessage]) -> list[FullMessage]:
    """The Sent folder's messages that are not a copy of one in the list folder.

    Within a folder every message counts, two that share a Message-ID included (the
    offline backends' rule: a phishing run reusing one ID is several messages); only
    our own reply, stored in Sent and received back through the list, is one message
    in two folders.
    """
    ids = {m.header.message_id for m in listed if not m.header.synthetic_id}
    return [m for m in sent if m.header.synthetic_id or m.header.message_id not in ids]


def thread(mb, message_id: str) -> MailThread:
    """``thread(id)``: the message's thread across its folder and Sent, chronological."""
    source = get_message(mb, message_id)
    root = source.header.thread_key
    members = thread_of(mb, root, source.header.folder_id)
    if not any(m.header.id == source.header.id for m in members):
        members.append(FullMessage(source.header, b""))
    return MailThread(root, tuple(m.parsed() if m.raw else source for m in members))
