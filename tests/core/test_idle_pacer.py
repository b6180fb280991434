"""Full collections while the user is idle, not mid-key (issue 39): the pacer runs one when
one is due and no key came for two seconds; the collector's own is pushed back meanwhile."""

import gc

from mailtriage.core.collector import PACED_THRESHOLD2, IdlePacer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _pacer(clock, counts, ran):
    return IdlePacer(clock, idle_seconds=2.0, due_after=10, counts=lambda: counts[0], collect=lambda: ran.append(1))


def test_a_due_collection_waits_for_two_seconds_without_a_key():
    clock, counts, ran = Clock(), [(0, 0, 10)], []
    pacer = _pacer(clock, counts, ran)
    pacer.key()
    for _ in range(3):  # keys every half second: never idle
        clock.now += 0.5
        assert not pacer.tick()
        pacer.key()
    assert ran == []
    clock.now += 1.9
    assert not pacer.tick()
    clock.now += 0.2
    assert pacer.tick()
    assert ran == [1] and pacer.collections == 1


def test_an_idle_user_gets_no_collection_that_is_not_due():
    clock, counts, ran = Clock(), [(500, 3, 9)], []
    pacer = _pacer(clock, counts, ran)
    clock.now += 60
    assert not pacer.tick() and ran == []
    counts[0] = (0, 0, 10)
    assert pacer.tick() and ran == [1]


def test_no_key_yet_counts_as_idle():
    ran: list = []
    assert _pacer(Clock(), [(0, 0, 12)], ran).tick() and ran == [1]


def test_start_pushes_the_collectors_own_full_collection_back_and_stop_restores_it():
    before = gc.get_threshold()
    pacer = IdlePacer()
    pacer.start()
    try:
        assert gc.get_threshold() == (before[0], before[1], max(before[2], PACED_THRESHOLD2))
        pacer.start()  # twice: still restores the first thresholds
    finally:
        pacer.stop()
    assert gc.get_threshold() == before
    pacer.stop()
    assert gc.get_threshold() == before


def test_the_real_collector_count_resets_after_a_paced_collection():
    """With the real gc counts: a due collection (many middle-generation ones) runs and is no
    longer due after it."""
    clock = Clock()
    pacer = IdlePacer(clock, idle_seconds=2.0)
    pacer.start()
    try:
        gc.collect()
        while gc.get_count()[2] < pacer.due_after:  # what an app's allocations do over time
            gc.collect(1)
        assert pacer.due()
        assert pacer.tick()
        assert not pacer.due()
    finally:
        pacer.stop()
