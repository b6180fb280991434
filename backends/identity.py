"""Recognising one conversation seen through several backends.

Thread IDs are typed (``ThreadId(kind, value)``) and never dedupe across kinds: an
``imap`` Message-ID, a ``hyperkitty`` hash and a ``ponymail`` permalink for the same
conversation stay three IDs. What ties them together is the root's RFC 5322
Message-ID, which every backend carries on its messages (and on its summaries when
it knows it). :func:`group_threads` groups threads that share a root Message-ID and
keeps each typed ID.

HyperKitty names a thread by ``base32(sha1(root Message-ID without <>))``, so a
HyperKitty summary joins a group by hash even before its root Message-ID is known.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Iterable, Sequence, Union

from mailtriage.backends.contract import Thread, ThreadId, ThreadSummary
from mailtriage.core.lean_dataclass import frozen_dataclass

HYPERKITTY_KIND = "hyperkitty"


def normalize_message_id(message_id: str | None) -> str:
    """``<local@domain>`` with brackets and no whitespace; "" when there is nothing."""
    text = "".join((message_id or "").split())
    if not text:
        return ""
    return "<" + text.strip("<>") + ">"


def hyperkitty_hash(message_id: str) -> str:
    """HyperKitty's (and Mailman's X-Message-ID-Hash) hash of a Message-ID.

    ``base32(sha1(Message-ID without <>))``:
    ``<87myycy5eh.fsf@uwakimon.sk.tsukuba.ac.jp>`` -> ``JJIGKPKB6CVDX6B2CUG4IHAJRIQIOUTP``.
    """
    bare = normalize_message_id(message_id).strip("<>")
    return base64.b32encode(hashlib.sha1(bare.encode("utf-8")).digest()).decode("ascii")


def root_message_id(item: Union[ThreadSummary, Thread]) -> str:
    """The root Message-ID a summary or thread names ("" when unknown)."""
    if isinstance(item, ThreadSummary):
        return normalize_message_id(item.root_message_id)
    messages = item.messages
    if not messages:
        return ""
    own = {normalize_message_id(m.message_id) for m in messages}
    # The root is the first message that answers nothing inside this thread.
    for message in messages:
        parent = normalize_message_id(message.in_reply_to)
        refs = {normalize_message_id(r) for r in message.references}
        if not message.synthetic_id and not (parent in own or refs & own):
            return normalize_message_id(message.message_id)
    return normalize_message_id(messages[0].message_id)


@frozen_dataclass
class ThreadGroup:
    """Threads from different backends that share one root Message-ID.

    ``thread_ids`` keeps every typed ID, in the order first seen; ``members`` the
    summaries or threads themselves. ``root_message_id`` is "" for a group that no
    backend could name a root for (it then holds exactly one member).
    """

    root_message_id: str
    thread_ids: tuple[ThreadId, ...]
    members: tuple[Union[ThreadSummary, Thread], ...]

    def id_of_kind(self, kind: str) -> ThreadId | None:
        return next((tid for tid in self.thread_ids if tid.kind == kind), None)

    def to_json(self) -> dict:
        return {"root_message_id": self.root_message_id, "thread_ids": [str(t) for t in self.thread_ids]}


def group_threads(items: Iterable[Union[ThreadSummary, Thread]]) -> list[ThreadGroup]:
    """Group summaries/threads of any backends by their root Message-ID.

    Members with the same root join one group; a ``hyperkitty`` member without a known
    root joins the group whose root hashes to its thread ID. Typed IDs are never merged:
    a group lists each member's own ``ThreadId``. Groups keep the order of first
    appearance; the same ThreadId given twice is listed once.
    """
    items = list(items)
    order: list[str] = []
    by_root: dict[str, list[Union[ThreadSummary, Thread]]] = {}
    unnamed: list[Union[ThreadSummary, Thread]] = []
    for item in items:
        root = root_message_id(item)
        if not root:
            unnamed.append(item)
            continue
        if root not in by_root:
            by_root[root] = []
            order.append(root)
        by_root[root].append(item)

    hash_to_root = {hyperkitty_hash(root): root for root in order}
    loose: list[Union[ThreadSummary, Thread]] = []
    for item in unnamed:
        tid = item.thread_id
        root = hash_to_root.get(tid.value) if tid.kind == HYPERKITTY_KIND else None
        if root is None:
            loose.append(item)
        else:
            by_root[root].append(item)

    groups = [_group(root, by_root[root]) for root in order]
    groups += [_group("", [item]) for item in loose]
    return groups


def _group(root: str, members: Sequence[Union[ThreadSummary, Thread]]) -> ThreadGroup:
    ids: list[ThreadId] = []
    for member in members:
        if member.thread_id not in ids:
            ids.append(member.thread_id)
    return ThreadGroup(root, tuple(ids), tuple(members))
