"""core/collector.py: the collector paused while a listing builds its rows, and what its end costs."""

from __future__ import annotations

import gc
import weakref

from mailtriage.core.collector import MOVE_ABOVE, collector_paused


class Node:
    """A small tracked object that can hold a cycle."""

    def __init__(self) -> None:
        self.other = None


def test_ending_a_pause_does_not_walk_what_was_built_in_it():
    """Before: the first allocation after the pause started a young collection over every object
    made in it (50-90 ms after a dense listing, on the app's critical path)."""
    started: list[dict] = []

    def record(phase: str, info: dict) -> None:
        if phase == "start":
            started.append(info)

    gc.collect()
    assert gc.isenabled()
    gc.callbacks.append(record)
    try:
        with collector_paused():
            assert not gc.isenabled()
            kept = [[i] for i in range(MOVE_ABOVE + 10_000)]
        assert gc.isenabled()
        more = [[i] for i in range(100)]  # fewer than a young collection's threshold
    finally:
        gc.callbacks.remove(record)
    assert started == []
    assert len(kept) == MOVE_ABOVE + 10_000 and len(more) == 100


def test_cycles_made_in_a_pause_are_still_collected():
    with collector_paused():
        a, b = Node(), Node()
        a.other, b.other = b, a
        watch = weakref.ref(a)
    assert gc.get_freeze_count() == 0  # nothing left out of the collector for good
    del a, b
    gc.collect()
    assert watch() is None


def test_a_pause_inside_a_pause_leaves_the_collector_off_until_the_outer_one_ends():
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off():
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_cycles_moved_by_large_pauses_are_freed_by_a_full_collection_in_time(monkeypatch):
    """A review found that moved objects never counted towards a full collection: cycles other
    threads dropped during many large pauses stayed. After COLLECT_AFTER moved objects, the end
    of a large pause collects in full."""
    from mailtriage.core import collector

    monkeypatch.setattr(collector, "MOVE_ABOVE", 1_000)
    monkeypatch.setattr(collector, "COLLECT_AFTER", 20_000)
    monkeypatch.setattr(collector, "_moved", 0)
    gc.collect()
    probes = []
    for _ in range(10):
        with collector_paused():
            a, b = Node(), Node()
            a.other, b.other = b, a
            probes.append(weakref.ref(a))
            del a, b
            kept = [[i] for i in range(5_000)]  # a large pause: moved, not walked
        del kept
    assert any(probe() is None for probe in probes)  # freed without an explicit gc.collect()


def test_a_small_pause_just_turns_the_collector_back_on():
    from mailtriage.core import collector

    before = collector._moved
    with collector_paused():
        few = [[i] for i in range(10)]
    assert collector._moved == before and gc.isenabled() and len(few) == 10


def test_with_a_frozen_state_a_large_pause_freezes_what_it_made_and_keeps_the_state_frozen():
    """Issue 39: the app freezes its start-up state; a large pause's unfreeze handed it back to
    the collector, and each full collection in a storm walked it all (up to ~1 s)."""
    gc.collect()
    state = [[i] for i in range(1_000)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with collector_paused():
            kept = [[i] for i in range(MOVE_ABOVE + 10_000)]
        assert gc.get_freeze_count() >= frozen + len(kept)  # the state stays frozen, the rows join it
        assert gc.isenabled()
    finally:
        gc.unfreeze()
    assert len(state) == 1_000
