"""Thread reconstruction from Message-ID / References / In-Reply-To (JWZ-style).

Thread identity follows DESIGN.md ("Thread identity across backends"): a thread is
keyed by its root Message-ID, angle brackets kept, tagged with a kind. This module
knows nothing about where messages come from; its input is a sequence of light
:class:`ThreadRecord` values (or anything with the same four attributes), so the
mbox backend and the IMAP backend (client-side threading when the server lacks
THREAD) share it.

The algorithm is the ID part of Jamie Zawinski's threading algorithm
(https://www.jwz.org/doc/threading.html):

1. Every Message-ID seen, as a message or inside a References / In-Reply-To
   field, is a node; a referenced message that is not present is an empty node.
2. Consecutive IDs of a References field are linked parent -> child unless the
   child already has a parent or the link would make a loop.
3. A message's own parent is the last ID of its References (or its In-Reply-To);
   this overrides a parent guessed from another message's References, because a
   message is the authority on its own parent. A link that would loop is skipped.
4. The root of a message is the top of its parent chain. So a reply whose parent
   is missing still joins its thread: the first ID of its References is an
   ancestor even when nothing in between is present.

JWZ's subject-based grouping is deliberately not done: threads are identities,
and two reports that share a subject are different reports.

Messages without a Message-ID carry a synthetic ID (see ``mime.synthetic_message_id``).
One that refers to nothing is a thread of its own with a ``<kind>-synthetic`` ID,
so it never dedupes with a real Message-ID; one that has References or In-Reply-To
joins the thread it refers to (DESIGN.md: a message joins a thread when the root is
in its References / In-Reply-To). Two messages that share one Message-ID are both
kept, in the same thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple, Protocol, Sequence

from mailtriage.backends.contract import Message, ThreadId

__all__ = [
    "ThreadGroup",
    "ThreadRecord",
    "find_thread",
    "synthetic_kind",
    "thread_id_for",
    "thread_records",
]

# Internal node key prefix of synthetic IDs: keeps them apart from a real
# Message-ID that happens to be spelt the same way (a hostile sender could).
_SYNTHETIC_KEY = "\x00"
_LOOP_CHECK_DEPTH = 256


class ThreadRecord(NamedTuple):
    """What threading needs to know about one message. ``ref`` is the backend's handle."""

    message_id: str
    references: tuple[str, ...] = ()
    in_reply_to: str | None = None
    synthetic_id: bool = False
    ref: Any = None

    @classmethod
    def from_message(cls, message: Message, ref: Any = None) -> "ThreadRecord":
        return cls(message.message_id, tuple(message.references), message.in_reply_to,
                   message.synthetic_id, message.backend_ref if ref is None else ref)


class _RecordLike(Protocol):
    message_id: str
    references: Sequence[str]
    in_reply_to: str | None
    synthetic_id: bool


@dataclass
class ThreadGroup:
    """One reconstructed thread: its root ID and the indices of its members in the input."""

    root_id: str
    synthetic: bool
    members: list[int] = field(default_factory=list)


def synthetic_kind(kind: str) -> str:
    """The ThreadId kind of threads rooted at a message without a Message-ID."""
    return f"{kind}-synthetic"


def thread_id_for(group: ThreadGroup, kind: str) -> ThreadId:
    return ThreadId(synthetic_kind(kind) if group.synthetic else kind, group.root_id)


def _node_key(record: _RecordLike) -> str:
    return _SYNTHETIC_KEY + record.message_id if record.synthetic_id else record.message_id


def _parent_chain(record: _RecordLike) -> list[str]:
    """References plus an In-Reply-To that References does not already end with."""
    refs = list(record.references)
    irt = record.in_reply_to
    if irt and irt not in refs:
        refs.append(irt)
    own = record.message_id
    if own in refs and not record.synthetic_id:
        refs = [r for r in refs if r != own]
    return refs


def thread_records(records: Sequence[_RecordLike]) -> list[ThreadGroup]:
    """Group ``records`` into threads; groups in order of their first member in the input.

    Every input record is in exactly one group (nothing is dropped, duplicates
    included); ``members`` keeps input order.
    """
    parent: dict[str, str] = {}

    def reaches(start: str, target: str) -> bool:
        """True when walking up from ``start`` meets ``target`` soon (a link would loop).

        Bounded so a pathological chain stays linear; a loop it misses is cut
        when roots are computed below.
        """
        node: str | None = start
        for _ in range(_LOOP_CHECK_DEPTH):
            if node == target:
                return True
            node = parent.get(node)  # type: ignore[arg-type]
            if node is None:
                return False
        return False

    for record in records:
        chain = _parent_chain(record)
        if not chain:
            continue
        previous = chain[0]
        for ref in chain[1:]:
            if ref not in parent and not reaches(previous, ref):
                parent[ref] = previous
            previous = ref
        key = _node_key(record)
        last = chain[-1]
        if parent.get(key) != last and not reaches(last, key):
            parent[key] = last

    roots: dict[str, str] = {}

    def root_of(key: str) -> str:
        path: list[str] = []
        on_path: set[str] = set()
        node = key
        while True:
            known = roots.get(node)
            if known is not None:
                top = known
                break
            if node in on_path:
                # A loop the bounded check missed: cut it where it closes.
                top = path[-1]
                del parent[top]
                break
            path.append(node)
            on_path.add(node)
            up = parent.get(node)
            if up is None:
                top = node
                break
            node = up
        for visited in path:
            roots[visited] = top
        return top

    groups: dict[str, ThreadGroup] = {}
    for index, record in enumerate(records):
        root = root_of(_node_key(record))
        group = groups.get(root)
        if group is None:
            synthetic = root.startswith(_SYNTHETIC_KEY)
            group = groups[root] = ThreadGroup(root[1:] if synthetic else root, synthetic)
        group.members.append(index)
    return list(groups.values())


def find_thread(records: Sequence[_RecordLike], thread_id: ThreadId, kind: str) -> ThreadGroup | None:
    """The group of ``records`` that ``thread_id`` names, or None.

    ``kind`` is the backend's thread_id_kind; ``thread_id.kind`` must be it or its
    synthetic kind (callers refuse other kinds before calling).
    """
    want_synthetic = thread_id.kind == synthetic_kind(kind)
    for group in thread_records(records):
        if group.root_id == thread_id.value and group.synthetic == want_synthetic:
            return group
    return None


def records_from_messages(messages: Iterable[Message]) -> list[ThreadRecord]:
    return [ThreadRecord.from_message(m) for m in messages]
