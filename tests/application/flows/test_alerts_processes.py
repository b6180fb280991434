"""Several processes polling one list at once (issue 39's promise: no false "new", none
missed): what another process acknowledged is read by this one's next poll, and never lost by
this one's writes of the cursor, whatever falls between two of this one's steps. Each test
puts the other process's write (a second poller on the same cursor file, as a second app
would be) exactly in the window it names."""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from datetime import timedelta

import pytest

from mailtriage.application.flows.alerts import CursorStore, NewReportPoller, RETENTION
from mailtriage.application.flows.linking import iso_utc, parse_iso
from mailtriage.backends.registry import SourceSet
from mailtriage.core import private_files
from tests.application.flows.conftest import REPORT, mail, write_mbox


def _now_date(offset: int = 0) -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime(time.time() + offset))


@pytest.fixture
def recent_env(mbox_env):
    mbox_env.archive.unlink()
    write_mbox(mbox_env.archive, [mail(REPORT, "Rita <rita@reporter.example>", "Old report", "x\n", _now_date())])
    return mbox_env


def _poller(env) -> NewReportPoller:
    return NewReportPoller(SourceSet(env.config()))


def _report(env, n: int) -> None:
    write_mbox(env.archive, [mail(f"<new-{n}@reporter.example>", "Nina <nina@reporter.example>",
                                  f"Secret report {n}", "details\n", _now_date(60 + n))])


def _subjects(threads) -> list[str]:
    return [t.subject for t in threads]


def test_another_processs_write_just_after_this_ones_lock_is_released_is_read(recent_env, monkeypatch):
    # review5: the poller stamped the cursor file after its write released the lock; a whole
    # write of another process in between was taken for its own and never read.
    mine, other = _poller(recent_env), _poller(recent_env)
    mine.acknowledge(mine.poll())  # the baseline
    quiet = mine.poll()
    _report(recent_env, 1)
    theirs = other.poll()
    assert _subjects(theirs.new_threads) == ["Secret report 1"]
    real, armed = private_files.exclusive, [True]

    @contextmanager
    def then_the_other_writes(path):
        with real(path) as held:
            yield held
        if armed[0]:
            armed[0] = False
            other.acknowledge(theirs)  # announced there, in this window

    monkeypatch.setattr(private_files, "exclusive", then_the_other_writes)
    mine.acknowledge(quiet)
    assert not armed[0]
    assert not mine.poll().has_news  # the other process announced it


def test_a_whole_write_of_another_process_between_this_ones_read_and_write_is_kept(recent_env):
    # The app acknowledges in memory on the UI thread and writes later on a worker: a whole
    # write of another process in between was overwritten, its acknowledgements lost.
    mine, other = _poller(recent_env), _poller(recent_env)
    mine.acknowledge(mine.poll())
    quiet = mine.poll()
    _report(recent_env, 2)
    theirs = other.poll()
    mine.acknowledge(quiet, save=False)
    other.acknowledge(theirs)
    mine.save()
    assert f"msgid:<new-2@reporter.example>" in CursorStore(mine.store.path).load()["seen"]
    assert not mine.poll().has_news
    assert not _poller(recent_env).poll().has_news  # a third app, started now


def test_an_acknowledgement_not_written_yet_survives_a_read_of_another_processs_write(recent_env):
    mine, other = _poller(recent_env), _poller(recent_env)
    mine.acknowledge(mine.poll())
    quiet = other.poll()
    _report(recent_env, 3)
    news = mine.poll()
    assert _subjects(news.new_threads) == ["Secret report 3"]
    mine.acknowledge(news, save=False)  # shown, and acknowledged in memory
    other.acknowledge(quiet)  # another process writes meanwhile
    assert not mine.poll().has_news  # (reads the other's write)
    mine.save()
    assert not _poller(recent_env).poll().has_news


def test_another_processs_whole_write_is_read_even_in_the_same_clock_tick(recent_env):
    # File times move in clock ticks of a few milliseconds: two writes inside one tick leave
    # the same mtime (and the same size, when the same keys were raised).
    mine, other = _poller(recent_env), _poller(recent_env)
    mine.acknowledge(mine.poll())
    _report(recent_env, 4)
    theirs = other.poll()
    before = os.stat(mine.store.path)
    other.acknowledge(theirs)
    os.utime(mine.store.path, ns=(before.st_atime_ns, before.st_mtime_ns))  # in the same tick
    assert not mine.poll().has_news


def test_idle_entries_leave_after_the_journal_is_applied(recent_env):
    # review5: a whole write forgot the idle entries, then applied the journal, which put back
    # those another process had appended: they stayed in the file until the next whole write.
    mine = _poller(recent_env)
    mine.acknowledge(mine.poll())
    cursor = json.loads(mine.store.path.read_text())
    idle = "msgid:<idle@reporter.example>"
    old = iso_utc(parse_iso(cursor["checked"]) - RETENTION - timedelta(days=1))
    other = CursorStore(mine.store.path)
    assert other.append(other.load(), {idle: old})  # another process's acknowledgement
    mine.acknowledge(mine.poll())  # read anew: judged whole, written whole
    assert not mine.store.journal.exists()
    assert idle not in json.loads(mine.store.path.read_text())["seen"]
