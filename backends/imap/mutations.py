"""Bulk writes on 1–100 same-account message IDs: flags, labels, move, archive, trash,
permanent deletion.

Every ID is decoded (a foreign or malformed one refuses the whole request before any
write) and its folder's UIDVALIDITY checked before its UID is used. Writes are not
atomic on IMAP: when some messages fail, :class:`PartialFailure` says which failed and
why, and which were changed; a batch is never reported as a success after a failure.
Moving mail invalidates its old IDs (the UID changes with the folder).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Callable, Sequence

from mailtriage.backends import mime_headers, mime_ids
from mailtriage.backends.errors import ConnectionLost, MailError, NotSupported
from mailtriage.backends.imap import imaplib_private as private
from mailtriage.backends.imap import protocol
from mailtriage.backends.imap.ids import MessageRef, decode_many
from mailtriage.backends.mailbox_contract import InvalidQuery, PartialFailure, check_bulk
from mailtriage.backends.imap.headers import SYSTEM_KEYWORDS

# An IMAP keyword is an atom: no spaces, parentheses, braces, quotes, %, *, ] or controls.
_ATOM = re.compile(r"^[^\s(){%*\"\\\]\x00-\x1f\x7f]+$")


def check_keyword(name: str) -> str:
    """A label name as an IMAP keyword: an ASCII atom, no system flag or keyword.

    Checked before anything is sent, so a name the server would refuse (``a b``, non-ASCII)
    is an InvalidQuery, not a raw BAD; ``$Forwarded`` and friends are the server's, not labels.
    """
    if not isinstance(name, str) or not name.isascii() or not _ATOM.match(name) or name.startswith("\\"):
        raise InvalidQuery(f"{name!r} cannot be an IMAP keyword label (ASCII only; no spaces, ( ) {{ % * \" \\ ] "
                           "or a leading backslash)")
    if name.lower() in SYSTEM_KEYWORDS:
        raise InvalidQuery(f"{name!r} is a system keyword the server or mail clients set, not a label")
    return name


def _by_folder(refs: list[MessageRef]) -> dict[str, list[MessageRef]]:
    groups: dict[str, list[MessageRef]] = defaultdict(list)
    for ref in refs:
        groups[ref.folder].append(ref)
    return groups


# What a write does not get done: the reason stored for each ID that failed.
GONE = "no longer in {folder!r}: moved or deleted by another client (refresh and retry)"
READ_ONLY = ("folder {folder!r} is read-only for this account (the server granted [READ-ONLY]); "
             "nothing was changed")


def run_bulk(mb, op: str, ids: Sequence[str],
             action: Callable[[str, list[MessageRef], "object"], dict[int, str] | None]) -> None:
    """Decode, group by folder, verify UIDVALIDITY, run ``action(folder, refs, state)`` per
    folder, and raise PartialFailure when anything failed.

    ``action`` returns the UIDs it could not change, with why (None or {} when every
    one was changed): only what the server really did is reported as done.
    """
    refs = decode_many(check_bulk(ids), mb.account_id)
    failed: dict[str, str] = {}
    done: list[str] = []
    gone: list[str] = []  # failed because the ID names no message any more
    for folder, group in _by_folder(refs).items():
        try:
            state = mb.conn.select(folder)
        except MailError as exc:
            failed.update({str(r): str(exc) for r in group})
            continue
        usable = []
        for ref in group:
            try:
                ref.verify(state.uidvalidity)
                usable.append(ref)
            except MailError as exc:
                failed[str(ref)] = str(exc)
                gone.append(str(ref))
        if not usable:
            continue
        try:
            missed = action(folder, usable, state) or {}
        except (NotSupported, InvalidQuery):
            raise  # the request, not the folder: a MailError too, but no write failure
        except MailError as exc:
            why = _reset_or(mb, folder, usable, exc)
            failed.update({str(r): why for r in usable})
            if why.startswith(_STALE):
                gone += [str(r) for r in usable]
            continue
        vanished = GONE.format(folder=folder)
        for ref in usable:
            if ref.uid in missed:
                failed[str(ref)] = missed[ref.uid]
                if missed[ref.uid] == vanished or missed[ref.uid].startswith(_STALE):
                    gone.append(str(ref))
            else:
                done.append(str(ref))
    if failed:
        raise PartialFailure(mb.account_id, op, failed, done, gone)


def _reset_or(mb, folder: str, refs: list[MessageRef], error: MailError) -> str:
    """Why a folder's write failed: Dovecot ends the session when the open folder is deleted
    under it, so a folder re-created by another client shows as a lost connection; reconnected,
    its new UIDVALIDITY says the IDs are stale. Otherwise the error itself."""
    if not isinstance(error, ConnectionLost):
        return str(error)
    try:
        now = mb.conn.select(folder).uidvalidity
    except MailError:
        return str(error)
    return _stale(folder, refs[0].uidvalidity, now) if now != refs[0].uidvalidity else str(error)


_STALE = "stale message id: "


def _stale(folder: str, old: int, new: int) -> str:
    return (f"{_STALE}folder {folder!r} was reset (UIDVALIDITY {old} -> {new}) by another client; "
            "its old message IDs no longer name the same mail (refresh the list)")


def _kept(state, flag: bytes) -> bool:
    """Does the selected folder keep ``flag`` (PERMANENTFLAGS; ``\\*`` covers new keywords)?"""
    text = flag.decode("utf-8", "replace")
    permanent = {f.lower() for f in state.permanent_flags}
    return text.lower() in permanent or (not text.startswith("\\") and "\\*" in permanent)


def _refusal(state, folder: str, flags: list[bytes]) -> str | None:
    """Why a STORE of ``flags`` would be dropped silently in ``folder``, or None."""
    if not state.writable:
        return READ_ONLY.format(folder=folder)
    lost = [f.decode("utf-8", "replace") for f in flags if not _kept(state, f)]
    if lost:
        return (f"the server does not keep {', '.join(lost)} in {folder!r} (not in its PERMANENTFLAGS); "
                "nothing was changed")
    return None


def _flags_of(data: dict, *, uid_only: bool = False) -> dict[int, set[str]]:
    """UID -> its flags (lower case), from parsed FETCH responses; ``uid_only``: only the
    responses that name their UID (a STORE's answer may hold another session's news, by
    sequence number)."""
    seen: dict[int, set[str]] = {}
    for key, item in data.items():
        if b"FLAGS" not in item or (uid_only and b"UID" not in item):
            continue
        seen[int(item.get(b"UID", key))] = {(f.decode("utf-8", "replace") if isinstance(f, bytes) else str(f)).lower()
                                            for f in item[b"FLAGS"]}
    return seen


def _store(mb, folder: str, refs: list[MessageRef], op: str, flags: list[bytes]) -> dict[int, str]:
    """UID STORE, checked against the flags the server reports back: a UID that is gone or
    whose flags did not change as asked is returned with why. The server's OK alone proves
    nothing: Dovecot answers OK for UIDs that no longer exist and for dropped changes.

    One round trip per set of UIDs (issue 35): the STORE (not ``.SILENT``) answers with each
    changed message's flags as they are now; only the UIDs it said nothing about (gone, or a
    server that answers no FETCH to a STORE) are read back with FETCH FLAGS."""
    uids = sorted(r.uid for r in refs)
    seen: dict[int, set[str]] = {}
    for chunk in protocol.chunks(uids):
        seqset = protocol.compress(chunk)
        answered = mb.conn.call(f"UID STORE {op}", lambda c: protocol.store(c, seqset, op, flags))
        seen.update(_flags_of(dict(protocol.parse_fetch_response(answered or [], False, False)), uid_only=True))
    unreported = [uid for uid in uids if uid not in seen]
    for chunk in protocol.chunks(unreported):
        seqset = protocol.compress(chunk)
        data = mb.conn.call("UID FETCH FLAGS", lambda c: protocol.fetch(c, seqset, ["UID", "FLAGS"]))
        seen.update(_flags_of(data))
    adding = op.startswith("+")
    wanted = {f.decode("utf-8", "replace").lower() for f in flags}
    missed: dict[int, str] = {}
    for uid in uids:
        if uid not in seen:
            missed[uid] = GONE.format(folder=folder)
        elif (wanted <= seen[uid]) != adding:
            missed[uid] = f"the server did not keep the change ({op} {' '.join(sorted(wanted))}) in {folder!r}"
    return missed


def set_flags(mb, ids: Sequence[str], *, read: bool | None = None, flagged: bool | None = None) -> None:
    if read is None and flagged is None:
        raise InvalidQuery("setFlags needs at least one of read, flagged")
    changes = [(value, flag) for value, flag in ((read, b"\\Seen"), (flagged, b"\\Flagged")) if value is not None]

    def action(folder: str, refs: list[MessageRef], state) -> dict[int, str]:
        why = _refusal(state, folder, [flag for _v, flag in changes])
        if why:
            return {r.uid: why for r in refs}
        missed: dict[int, str] = {}
        for value, flag in changes:
            missed.update(_store(mb, folder, refs, "+FLAGS" if value else "-FLAGS", [flag]))
        return missed

    run_bulk(mb, "setFlags", ids, action)


def set_labels(mb, ids: Sequence[str], add: Sequence[str], remove: Sequence[str]) -> None:
    if not add and not remove:
        raise InvalidQuery("setLabels needs labels to add or remove")
    if mb.labels.folder_backed:
        add_b = [protocol.quote(a) for a in add]
        remove_b = [protocol.quote(r) for r in remove]
        item = "X-GM-LABELS"
    else:
        add_b = [check_keyword(a).encode() for a in add]
        remove_b = [check_keyword(r).encode() for r in remove]
        item = "FLAGS"
        # listLabels and setLabels agree: a server that cannot keep keywords declines both.
        mb.labels.require_keywords("setLabels")

    def action(folder: str, refs: list[MessageRef], state) -> dict[int, str]:
        if item == "X-GM-LABELS":
            if add_b:
                _plain_store(mb, refs, f"+{item}.SILENT", add_b)
            if remove_b:
                _plain_store(mb, refs, f"-{item}.SILENT", remove_b)
            return {}
        why = _refusal(state, folder, [*add_b, *remove_b])
        if why:
            return {r.uid: why for r in refs}
        missed: dict[int, str] = {}
        if add_b:
            missed.update(_store(mb, folder, refs, f"+{item}", add_b))
        if remove_b:
            missed.update(_store(mb, folder, refs, f"-{item}", remove_b))
        return missed

    run_bulk(mb, "setLabels", ids, action)
    mb.labels.remember(add)


def _plain_store(mb, refs: list[MessageRef], op: str, flags: list[bytes]) -> None:
    for chunk in protocol.chunks(sorted(r.uid for r in refs)):
        seqset = protocol.compress(chunk)
        mb.conn.call(f"UID STORE {op}", lambda c: protocol.store(c, seqset, op, flags))


def _present(mb, uids: list[int]) -> set[int]:
    """The UIDs of the selected folder that still exist (one UID FETCH)."""
    present: set[int] = set()
    for chunk in protocol.chunks(sorted(uids)):
        seqset = protocol.compress(chunk)
        data = mb.conn.call("UID FETCH UID", lambda c: protocol.fetch(c, seqset, ["UID"]))
        present |= {int(item.get(b"UID", key)) for key, item in data.items()}
    return present


_COPYUID = re.compile(rb"\[COPYUID \d+ ([0-9:,]+) [0-9:,]+\]", re.IGNORECASE)


def _copied(responses) -> set[int] | None:
    """Source UIDs a COPYUID answer names (MOVE / COPY with UIDPLUS), or None without one."""
    found = None
    for line in responses if isinstance(responses, (list, tuple)) else [responses]:
        raw = line if isinstance(line, bytes) else str(line).encode()
        for m in _COPYUID.finditer(raw):
            found = (found or set()) | set(protocol.expand(m.group(1).decode()))
    return found


# -- a move by COPY then UID EXPUNGE (a server with UIDPLUS and no MOVE) ---------------------------
#
# Not atomic: a process killed between the COPY and the EXPUNGE leaves the batch in both
# folders, and a rerun would copy it again. So the originals are marked with this keyword
# first; COPY carries it to the copies. A rerun finds marked originals whose marked copy is
# in the target already, expunges those originals instead of copying them again, and clears
# the mark from the copies (as a finished move does).
MOVING = "$MailtriageMove"


def _keeps_keywords(state) -> bool:
    permanent = {f.lower() for f in state.permanent_flags}
    return bool(state.writable and ("\\*" in permanent or MOVING.lower() in permanent))


def _search_moving(mb, seqset: str | None = None) -> list[int]:
    """UIDs of the selected folder that carry the mark (within ``seqset`` when given)."""
    criteria = ([b"UID", seqset.encode()] if seqset else []) + [b"KEYWORD", MOVING.encode()]
    uids, _count = mb.conn.call(f"UID SEARCH KEYWORD {MOVING}", lambda c: protocol.search(
        c, criteria, esearch=mb.conn.has("ESEARCH")))
    return list(uids)


def _store_moving(mb, uids, op: str) -> None:
    for chunk in protocol.chunks(sorted(uids)):
        seqset = protocol.compress(chunk)
        mb.conn.call(f"UID STORE {op} {MOVING}", lambda c: protocol.store(c, seqset, op, [MOVING.encode()]))


def _by_message_id(mb, uids: list[int]) -> dict[str, list[int]]:
    """``uids`` of the selected folder by Message-ID (those without one are left out)."""
    waiting: dict[str, list[int]] = defaultdict(list)
    for chunk in protocol.chunks(uids):
        seqset = protocol.compress(chunk)
        data = mb.conn.call("UID FETCH Message-ID", lambda c: protocol.fetch(c, seqset, ["UID", _ID_ITEM]))
        for key, item in data.items():
            mid = _id_of(item)
            if mid:
                waiting[mid].append(int(item.get(b"UID", key)))
    return waiting


def _pair(marked: list[int], known: dict[int, str | None], waiting: dict[str, list[int]]) -> dict[int, int]:
    """Each marked original (UID) with a marked copy (UID) of the same Message-ID, one copy each."""
    pairs: dict[int, int] = {}
    for uid in marked:
        mid = known.get(uid)
        if mid and waiting.get(mid):
            pairs[uid] = waiting[mid].pop()
    return pairs


def _finish_interrupted(mb, folder: str, target: str, known: dict[int, str | None]) -> set[int]:
    """The originals (of ``known``) an interrupted move already copied to ``target``: their
    marked copies are there, so they are expunged here, not copied again; the mark is then
    cleared from every marked copy in ``target``. A marked original whose copy is not in
    ``target`` was on its way to another folder (the move was killed and is now rerun to
    ``target``): that copy is removed (see :func:`_drop_stale_copies`) and the original moved
    as any other. Returns the originals found in ``target``."""
    marked: list[int] = []
    for chunk in protocol.chunks(sorted(known)):
        marked += _search_moving(mb, protocol.compress(chunk))
    if not marked:
        return set()
    mb.conn.select(target)
    copies = _search_moving(mb)
    waiting = _by_message_id(mb, copies)
    done = set(_pair(marked, known, waiting))
    mb.expunge_uids(folder, sorted(done))  # selects ``folder``; the originals go once their copies are there
    mb.conn.select(target)
    _store_moving(mb, copies, "-FLAGS.SILENT")
    left = [uid for uid in marked if uid not in done]
    if left:
        _drop_stale_copies(mb, folder, target, left, known)
    mb.conn.select(folder)
    return done


def _drop_stale_copies(mb, folder: str, target: str, left: list[int], known: dict[int, str | None]) -> None:
    """A move killed between its COPY and its EXPUNGE, rerun to another folder than ``target``,
    left marked copies of the marked originals ``left`` (still in ``folder``) in that other
    folder. Each such copy is expunged (its original is still here, and is about to be moved
    to ``target``) and the \\Deleted the interrupted EXPUNGE may have set on the original is
    cleared, so that it does not travel with the new copy. The mark is also cleared from the
    other marked messages of those folders: the earlier batches of that move, whose originals
    are gone (the move of those finished). Folders are read only when an original is left
    over, and only those holding a marked message are written."""
    pending = {uid: known.get(uid) for uid in left}
    revived: list[int] = []
    for info in mb.folders.infos():
        if not pending or not info.selectable or info.name in (folder, target):
            continue
        try:
            mb.conn.select(info.name, readonly=True)
        except MailError:
            continue  # gone meanwhile, or not ours to open: it holds none of our copies
        if not _search_moving(mb):
            continue
        mb.conn.select(info.name)
        copies = _search_moving(mb)
        pairs = _pair(sorted(pending), pending, _by_message_id(mb, copies))
        mb.expunge_uids(info.name, sorted(pairs.values()))
        _store_moving(mb, sorted(set(copies) - set(pairs.values())), "-FLAGS.SILENT")
        revived += pairs
        for uid in pairs:
            del pending[uid]
    if revived:
        mb.conn.select(folder)
        for chunk in protocol.chunks(sorted(revived)):
            seqset = protocol.compress(chunk)
            mb.conn.call("UID STORE -\\Deleted", lambda c: protocol.store(c, seqset, "-FLAGS.SILENT", [b"\\Deleted"]))


def _unmark_copies(mb, folder: str, target: str, floor: int) -> None:
    """The move is done: clear the mark from its copies, the marked messages that reached
    ``target`` at or above UID ``floor`` (its UIDNEXT when the move began). A failure leaves
    marks that the next move into ``target`` clears; the mail is moved either way."""
    try:
        mb.conn.select(target)
        _store_moving(mb, _search_moving(mb, f"{floor}:*"), "-FLAGS.SILENT")
        mb.conn.select(folder)
    except MailError:
        pass


_ID_ITEM = "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"
UNSURE = ("no longer in {folder!r} and it has no Message-ID: it may have been moved to {target!r} before "
          "the connection dropped, or deleted by another client (look in {target!r})")


def _message_ids(mb, uids: list[int]) -> dict[int, str | None]:
    """The selected folder's UIDs that still exist, with their Message-IDs (one FETCH a chunk):
    after a move that failed part-way, an ID found again in the target says it was moved."""
    found: dict[int, str | None] = {}
    for chunk in protocol.chunks(sorted(uids)):
        seqset = protocol.compress(chunk)
        data = mb.conn.call("UID FETCH Message-ID", lambda c: protocol.fetch(c, seqset, ["UID", _ID_ITEM]))
        for key, item in data.items():
            found[int(item.get(b"UID", key))] = _id_of(item)
    return found


def _id_of(item: dict) -> str | None:
    """The Message-ID in a FETCH answer to ``_ID_ITEM`` (None when the message has none)."""
    block = next((v for k, v in item.items() if isinstance(k, bytes) and k.startswith(b"BODY[")), b"")
    values = mime_headers.header_values(block or b"", b"message-id")
    return mime_ids.extract_msgid(values[0]) if values else None


def _uidnext(mb, folder: str) -> int:
    status = mb.conn.call(f"STATUS {folder}", lambda c: c.folder_status(folder, [b"UIDNEXT"]))
    return int(status.get(b"UIDNEXT") or 1)


def _arrived(mb, target: str, floor: int) -> dict[str, int]:
    """How many messages with each Message-ID reached ``target`` at or above UID ``floor``."""
    mb.conn.select(target, readonly=True)
    data = mb.conn.call(f"UID FETCH {target}", lambda c: protocol.fetch(c, f"{floor}:*", ["UID", _ID_ITEM]))
    counts: dict[str, int] = defaultdict(int)
    for key, item in data.items():
        if int(item.get(b"UID", key)) < floor:  # "n:*" names the last message when none is new
            continue
        mid = _id_of(item)
        if mid:
            counts[mid] += 1
    return counts


def move(mb, ids: Sequence[str], folder_id: str, *, op: str = "move") -> None:
    """Move to ``folder_id``. A message another client expunged meanwhile fails alone (the
    rest is moved); when a MOVE fails part-way (a dropped connection, a NO), what the server
    did is read back: a message gone from its folder whose Message-ID reached the target
    since the move began is reported moved, else gone."""
    target = mb.folders.info(folder_id)
    if not target.selectable:
        raise InvalidQuery(f"{folder_id!r} cannot hold mail")
    can_move = mb.conn.has("MOVE")
    if not can_move and not mb.conn.has("UIDPLUS"):
        raise NotSupported(mb.account_id, op, "the server has neither MOVE nor UIDPLUS; moving would need a "
                                              "plain EXPUNGE, which could remove other mail; refused")

    def move_chunk(folder: str, chunk: list[int], marking: bool) -> set[int]:
        seqset = protocol.compress(chunk)
        if can_move:
            answer = mb.conn.call(f"UID MOVE {folder_id}", lambda c: private.raw_command(
                c, b"MOVE", [seqset.encode(), private.folder_name(c, folder_id)], response_name="OK"))
        else:
            if marking:
                _store_moving(mb, chunk, "+FLAGS.SILENT")
            answer = mb.conn.call(f"UID COPY {folder_id}", lambda c: c.copy([int(u) for u in chunk], folder_id))
            mb.expunge_uids(folder, chunk)
        named = _copied(answer)
        return set(chunk) if named is None else (named & set(chunk))

    def action(folder: str, refs: list[MessageRef], state) -> dict[int, str]:
        if folder == folder_id:
            return {}
        if not state.writable:
            return {r.uid: READ_ONLY.format(folder=folder) for r in refs}
        # Only UIDs that exist are moved; the server's COPYUID answer says which it moved.
        known = _message_ids(mb, [r.uid for r in refs])
        floor = _uidnext(mb, folder_id)
        moved: set[int] = set()
        missed: dict[int, str] = {}
        stopped: str | None = None  # why the rest was not moved (the server cannot be reached)
        marking = not can_move and _keeps_keywords(state)
        try:
            if marking:
                moved |= _finish_interrupted(mb, folder, folder_id, known)
            for chunk in protocol.chunks(sorted(set(known) - moved)):
                for attempt in (1, 2):
                    try:
                        moved |= move_chunk(folder, chunk, marking)
                        break
                    except (NotSupported, InvalidQuery):
                        raise
                    except MailError as exc:
                        chunk = _read_back(mb, folder, folder_id, state.uidvalidity, chunk, known, floor, exc,
                                           moved, missed, last=attempt == 2)
                        if not chunk:
                            break
        except (NotSupported, InvalidQuery):
            raise
        except MailError as exc:  # reading back failed too: what was moved before stays done
            stopped = str(exc)
        if marking:
            _unmark_copies(mb, folder, folder_id, floor)
        gone = GONE.format(folder=folder)
        return {r.uid: missed.get(r.uid, gone if r.uid not in known or stopped is None else stopped)
                for r in refs if r.uid not in moved}

    run_bulk(mb, op, ids, action)


def _read_back(mb, folder: str, target: str, uidvalidity: int, chunk: list[int], known: dict[int, str | None],
               floor: int, error: MailError, moved: set[int], missed: dict[int, str], *, last: bool) -> list[int]:
    """After a MOVE of ``chunk`` failed: which of it the server moved (into ``moved``), which
    are gone or cannot be told (into ``missed``); returns the UIDs still to move (on the
    ``last`` attempt those fail with ``error``). Reconnects when the connection dropped."""
    arrived = _arrived(mb, target, floor)
    state = mb.conn.select(folder)
    if state.uidvalidity != uidvalidity:
        missed.update({uid: _stale(folder, uidvalidity, state.uidvalidity) for uid in chunk})
        return []
    still = set(_present(mb, chunk))
    left = []
    for uid in chunk:
        mid = known.get(uid)
        if uid in still:
            left.append(uid)
            if last:
                missed[uid] = str(error)
        elif mid and arrived.get(mid, 0) > 0:
            arrived[mid] -= 1
            moved.add(uid)
        elif not mid:
            missed[uid] = UNSURE.format(folder=folder, target=target)
    return [] if last else left


def archive(mb, ids: Sequence[str]) -> None:
    folder = mb.folders.role_folder("archive")
    if folder is None:
        raise NotSupported(mb.account_id, "archive", "the account has no Archive folder")
    move(mb, ids, folder, op="archive")


def trash(mb, ids: Sequence[str]) -> None:
    folder = mb.folders.role_folder("trash")
    if folder is None:
        raise NotSupported(mb.account_id, "trash", "the account has no Trash folder")
    move(mb, ids, folder, op="trash")


def delete_permanently(mb, ids: Sequence[str]) -> None:
    """Only mail in the Trash folder; only with UIDPLUS (``UID EXPUNGE`` of exactly those UIDs)."""
    refs = decode_many(check_bulk(ids), mb.account_id)
    trash_folder = mb.folders.role_folder("trash")
    outside = [str(r) for r in refs if r.folder != trash_folder]
    if outside:
        raise NotSupported(mb.account_id, "deletePermanently",
                           f"only mail in the Trash folder can be deleted permanently; {len(outside)} "
                           f"message(s) are elsewhere (first: {outside[0]})")
    if not mb.conn.has("UIDPLUS"):
        raise NotSupported(mb.account_id, "deletePermanently",
                           "the server lacks UIDPLUS; a plain EXPUNGE could remove other mail, so refused")
    def action(folder: str, group: list[MessageRef], state) -> dict[int, str]:
        present = _present(mb, [r.uid for r in group])
        mb.expunge_uids(folder, sorted(present))
        return {r.uid: GONE.format(folder=folder) for r in group if r.uid not in present}

    run_bulk(mb, "deletePermanently", ids, action)
