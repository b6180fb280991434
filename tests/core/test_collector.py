"""core/collector.py: the collector paused while a listing builds its rows, and what its end costs."""

from __future__ import annotations

import gc
import weakref

from mailtriage.core.collector import collector_paused


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
            kept = [[i] for i in range(50_000)]
        assert gc.isenabled()
        more = [[i] for i in range(100)]  # fewer than a young collection's threshold
    finally:
        gc.callbacks.remove(record)
    assert started == []
    assert len(kept) == 50_000 and len(more) == 100


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
