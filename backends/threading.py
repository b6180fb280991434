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
from typing import Any, Iterable, NamedTuple, Sequence

from mailtriage.backends.contract import Message, ThreadId

__all__ = [
    "ThreadGroup",
    "ThreadRecord",
    "find_thread",
    "synthetic_kind",
    "thread_id_for",
    "thread_records",
]

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


@dataclass(slots=True)
class ThreadGroup:
    """One reconstructed thread: its root ID and the indices of its members in the input."""

    root_id: Any  # str, or bytes when the records carry bytes IDs
    synthetic: bool
    members: list[int] = field(default_factory=list)


def synthetic_kind(kind: str) -> str:
    """The ThreadId kind of threads rooted at a message without a Message-ID."""
    return f"{kind}-synthetic"


def thread_id_for(group: ThreadGroup, kind: str) -> ThreadId:
    return ThreadId(synthetic_kind(kind) if group.synthetic else kind, group.root_id)


class _Synthetic(tuple):
    """Node key of a synthetic ID: never equal to a real Message-ID, whatever its spelling."""

    __slots__ = ()


def thread_records(records: Sequence[Any]) -> list[ThreadGroup]:
    """Group ``records`` into threads; groups in order of their first member in the input.

    A record is a :class:`ThreadRecord` or any tuple laid out like one
    (message_id, references, in_reply_to, synthetic_id, ...). IDs may be ``str`` or
    ``bytes`` (the mbox fast path threads undecoded bytes); ``root_id`` has the type
    of the input. Every input record is in exactly one group (nothing is dropped,
    duplicates included); ``members`` keeps input order.
    """
    parent: dict[Any, Any] = {}
    has_child: set[Any] = set()

    def reaches(start: Any, target: Any) -> bool:
        """True when walking up from ``start`` meets ``target`` soon (a link would loop).

        Bounded so a pathological chain stays linear; a loop it misses is cut
        when roots are computed below.
        """
        node = start
        for _ in range(_LOOP_CHECK_DEPTH):
            if node == target:
                return True
            node = parent.get(node)
            if node is None:
                return False
        return False

    for record in records:
        refs = record[1]
        irt = record[2]
        if irt is not None and irt not in refs:
            refs = [*refs, irt]
        if not refs:
            continue
        mid = record[0]
        if record[3]:
            key: Any = _Synthetic((mid,))
        else:
            key = mid
            if mid in refs:
                refs = [r for r in refs if r != mid]
                if not refs:
                    continue
        if len(refs) > 1:
            if len(refs) > 2 or refs[0] == refs[1]:
                refs = list(dict.fromkeys(refs))
            previous = refs[0]
            for ref in refs[1:]:
                # A node without children cannot be an ancestor: skip the walk.
                if ref not in parent and (ref not in has_child or not reaches(previous, ref)):
                    parent[ref] = previous
                    has_child.add(previous)
                previous = ref
            last = previous
        else:
            last = refs[0]
        if parent.get(key) != last and (key not in has_child or not reaches(last, key)):
            parent[key] = last
            has_child.add(last)

    roots: dict[Any, Any] = {}

    def root_of(key: Any) -> Any:
        path: list[Any] = []
        on_path: set[Any] = set()
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

    groups: dict[Any, ThreadGroup] = {}
    get_root = roots.get
    for index, record in enumerate(records):
        key = _Synthetic((record[0],)) if record[3] else record[0]
        root = get_root(key)
        if root is None:
            root = root_of(key) if key in parent else key
        group = groups.get(root)
        if group is None:
            synthetic = type(root) is _Synthetic
            group = groups[root] = ThreadGroup(root[0] if synthetic else root, synthetic)
        group.members.append(index)
    return list(groups.values())


def find_thread(records: Sequence[Any], thread_id: ThreadId, kind: str) -> ThreadGroup | None:
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
