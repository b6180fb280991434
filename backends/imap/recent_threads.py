"""The threads of the listing's rows, summed up (``list_recent_threads`` over IMAP).

The rows (:mod:`backends.imap.recent_rows`) are threaded by the shared JWZ threading into
summaries, newest activity first; a :class:`SummaryMemo` keeps what one call made, so the
next (a poll) regroups only the threads that changed (issue 39).

Moved out of :mod:`backends.imap.recent` (issue 36), which picks the rows.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from datetime import datetime, timezone
from heapq import heapify, heappop, heappush
from operator import itemgetter
from typing import Iterable

from mailtriage.backends.contract import (LEGACY_KINDS, MESSAGE_ID_KIND, SYNTHETIC_MESSAGE_ID_KIND, Address, ThreadId,
                                          ThreadSummary)
from mailtriage.backends.imap import summary_cache as sc
from mailtriage.backends.imap.recent_rows import Row, _list_filter
from mailtriage.backends.thread_reconstruction import is_synthetic_root, link_records, root_members, synthetic_kind


_BY_UID = itemgetter(sc.UID)
(_MESSAGE_ID, _SYNTHETIC, _ARRIVED, _SEEN, _SENDER_EMAIL) = (
    itemgetter(sc.MESSAGE_ID), itemgetter(sc.SYNTHETIC), itemgetter(sc.ARRIVED), itemgetter(sc.SEEN),
    itemgetter(sc.SENDER_EMAIL))


# -- summing threads up ------------------------------------------------------------------------

def threads_at_least(rows: list[Row], limit: int) -> bool:
    """Whether ``rows`` make at least ``limit`` threads as :func:`summaries` groups them. A
    root counted per message (``thread_root``) can over-count (two replies naming different
    ancestors of one thread): a page cut there would be short, and a short page is taken for
    the whole window."""
    ordered = sorted(rows, key=_BY_UID)
    grouped = root_members(list(map(_MESSAGE_ID, ordered)), list(map(_SYNTHETIC, ordered)), link_records(ordered))
    return len(grouped) >= limit


class SummaryMemo:
    """What one call of :func:`summaries` made, for the next call on (mostly) the same rows
    (issue 39: a poll in a storm lists thousands of threads each time and a few changed).

    The rows are split into *components*: rows joined, directly or not, by a Message-ID one
    has and another names (References, In-Reply-To). Threading never links rows of different
    components, and it threads a component the same whatever else is listed (its rows in UID
    order decide every link, every first guess and every cut loop), so a call regroups and
    sums up only the components that a row arrived in, left or changed in (a flag: a new row
    object), and takes every other component's summaries as they were.

    A first call (or one where much changed: a first page, then the whole window) threads
    everything and keeps the rows only; the next call with few changes threads everything
    once more and keeps the components; from then on only what changed is regrouped."""

    __slots__ = ("kind", "rows", "comp_of", "comps", "regrouped", "ranked", "answer", "delta", "version")

    def __init__(self) -> None:
        self.kind = ""
        self.rows: dict[int, Row] | None = None  # the last call's rows by UID
        self.comp_of: dict | None = None  # node (a Message-ID, or (ID,) for a synthetic one) -> _Component
        self.comps: set | None = None
        self.regrouped = 0  # rows the last call threaded (a measure for tests and benchmarks)
        self.ranked: list | None = None  # every kept component's (summary, time, -first UID), by _RANK ascending
        # (cache, wanted, since, heap of (arrival, UID)) of the rows last answered (memo.rows), for
        # summaries_of_changes; None when they were not answered from a cache that way
        self.answer: tuple | None = None
        # What the last call changed in the ranking: (entries that left, entries that came), or
        # None when it ranked everything anew (a change feed then answers whole)
        self.delta: tuple[list, list] | None = None
        # Counts the changes made to ``rows`` in place (summaries_of_changes): what a listing
        # kept of them without a copy (ListedThreads) is theirs while it holds
        self.version = 0


class _Component:
    __slots__ = ("rows", "out")

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows  # in UID order
        self.out: list[tuple] = []  # (summary, time, -first UID) of each of its threads


#: Where more rows than this share of the listing changed, a call threads everything anew.
_REGROUP_SHARE = 8


def summaries(rows: list[Row], kind: str, memo: SummaryMemo | None = None) -> list[ThreadSummary]:
    """The threads of ``rows``, most recent activity first. With ``memo``, only the threads
    of what changed since the last call with that memo are regrouped (see :class:`SummaryMemo`);
    the result is that of a call without it.

    Threaded as :func:`thread_records` threads them (``rows`` sorted by UID are the
    records); each group is summed up from columns of the rows (one or two members
    directly, more with builtins: max, all, dict.fromkeys) rather than a loop over its
    members; the general loop is kept for the rare inputs where those would not give the
    same (an arrival time missing, an empty sender address). tests/imap/test_summaries.py
    compares it with the loop it replaced, and a memo's result with a call without."""
    if memo is None:
        return _ranked(*_summed(sorted(rows, key=_BY_UID), kind))
    by_uid = {row[sc.UID]: row for row in rows}
    old = memo.rows if memo.kind == kind else None
    if old is None or len(by_uid) != len(rows):
        memo.kind, memo.rows, memo.comp_of, memo.comps, memo.ranked, memo.answer = kind, by_uid, None, None, None, None
        memo.delta = None
        memo.regrouped = len(rows)
        return _ranked(*_summed(sorted(rows, key=_BY_UID), kind))
    get_old, get_new = old.get, by_uid.get
    added = [row for uid, row in by_uid.items() if get_old(uid) is not row]
    removed = [row for uid, row in old.items() if get_new(uid) is not row]
    memo.rows = by_uid
    memo.answer = None  # these rows were not answered by summaries_of_changes' bookkeeping
    return _changed(memo, kind, rows, added, removed)


def _changed(memo: SummaryMemo, kind: str, rows: Iterable[Row], added: list[Row], removed: list[Row],
             *, whole: bool = True) -> list[ThreadSummary]:
    """The summaries of ``memo.rows`` (``rows``: the same rows), regrouping the components
    ``added`` and ``removed`` rows touch (or everything, when many changed or no components
    are kept yet). The threads are kept ranked (``memo.ranked``, ascending): a call that
    regrouped a few components moves their entries only."""
    memo.delta = None
    if len(added) + len(removed) > max(64, len(memo.rows or ()) // _REGROUP_SHARE):
        memo.comp_of = memo.comps = memo.ranked = None
        ordered = sorted(rows, key=_BY_UID)
        memo.regrouped = len(ordered)
        return _ranked(*_summed(ordered, kind))
    if memo.comp_of is None or memo.ranked is None:
        comp_of, comps = memo.comp_of, memo.comps = {}, set()
        _regroup(sorted(rows, key=_BY_UID), kind, comp_of, comps)
        memo.regrouped = len(memo.rows or ())
        memo.ranked = sorted((entry for comp in comps for entry in comp.out), key=_RANK)
    elif added or removed:
        comp_of, comps, ranked = memo.comp_of, memo.comps, memo.ranked
        touched = {comp_of[_node(row)] for row in removed}
        for row in added:
            for node in _nodes(row):
                comp = comp_of.get(node)
                if comp is not None:
                    touched.add(comp)
        gone = {row[sc.UID] for row in removed}
        subset = [row for comp in touched for row in comp.rows if row[sc.UID] not in gone]
        for comp in touched:
            comps.discard(comp)
            for row in comp.rows:
                for node in _nodes(row):
                    comp_of.pop(node, None)
            for entry in comp.out:  # its threads leave the ranking (each entry's rank is unique)
                at = bisect_left(ranked, _RANK(entry), key=_RANK)
                if at < len(ranked) and ranked[at] is entry:
                    del ranked[at]
                else:  # (never: the ranking holds every kept entry) ranked again, whole
                    ranked.remove(entry)
        subset.extend(added)
        subset.sort(key=_BY_UID)
        made: list[_Component] = []
        _regroup(subset, kind, comp_of, comps, made)
        for comp in made:
            for entry in comp.out:
                insort(ranked, entry, key=_RANK)
        memo.regrouped = len(subset)
        memo.delta = ([entry for comp in touched for entry in comp.out], [entry for comp in made for entry in comp.out])
    else:
        memo.regrouped = 0
        memo.delta = ([], [])
    if not whole:
        return []
    return list(map(_SUMMARY, reversed(memo.ranked)))


_SUMMARY = itemgetter(0)


def ranked_delta(memo: SummaryMemo) -> tuple[list[ThreadSummary], list] | None:
    """What the last call with ``memo`` changed, as a change feed says it (the summaries added
    or changed, most recent activity first, and the references of the threads gone), or None
    when it ranked everything anew. A thread regrouped to the very summary it had is left out."""
    delta = memo.delta
    if delta is None:
        return None
    left, came = delta
    before = {entry[0].thread_id: entry[0] for entry in left}
    after = {entry[0].thread_id for entry in came}
    changed = [entry[0] for entry in sorted(came, key=_RANK, reverse=True) if before.get(entry[0].thread_id) != entry[0]]
    return changed, [thread_id for thread_id in before if thread_id not in after]


def summaries_of_changes(memo: SummaryMemo, cache: sc.FolderCache, touched: Iterable[int], since: datetime,
                         wanted: str | None, kind: str, *, whole: bool = True) -> list[ThreadSummary] | None:
    """The summaries of the cached rows a listing since ``since`` answers, from the last
    answer of this memo and the UIDs that changed since (``touched``: added, flags changed or
    gone, as :func:`reconcile` reports them), without a pass over the window (issue 39: a poll
    in a storm answered and compared the whole window each time). Rows that aged out of the
    window (arrived before ``since``) leave by a heap of arrival times. None when the last
    answer was not of this cache and list, or ``since`` went back: the caller answers whole
    (:func:`answer_from_cache` and :func:`summaries`), which this call then continues from.

    ``whole=False``: where the ranking was changed in place (``memo.delta`` says how), the
    whole list is not made (``[]`` is returned): a change feed answers the delta only."""
    answer = memo.answer
    since_epoch = since.timestamp()
    if (answer is None or answer[0] is not cache or answer[1] != wanted or since_epoch < answer[2]
            or memo.kind != kind or memo.rows is None):
        return None
    answered, aging = memo.rows, answer[3]
    keep = _list_filter(wanted)
    rows = cache.rows
    added: list[Row] = []
    removed: list[Row] = []
    for uid in set(touched):
        row = rows.get(uid)
        old = answered.get(uid)
        arrived = row[sc.ARRIVED] if row is not None else None
        if row is not None and (arrived is None or arrived >= since_epoch) and (keep is None or keep(row)):
            if old is not row:
                if old is not None:
                    removed.append(old)
                added.append(row)
                answered[uid] = row
                if arrived is not None:
                    heappush(aging, (arrived, uid))
        elif old is not None:
            removed.append(old)
            del answered[uid]
    while aging and aging[0][0] < since_epoch:  # the window's lower edge moved on
        arrived, uid = heappop(aging)
        old = answered.get(uid)
        if old is not None and old[sc.ARRIVED] == arrived:
            removed.append(old)
            del answered[uid]
    memo.answer = (cache, wanted, since_epoch, aging)
    if added or removed:
        memo.version += 1
    return _changed(memo, kind, answered.values(), added, removed, whole=whole)


def answered_whole(memo: SummaryMemo, cache: sc.FolderCache, wanted: str | None, since: datetime) -> None:
    """Note that the last :func:`summaries` call with ``memo`` answered ``cache`` whole for
    ``wanted`` since ``since``: :func:`summaries_of_changes` continues from it."""
    if memo.rows is None:
        memo.answer = None
        return
    aging = [(row[sc.ARRIVED], uid) for uid, row in memo.rows.items() if row[sc.ARRIVED] is not None]
    heapify(aging)
    memo.answer = (cache, wanted, since.timestamp(), aging)


_TIME = itemgetter(1)


def _RANK(entry: tuple) -> tuple:
    return entry[1], entry[0].root_message_id, entry[2]


def _node(row: Row):
    """The threading node of a row: its Message-ID, or for a synthetic one the ID in a 1-tuple
    (never equal to a Message-ID another row names)."""
    return (row[sc.MESSAGE_ID],) if row[sc.SYNTHETIC] else row[sc.MESSAGE_ID]


def _nodes(row: Row) -> list:
    """The nodes a row joins: its own, the IDs its References and In-Reply-To name."""
    out = [_node(row), *row[sc.REFERENCES]]
    if row[sc.IN_REPLY_TO] is not None:
        out.append(row[sc.IN_REPLY_TO])
    return out


def _regroup(rows: list[Row], kind: str, comp_of: dict, comps: set, made: list | None = None) -> None:
    """Thread ``rows`` (in UID order: whole components) and file each component's rows and
    summaries under every node of it (the components made are added to ``made`` too)."""
    parent: dict = {}

    def find(node):  # union-find with path compression (a str and a 1-tuple are never equal)
        root = node
        up = parent.get(root)
        while up is not None:
            root = up
            up = parent.get(root)
        while node != root:
            up = parent[node]
            parent[node] = root
            node = up
        return root

    firsts: list = []
    for row in rows:
        nodes = _nodes(row)
        first = find(nodes[0])
        for node in nodes[1:]:
            other = find(node)
            if other != first:
                parent[other] = first
        firsts.append(nodes[0])
    by_root: dict = {}
    for row, node in zip(rows, firsts):
        root = find(node)
        comp = by_root.get(root)
        if comp is None:
            comp = by_root[root] = _Component([])
        comp.rows.append(row)
    out, times, first_rows = _summed(rows, kind, with_first=True)
    for summary, time, first in zip(out, times, first_rows):
        by_root[find(_node(first))].out.append((summary, time, -first[sc.UID]))
    if made is not None:
        made.extend(by_root.values())
    for comp in by_root.values():
        comps.add(comp)
        for row in comp.rows:
            for node in _nodes(row):
                comp_of[node] = comp


def _summed(rows: list[Row], kind: str, *, with_first: bool = False) -> tuple[list, list, list | None]:
    """The summaries of the threads of ``rows`` (in UID order), in the order threading makes
    the groups (of their first member), their times of activity and with ``with_first`` their
    first member rows."""
    message_ids = list(map(_MESSAGE_ID, rows))
    synthetic = list(map(_SYNTHETIC, rows))
    grouped = root_members(message_ids, synthetic, link_records(rows))
    any_synthetic = any(synthetic)
    arrivals = list(map(_ARRIVED, rows))
    seen = list(map(_SEEN, rows))
    emails = list(map(_SENDER_EMAIL, rows))
    plain = None not in arrivals and all(emails)  # else some groups take the general loop
    arrival_of, seen_of, email_of = arrivals.__getitem__, seen.__getitem__, emails.__getitem__
    # The kinds as ThreadId spells them (an old backend tag is read as its shape).
    real_kind, synthetic_kind_ = (LEGACY_KINDS.get(k, k) for k in (kind, synthetic_kind(kind)))
    # Threads named by their root Message-ID (as IMAP's are): made by the contract's fast path.
    message_id_kinds = (real_kind, synthetic_kind_) == (MESSAGE_ID_KIND, SYNTHETIC_MESSAGE_ID_KIND)
    of_message_id_root = ThreadSummary._of_message_id_root
    utc = timezone.utc
    from_timestamp = datetime.fromtimestamp
    from_iso = datetime.fromisoformat
    sent_at, name_at, email_at, subject_at = sc.SENT, sc.SENDER_NAME, sc.SENDER_EMAIL, sc.SUBJECT
    senders: dict[tuple[str, str], Address] = {}
    out: list[ThreadSummary] = []
    times: list[float] = []
    firsts: list[Row] | None = [] if with_first else None
    for key, indices in grouped.items():
        if any_synthetic and is_synthetic_root(key):
            root_id, synthetic_root = key[0], True
        else:
            root_id, synthetic_root = key, False
        first = indices[0]
        if len(indices) == 1:
            root = latest = rows[first]
            continued = message_ids[first] != root_id
            newest = arrivals[first]
            if newest is None:
                latest = None
            unread = not seen[first]
            email = emails[first]
            participants = (email,) if email else ()
        elif plain and len(indices) == 2:  # the most common thread (a report and a reply), without builtins
            second = indices[1]
            if message_ids[first] == root_id:
                root, continued = rows[first], False
            elif message_ids[second] == root_id:
                root, continued = rows[second], False
            else:
                root, continued = rows[first], True
            newest, later = arrivals[first], arrivals[second]
            if later > newest:  # else the first of the latest arrivals, as max() picks
                newest, latest = later, rows[second]
            else:
                latest = rows[first]
            unread = not (seen[first] and seen[second])
            email, other = emails[first], emails[second]
            participants = (email,) if email == other else (email, other)
        elif plain:
            if message_ids[first] == root_id:
                root, continued = rows[first], False
            else:
                root = next((rows[i] for i in indices if message_ids[i] == root_id), None)
                continued = root is None
                if root is None:
                    root = rows[first]
            latest = rows[max(indices, key=arrival_of)]  # the first of the latest arrivals
            newest = latest[sc.ARRIVED]
            unread = not all(map(seen_of, indices))
            participants = tuple(dict.fromkeys(map(email_of, indices)))
        else:
            root, latest, newest, unread, participants = _sum_up(rows, indices, root_id)
            # Without its root the walk holds replies only: the thread started before `since`.
            continued = root is None
            if root is None:
                root = rows[first]
        who = (root[name_at], root[email_at])
        sender = senders.get(who)
        if sender is None:
            sender = senders[who] = Address(*who)
        sent = latest[sent_at] if latest is not None else None
        last_activity = from_timestamp(newest, utc) if newest is not None else None
        # The latest message has no usable Date: its row shows the arrival, marked "?" as an
        # mbox row dated by its delivery time is.
        marker = "undated" if last_activity is not None and not sent else ""
        if message_id_kinds:
            out.append(of_message_id_root(synthetic_root, root_id, root[subject_at], sender,
                                          last_activity, len(indices), participants, unread, continued,
                                          from_iso(sent) if sent else None, marker))
        else:
            out.append(ThreadSummary(
                thread_id=ThreadId(synthetic_kind_ if synthetic_root else real_kind, root_id),
                subject=root[subject_at], root_message_id=root_id, sender=sender, last_activity=last_activity,
                message_count=len(indices), participants=participants, unread=unread, date_marker=marker,
                continued=continued, sent=from_iso(sent) if sent else None))
        times.append(newest if newest is not None else 0.0)  # 0.0: the epoch, for no date
        if firsts is not None:
            firsts.append(rows[first])
    return out, times, firsts


def _ranked(out: list[ThreadSummary], times: list[float], _firsts: object = None) -> list[ThreadSummary]:
    """``out`` most recent activity first (ties: the greater root ID first, then in ``out``'s order)."""
    if len(set(times)) == len(times):
        # No two times equal (nor one object twice): the root IDs would break no tie, so
        # sorting by the times alone gives the very order of (time, root ID) below.
        ranked = sorted(range(len(out)), key=times.__getitem__, reverse=True)
    else:
        order = list(zip(times, (s.root_message_id for s in out)))
        ranked = sorted(range(len(out)), key=order.__getitem__, reverse=True)
    return list(map(out.__getitem__, ranked))


def _sum_up(rows: list[Row], indices: list[int], root_id: str) -> tuple:
    """One group's root row (None when absent), latest row (None when no arrival time is
    known), latest arrival, whether any member is unread and its participants, member by
    member (the general case of :func:`summaries`)."""
    message_id_at, arrived_at, seen_at, email_at = sc.MESSAGE_ID, sc.ARRIVED, sc.SEEN, sc.SENDER_EMAIL
    root = latest = newest = None
    unread = False
    emails: dict[str, None] = {}
    for i in indices:
        member = rows[i]
        if root is None and member[message_id_at] == root_id:
            root = member
        arrived = member[arrived_at]  # the first of the latest arrivals, as max() picks
        if arrived is not None and (newest is None or arrived > newest):
            newest, latest = arrived, member
        if not member[seen_at]:
            unread = True
        email = member[email_at]
        if email:
            emails[email] = None
    return root, latest, newest, unread, tuple(emails)
