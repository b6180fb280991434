"""The app's first frame, read off a real terminal: the command runs on a pseudo-terminal
and the test plays the terminal (it answers Textual's query for synchronized output, so
every frame is bracketed and "the first frame" has a precise meaning)."""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from mailtriage.core.settings import load_settings
from mailtriage.tui.head_start import ForkedHeadStart, read_head_start
from mailtriage.application.service import Service
from tests.tui.helpers import mbox_project, quit_on_pty

SYNC_QUERY = b"\x1b[?2026$p"
SYNC_REPLY = b"\x1b[?2026;2$y"
FRAME = re.compile(rb"\x1b\[\?2026h(.*?)\x1b\[\?2026l", re.S)
#: Generous bounds (seconds) for what a loaded machine may make slow: the app's start-up in a
#: child process, a forked head start's answer, a quit. A passing run takes a fraction of each.
START_BOUND = 120.0
CHILD_BOUND = 60.0
# The app as ``python -m mailtriage.cli.main``, but its first frame waits for the head start
# child as long as it takes (the wait is a constant, 0.2 s, that a loaded machine can overrun:
# then the first frame rightly comes without rows, and the rows in the next one).
PATIENT_FIRST_FRAME = ("import sys, mailtriage.tui.first_screen as first; "
                       f"first.FIRST_FRAME_WAIT = {CHILD_BOUND}; "
                       "from mailtriage.cli.main import main; sys.exit(main())")


def frames_until(argv: list[str], env: dict[str, str], wanted: bytes, timeout: float = START_BOUND) -> list[bytes]:
    """The frames the app draws until one holds ``wanted``; the app is then quit (ctrl+q)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                            env={**os.environ, "TERM": "xterm-256color", **env})
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + timeout
        while not any(wanted in frame for frame in FRAME.findall(seen)):
            assert time.monotonic() < deadline, f"{wanted!r} never drawn; last output: {seen[-600:]!r}"
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                chunk = os.read(master, 65536)
                assert chunk, f"the app exited; last output: {seen[-600:]!r}"
                if SYNC_QUERY in chunk:
                    os.write(master, SYNC_REPLY)
                seen += chunk
        return FRAME.findall(seen)
    finally:
        quit_on_pty(proc, master)


def test_the_first_frame_already_shows_the_threads_of_a_local_archive(tmp_path):
    project = mbox_project(tmp_path / "p")
    config = tmp_path / "config"
    config.mkdir()
    frames = frames_until([sys.executable, "-c", PATIENT_FIRST_FRAME, "--project", str(project)],
                          {"MAILTRIAGE_CONFIG_DIR": str(config)}, b"threads \xc2\xb7 via")
    first = next(frame for frame in frames if b"Threads" in frame)  # the first frame with the panes
    assert b"Question about 3.4 fixes" in first and b"Heap overflow in the frob parser" in first
    assert b"3 threads \xc2\xb7 via list_recent_threads \xe2\x86\x92 mbox (primary)" in first


def test_head_start_reads_a_local_archive_and_opens_the_session(tmp_path, user_config):
    project = mbox_project(tmp_path / "p")
    session = Service(project, demo=False, settings=load_settings())
    head = read_head_start(session, 200)
    assert session.is_open and head.list_name == "security@frob.example" and not head.stale
    assert [t.subject for t in head.listing.value][:1] == ["Question about 3.4 fixes"]
    assert head.listing.resolution.chosen == "mbox"
    session.close()


def test_head_start_of_a_broken_project_leaves_the_error_to_the_app(tmp_path, user_config):
    from tests.core.helpers import write_project

    project = write_project(tmp_path / "p", [("mbox", "sometimes", "no")])
    session = Service(project, demo=False, settings=load_settings())
    assert read_head_start(session, 200) is None and not session.is_open


def test_head_start_lists_nothing_when_a_mandatory_backend_is_not_local(tmp_path, user_config):
    """A mandatory network backend would be probed by the listing: start-up leaves it to the app."""
    project = mbox_project(tmp_path / "p", extra_rows=[("pony", "fallback", "yes")],
                           extra_config={"mail_sources": {
                               "mbox": {"path": "list.mbox", "list": "security@frob.example", "parallel": False},
                               "pony": {"kind": "ponymail", "base_url": "http://127.0.0.1:9", "list": "security@frob.example"}}})
    session = Service(project, demo=False, settings=load_settings())
    head = read_head_start(session, 200)
    assert session.is_open and head.list_name == "security@frob.example" and head.listing is None
    session.close()


def test_the_forked_head_start_gives_what_this_process_reads(tmp_path, user_config):
    project = mbox_project(tmp_path / "p")
    forked = ForkedHeadStart.start(project, demo=False).result(CHILD_BOUND)
    here = read_head_start(Service(project, demo=False, settings=load_settings()))
    assert forked is not None and forked.listing is not None
    assert [t.thread_id for t in forked.listing.value] == [t.thread_id for t in here.listing.value]
    assert (forked.title, forked.lists, forked.since, forked.list_name) == (here.title, here.lists, here.since,
                                                                            here.list_name)
    assert forked.listing.resolution.summary() == here.listing.resolution.summary()


def test_a_forked_head_start_of_a_broken_project_is_none(tmp_path, user_config):
    from tests.core.helpers import write_project

    project = write_project(tmp_path / "p", [("mbox", "sometimes", "no")])
    assert ForkedHeadStart.start(project, demo=False).result(CHILD_BOUND) is None


def test_a_head_start_child_that_is_late_is_killed_and_the_app_starts_without_it(tmp_path, user_config):
    project = mbox_project(tmp_path / "p")
    child = ForkedHeadStart.start(project, demo=False)
    # 10 ms: less than the child's own imports take, so it is always late here.
    assert child.result(timeout=0.01) is None
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)  # killed and reaped: no zombie left behind


def test_the_app_ends_when_its_terminal_hangs_up(tmp_path):
    """A dropped SSH connection: the terminal goes away and no SIGHUP reaches the app (here it
    has no controlling terminal). It must end, not spin on the closed terminal."""
    project = mbox_project(tmp_path / "p")
    config = tmp_path / "config"
    config.mkdir()
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "mailtriage.cli.main", "--project", str(project)],
                            stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                            env={**os.environ, "TERM": "xterm-256color", "MAILTRIAGE_CONFIG_DIR": str(config)})
    os.close(slave)
    try:
        seen = b""
        deadline = time.monotonic() + START_BOUND
        while b"threads \xc2\xb7 via" not in seen:  # drawn: the app is up
            assert time.monotonic() < deadline, seen[-400:]
            if select.select([master], [], [], 0.5)[0]:
                chunk = os.read(master, 65536)
                if SYNC_QUERY in chunk:
                    os.write(master, SYNC_REPLY)
                seen += chunk
    finally:
        os.close(master)  # the terminal hangs up
    try:
        proc.wait(timeout=CHILD_BOUND)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("the app went on running without its terminal") from None
    # Ended by the SIGHUP it missed (or 129 where that is ignored), not by a crash.
    assert proc.returncode in (-signal.SIGHUP, 129), proc.returncode


async def test_enter_on_a_local_archives_first_row_does_not_wait_for_the_project_to_open(tmp_path, user_config):
    """The forked head start's rows are on screen before this process's session opens: Enter
    on the first one, pressed while the opening is held back, shows its thread at once, as
    start-up's child read it ahead (a local archive: no sign-in token could be refreshed by two
    processes; issue 33, the demo's first key); the opening then goes on with no error. (A key
    on another row waits for the opening: test_calls_wait_for_a_session_that_opens_later.)"""
    from mailtriage.core.trace import OPLOG
    from mailtriage.tui.head_start import STARTUP_CALLER
    from mailtriage.tui.panes.thread_list import ThreadList
    from tests.tui.helpers import make_app, reader_text, settle, until

    project = mbox_project(tmp_path / "p")
    app = make_app(project)
    child = ForkedHeadStart.start(project, demo=False)
    assert child.ready(CHILD_BOUND)  # answered: taken before the first frame, however loaded the machine
    app.prepare_first_screen(child)
    assert app.head_start is not None and not app.session.is_open
    hold, held = threading.Event(), threading.Event()

    def holder() -> None:  # the opening cannot finish while another thread holds the lock
        with app.session._lock.lock:
            held.set()
            hold.wait()  # until the test lets go (however long a loaded machine takes to get there)

    try:
        threading.Thread(target=holder, daemon=True).start()
        assert held.wait(CHILD_BOUND)
        # (Cleared before the run: the read ahead's record is adopted when the reader takes it, with the rows.)
        OPLOG.clear()
        async with app.run_test(size=(140, 40)) as pilot:
            await until(pilot, lambda: len(app.screen.query_one(ThreadList).rows) == 3, "the head start's rows")
            assert not app.session.is_open
            await pilot.press("enter")  # on the newest thread, while the project still opens
            await until(pilot, lambda: "Will 3.4 get the fix?" in reader_text(app), "the read ahead shown")
            assert not app.session.is_open
            assert [r.caller for r in OPLOG.items() if r.op == "read_thread"] == [STARTUP_CALLER]
            hold.set()
            await settle(pilot)
            assert app.session.is_open and app.errors == []
    finally:
        hold.set()


def test_calls_wait_for_a_session_that_opens_later(tmp_path, user_config):
    """After a forked head start the session opens on a worker once the first frame is drawn;
    a call made before (a key on the head start's rows) waits for it, then succeeds."""
    project = mbox_project(tmp_path / "p")
    head = ForkedHeadStart.start(project, demo=False).result(CHILD_BOUND)
    session = Service(project, demo=False, settings=load_settings())
    session.open_later()
    answers: dict = {}

    def read_now() -> None:
        try:
            answers["listing"] = session.list_threads(head.list_name)
            answers["thread"] = session.read_thread(head.listing.value[0].thread_id)
        except Exception as exc:  # what the reading worker would report
            answers["error"] = exc

    reader = threading.Thread(target=read_now)
    reader.start()
    reader.join(0.3)
    assert reader.is_alive() and answers == {}  # waiting for the opening, not failing
    session.open()
    reader.join(CHILD_BOUND)
    assert "error" not in answers, answers.get("error")
    assert len(answers["listing"].value) == 3 and answers["thread"].value.subject == "Question about 3.4 fixes"
    session.close()


#: How long a held-back child waits for its ``go`` file at most: longer than any test runs, so a
#: late head start is late for as long as the test wants, however loaded the machine.
HELD_BACK = 3600.0


def _slow_head_start(monkeypatch, until: Path) -> None:
    """The child (a fork of this process) reads its head start once the file ``until`` exists
    (the test says when: a loaded machine cannot make it answer early or late). The app waits
    for a late child as long as CHILD_BOUND (its own wait, head_start.CHILD_TIMEOUT, is 20 s: at
    load 20-33 a child that answered once told to was given up for lost, and the app listed
    itself)."""
    from mailtriage.tui import head_start

    real = head_start.read_head_start

    def late(session, limit=head_start.FIRST_PAGE, **more):
        deadline = time.monotonic() + HELD_BACK
        while time.monotonic() < deadline and not until.exists():
            time.sleep(0.02)
        return real(session, limit, **more)

    monkeypatch.setattr(head_start, "read_head_start", late)
    result = ForkedHeadStart.result
    monkeypatch.setattr(ForkedHeadStart, "result", lambda self, timeout=CHILD_BOUND: result(self, timeout))


async def test_a_late_head_start_does_not_hold_the_first_frame_and_is_shown_when_it_comes(
        tmp_path, user_config, monkeypatch):
    from mailtriage.tui.panes.thread_list import ThreadList
    from tests.tui.helpers import make_app, settle

    project = mbox_project(tmp_path / "p")
    go = tmp_path / "go"
    _slow_head_start(monkeypatch, until=go)
    app = make_app(project)
    app.prepare_first_screen(ForkedHeadStart.start(project, demo=False))
    # It did not wait for the child (which answers only once told to): the app goes on without it.
    assert app._late_head_start is not None
    assert app.head_start is None and not app.session.is_open
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause(0.1)
        assert len(app.screen.query_one(ThreadList).rows) == 0  # drawn before the child answered
        go.touch()  # the child answers now
        await settle(pilot)
        assert app.head_start is not None and app.session.is_open
        assert len(app.screen.query_one(ThreadList).rows) == 3
        assert app.errors == []


async def test_quitting_while_a_late_head_start_is_read_ends_the_child(tmp_path, user_config, monkeypatch):
    from tests.tui.helpers import WAIT_BOUND, make_app, until_sync

    project = mbox_project(tmp_path / "p")
    _slow_head_start(monkeypatch, until=tmp_path / "never")  # never answers while the app runs
    app = make_app(project)
    child = ForkedHeadStart.start(project, demo=False)
    try:
        app.prepare_first_screen(child)
        assert app._late_head_start is child
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause(0.3)

        def gone() -> bool:  # reaped by the app: no zombie, no reader left behind
            try:
                os.kill(child.pid, 0)
            except ProcessLookupError:
                return True
            return False

        # The child would read for an hour (HELD_BACK): gone within the bound, it was ended.
        until_sync(gone, "the head start child to end with the app", bound=WAIT_BOUND)
    finally:
        child.cancel()


async def test_a_late_head_start_that_finds_no_project_leaves_the_error_to_the_app(tmp_path, user_config,
                                                                                    monkeypatch):
    from mailtriage.tui.screens.first_run import FirstRunScreen
    from tests.tui.helpers import make_app, until

    go = tmp_path / "go"
    _slow_head_start(monkeypatch, until=go)
    app = make_app(tmp_path / "nowhere")
    app.prepare_first_screen(ForkedHeadStart.start(tmp_path / "nowhere", demo=False))
    assert app._late_head_start is not None
    async with app.run_test(size=(140, 40)) as pilot:
        go.touch()
        await until(pilot, lambda: isinstance(app.screen, FirstRunScreen), "the first-run screen")


async def test_a_head_start_without_rows_opens_the_project_at_once_and_lists(tmp_path, user_config, monkeypatch):
    """A cold cache: the head start has the project but no rows, so the project opens at the
    app's mount, before the main screen's panes; the first list is listed all the same."""
    import dataclasses

    from mailtriage.tui import head_start
    from mailtriage.tui.panes.thread_list import ThreadList
    from tests.tui.helpers import make_app, settle

    real = head_start.read_head_start
    monkeypatch.setattr(head_start, "read_head_start",
                        lambda session, limit=head_start.FIRST_PAGE, **more: dataclasses.replace(
                            real(session, limit, **more), listing=None))
    project = mbox_project(tmp_path / "p")
    child = ForkedHeadStart.start(project, demo=False)
    assert child.ready(CHILD_BOUND)  # answered: the head start is taken before the first frame
    app = make_app(project)
    app.prepare_first_screen(child)
    assert app.head_start is not None and app.head_start.listing is None
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert app.errors == []
        assert len(app.screen.query_one(ThreadList).rows) == 3


async def test_an_enter_held_on_the_kept_frame_opens_the_first_row_of_a_late_head_start(
        tmp_path, user_config, monkeypatch):
    """The kept frame shows the last run's rows, so an Enter typed on it is held until the main
    screen is up (tui/startup_keys.py). A head start later than the first frame (the child slow,
    a loaded machine) left the main screen up with no rows yet: the Enter was released onto the
    empty list and did nothing (lost). It is held until the late head start's rows are shown."""
    from textual import events

    from mailtriage.tui.panes.reader import ThreadView
    from mailtriage.tui.panes.thread_list import ThreadList
    from tests.tui.helpers import make_app, reader_text, settle, until

    project = mbox_project(tmp_path / "p")
    go = tmp_path / "go"
    _slow_head_start(monkeypatch, until=go)
    app = make_app(project)
    app.prepare_first_screen(ForkedHeadStart.start(project, demo=False))
    assert app._late_head_start is not None
    app._held_keys.append(events.Key("enter", "\r"))  # as StartupKeys.on_event holds a key typed on the kept frame
    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: app.main is not None and app.main.panes_ready, "the main screen")
        listing = app.main.query_one(ThreadList)
        assert len(listing.rows) == 0  # up before the child answered
        go.touch()  # the child answers now
        await until(pilot, lambda: len(listing.rows) == 3, "the head start's rows")
        await settle(pilot)
        first = listing.rows.peek(0)
        assert isinstance(app.main.focused, ThreadView), "the Enter typed on the kept frame was lost"
        assert first.subject in reader_text(app)
        assert app.errors == []


def _gives_up_at_once(monkeypatch) -> None:
    """The app gives up on a late child at once (its own wait, head_start.CHILD_TIMEOUT, is 20 s):
    what a child that takes longer than that leads to, without waiting for it."""
    result = ForkedHeadStart.result
    monkeypatch.setattr(ForkedHeadStart, "result", lambda self, timeout=0.0: result(self, 0.0))


def _hold_opening(app):
    """Until the returned event is set, this process's opening (and with it the app's own
    first listing) cannot finish: another thread holds the session's lock. Returns it once held."""
    hold, held = threading.Event(), threading.Event()

    def holder() -> None:
        with app.session._lock.lock:
            held.set()
            hold.wait()  # until the test lets go (however long a loaded machine takes to get there)

    threading.Thread(target=holder, daemon=True).start()
    assert held.wait(CHILD_BOUND)
    return hold


async def _enter_held_opens_the_first_row_once_listed(app, hold) -> None:
    """An Enter held as on the kept frame, the app up with no rows while its own listing is held
    back: once that listing's rows come, the Enter opens the first one (it was released onto the
    empty list and lost)."""
    from textual import events

    from mailtriage.tui.panes.reader import ThreadView
    from mailtriage.tui.panes.thread_list import ThreadList
    from tests.tui.helpers import reader_text, settle, until

    app._held_keys.append(events.Key("enter", "\r"))  # as StartupKeys.on_event holds a key typed on the kept frame
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await until(pilot, lambda: app.main is not None and app.main.panes_ready and app._late_head_start is None,
                        "the main screen, the head start given up or failed")
            for _ in range(3):  # the app's queues emptied: what it does with the held key before its rows, done
                await pilot.pause()
            listing = app.main.query_one(ThreadList)
            assert len(listing.rows) == 0 and not app.session.is_open
            hold.set()  # the app's own opening and listing go on
            await until(pilot, lambda: len(listing.rows) == 3, "the app's own listing")
            await settle(pilot)
            assert isinstance(app.main.focused, ThreadView), "the Enter typed on the kept frame was lost"
            assert listing.rows.peek(0).subject in reader_text(app)
            assert app.errors == []
    finally:
        hold.set()


async def test_an_enter_held_on_the_kept_frame_is_not_lost_when_the_app_gives_up_on_a_late_head_start(
        tmp_path, user_config, monkeypatch):
    """Issue 33: a key typed while the first frame shows is never lost. A head start child later
    than CHILD_TIMEOUT is given up; the app opens the project and lists itself. The Enter held on
    the kept frame was released onto the empty list then (the head start "came", as None). The
    child is told to answer only after the give-up: it was ended, its answer never shown."""
    from tests.tui.helpers import make_app

    project = mbox_project(tmp_path / "p")
    go = tmp_path / "go"
    _slow_head_start(monkeypatch, until=go)
    _gives_up_at_once(monkeypatch)
    app = make_app(project)
    child = ForkedHeadStart.start(project, demo=False)
    try:
        app.prepare_first_screen(child)
        assert app._late_head_start is not None
        hold = _hold_opening(app)
        go.touch()  # too late: given up (at once), so ended before it reads anything
        await _enter_held_opens_the_first_row_once_listed(app, hold)
    finally:
        child.cancel()


async def test_an_enter_held_on_the_kept_frame_is_not_lost_when_the_head_start_child_fails(
        tmp_path, user_config, monkeypatch):
    """A child that fails (here: before the first frame) leaves no head start: the main screen
    is up with no rows and the app lists itself; the Enter held meanwhile waits for those rows."""
    from mailtriage.tui import head_start
    from tests.tui.helpers import make_app

    def fails(*_args, **_kwargs):
        raise RuntimeError("the child's head start failed")

    monkeypatch.setattr(head_start, "read_head_start", fails)
    project = mbox_project(tmp_path / "p")
    app = make_app(project)
    child = ForkedHeadStart.start(project, demo=False)
    assert child.ready(CHILD_BOUND)  # ended without an answer: taken before the first frame
    app.prepare_first_screen(child)
    assert app.head_start is None and app._late_head_start is None
    await _enter_held_opens_the_first_row_once_listed(app, _hold_opening(app))


async def test_keys_held_on_the_kept_frame_of_a_project_that_cannot_open_are_not_held_for_ever(
        tmp_path, user_config):
    """The held keys wait for the first listing's rows; a project that cannot be opened has
    none. They are let go with the first-run screen (the frame's rows are not there to act on),
    and the keys typed on it act: q quits."""
    from textual import events

    from mailtriage.tui.screens.first_run import FirstRunScreen
    from tests.tui.helpers import make_app, until

    app = make_app(tmp_path / "nowhere")
    child = ForkedHeadStart.start(tmp_path / "nowhere", demo=False)
    assert child.ready(CHILD_BOUND)
    app.prepare_first_screen(child)
    app._held_keys.append(events.Key("enter", "\r"))
    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, FirstRunScreen), "the first-run screen")
        await pilot.press("q")
        await until(pilot, lambda: app.return_code is not None, "the app to quit")
    assert app.return_code == 0
