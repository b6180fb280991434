"""The freed heap goes back to the system once a storm quiets (issue 39): after polls with
news, the first poll without any trims the heap, then not again until news comes."""

from mailtriage.core.collector import QuietTrim


def test_the_first_quiet_poll_after_news_trims_the_heap_once():
    calls = []
    trim = QuietTrim(lambda: calls.append(1) or True)
    assert not trim.polled(False)  # quiet from the start: nothing was freed by a storm
    assert [trim.polled(True) for _ in range(3)] == [False] * 3
    assert trim.polled(False) is True
    assert not trim.polled(False) and not trim.polled(False)
    assert not trim.polled(True) and trim.polled(False)
    assert len(calls) == trim.trims == 2



def test_when_a_storm_quiets_what_it_left_joins_the_frozen_state_and_its_garbage_is_freed():
    """Issue 39: objects a storm left behind sat outside the app's frozen start-up state, so each
    full collection walked more of them as the storm went on (709 ms at the end of 30 minutes)."""
    import gc
    import weakref

    class Node:
        other = None

    gc.collect()
    gc.freeze()  # as the app does once its window shows
    try:
        trim = QuietTrim(lambda: True)
        trim.polled(True)
        left = [[i] for i in range(5_000)]  # what the storm's polls left, alive
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle a poll dropped
        gone = weakref.ref(a)
        del a, b
        frozen = gc.get_freeze_count()
        assert trim.polled(False)
        assert gc.get_freeze_count() >= frozen + len(left)
        assert gone() is None  # collected before the freeze, not kept for good
    finally:
        gc.unfreeze()


def test_without_a_frozen_state_a_quiet_storm_freezes_nothing():
    import gc

    gc.collect()
    assert gc.get_freeze_count() == 0
    trim = QuietTrim(lambda: True)
    trim.polled(True)
    left = [[i] for i in range(1_000)]
    assert trim.polled(False)
    assert gc.get_freeze_count() == 0 and len(left) == 1_000
