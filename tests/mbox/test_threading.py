"""backends/thread_reconstruction.py: thread identity by root Message-ID, JWZ-style parents."""

from __future__ import annotations

import random

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.mime import parse_message
from mailtriage.backends.thread_reconstruction import (
    ThreadRecord,
    find_thread,
    synthetic_kind,
    thread_id_for,
    thread_records,
)
from tests.mbox import awkward


def R(mid, refs=(), irt=None, synthetic=False, ref=None):  # noqa: N802 - short test helper
    return ThreadRecord(mid, tuple(refs), irt, synthetic, ref)


def grouping(records):
    """{root: sorted member message IDs (with their input index)} for easy comparison."""
    return {(g.root_id, g.synthetic): sorted((records[i].message_id, i) for i in g.members)
            for g in thread_records(records)}


def test_replies_join_the_root_thread():
    records = [
        R("<root@x>"),
        R("<r1@x>", ["<root@x>"], "<root@x>"),
        R("<r2@x>", ["<root@x>", "<r1@x>"], "<r1@x>"),
        R("<other@x>"),
    ]
    groups = thread_records(records)
    assert [(g.root_id, g.members) for g in groups] == [("<root@x>", [0, 1, 2]), ("<other@x>", [3])]
    assert not any(g.synthetic for g in groups)


def test_missing_parent_still_joins_via_first_reference():
    # r2's parent r1 is not in the archive; References starts at the root.
    records = [R("<root@x>"), R("<r2@x>", ["<root@x>", "<r1-missing@x>"], "<r1-missing@x>")]
    (group,) = thread_records(records)
    assert group.root_id == "<root@x>" and group.members == [0, 1]


def test_missing_root_keys_the_thread_by_the_absent_root_id():
    # Neither the root nor the first reply are present: the thread is still keyed by the root.
    records = [
        R("<r2@x>", ["<root-missing@x>", "<r1-missing@x>"]),
        R("<r3@x>", ["<root-missing@x>", "<r1-missing@x>", "<r2@x>"]),
    ]
    (group,) = thread_records(records)
    assert group.root_id == "<root-missing@x>" and group.members == [0, 1]


def test_in_reply_to_only_chain_resolves_through_present_parents():
    records = [
        R("<root@x>"),
        R("<a@x>", irt="<root@x>"),
        R("<b@x>", irt="<a@x>"),  # no References at all (old clients)
    ]
    (group,) = thread_records(records)
    assert group.root_id == "<root@x>" and group.members == [0, 1, 2]


def test_truncated_references_find_the_real_root_through_a_present_message():
    # c's References lost the root (clients trim long chains) but b knows it.
    records = [
        R("<b@x>", ["<root@x>", "<a@x>"]),
        R("<c@x>", ["<a@x>", "<b@x>"]),
    ]
    (group,) = thread_records(records)
    assert group.root_id == "<root@x>"


def test_message_is_the_authority_on_its_own_parent():
    # d's References guess a wrong parent for b; b's own header wins, whatever the order.
    forward = [R("<d@x>", ["<wrong@x>", "<b@x>", "<c@x>"]), R("<b@x>", ["<root@x>"]), R("<root@x>")]
    for records in (forward, list(reversed(forward))):
        roots = {records[i].message_id: g.root_id for g in thread_records(records) for i in g.members}
        assert roots["<b@x>"] == "<root@x>"


def test_order_does_not_change_a_consistent_forest():
    rng = random.Random(11)
    records = []
    for t in range(30):
        root = f"<t{t}@x>"
        records.append(R(root))
        chain = [root]
        for n in range(rng.randrange(0, 6)):
            parent_chain = chain[: rng.randrange(1, len(chain) + 1)]
            mid = f"<t{t}-{n}@x>"
            # Some replies drop a present parent, some keep only In-Reply-To.
            refs = parent_chain if rng.random() < 0.7 else []
            records.append(R(mid, refs, parent_chain[-1]))
            chain.append(mid)
    expected = {frozenset(m for m, _ in members) for members in grouping(records).values()}
    assert len(expected) == 30
    for _ in range(20):
        shuffled = records[:]
        rng.shuffle(shuffled)
        got = {frozenset(m for m, _ in members) for members in grouping(shuffled).values()}
        assert got == expected


def test_reference_loops_terminate_and_keep_every_message():
    records = [
        R("<a@x>", ["<b@x>"]),
        R("<b@x>", ["<a@x>"]),
        R("<c@x>", ["<c@x>"]),  # refers to itself
        R("<d@x>", ["<e@x>", "<d@x>", "<e@x>"]),
    ]
    groups = thread_records(records)
    assert sorted(i for g in groups for i in g.members) == [0, 1, 2, 3]
    roots = {records[i].message_id: g.root_id for g in groups for i in g.members}
    assert roots["<a@x>"] == roots["<b@x>"]
    assert roots["<c@x>"] == "<c@x>"


def test_message_without_id_and_without_references_is_its_own_synthetic_thread():
    no_id = parse_message(awkward.NO_MESSAGE_ID)
    records = [ThreadRecord.from_message(no_id, ref=0), R("<real@x>")]
    groups = thread_records(records)
    synthetic = [g for g in groups if g.synthetic]
    assert len(synthetic) == 1 and synthetic[0].root_id == no_id.message_id
    assert thread_id_for(synthetic[0], "mbox") == ThreadId("mbox-synthetic", no_id.message_id)
    assert thread_id_for([g for g in groups if not g.synthetic][0], "mbox") == ThreadId("mbox", "<real@x>")
    assert synthetic_kind("imap") == "imap-synthetic"


def test_message_without_id_that_replies_joins_its_thread():
    records = [R("<root@x>"), R("<synthetic-1@mailtriage.invalid>", ["<root@x>"], None, synthetic=True)]
    (group,) = thread_records(records)
    assert group.root_id == "<root@x>" and not group.synthetic and group.members == [0, 1]


def test_real_id_spelt_like_a_synthetic_one_never_merges_with_it():
    spoof = "<synthetic-abc@mailtriage.invalid>"
    records = [R(spoof, synthetic=True), R(spoof), R("<reply@x>", [spoof])]
    groups = thread_records(records)
    by_kind = {g.synthetic: g.members for g in groups}
    assert by_kind == {True: [0], False: [1, 2]}


def test_two_messages_sharing_one_id_are_both_kept():
    first = parse_message(awkward.SHARED_ID_FIRST)
    second = parse_message(awkward.SHARED_ID_SECOND)
    records = [ThreadRecord.from_message(first, 0), ThreadRecord.from_message(second, 1),
               R("<reply@x>", ["<same-id@example.org>"])]
    (group,) = thread_records(records)
    assert group.root_id == "<same-id@example.org>" and group.members == [0, 1, 2]


def test_find_thread_selects_by_kind_and_root():
    records = [R("<a@x>"), R("<b@x>", ["<a@x>"]), R("<s@mailtriage.invalid>", synthetic=True)]
    assert find_thread(records, ThreadId("mbox", "<a@x>"), "mbox").members == [0, 1]
    assert find_thread(records, ThreadId("mbox", "<b@x>"), "mbox") is None  # not a root
    assert find_thread(records, ThreadId("mbox", "<s@mailtriage.invalid>"), "mbox") is None
    assert find_thread(records, ThreadId("mbox-synthetic", "<s@mailtriage.invalid>"), "mbox").members == [2]


def test_deep_chains_do_not_recurse():
    records = [R("<m0@x>")] + [R(f"<m{i}@x>", irt=f"<m{i - 1}@x>") for i in range(1, 20_000)]
    (group,) = thread_records(records)
    assert group.root_id == "<m0@x>" and len(group.members) == 20_000


def test_a_loop_longer_than_the_link_check_is_cut_not_followed_forever():
    n = 600
    records = [R(f"<m{i}@x>", irt=f"<m{(i + 1) % n}@x>") for i in range(n)]
    groups = thread_records(records)
    assert len(groups) == 1 and len(groups[0].members) == n


def test_bytes_ids_thread_like_str_ids():
    as_str = [R("<a@x>"), R("<b@x>", ["<a@x>", "<a@x>", "<m@x>"]), R("<s@mailtriage.invalid>", synthetic=True),
              R("<c@x>", irt="<b@x>")]
    as_bytes = [(r.message_id.encode(), tuple(x.encode() for x in r.references),
                 r.in_reply_to.encode() if r.in_reply_to else None, r.synthetic_id) for r in as_str]
    got_str = [(g.root_id, g.synthetic, g.members) for g in thread_records(as_str)]
    got_bytes = [(g.root_id.decode(), g.synthetic, g.members) for g in thread_records(as_bytes)]
    assert got_str == got_bytes == [("<a@x>", False, [0, 1, 3]), ("<s@mailtriage.invalid>", True, [2])]


def test_duplicate_references_are_read_once():
    # [a, b, a, c] must link like [a, b, c]: c's parent is b, not a.
    records = [R("<c@x>", ["<a@x>", "<b@x>", "<a@x>", "<c2@x>"]), R("<b@x>", ["<a@x>"])]
    groups = thread_records(records)
    assert len(groups) == 1 and groups[0].root_id == "<a@x>"


def test_links_of_pieces_merge_exactly_into_the_links_of_the_whole():
    from mailtriage.backends.thread_reconstruction import Links, group_records, link_records

    rng = random.Random(5)
    ids = [f"<m{i}@x>" for i in range(300)]
    records = []
    for i, mid in enumerate(ids):
        refs = rng.sample(ids[:i], k=min(i, rng.randrange(0, 5))) if i else []
        irt = rng.choice(ids[:i]) if i and rng.random() < 0.5 else None
        # Duplicated IDs and synthetic messages too.
        records.append(R(mid if rng.random() > 0.05 else ids[max(0, i - 1)], refs, irt,
                         synthetic=rng.random() < 0.03))
    whole = link_records(records)
    for cut in (0, 1, 150, 299, 300):
        pieces = link_records(records[:cut]).then(link_records(records[cut:]))
        assert pieces == whole
        plain = Links.from_plain(pieces.to_plain())
        assert plain == whole
        assert [(g.root_id, g.synthetic, g.members) for g in group_records(records, plain)] == \
               [(g.root_id, g.synthetic, g.members) for g in thread_records(records)]
