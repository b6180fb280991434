"""New-report alerts in the app, on a real mbox archive that gets a new mail after the baseline."""

from __future__ import annotations

import mailbox
from datetime import datetime, timezone
from email.utils import format_datetime
from pathlib import Path

from mailtriage.tui.alerts import MarkedRows
from tests.tui.helpers import (HOSTILE_SUBJECT, WAIT_BOUND, cursor_files, mail, make_app, mbox_project, screen_text,
                                seen_threads, until)

NEW_SUBJECT = "RCE in the frob uploader"
NEW_ID = "<rce-1@example.org>"


def _append(path: Path, msg) -> None:
    box = mailbox.mbox(path)
    try:
        box.add(msg)
        box.flush()
    finally:
        box.close()


async def test_new_report_after_the_baseline_is_announced_acknowledged_and_inserted_without_a_reload(tmp_path,
                                                                                                   user_data):
    folder = tmp_path / "p"
    mbox_project(folder, extra_config={"alerts": {"poll_seconds": 3600}})
    app = make_app(folder, alerts=True)
    async with app.run_test(size=(140, 40)) as pilot:
        # The silent baseline: a cursor with the threads there are, and no alert.
        await until(pilot, lambda: bool(cursor_files(user_data)), "the baseline cursor")
        await until(pilot, lambda: len(app.main.threads.thread_list.rows) > 0, "the listing")
        # (The standard threads are older than the poll's look-back window, so it may be empty.)
        assert not any(NEW_ID in key for key in seen_threads(user_data))
        assert not any("new report" in (n.title or "") for n in app._notifications)
        # Ctrl+n with nothing new says so (issue 35: it showed nothing, as a key that did nothing).
        await pilot.press("ctrl+n")
        await until(pilot, lambda: any(n.title == "Alerts" for n in app._notifications), "the check's note")
        assert [n.message for n in app._notifications if n.title == "Alerts"] == [
            "checked security@frob.example: nothing new"]

        hostile_new = mail(NEW_SUBJECT + " " + HOSTILE_SUBJECT, "Eve <eve@example.org>",
                           format_datetime(datetime.now(timezone.utc)), NEW_ID, "details follow\n")
        _append(folder / "list.mbox", hostile_new)

        def row_shown() -> bool:
            return any(NEW_SUBJECT in line and "●" in line for line in screen_text(app).splitlines())

        def acknowledged_only_once_announced() -> None:
            if any(NEW_ID in key for key in seen_threads(user_data)):
                assert any(n.title == "1 new report" for n in app._notifications), "saved before it was announced"

        # The app's own listing is held back (the session's backend lock): the new row comes
        # from the alert itself, inserted into the list, not from a reload.
        app.session._lock.acquire()
        try:
            await pilot.press("ctrl+n")
            await until(pilot, lambda: any(NEW_ID in key for key in seen_threads(user_data)), "the acknowledgement",
                        check=acknowledged_only_once_announced)
            await until(pilot, row_shown, "the inserted row")
            # No listing is on its way: the news went into the rows on screen and is not also
            # kept for one (issue 39: kept for the whole of a storm, a summary per thread).
            assert app.main.alerts._alert_live == {}
        finally:
            app.session._lock.release()
        alert = next(n for n in app._notifications if n.title == "1 new report")
        assert NEW_SUBJECT in alert.message and "\x1b" not in alert.message and "\u202e" not in alert.message
        assert not alert.markup
        # Only the new thread carries the mark.
        marked = [line for line in screen_text(app).splitlines() if "●" in line]
        assert len(marked) == 1


async def test_poll_now_without_a_security_list_says_alerts_are_off(tmp_path, user_data):
    folder = tmp_path / "p"
    mbox_project(folder, security_list=None)
    app = make_app(folder, alerts=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: app.session.is_open and app.main.panes_ready, "the session")
        await pilot.pause(0.1)
        await pilot.press("ctrl+n")
        await until(pilot, lambda: any("alerts are off" in n.message for n in app._notifications), "the note")
    assert not cursor_files(user_data)


def test_marked_rows_mark_only_the_given_threads():
    from mailtriage.backends.contract import Address, ThreadId, ThreadSummary
    from mailtriage.tui.rows import ListRows

    def summary(value: str) -> ThreadSummary:
        return ThreadSummary(thread_id=ThreadId("mbox", value), subject=value, root_message_id=value, sender=Address("a", "a@x.org"),
                             last_activity=datetime(2026, 1, 1, tzinfo=timezone.utc), message_count=1)

    rows = MarkedRows(ListRows([summary("<a>"), summary("<b>")]), {"msgid:<b>"})  # marks are str(thread_id)
    assert len(rows) == 2 and rows.page_size == 0
    assert not rows.peek(0).unread and rows.peek(1).unread
    assert rows.peek(5) is None


def test_a_marked_row_is_the_same_object_from_poll_to_poll():
    """Issue 39: each poll wraps the list in new marks; a row marked before is handed on as the
    same object (the list's painted-row cache is by the row), not a new copy at each peek, which
    painted every news row on screen again at every poll of a storm."""
    from mailtriage.backends.contract import Address, ThreadId, ThreadSummary
    from mailtriage.tui.rows import ListRows

    def summary(value: str) -> ThreadSummary:
        return ThreadSummary(thread_id=ThreadId("mbox", value), subject=value, root_message_id=value,
                             sender=Address("a", "a@x.org"), last_activity=datetime(2026, 1, 1, tzinfo=timezone.utc),
                             message_count=1)

    base = ListRows([summary("<a>"), summary("<b>")])
    first = MarkedRows(base, {"msgid:<b>"})
    row = first.peek(1)
    assert row.unread and first.peek(1) is row
    news = ListRows([summary("<c>"), *base.items])  # the next poll: a new thread above
    second = MarkedRows(news, {"msgid:<b>", "msgid:<c>"}, first.made)
    assert second.peek(2) is row and second.peek(0).unread


async def test_user_setting_zero_starts_no_poller(tmp_path, user_data, user_config):
    (user_config / "config.toml").write_text('name = "Test Triager"\n[alerts]\npoll_seconds = 0\n', encoding="utf-8")
    folder = tmp_path / "p"
    mbox_project(folder)
    app = make_app(folder, alerts=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: app.session.is_open and app.main.panes_ready, "the session")
        await pilot.pause(0.2)
        assert app.main.alerts.alert_loop is None
        assert not any(w.group == "alerts" for w in app.workers)
    assert not cursor_files(user_data)


async def test_the_poll_waits_for_a_thread_read_in_flight_and_starts_when_it_ends(tmp_path, user_data):
    """Issue 33 (launch -> the first key that acts): an Enter typed on the first frame reads a
    thread while the listing ends; the poll (its flows load, its baseline lists) starts after."""
    import threading  # why: only this test holds a read open

    folder = tmp_path / "p"
    mbox_project(folder, extra_config={"alerts": {"poll_seconds": 3600}})
    app = make_app(folder, alerts=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: app.main.alerts.alert_loop is not None, "the poll of the first start")
        main = app.main
        main.alerts.stop()  # as a new session does: the next listing starts the poll again
        release = threading.Event()
        # a read in flight, on the reading component as Enter's is (its end reaches the screen from there)
        read = main.reading.run_worker(lambda: release.wait(10), thread=True, group="reader")
        main.alerts.start()
        await pilot.pause(0.1)
        assert main.alerts.alert_loop is None and not any(w.group == "alerts" for w in app.workers)
        release.set()
        await until(pilot, lambda: read.is_finished and main.alerts.alert_loop is not None, "the poll after the read")


async def test_a_second_whole_listing_of_the_same_list_freezes_nothing_more(tmp_path, user_data):
    """Issue 39: the app's state is frozen (gc.freeze) once the whole window is shown; every
    later whole listing (a refresh, a reconnect) froze again, and with it whatever cyclic
    garbage was waiting for a collection: frozen, it is never freed."""
    import gc  # why: only this test looks at the collector
    import weakref  # why: only this test watches an object die

    class Node:
        pass

    folder = tmp_path / "p"
    mbox_project(folder, extra_config={"alerts": {"poll_seconds": 3600}})
    app = make_app(folder, alerts=True)
    app.freeze_gc_after_start = True
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await until(pilot, lambda: app.main.alerts.alert_loop is not None, "the poll of the first start")
            gc.disable()  # the garbage below waits for a full collection, as in a long session
            garbage = Node()
            garbage.me = garbage
            watch = weakref.ref(garbage)
            del garbage
            app.main.alerts.start()  # what the next whole listing of the list calls
            gc.collect()
            assert watch() is None, "cyclic garbage was frozen by a second whole listing"
    finally:
        gc.enable()
        gc.unfreeze()


async def _announced_once_started(pilot, app, folder, user_data):
    """The baseline written, one new report appended, checked (Ctrl+n) and announced: the loop that did it."""
    await until(pilot, lambda: bool(cursor_files(user_data)), "the baseline cursor")
    _append(folder / "list.mbox", mail(NEW_SUBJECT, "Eve <eve@example.org>",
                                       format_datetime(datetime.now(timezone.utc)), NEW_ID, "details follow\n"))
    loop = app.main.alerts.alert_loop
    assert loop is not None
    await pilot.press("ctrl+n")
    await until(pilot, lambda: any(n.title == "1 new report" for n in app._notifications), "the announcement")
    return loop


async def test_a_quit_right_after_an_announcement_leaves_it_acknowledged(tmp_path, user_data):
    """The announcement acknowledges in memory and writes off the UI thread; a quit right
    after it still writes it (as the poll loop ends: tests/tui/test_alerts_stop.py), so the
    next start does not announce it again."""
    folder = tmp_path / "p"
    mbox_project(folder, extra_config={"alerts": {"poll_seconds": 3600}})
    app = make_app(folder, alerts=True)
    async with app.run_test(size=(140, 40)) as pilot:
        loop = await _announced_once_started(pilot, app, folder, user_data)
    assert loop.stopped.is_set()
    assert loop.finished.wait(WAIT_BOUND), "the poll loop did not end after the quit"
    assert any(NEW_ID in key for key in seen_threads(user_data))


async def test_the_reopened_sessions_poll_starts_once_the_stopped_loop_has_written(tmp_path, user_data):
    """The session reopened (a project or account switch) right after an announcement: the new
    loop builds its poller only once the old loop has ended and written (else its first poll
    read the cursor before that write and announced the same report again)."""
    folder = tmp_path / "p"
    mbox_project(folder, extra_config={"alerts": {"poll_seconds": 3600}})
    app = make_app(folder, alerts=True)
    async with app.run_test(size=(140, 40)) as pilot:
        old = await _announced_once_started(pilot, app, folder, user_data)
        app.reopen()

        def new_loop():
            loop = app.main.alerts.alert_loop
            return loop if loop is not None and loop is not old else None

        await until(pilot, lambda: new_loop() is not None and new_loop().poller is not None, "the new loop's poller")
        assert old.finished.is_set(), "the new loop started before the stopped one had written"
        assert any(NEW_ID in key for key in seen_threads(user_data))
        await until(pilot, lambda: new_loop().poller.last_judged > 0, "the new loop's first poll")
    assert [n.title for n in app._notifications].count("1 new report") == 1
