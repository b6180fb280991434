"""The poll loop's end (quit, or the session reopened) writes what was announced: on a real
mbox archive that gets a new report after the silent baseline, without the app (the loop is
``tui/alerts.AlertLoop``; the app's quit and reopen paths: tests/tui/test_alerts.py)."""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from email.utils import format_datetime

from mailtriage.application import Service
from mailtriage.core.settings import UserSettings
from mailtriage.tui.alerts import AlertLoop
from tests.tui.helpers import WAIT_BOUND, mail, mbox_project, seen_threads, until_sync
from tests.tui.test_alerts import NEW_ID, NEW_SUBJECT, _append


def _watch(tmp_path, user_data):
    folder = tmp_path / "p"
    mbox_project(folder, extra_config={"alerts": {"poll_seconds": 3600}})
    service = Service(folder, demo=False, settings=UserSettings(tmp_path / "config.toml", {}))
    service.open()
    watch = service.alert_watch()
    assert watch is not None
    return folder, service, watch


def _new_report(folder) -> None:
    _append(folder / "list.mbox", mail(NEW_SUBJECT, "Eve <eve@example.org>",
                                       format_datetime(datetime.now(timezone.utc)), NEW_ID, "details follow\n"))


def _baseline(watch) -> None:
    poller = watch.make_poller()
    try:
        outcome = poller.poll()
        assert outcome.baseline
        poller.acknowledge(outcome)
    finally:
        poller.sources.close()


def _run(loop: AlertLoop, on_news) -> threading.Thread:
    errors: list[Exception] = []
    thread = threading.Thread(target=loop.run, args=(on_news, errors.append), daemon=True)
    thread.start()
    return thread


def test_news_acknowledged_in_memory_is_written_when_the_loop_stops(tmp_path, user_data):
    """The app acknowledges announced news in memory and writes it off the UI thread; a quit
    right after (the loop stopped) skipped that write, and the next start announced it again."""
    folder, service, watch = _watch(tmp_path, user_data)
    _baseline(watch)
    _new_report(folder)
    loop = AlertLoop(watch.make_poller, 3600, watch.list_name)
    announced: list = []

    def on_news(outcome) -> None:  # what Alerts._announce_alerts does, then the user quits
        announced.append(outcome)
        loop.poller.acknowledge(outcome, save=False)
        loop.stop()

    thread = _run(loop, on_news)
    thread.join(WAIT_BOUND)
    assert not thread.is_alive()
    assert [t.root_message_id for t in announced[0].new_threads] == [NEW_ID]
    assert any(NEW_ID in key for key in seen_threads(user_data)), "announced, and not written when the loop ended"
    assert loop.finished.is_set()
    # The next start: a poller of its own on the same cursor reports nothing new.
    poller = watch.make_poller()
    try:
        assert not poller.poll().has_news
    finally:
        poller.sources.close()
    service.close()


def test_a_loop_after_a_stopped_one_polls_only_once_that_one_has_written(tmp_path, user_data):
    """The session reopened: the new loop's first poll must not read the cursor before the
    stopped loop's last write (a poll of the old loop still in flight), or it announces the
    same report again."""
    folder, service, watch = _watch(tmp_path, user_data)
    _baseline(watch)
    _new_report(folder)
    old = AlertLoop(watch.make_poller, 3600, watch.list_name)
    in_news, go_on = threading.Event(), threading.Event()

    def old_news(outcome) -> None:  # announced and acknowledged; the loop is slow to end
        old.poller.acknowledge(outcome, save=False)
        in_news.set()
        go_on.wait(WAIT_BOUND)

    old_thread = _run(old, old_news)
    assert in_news.wait(WAIT_BOUND)
    old.stop()
    new = AlertLoop(watch.make_poller, 3600, watch.list_name, after=old)
    new_news: list = []
    new_thread = _run(new, new_news.append)
    # The new loop waits: it has not even built its poller while the old one runs.
    assert not old.finished.is_set() and new.poller is None
    go_on.set()
    old_thread.join(WAIT_BOUND)
    assert old.finished.is_set()
    # Its first poll then ran after the old loop's write: nothing new to announce.
    until_sync(lambda: new.poller is not None and new.poller.last_judged > 0, "the new loop's first poll")
    new.stop()
    new_thread.join(WAIT_BOUND)
    assert new.finished.is_set()
    assert new_news == []
    assert any(NEW_ID in key for key in seen_threads(user_data))
    service.close()


def test_a_loop_stopped_before_it_ran_is_finished_at_once(tmp_path, user_data):
    """Its worker cancelled before it started (a quit during start-up): a loop after it does not wait."""
    loop = AlertLoop(lambda: None, 3600, "security@frob.example")
    loop.stop()
    assert loop.finished.is_set()
    loop.run(lambda outcome: None, lambda error: None)  # a late start does nothing
    assert loop.poller is None
