"""The archive index as the cache folder keeps it (:mod:`backends.mbox_index_store`), and
the delta of mail appended since it was written.

Moved out of :mod:`backends.mbox` (issue 36).
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from mailtriage.backends import mbox_index_store as index_store
from mailtriage.backends.mbox_index import ArchiveIndex
from mailtriage.backends.mbox_scan import _HEADER_BLOCK, _HEADER_READ
from mailtriage.backends.thread_reconstruction import (
    Links,
    ThreadGroup,
    _Synthetic,  # the key shape of synthetic IDs in Links
)

_PERSISTED_FIELDS = ("format", "locations", "message_ids", "synthetic", "dates", "subjects", "senders", "emails",
                     "notes", "ends", "archive_notes", "line_ends")


def _index_fields(index: ArchiveIndex) -> dict:
    """The index's columns as plain data for the persisted index (no bodies: offsets and headers)."""
    fields = {name: getattr(index, name) for name in _PERSISTED_FIELDS}
    fields["not_mail"] = sorted(index.not_mail)
    return fields


def _index_from_fields(fields: dict, links: Links) -> ArchiveIndex:
    values = {name: fields[name] for name in _PERSISTED_FIELDS}
    return ArchiveIndex(**values, not_mail=set(fields["not_mail"]), links=links)


def _extend_groups(groups: list[ThreadGroup] | index_store.PackedGroups, old_links: Links, new_links: Links,
                   new_ids: Sequence[bytes], new_synthetic: Sequence[bool], base: int,
                   dates: Sequence[float] | None = None) -> list[ThreadGroup] | index_store.PackedGroups | None:
    """``groups`` (of the first ``base`` messages) with the appended messages added, exactly
    as :func:`group_ids` over all of them would group them; or None when the appended mail
    re-links mail already grouped (a new parent for a known ID, a known ID again, a loop):
    the caller then groups everything again (``groups`` is then left as it was). ``groups``
    is extended in place: a list of groups, or the overlay of persisted ones (which needs
    ``dates``, every row's, for each group's latest date)."""
    old_own, old_guessed = old_links.own, old_links.guessed
    new_own, new_guessed = new_links.own, new_links.guessed

    # A parent in old_links.then(new_links), without making that merge (own links override
    # guesses; the tail's own links override the older ones; the first guess wins).
    def parent(key: Any) -> Any:
        up = new_own.get(key)
        if up is None:
            up = old_own.get(key)
            if up is None:
                up = old_guessed.get(key)
                if up is None:
                    up = new_guessed.get(key)
        return up

    def old_parent(key: Any) -> Any:
        up = old_own.get(key)
        return old_guessed.get(key) if up is None else up

    packed = isinstance(groups, index_store.PackedGroups)
    index_of = groups.key_index(len(new_own) + len(new_guessed) + len(new_ids)) if packed else \
        {(g.root_id, g.synthetic): i for i, g in enumerate(groups)}
    # IDs whose parent the tail sets or changes. An ID the older mail knows has a parent (own
    # or guessed) or is the root of a group: every older message and every ID it references
    # is one or the other.
    for key in dict.fromkeys([*new_own, *new_guessed]):
        if old_parent(key) != parent(key):
            synthetic_key = type(key) is _Synthetic
            if key in old_own or key in old_guessed or (key[0] if synthetic_key else key, synthetic_key) in index_of:
                return None
    placed = []
    for offset, (mid, synthetic) in enumerate(zip(new_ids, new_synthetic)):
        node = _Synthetic((mid,)) if synthetic else mid
        seen = {node}
        while True:
            up = parent(node)
            if up is None:
                break
            if up in seen:
                return None  # a reference loop: group_ids cuts it, and so must a full pass
            seen.add(up)
            node = up
        root_synthetic = type(node) is _Synthetic
        placed.append(((node[0] if root_synthetic else node, root_synthetic), base + offset))
    for key, member in placed:
        at = index_of.get(key)
        if at is None:
            at = index_of[key] = groups.add_group(*key) if packed else len(groups)
            if not packed:
                groups.append(ThreadGroup(key[0], key[1]))
        if packed:
            assert dates is not None
            groups.place(at, member, dates[member])
        else:
            groups[at].members.append(member)
    return groups


def _appended_since(fd: int, old: index_store.ArchiveStamp, now: index_store.ArchiveStamp, fields: dict) -> bool:
    """Whether the archive is the indexed one plus messages appended after it: same file,
    longer, the old tail unchanged, and a From_ line right where the old file ended."""
    if now.inode != old.inode or now.size <= old.size or old.size == 0:
        return False
    if fields.get("line_ends") != "lf" or any("mboxcl2" in n for n in fields.get("archive_notes", ())):
        return False  # Content-Length and CR-only archives are read in one pass only
    if index_store.tail_digest(fd, old.size) != old.tail:
        return False
    head = os.pread(fd, _HEADER_READ, old.size - 1)
    return head[:6] == b"\nFrom " and _HEADER_BLOCK.match(head) is not None
