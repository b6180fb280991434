"""Thread summaries of the IMAP listing (backends/imap/recent_threads.py ``summaries``) and the shared
threading (backends/thread_reconstruction.py) give exactly what they gave before they were made
faster: the reference below is a copy of both as they were (commit 8bb97bb), compared on
generated rows shaped like summary_cache rows, every field of every summary and their order.

Rows are drawn from a small pool of Message-IDs, so the inputs hold duplicate Message-IDs,
replies whose root is not in the rows, References that loop, synthetic IDs (some spelled
like a real one), missing and equal arrival times, unread flags and empty addresses."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from operator import itemgetter
from typing import Any, Iterable, Sequence

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mailtriage.backends import thread_reconstruction as tr
from mailtriage.backends.contract import Address, ThreadId, ThreadSummary
from mailtriage.backends.imap import recent_threads
from mailtriage.backends.imap import summary_cache as sc
from mailtriage.backends.thread_reconstruction import ThreadGroup, synthetic_kind

# -- the reference: the code as it was ---------------------------------------------------------

_BY_UID = itemgetter(sc.UID)
Row = tuple


@dataclass
class Links:
    guessed: dict[Any, Any] = field(default_factory=dict)
    own: dict[Any, Any] = field(default_factory=dict)


class _Synthetic(tuple):
    """Node key of a synthetic ID: never equal to a real Message-ID, whatever its spelling."""

    __slots__ = ()



def ref_link_records(records: Iterable[Any], links: Links | None = None) -> Links:
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
        if count > 1:
            if count > 2 or refs[0] == refs[1]:
                refs = list(dict.fromkeys(refs))
            previous = refs[0]
            for ref in refs[1:]:
                if ref not in guessed:
                    guessed[ref] = previous
                previous = ref
        own[key] = refs[-1]
    return links



def ref_group_ids(message_ids: Sequence[Any], synthetic: Sequence[bool], links: Links) -> list[ThreadGroup]:
    """Group messages, given as parallel lists of IDs and synthetic flags, by root.

    Only the links are needed besides the IDs: References and In-Reply-To have
    done their work once linked.
    """
    parent = dict(links.guessed)
    parent.update(links.own)
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
                # References that loop (a broken client): cut the loop where it closes.
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
    get_parent = parent.get
    get_group = groups.get
    for index, (key, is_synthetic) in enumerate(zip(message_ids, synthetic)):
        if is_synthetic:
            key = _Synthetic((key,))
        root = get_root(key)
        if root is None:
            up = get_parent(key)
            if up is None:
                root = roots[key] = key
            else:
                # Archives are mostly in order: the parent's root is usually known.
                root = get_root(up)
                if root is None:
                    root = root_of(key)
                else:
                    roots[key] = root
        group = get_group(root)
        if group is None:
            synthetic = type(root) is _Synthetic
            group = groups[root] = ThreadGroup(root[0] if synthetic else root, synthetic)
        group.members.append(index)
    return list(groups.values())


def ref_thread_records(records: Sequence[Any]) -> list[ThreadGroup]:
    return ref_group_ids([r[0] for r in records], [r[3] for r in records], ref_link_records(records))


def ref_summaries(rows: list[Row], kind: str) -> list[ThreadSummary]:
    """The threads of ``rows``, most recent activity first."""
    rows = sorted(rows, key=_BY_UID)  # oldest first: the first member is the earliest seen
    kinds = {False: kind, True: synthetic_kind(kind)}
    utc = timezone.utc
    from_timestamp = datetime.fromtimestamp
    from_iso = datetime.fromisoformat
    message_id_at, arrived_at, seen_at, email_at = sc.MESSAGE_ID, sc.ARRIVED, sc.SEEN, sc.SENDER_EMAIL
    senders: dict[tuple[str, str], Address] = {}
    out: list[ThreadSummary] = []
    order: list[tuple[float, str]] = []
    for group in ref_thread_records(rows):  # a row is a threading record (its first four fields)
        root_id = group.root_id
        indices = group.members
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
        # Without its root the walk holds replies only: the thread started before `since`.
        continued = root is None
        if root is None:
            root = rows[indices[0]]
        who = (root[sc.SENDER_NAME], root[email_at])
        sender = senders.get(who)
        if sender is None:
            sender = senders[who] = Address(*who)
        sent = latest[sc.SENT] if latest is not None else None
        out.append(ThreadSummary(
            thread_id=ThreadId(kinds[group.synthetic], root_id),
            subject=root[sc.SUBJECT],
            root_message_id=root_id,
            sender=sender,
            last_activity=from_timestamp(newest, utc) if newest is not None else None,
            sent=from_iso(sent) if sent else None,
            message_count=len(indices),
            participants=tuple(emails),
            unread=unread,
            continued=continued,
            # Issue 33: the latest message has no usable Date: the row is dated by its arrival.
            date_marker="undated" if newest is not None and not sent else "",
        ))
        order.append((newest if newest is not None else 0.0, root_id))  # 0.0: the epoch, for no date
    ranked = sorted(range(len(out)), key=order.__getitem__, reverse=True)
    return [out[i] for i in ranked]


# -- generated rows ----------------------------------------------------------------------------

# A small pool, so IDs repeat: duplicates, References between the rows, loops, missing roots.
POOL = [f"<m{i}@example.org>" for i in range(10)] + ["<s1@mailtriage.invalid>", "<s2@mailtriage.invalid>"]
ids = st.sampled_from(POOL)
# Few distinct values, so arrival times tie (as ints and floats too); any time in between.
some_times = st.sampled_from([0.0, 1.0e9, 1764000000.0, 1764000001.0, 1764000000]) | st.floats(0, 2.0e9)


def row_strategy(plain: bool) -> st.SearchStrategy[tuple]:
    """Rows laid out as summary_cache says; ``plain``: every row has an arrival time and a
    sender address (the inputs the fast summing-up takes), else some may lack either."""
    return st.tuples(
        ids,
        st.lists(ids, max_size=4).map(tuple),
        st.none() | ids,
        st.booleans(),
        st.integers(1, 40),  # UIDs repeat too: the sort by UID keeps such rows in input order
        st.sampled_from(["", "Report", "Re: Report"]),
        st.sampled_from(["", "Ann", "Bob"]),
        st.sampled_from(["ann@example.org", "bob@example.org", "cy@example.org"] + ([] if plain else [""])),
        some_times if plain else st.none() | some_times,
        st.booleans(),
        st.sampled_from([b"", b"security@example.org"]),
        st.none() | st.sampled_from(["", "2026-12-01T19:56:52+00:00", "2026-11-30T08:00:00-05:00"]),
    )


rows_lists = st.booleans().flatmap(lambda plain: st.lists(row_strategy(plain), max_size=40))


def row(mid, refs=(), irt=None, *, uid, arrived=1764000000.0, synthetic=False, email="ann@example.org", seen=True):
    return (mid, tuple(refs), irt, synthetic, uid, "Report", "Ann", email, arrived, seen, b"", None)


LOOP = [row("<a@x>", ["<b@x>"], uid=1), row("<b@x>", ["<a@x>"], uid=2), row("<c@x>", ["<b@x>"], uid=3)]
MISSING_ROOT = [row("<r1@x>", ["<gone@x>"], "<gone@x>", uid=5), row("<r2@x>", ["<gone@x>", "<r1@x>"], uid=6),
                row("<new@x>", uid=7, arrived=1764000000.0)]
TIES = [row("<t1@x>", uid=1), row("<t2@x>", uid=2), row("<t1@x>", uid=3, seen=False),
        row("<t3@x>", ["<t1@x>"], uid=4, arrived=1764000000)]
# Two messages of one thread arriving in the same second: the first gives the date sent.
PAIR_TIE = [(*row("<p1@x>", uid=1)[:11], "2026-12-01T10:00:00+00:00"),
            (*row("<p2@x>", ["<p1@x>"], uid=2, arrived=1764000000)[:11], "2026-12-01T11:00:00+00:00")]
SYNTHETIC = [row("<m1@example.org>", uid=1, synthetic=True), row("<m1@example.org>", uid=2),
             row("<s@mailtriage.invalid>", ["<m1@example.org>"], uid=3, synthetic=True),
             row("<u@mailtriage.invalid>", uid=4, synthetic=True, arrived=None, email="")]


def described(summaries: list[ThreadSummary]) -> list[str]:
    """Every field, the thread reference's root and the datetimes' zones included."""
    return [repr(s) for s in summaries]


#: Generated row lists per reference check (the named @examples come on top): 400 took 18-22 s
#: each in a loaded suite run; the cases that found defects are kept as @examples.
REFERENCE_EXAMPLES = 150


@settings(max_examples=REFERENCE_EXAMPLES, deadline=None)
@given(rows=rows_lists, kind=st.sampled_from(["imap", "msgid", "maildir"]))
@example(rows=LOOP, kind="imap")
@example(rows=MISSING_ROOT, kind="imap")
@example(rows=TIES, kind="imap")
@example(rows=SYNTHETIC, kind="imap")
@example(rows=PAIR_TIE, kind="imap")
@example(rows=[], kind="imap")
def test_summaries_are_those_of_the_reference(rows, kind):
    before = list(rows)
    expected = ref_summaries(rows, kind)
    got = recent_threads.summaries(rows, kind)
    assert got == expected
    assert described(got) == described(expected)
    assert rows == before  # the caller's rows are left as they were


def test_the_examples_cover_what_they_name():
    """The examples above hold what they are named after (a reference that drifted from them
    would make them prove nothing)."""
    by_root = {s.root_message_id: s for s in recent_threads.summaries(MISSING_ROOT, "imap")}
    assert by_root["<gone@x>"].continued and by_root["<gone@x>"].message_count == 2
    # The walk up from <a@x> closes the loop at <b@x>: its link is cut, it is the root.
    assert [(s.root_message_id, s.message_count) for s in recent_threads.summaries(LOOP, "imap")] == [("<b@x>", 3)]
    # Equal times: the root ID breaks the tie, the greater first.
    assert [s.root_message_id for s in recent_threads.summaries(TIES, "imap")] == ["<t2@x>", "<t1@x>"]
    (pair,) = recent_threads.summaries(PAIR_TIE, "imap")
    assert pair.sent == datetime(2026, 12, 1, 10, tzinfo=timezone.utc) and pair.message_count == 2
    kinds = sorted((s.thread_id.kind, s.root_message_id) for s in recent_threads.summaries(SYNTHETIC, "imap"))
    assert kinds == [("msgid", "<m1@example.org>"), ("msgid-synthetic", "<m1@example.org>"),
                     ("msgid-synthetic", "<u@mailtriage.invalid>")]


def groups_of(groups: list[ThreadGroup]) -> list[tuple]:
    return [(g.root_id, g.synthetic, g.members) for g in groups]


@settings(max_examples=REFERENCE_EXAMPLES, deadline=None)
@given(rows=rows_lists, as_bytes=st.booleans(), cut=st.integers(0, 3))
@example(rows=LOOP, as_bytes=False, cut=0)
@example(rows=SYNTHETIC, as_bytes=True, cut=0)
# An ID twice in one References guesses no parent; so a later References still can.
@example(rows=[row("<x@x>", uid=1), row("<a@x>", ["<x@x>", "<x@x>"], uid=2), row("<b@x>", ["<y@x>", "<x@x>"], uid=3),
               row("<y@x>", uid=4)], as_bytes=False, cut=0)
def test_threading_is_that_of_the_reference(rows, as_bytes, cut):
    """thread_records and group_ids (shared with mbox, maildir and the archives) group as before,
    for str IDs and the bytes IDs of the mbox fast path, with parallel lists of unequal length too."""
    if as_bytes:
        rows = [(r[0].encode(), tuple(x.encode() for x in r[1]), r[2] and r[2].encode(), r[3]) for r in rows]
    assert groups_of(tr.thread_records(rows)) == groups_of(ref_thread_records(rows))
    message_ids, synthetic = [r[0] for r in rows], [r[3] for r in rows]
    synthetic = synthetic[:len(synthetic) - cut] if cut else synthetic
    assert groups_of(tr.group_ids(message_ids, synthetic, tr.link_records(rows))) == \
        groups_of(ref_group_ids(message_ids, synthetic, ref_link_records(rows)))


@settings(max_examples=60, deadline=None)
@given(before=rows_lists, after=rows_lists, kept=st.integers(0, 40), kind=st.sampled_from(["imap", "msgid"]))
@example(before=MISSING_ROOT, after=[row("<gone@x>", uid=4)], kept=3, kind="imap")  # the root arrives
@example(before=TIES, after=[row("<t2@x>", ["<t1@x>"], uid=5)], kept=2, kind="imap")  # two threads join
def test_summaries_from_a_memo_are_those_made_afresh(before, after, kept, kind):
    # Issue 39: a poll sums up only the threads whose rows changed since the last listing (the
    # memo of the last call); the others are taken as they were. Same result either way, when
    # rows come, go (the first ``kept`` of ``before`` stay) or join threads.
    memo = recent_threads.SummaryMemo()
    assert described(recent_threads.summaries(before, kind, memo)) == described(recent_threads.summaries(before, kind))
    now = before[:kept] + after
    assert described(recent_threads.summaries(now, kind, memo)) == described(ref_summaries(now, kind))
    # all from the memo:
    assert described(recent_threads.summaries(now, kind, memo)) == described(ref_summaries(now, kind))


# A step of a storm on the listed rows: a message arrives (the next UID), leaves (expunged,
# or out of the window) or has its flags changed (a new row object for the same UID).
steps = st.lists(st.tuples(st.sampled_from(["arrive", "arrive", "leave", "flag"]), row_strategy(False),
                           st.integers(0, 10 ** 6)), max_size=25)


@settings(max_examples=80, deadline=None)
@given(start=rows_lists, storm=steps, kind=st.sampled_from(["imap", "msgid"]), burst=st.integers(1, 4))
@example(start=LOOP, storm=[("arrive", row("<d@x>", ["<c@x>", "<a@x>"], uid=0), 0), ("leave", LOOP[0], 1)],
         kind="imap", burst=1)  # a loop joined, then its cut link's row leaves
@example(start=SYNTHETIC, storm=[("flag", SYNTHETIC[0], 0), ("arrive", row("<m1@example.org>", uid=0), 3)],
         kind="imap", burst=1)  # real and synthetic roots spelled alike, at one time
def test_a_memo_regroups_what_a_storm_changed_as_a_full_regroup_would(start, storm, kind, burst):
    # Issue 39: with a memo, a listing regroups only the components (rows joined by IDs) that a
    # row arrived in, left or changed in; over any sequence of arrivals, departures and flag
    # changes its result is that of threading all the rows afresh.
    listed = {}
    for uid, r in enumerate(start, 1):  # a cache's rows: one per UID
        listed[uid] = (*r[:sc.UID], uid, *r[sc.UID + 1:])
    memo = recent_threads.SummaryMemo()
    next_uid = len(listed) + 1
    assert described(recent_threads.summaries(list(listed.values()), kind, memo)) == \
        described(ref_summaries(list(listed.values()), kind))
    for n, (what, r, pick) in enumerate(storm, 1):
        if what == "arrive" or not listed:
            listed[next_uid] = (*r[:sc.UID], next_uid, *r[sc.UID + 1:])
            next_uid += 1
        else:
            uid = sorted(listed)[pick % len(listed)]
            if what == "leave":
                del listed[uid]
            else:
                old = listed[uid]
                listed[uid] = (*old[:sc.SEEN], not old[sc.SEEN], *old[sc.SEEN + 1:])
        if n % burst == 0:
            rows = list(listed.values())
            assert described(recent_threads.summaries(rows, kind, memo)) == described(ref_summaries(rows, kind))


def test_a_poll_regroups_only_the_thread_it_touched():
    """One reply in a listing of 300 threads: its thread's rows are threaded again, not all."""
    rows = [row(f"<r{i}@x>", uid=2 * i + 1, arrived=1764000000.0 + i) for i in range(300)]
    rows += [row(f"<a{i}@x>", [f"<r{i}@x>"], uid=2 * i + 2, arrived=1764000000.5 + i) for i in range(300)]
    memo = recent_threads.SummaryMemo()
    recent_threads.summaries(rows, "imap", memo)
    rows.append(row("<late@x>", ["<r7@x>", "<a7@x>"], uid=601, arrived=1764001000.0))
    first_poll = recent_threads.summaries(rows, "imap", memo)  # the memo learns the components now
    rows.append(row("<later@x>", ["<r9@x>"], uid=602, arrived=1764001001.0))
    got = recent_threads.summaries(rows, "imap", memo)
    assert memo.regrouped == 3  # <r9@x>, its reply and the new one
    assert described(got) == described(ref_summaries(rows, "imap"))
    assert [(s.root_message_id, s.message_count) for s in got[:2]] == [("<r9@x>", 3), ("<r7@x>", 3)]
    assert len(first_poll) == len(got) == 300
