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
2. Consecutive IDs of a References field are linked parent -> child; the first
   such guess for an ID wins.
3. A message's own parent is the last ID of its References (or its In-Reply-To);
   this overrides any parent guessed from another message's References, because a
   message is the authority on its own parent (the last of duplicates wins).
   No link is ever undone by a later one, so the result depends only on the
   records and their order (which is what lets a fast path and a full parse agree).
4. The root of a message is the top of its parent chain. So a reply whose parent
   is missing still joins its thread: the first ID of its References is an
   ancestor even when nothing in between is present. Broken References that form a
   loop are cut where the walk up first closes it.

JWZ's subject-based grouping is deliberately not done: threads are identities,
and two reports that share a subject are different reports.

Messages without a Message-ID carry a synthetic ID (see ``mime_headers.synthetic_message_id``).
One that refers to nothing is a thread of its own with a ``<kind>-synthetic`` ID,
so it never dedupes with a real Message-ID; one that has References or In-Reply-To
joins the thread it refers to (DESIGN.md: a message joins a thread when the root is
in its References / In-Reply-To). Two messages that share one Message-ID are both
kept, in the same thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from operator import itemgetter
from typing import Any, Iterable, NamedTuple, Sequence

from mailtriage.backends.contract import Message, ThreadId

__all__ = [
    "Links",
    "ThreadGroup",
    "group_ids",
    "group_records",
    "is_synthetic_root",
    "link_records",
    "root_members",
    "ThreadRecord",
    "find_thread",
    "synthetic_kind",
    "thread_id_for",
    "thread_records",
]



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


@dataclass
class Links:
    """Parent links of a run of records, before roots are worked out.

    ``guessed``: parents guessed from References (the first guess for an ID wins);
    ``own``: the parent each message names for itself (the last record wins).
    Links of consecutive runs merge exactly (:meth:`then`), so a long input can be
    linked in pieces, even in separate processes, and grouped once.
    """

    guessed: dict[Any, Any] = field(default_factory=dict)
    own: dict[Any, Any] = field(default_factory=dict)

    def then(self, later: "Links") -> "Links":
        """The links of this run followed by ``later`` (as if linked in one go)."""
        guessed = dict(later.guessed)
        guessed.update(self.guessed)
        own = dict(self.own)
        own.update(later.own)
        return Links(guessed, own)

    def to_plain(self) -> tuple:
        """Marshal-able form (synthetic keys become a separate dict)."""
        own_real = {k: v for k, v in self.own.items() if type(k) is not _Synthetic}
        own_synthetic = {k[0]: v for k, v in self.own.items() if type(k) is _Synthetic}
        return self.guessed, own_real, own_synthetic

    @classmethod
    def from_plain(cls, plain: tuple) -> "Links":
        guessed, own_real, own_synthetic = plain
        own = dict(own_real)
        own.update({_Synthetic((k,)): v for k, v in own_synthetic.items()})
        return cls(guessed, own)


def link_records(records: Iterable[Any], links: Links | None = None) -> Links:
    """The parent links of ``records`` (steps 1-3 of the module docstring).

    With ``links``, the records are linked after those already in it (in place),
    so a long input can be linked chunk by chunk without keeping it.
    """
    if links is None:
        links = Links()
    guessed = links.guessed
    own = links.own
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
        count = len(refs)
        if count == 2:  # the most common case (a reply to a reply), without a loop
            first, last = refs
            if first != last:
                if last not in guessed:
                    guessed[last] = first
            own[key] = last
            continue
        if count > 2:
            refs = list(dict.fromkeys(refs))
            previous = refs[0]
            for ref in refs[1:]:
                if ref not in guessed:
                    guessed[ref] = previous
                previous = ref
        own[key] = refs[-1]
    return links


_FIRST = itemgetter(0)
_FOURTH = itemgetter(3)


def group_records(records: Sequence[Any], links: Links) -> list[ThreadGroup]:
    """Group ``records`` by the root their links lead to (step 4)."""
    return group_ids(list(map(_FIRST, records)), list(map(_FOURTH, records)), links)


def group_ids(message_ids: Sequence[Any], synthetic: Sequence[bool], links: Links) -> list[ThreadGroup]:
    """Group messages, given as parallel lists of IDs and synthetic flags, by root.

    Only the links are needed besides the IDs: References and In-Reply-To have
    done their work once linked.
    """
    return [ThreadGroup(root[0], True, members) if type(root) is _Synthetic else ThreadGroup(root, False, members)
            for root, members in root_members(message_ids, synthetic, links).items()]


def root_members(message_ids: Sequence[Any], synthetic: Sequence[bool], links: Links) -> dict[Any, list[int]]:
    """What :func:`group_ids` gives, as a dict: each group's root key -> its members.

    A root key is the root ID, or for a synthetic root the ID inside a 1-tuple (test it
    with :func:`is_synthetic_root`). Keys are in :func:`group_ids`' order of groups.
    """
    parent = dict(links.guessed)
    parent.update(links.own)
    # Each node whose root is known -> the members of its root's group (a root always has
    # its group by the end of the turn that found it), so one lookup gives both.
    group_of: dict[Any, list[int]] = {}
    members: dict[Any, list[int]] = {}  # root key -> members, in order of the groups

    def group_of_path(key: Any) -> list[int]:
        """The group of ``key`` whose parent's root is not known yet: walk up."""
        path: list[Any] = []
        on_path: set[Any] = set()
        node = key
        while True:
            known = group_of.get(node)
            if known is not None:
                break
            if node in on_path:
                # References that loop (a broken client): cut the loop where it closes.
                top = path[-1]
                del parent[top]
                known = None
                break
            path.append(node)
            on_path.add(node)
            up = parent.get(node)
            if up is None:
                top = node
                break
            node = up
        if known is None:
            known = members[top] = []  # a new root: its group starts with this record
        for visited in path:
            group_of[visited] = known
        return known

    if len(synthetic) == len(message_ids) and not any(synthetic):
        keys: Sequence[Any] = message_ids
    else:
        keys = [_Synthetic((key,)) if is_synthetic else key for key, is_synthetic in zip(message_ids, synthetic)]
    get_group = group_of.get
    # map() is lazy: each parent is looked up at the start of its record's turn, after any
    # loop an earlier record cut (a key whose link was cut has its group known by then).
    for index, key, up in zip(count(), keys, map(parent.get, keys)):
        group = get_group(key)
        if group is None:
            if up is None:
                group = group_of[key] = members[key] = [index]
                continue
            # Archives are mostly in order: the parent's root is usually known.
            group = get_group(up)
            if group is None:
                group = group_of_path(key)
            else:
                group_of[key] = group
        group.append(index)
    return members


def is_synthetic_root(key: Any) -> bool:
    """Whether a key of :func:`root_members` is a synthetic root (its ID is ``key[0]``)."""
    return type(key) is _Synthetic


def thread_records(records: Sequence[Any]) -> list[ThreadGroup]:
    """Group ``records`` into threads; groups in order of their first member in the input.

    A record is a :class:`ThreadRecord` or any tuple laid out like one
    (message_id, references, in_reply_to, synthetic_id, ...). IDs may be ``str`` or
    ``bytes`` (the mbox fast path threads undecoded bytes); ``root_id`` has the type
    of the input. Every input record is in exactly one group (nothing is dropped,
    duplicates included); ``members`` keeps input order.
    """
    return group_records(records, link_records(records))


def find_thread(records: Sequence[Any], thread_id: ThreadId, kind: str) -> ThreadGroup | None:
    """The group of ``records`` that ``thread_id`` names, or None.

    ``kind`` is the backend's thread_id_kind; ``thread_id.kind`` must be it or its
    synthetic kind (callers refuse other kinds before calling).
    """
    # Compared as ThreadId kinds, so an old backend tag ("mbox") names its shape ("msgid").
    want_synthetic = thread_id.kind == ThreadId(synthetic_kind(kind), "").kind
    for group in thread_records(records):
        if group.root_id == thread_id.value and group.synthetic == want_synthetic:
            return group
    return None
