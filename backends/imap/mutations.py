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

from mailtriage.backends.errors import MailError, NotSupported
from mailtriage.backends.imap import protocol
from mailtriage.backends.imap.ids import MessageRef, decode_many
from mailtriage.backends.mailbox import InvalidQuery, PartialFailure, check_bulk

# An IMAP keyword is an atom: no spaces, parentheses, braces, quotes, %, *, ] or controls.
_ATOM = re.compile(r"^[^\s(){%*\"\\\]\x00-\x1f\x7f]+$")


def check_keyword(name: str) -> str:
    if not isinstance(name, str) or not _ATOM.match(name) or name.startswith("\\"):
        raise InvalidQuery(f"{name!r} cannot be an IMAP keyword label (no spaces, ( ) {{ % * \" \\ ] or a "
                           "leading backslash)")
    return name


def _by_folder(refs: list[MessageRef]) -> dict[str, list[MessageRef]]:
    groups: dict[str, list[MessageRef]] = defaultdict(list)
    for ref in refs:
        groups[ref.folder].append(ref)
    return groups


def run_bulk(mb, op: str, ids: Sequence[str], action: Callable[[str, list[MessageRef]], None]) -> None:
    """Decode, group by folder, verify UIDVALIDITY, run ``action(folder, refs)`` per folder,
    and raise PartialFailure when anything failed."""
    refs = decode_many(check_bulk(ids), mb.account_id)
    failed: dict[str, str] = {}
    done: list[str] = []
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
        if not usable:
            continue
        try:
            action(folder, usable)
            done.extend(str(r) for r in usable)
        except NotSupported:
            raise
        except MailError as exc:
            failed.update({str(r): str(exc) for r in usable})
    if failed:
        raise PartialFailure(mb.account_id, op, failed, done)


def _store(mb, refs: list[MessageRef], op: str, flags: list[bytes]) -> None:
    for chunk in protocol.chunks(sorted(r.uid for r in refs)):
        seqset = protocol.compress(chunk)
        mb.conn.call(f"UID STORE {op}", lambda c: protocol.store(c, seqset, op, flags))


def set_flags(mb, ids: Sequence[str], *, read: bool | None = None, flagged: bool | None = None) -> None:
    if read is None and flagged is None:
        raise InvalidQuery("setFlags needs at least one of read, flagged")

    def action(folder: str, refs: list[MessageRef]) -> None:
        for value, flag in ((read, b"\\Seen"), (flagged, b"\\Flagged")):
            if value is not None:
                _store(mb, refs, "+FLAGS.SILENT" if value else "-FLAGS.SILENT", [flag])

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

    def action(folder: str, refs: list[MessageRef]) -> None:
        if add_b:
            _store(mb, refs, f"+{item}.SILENT", add_b)
        if remove_b:
            _store(mb, refs, f"-{item}.SILENT", remove_b)

    run_bulk(mb, "setLabels", ids, action)
    mb.labels.remember(add)


def move(mb, ids: Sequence[str], folder_id: str, *, op: str = "move") -> None:
    target = mb.folders.info(folder_id)
    if not target.selectable:
        raise InvalidQuery(f"{folder_id!r} cannot hold mail")
    can_move = mb.conn.has("MOVE")
    if not can_move and not mb.conn.has("UIDPLUS"):
        raise NotSupported(mb.account_id, op, "the server has neither MOVE nor UIDPLUS; moving would need a "
                                              "plain EXPUNGE, which could remove other mail; refused")

    def action(folder: str, refs: list[MessageRef]) -> None:
        if folder == folder_id:
            return
        for chunk in protocol.chunks(sorted(r.uid for r in refs)):
            seqset = protocol.compress(chunk)
            if can_move:
                mb.conn.call(f"UID MOVE {folder_id}", lambda c: c._raw_command_untagged(
                    b"MOVE", [seqset.encode(), c._normalise_folder(folder_id)], response_name="OK"))
            else:
                mb.conn.call(f"UID COPY {folder_id}", lambda c: c.copy([int(u) for u in chunk], folder_id))
                mb.expunge_uids(folder, chunk)

    run_bulk(mb, op, ids, action)


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
    run_bulk(mb, "deletePermanently", ids, lambda folder, group: mb.expunge_uids(folder, [r.uid for r in group]))
