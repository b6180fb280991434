"""New-report alerts on an mbox archive: silent baseline, news, acknowledge-after-shown."""

from __future__ import annotations

import json
import threading
import time

import pytest

from mailtriage.backends.registry import SourceSet
from mailtriage.core.projectconfig import ConfigError
from mailtriage.application.flows.alerts import NewReportPoller, poll_seconds, run_poll_loop
from tests.application.flows.conftest import REPORT, mail, write_mbox


def _poller(env):
    return NewReportPoller(SourceSet(env.config()))


def _new_report(env, n: int, date: str = "Mon, 02 Nov 2026 10:00:00 +0000"):
    write_mbox(env.archive, [mail(f"<new-{n}@reporter.example>", "Nina <nina@reporter.example>",
                                  f"Secret report {n}", "details\n", date)])


@pytest.fixture
def recent_env(mbox_env):
    # alerts look at recent mail: the archive's report is dated today
    mbox_env.archive.unlink()
    write_mbox(mbox_env.archive, [mail(REPORT, "Rita <rita@reporter.example>", "Old report", "x\n",
                                       time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime()))])
    return mbox_env


def _now_date(offset: int = 0) -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime(time.time() + offset))


def test_baseline_is_silent_and_saved_only_on_acknowledge(recent_env):
    poller = _poller(recent_env)
    first = poller.poll()
    assert first.baseline and not first.has_news
    assert not poller.store.path.exists()
    poller.acknowledge(first)
    stored = json.loads(poller.store.path.read_text())
    assert list(stored["seen"]) == [f"msgid:{REPORT}"]
    assert "Old report" not in poller.store.path.read_text()  # ids and times only, no content


def test_a_cursor_written_with_the_old_backend_tag_reads_back(recent_env):
    """Before thread IDs were tagged by shape, the cursor said "mbox" and "mbox:<…>"."""
    poller = _poller(recent_env)
    poller.acknowledge(poller.poll())
    stored = json.loads(poller.store.path.read_text())
    stored["kind"] = "mbox"
    stored["seen"] = {f"mbox:{k.partition(':')[2]}": v for k, v in stored["seen"].items()}
    poller.store.path.write_text(json.dumps(stored))
    again = poller.poll()
    assert not again.baseline and not again.has_news, again.notes


def test_new_thread_is_reported_until_acknowledged(recent_env):
    poller = _poller(recent_env)
    poller.acknowledge(poller.poll())
    _new_report(recent_env, 1, _now_date(60))
    news = poller.poll()
    assert not news.baseline
    assert [t.subject for t in news.new_threads] == ["Secret report 1"]
    again = poller.poll()  # not acknowledged: shown again, nothing lost
    assert [t.subject for t in again.new_threads] == ["Secret report 1"]
    poller.acknowledge(again)
    assert not poller.poll().has_news


def test_reply_marks_a_known_thread_updated(recent_env):
    poller = _poller(recent_env)
    poller.acknowledge(poller.poll())
    write_mbox(recent_env.archive, [mail("<r1@x.example>", "Sam <sam@x.example>", "Re: Old report", "ok\n",
                                         _now_date(120), in_reply_to=REPORT)])
    outcome = poller.poll()
    assert outcome.new_threads == [] and [t.subject for t in outcome.updated_threads] == ["Old report"]


def test_unreadable_cursor_means_a_new_silent_baseline(recent_env):
    poller = _poller(recent_env)
    poller.store.path.parent.mkdir(parents=True)
    poller.store.path.write_text("{not json")
    outcome = poller.poll()
    assert outcome.baseline and not outcome.has_news
    assert "unreadable" in outcome.notes[0]


def test_cursor_of_another_list_is_not_reused(recent_env):
    poller = _poller(recent_env)
    poller.acknowledge(poller.poll())
    cursor = json.loads(poller.store.path.read_text())
    cursor["backend"] = "imap"
    poller.store.path.write_text(json.dumps(cursor))
    _new_report(recent_env, 1, _now_date(60))
    outcome = poller.poll()
    assert outcome.baseline and not outcome.has_news


def test_loop_baseline_then_news_while_polling(recent_env):
    poller = _poller(recent_env)
    stop = threading.Event()
    seen = []

    def on_news(outcome):
        seen.append([t.subject for t in outcome.new_threads])
        poller.acknowledge(outcome)  # the UI showed them
        stop.set()

    def arrive():
        deadline = time.monotonic() + 20
        while not poller.store.path.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        _new_report(recent_env, 7, _now_date(30))

    writer = threading.Thread(target=arrive)
    writer.start()
    polls = run_poll_loop(poller, on_news, stop=stop, interval=0.1, max_polls=200)
    writer.join()
    assert seen == [["Secret report 7"]]
    assert 2 <= polls < 200
    assert not poller.poll().has_news


def test_errors_are_reported_and_the_loop_goes_on(recent_env):
    poller = _poller(recent_env)
    recent_env.archive.unlink()
    errors = []
    polls = run_poll_loop(poller, lambda o: None, stop=threading.Event(), interval=0.01, max_polls=3,
                          on_error=errors.append)
    assert polls == 3 and len(errors) == 3
    assert "mandatory backend mbox unavailable" in str(errors[0])


def test_poll_seconds_setting(recent_env):
    assert poll_seconds(recent_env.config()) == 120.0
    recent_env.write_project([("mbox", "primary", "yes")], extra={"mail_sources.mbox": {"path": "security.mbox"},
                                                                   "alerts.poll_seconds": 30})
    assert poll_seconds(recent_env.config()) == 30.0
    recent_env.write_project([("mbox", "primary", "yes")], extra={"alerts.poll_seconds": "soon"})
    with pytest.raises(ConfigError) as err:
        poll_seconds(recent_env.config())
    assert "alerts.poll_seconds" in str(err.value)


def test_quiet_spell_then_a_reply_to_a_thread_older_than_the_look_back_is_an_update(mbox_env):
    # The archive's report is ten days old; another went quiet four days ago: nothing in
    # the baseline's window. A later poll must not call either new.
    write_mbox(mbox_env.archive, [mail("<quiet@reporter.example>", "Quinn <quinn@reporter.example>", "Quiet report",
                                       "x\n", _now_date(-4 * 86400))])
    poller = _poller(mbox_env)
    poller.acknowledge(poller.poll())
    assert not poller.poll().has_news
    write_mbox(mbox_env.archive, [mail("<r2@x.example>", "Sam <sam@x.example>", "Re: Quiet report", "ok\n",
                                       _now_date(60), in_reply_to="<quiet@reporter.example>")])
    _new_report(mbox_env, 3, _now_date(60))
    outcome = poller.poll()
    assert [t.subject for t in outcome.new_threads] == ["Secret report 3"]
    assert [t.subject for t in outcome.updated_threads] == ["Quiet report"]


def test_an_acknowledgement_made_during_a_poll_is_not_reported_again(recent_env):
    poller = _poller(recent_env)
    poller.acknowledge(poller.poll())
    _new_report(recent_env, 4, _now_date(60))
    first = poller.poll()
    second = poller.poll()  # computed before the first was acknowledged
    poller.acknowledge(first)
    assert poller.fresh(second).new_threads == []
    poller.acknowledge(second)
    assert not poller.poll().has_news
    # A late acknowledgement of an older outcome never takes the cursor back.
    poller.acknowledge(first)
    assert not poller.poll().has_news


def test_a_new_report_dated_days_before_it_arrived_is_announced(recent_env):
    # Issue 39: moderation (or the sender's clock) held a report for five days; it lands in
    # the archive now. It was never seen: announced by its arrival, not by its Date.
    poller = _poller(recent_env)
    poller.acknowledge(poller.poll())
    _new_report(recent_env, 5, _now_date(-5 * 86400))
    outcome = poller.poll()
    assert [t.subject for t in outcome.new_threads] == ["Secret report 5"]
    poller.acknowledge(outcome)
    assert not poller.poll().has_news


def test_a_cursor_from_the_narrow_window_does_not_make_older_threads_new(recent_env, tmp_path):
    # A cursor written when polls listed three days only: the quiet thread of ten days ago
    # was never recorded; the first wider listing records it silently.
    write_mbox(recent_env.archive, [mail("<ten-days@reporter.example>", "Tess <tess@reporter.example>",
                                         "Ten days old", "x\n", _now_date(-10 * 86400))])
    poller = _poller(recent_env)
    baseline = poller.poll()
    narrow = {**baseline.cursor, "seen": {k: v for k, v in baseline.cursor["seen"].items() if "ten-days" not in k}}
    narrow.pop("span", None)
    poller.store.save(narrow)
    fresh = _poller(recent_env)
    assert not fresh.poll().has_news


def test_acknowledging_polls_of_one_base_gives_the_cursor_a_full_merge_gives(recent_env):
    # Issue 39: each acknowledgement merged every key of the cursor (~20,000 in a storm) on
    # the UI thread; it merges the keys its poll set or raised, to the same cursor.
    poller = _poller(recent_env)
    poller.acknowledge(poller.poll())
    _new_report(recent_env, 5, _now_date(60))
    first = poller.poll()
    write_mbox(recent_env.archive, [mail("<r5@x.example>", "Sam <sam@x.example>", "Re: Old report", "ok\n",
                                         _now_date(120), in_reply_to=REPORT)])
    _new_report(recent_env, 6, _now_date(90))
    second = poller.poll()  # from the same base: the first is not acknowledged yet
    assert first.base is second.base is not None
    assert sorted(second.changed) == sorted(["msgid:<new-5@reporter.example>", "msgid:<new-6@reporter.example>",
                                            f"msgid:{REPORT}"])
    full = dict(first.base["seen"])
    for outcome in (first, second):
        for key, when in outcome.cursor["seen"].items():
            full[key] = max(full.get(key, ""), when)
    poller.acknowledge(first)
    poller.acknowledge(second)
    assert json.loads(poller.store.path.read_text())["seen"] == full
    assert not poller.poll().has_news
