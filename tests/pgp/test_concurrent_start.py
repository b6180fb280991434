"""The run's OpenPGP is built once however many threads ask for it first (reads of encrypted
threads run on workers): one PgpSupport per project, one GnuPG session, one python-gnupg start
(one ``gpg --list-config``). Two sessions would each hold their own one-call-at-a-time lock, so
two gpg runs (two pinentries) could overlap on the user's home.

The race is made, not hoped for: each racing thread is held where the old code let them all in
(reading the ``[pgp]`` settings; gpg's first run, through a wrapper of the real gpg) until every
other racing thread is there too or waits on a lock; a thread that waits there passes nothing."""

from __future__ import annotations

import linecache
import os
import sys
import threading
import time
from pathlib import Path

from mailtriage.application import crypto  # noqa: F401 - loaded here: no thread waits on the import lock
from mailtriage.application.project import Project
from mailtriage.core.settings import UserSettings
from mailtriage.demo import demo_project_dir

RACERS = 4
BOUND = 30.0  # seconds: a bound on a wait for a condition, never a guess at a time


def _waits_on_a_lock(ident: int) -> bool:
    """The thread stands on a ``with …lock…:`` line: blocked there (nothing else runs one)."""
    frame = sys._current_frames().get(ident)
    if frame is None:
        return False
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return line.startswith("with ") and "lock" in line.lower()


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.001)  # polling the condition


class _HeldSettings(dict):
    """The settings file's table: reading ``pgp`` holds the reader until every racing thread
    reads it too or waits on a lock."""

    def __init__(self, data: dict, racers: list[threading.Thread]) -> None:
        super().__init__(data)
        self.racers = racers
        self.readers: set[int] = set()

    def get(self, key, default=None):
        if key == "pgp":
            self.readers.add(threading.get_ident())
            _until(lambda: all(t.ident in self.readers or _waits_on_a_lock(t.ident) for t in self.racers),
                   "every racing thread reads the [pgp] settings or waits")
        return super().get(key, default)


def test_threads_asking_at_once_share_one_gnupg_session_started_once(tmp_path: Path):
    home, runs, go = tmp_path / "gnupg", tmp_path / "runs", tmp_path / "go"
    home.mkdir(mode=0o700)
    runs.mkdir()
    wrapper = tmp_path / "gpg"
    wrapper.write_text(f"""#!/bin/sh
for arg in "$@"; do
  if [ "$arg" = --list-config ]; then
    touch "{runs}/$$"
    while [ ! -e "{go}" ]; do sleep 0.01; done
  fi
done
exec gpg "$@"
""")
    wrapper.chmod(0o700)
    racers: list[threading.Thread] = []
    table = _HeldSettings({"pgp": {"gnupg_home": str(home), "gpg": str(wrapper)}}, racers)
    project = Project.open(demo_project_dir(), user_settings=UserSettings(tmp_path / "config.toml", table))
    got: list[tuple[object, object, str | None]] = []

    def ask() -> None:
        support = project.pgp
        gpg = support.gpg
        got.append((support, gpg, gpg.available()))

    racers += [threading.Thread(target=ask) for _ in range(RACERS)]
    try:
        for thread in racers:
            thread.start()
        # gpg's first run is held until every racing thread runs gpg too or waits on a lock.
        _until(lambda: os.listdir(runs) and len(os.listdir(runs)) + sum(
            _waits_on_a_lock(t.ident) for t in racers) >= RACERS, "every racing thread runs gpg or waits")
    finally:
        go.touch()
        for thread in racers:
            thread.join(BOUND)
    assert [available for _s, _g, available in got] == [None] * RACERS
    assert len({id(support) for support, _g, _a in got}) == 1, "more than one PgpSupport"
    assert len({id(gpg) for _s, gpg, _a in got}) == 1, "more than one GnuPG session"
    assert len(os.listdir(runs)) == 1, f"gpg was started {len(os.listdir(runs))} times"
