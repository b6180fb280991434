"""Issue 39: full garbage collections run while the user is idle, not between two keys. The
app's pacer (tui/idle_collection.py) is driven by its own timer and by the keys the app
receives; its clock is the test's, so "two seconds without a key" does not depend on how
loaded the machine is."""

from __future__ import annotations

import gc

from mailtriage.core.collector import PACED_THRESHOLD2
from tests.tui.helpers import make_app, mbox_project, settle

BOUND = 600  # pauses of 0.05 s at most: the timer ticks every 0.5 s


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


async def _ticks(pilot, pacer, n: int) -> None:
    """Wait until the app's timer has called the pacer ``n`` more times."""
    target = pacer.ticks + n
    for _ in range(BOUND):
        if pacer.ticks >= target:
            return
        await pilot.pause(0.05)
    raise AssertionError("the pacer's timer did not tick")


async def test_a_due_full_collection_waits_for_the_keys_to_stop(tmp_path):
    # The pacer's counts and collection are the test's: the process's own collections (CPython's
    # safety net at PACED_THRESHOLD2, the row marks' and alerts' freezes) come when the loaded
    # machine lets the app's other work run, and once made this test fail under load.
    before = gc.get_threshold()
    app = make_app(mbox_project(tmp_path / "project"))
    app.pace_collections = True  # as run_app sets it
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        pacer = app.idle_pacer
        assert pacer is not None and gc.get_threshold()[2] == max(before[2], PACED_THRESHOLD2)
        middle_collections = [0]  # no full collection due until the keys have come
        full: list[int] = []

        def collect() -> None:
            full.append(1)
            middle_collections[0] = 0

        pacer._counts = lambda: (0, 0, middle_collections[0])
        pacer._collect = collect
        clock = Clock()
        pacer._clock = clock
        ran = pacer.collections  # the real collections its timer ran before (at load, the app was idle)
        app.main.threads.thread_list.focus()
        await pilot.press("j")
        clock.now += 1.5
        await pilot.press("k")
        middle_collections[0] = pacer.due_after  # a full collection is due
        clock.now += 1.5  # 3 s since the first key, 1.5 s since the last
        await _ticks(pilot, pacer, 3)
        assert full == [] and pacer.collections == ran and pacer.due()
        clock.now += 0.6  # 2.1 s since the last key: idle
        await _ticks(pilot, pacer, 2)
        assert pacer.collections == ran + 1 and full == [1]
        assert not pacer.due()
    assert app.idle_pacer is None and gc.get_threshold() == before  # restored on unmount


async def test_apps_that_do_not_pace_leave_the_collector_as_it_is(tmp_path):
    before = gc.get_threshold()
    app = make_app(mbox_project(tmp_path / "project"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.idle_pacer is None and gc.get_threshold() == before


async def test_a_key_is_handled_and_painted_without_young_collections_which_run_after_it(tmp_path):
    """Issue 33: the collector is off from a key until KEY_HOLD_SECONDS later (the key's handling
    and its frame), then on again; a collector someone else turned off stays theirs. Where the
    test looks at the collector while a hold must last, the hold has no end of its own (a loaded
    machine's pause between the key and the look outlasted 1 s): a suspend ends it."""
    from mailtriage.tui.idle_collection import KEY_HOLD_SECONDS
    from tests.tui.helpers import until

    app = make_app(mbox_project(tmp_path / "project"))
    app.pace_collections = True  # as run_app sets it
    app.key_hold_seconds = 3600.0  # ends by a suspend here
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await until(pilot, gc.isenabled, "the collector on after start-up's keys")
        listing = app.main.threads.thread_list
        listing.focus()
        await settle(pilot)
        seen: list[bool] = []
        down = listing.action_cursor_down

        def cursor_down() -> None:
            seen.append(gc.isenabled())
            down()

        listing.action_cursor_down = cursor_down
        await pilot.press("j")
        assert seen == [False]  # handled with the collector off
        await pilot.press("k")
        assert not gc.isenabled()
        app.app_suspend_signal.publish(app)  # $EDITOR takes the terminal (App.suspend): the loop stops
        assert gc.isenabled()
        app.key_hold_seconds = KEY_HOLD_SECONDS
        await pilot.press("k")
        await until(pilot, gc.isenabled, "the collector on again after the hold")
        await settle(pilot)
        gc.disable()  # off for another reason (start-up's hold, a listing's pause): left off
        try:
            await pilot.press("k")
            await pilot.pause(app.key_hold_seconds * 1.5)
            await settle(pilot)
            assert not gc.isenabled()
        finally:
            gc.enable()


async def test_a_listing_that_starts_during_a_keys_hold_keeps_the_collector_off_until_it_ends(tmp_path):
    """A key that starts a listing (a folder, a refresh; a poll while typing) and the listing's
    pause of the collector (``collector_paused``, on a worker) overlap: the pause began while the
    key held the collector off. The hold's end must not turn it on under the listing (whose
    young collections would walk its tens of thousands of rows, the pause's whole point), and
    the listing's end turns it on, the hold being over."""
    from mailtriage.core.collector import collector_paused
    from mailtriage.tui.idle_collection import KEY_HOLD_SECONDS
    from tests.tui.helpers import until

    app = make_app(mbox_project(tmp_path / "project"))
    app.pace_collections = True  # as run_app sets it
    app.key_hold_seconds = 100 * KEY_HOLD_SECONDS  # ended by the test (a suspend ends it at once)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await until(pilot, gc.isenabled, "the collector on after start-up's keys")
        app.main.threads.thread_list.focus()
        await settle(pilot)
        await pilot.press("j")
        assert not gc.isenabled()  # the key's hold
        with collector_paused():  # a listing's worker starts
            app.app_suspend_signal.publish(app)  # the key's hold ends (here at once)
            assert not gc.isenabled()  # the listing's pause goes on
        assert gc.isenabled()  # both over: on again
        await pilot.press("k")
        with collector_paused():  # a listing that ends inside a key's hold leaves it to the hold
            pass
        assert not gc.isenabled()
        app.app_suspend_signal.publish(app)
        assert gc.isenabled()
