"""Issue 33, item 4: a key typed while the kept first frame shows is never lost.

End to end on a pseudo-terminal (the real command, a real mbox project): the first start keeps
its screen; the second shows it before Textual loads (tui/first_paint.py), and the test types
the moment that frame is on the terminal, as a person who trusts it would. Every key must act
once the app is live, in the order typed; the frame says it is starting until then; and the
terminal's modes are given back when the app ends.
"""

from __future__ import annotations

import fcntl
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from mailtriage.tui import first_paint
from tests.tui.helpers import mbox_project
from tests.tui.test_first_paint import LIVE, PAINTED, SYNC_QUERY, SYNC_REPLY, run_app

FRAME_END = b"\x1b[?2026l"
#: Generous: the machine may be loaded; every wait below ends as soon as its condition holds.
BOUND = 60.0


class Pty:
    """The command on a 140x40 pseudo-terminal; the test plays the terminal."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
        self.modes_before = termios.tcgetattr(slave)
        child_env = {**os.environ, "TERM": "xterm-256color", **env}
        for name in ("COLUMNS", "LINES"):
            child_env.pop(name, None)
        self.proc = subprocess.Popen([sys.executable, "-m", "mailtriage.cli.main", "--project", str(project)],
                                     stdin=slave, stdout=slave, stderr=slave, start_new_session=True, env=child_env)
        self.slave = slave  # kept open: its modes are read after the app ended
        self.master = master
        self.seen = b""

    def read_until(self, done, what: str) -> None:
        deadline = time.monotonic() + BOUND
        while not done(self.seen):
            assert time.monotonic() < deadline, f"{what}; last output: {self.seen[-600:]!r}"
            self._read(0.2)

    def _read(self, wait: float) -> bool:
        if not select.select([self.master], [], [], wait)[0]:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:
            return False
        if SYNC_QUERY in chunk:
            os.write(self.master, SYNC_REPLY)
        self.seen += chunk
        return bool(chunk)

    def first_frame(self) -> bytes:
        """What the command wrote up to the end of the kept frame, read the moment it is there."""
        self.read_until(lambda seen: seen.startswith(first_paint.ENTER.encode()) and FRAME_END in seen,
                        "the kept frame was never shown")
        return self.seen[:self.seen.find(FRAME_END) + len(FRAME_END)]

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def since_live(self) -> bytes:
        at = self.seen.find(LIVE)
        return b"" if at == -1 else self.seen[at:]

    def wait_for_exit(self) -> int:
        deadline = time.monotonic() + BOUND
        while self.proc.poll() is None:
            assert time.monotonic() < deadline, "the app did not end"
            self._read(0.1)  # a terminal nobody reads fills up and the app waits to write
        return self.proc.returncode

    def close(self) -> None:
        """Ends the app and what it started, at once: quitting is a test of its own (q, above);
        a ctrl+q here waited up to BOUND in the teardown of a loaded run (60 s once)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session (start_new_session)
            self.proc.wait()
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture(scope="module")
def first_start(tmp_path_factory) -> tuple[Path, Path, Path, dict[str, str]]:
    """A project and the app's environment as its first start left them (the start screen
    kept): the folder, a copy of it as left, the project and the environment. The frame is kept
    for the project's path and the settings' path, so each test gets the folder back in place
    (``kept``), not a copy elsewhere."""
    folder = tmp_path_factory.mktemp("kept")
    project = mbox_project(folder / "p")
    config, cache = folder / "config", folder / "cache"
    config.mkdir()
    env = {"MAILTRIAGE_CONFIG_DIR": str(config), "MAILTRIAGE_CACHE_DIR": str(cache),
           "MAILTRIAGE_DATA_DIR": str(folder / "data")}
    frame = cache / "frames" / first_paint.frame_path(project, demo=False, size=(140, 40)).name
    run_app(project, env, until=PAINTED, linger=frame)
    left = tmp_path_factory.mktemp("kept-as-left") / "folder"
    shutil.copytree(folder, left, symlinks=True)  # modes and times too (copy2)
    return folder, left, project, env


@pytest.fixture
def kept(first_start) -> tuple[Path, dict[str, str]]:
    """A project whose start screen the app kept (its first start), and the app's environment:
    the module's first start, its folder put back as that start left it (one first start a
    module and worker instead of one a test: each was a child app on a pseudo-terminal)."""
    folder, left, project, env = first_start
    deadline = time.monotonic() + BOUND
    while folder.exists():  # the test before killed its app's process group: a child dying may still write
        try:
            shutil.rmtree(folder)
            break
        except OSError:
            assert time.monotonic() < deadline, f"{folder} could not be emptied"
            time.sleep(0.05)
    shutil.copytree(left, folder, symlinks=True)
    return project, env


@pytest.fixture
def terminal(kept):
    project, env = kept
    term = Pty(project, env)
    yield term
    term.close()


def test_enter_typed_on_the_kept_frame_opens_the_newest_thread_once_live(terminal):
    terminal.first_frame()
    terminal.type(b"\r")  # Enter, as a terminal sends it
    terminal.read_until(lambda _seen: b"Will 3.4 get the fix?" in terminal.since_live(),
                        "the Enter typed on the kept frame was lost")


def test_keys_typed_on_the_kept_frame_act_in_the_order_typed(terminal):
    terminal.first_frame()
    terminal.type(b"j")
    terminal.type(b"j")  # the third thread (newest first): the heap overflow report
    terminal.type(b"\r")
    terminal.read_until(lambda _seen: b"A crafted .frob file overflows" in terminal.since_live(),
                        "the keys typed on the kept frame did not act in order")


def test_q_typed_on_the_kept_frame_quits_and_gives_the_terminal_back(terminal):
    terminal.first_frame()
    terminal.type(b"q")
    assert terminal.wait_for_exit() == 0
    modes = termios.tcgetattr(terminal.slave)
    # Line editing, echo and CR-to-NL as they were before the app started (the shell's).
    for flag, index in ((termios.ICANON, 3), (termios.ECHO, 3), (termios.ICRNL, 0)):
        assert modes[index] & flag == terminal.modes_before[index] & flag


def test_the_kept_frame_says_it_is_starting_and_the_app_is_live_from_its_first_frame(terminal):
    frame = terminal.first_frame()
    assert first_paint.STARTING.encode() in frame and LIVE not in frame
    # The app's own frames replace it, and its keys act from the first of them: none says starting.
    terminal.read_until(lambda _seen: b"threads \xc2\xb7 via" in terminal.since_live(), "the app never drew its list")
    assert first_paint.STARTING.encode() not in terminal.since_live()


async def test_keys_act_as_usual_once_the_held_ones_are_released(tmp_path):
    from tests.tui.helpers import make_app, reader_text, settle

    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert app._held_keys is None  # released: keys act now
        await pilot.press("j", "j", "enter")
        await settle(pilot)
        assert "A crafted .frob file overflows" in reader_text(app)


def test_a_key_typed_on_the_kept_frame_is_not_echoed_onto_it(terminal):
    terminal.first_frame()
    before = len(terminal.seen)
    terminal.type(b"x")  # no key of the app: nothing acts, nothing is drawn for it
    terminal.read_until(lambda _seen: LIVE in terminal.seen, "the app never went live")
    assert not terminal.seen[before:terminal.seen.find(LIVE)].startswith(b"x")


def test_enter_typed_before_the_app_reads_the_terminal_is_not_lost_without_a_kept_frame(tmp_path):
    """No kept frame (``first_paint = false``): the terminal is still in line mode when the key
    is typed, so the Enter reaches the app as a line feed; it still opens the newest thread."""
    project = mbox_project(tmp_path / "p")
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text('name = "T"\n\n[settings]\nfirst_paint = false\n', encoding="utf-8")
    env = {"MAILTRIAGE_CONFIG_DIR": str(config), "MAILTRIAGE_CACHE_DIR": str(tmp_path / "cache"),
           "MAILTRIAGE_DATA_DIR": str(tmp_path / "data")}
    term = Pty(project, env)
    try:
        term.type(b"\r")  # at once: before the app can have read the terminal
        assert LIVE not in term.seen
        term.read_until(lambda _seen: b"Will 3.4 get the fix?" in term.since_live(),
                        "the Enter typed during start-up was lost")
    finally:
        term.close()


async def test_the_collector_held_at_start_up_is_on_again_once_the_main_screen_is_up(tmp_path):
    """tui/startup.py turns the garbage collector off after the fork (its walks of what start-up
    imports and mounts cost ~40 ms of the UI thread before the first key acts); the app turns
    it back on once its main screen is up, so the session runs with it as ever."""
    import gc

    from mailtriage.tui import startup
    from tests.tui.helpers import make_app, settle

    app = make_app(mbox_project(tmp_path / "p"))
    assert startup.hold_collector()  # as launch does
    try:
        assert not gc.isenabled()
        app.collector_held = True  # as run_app does, told by launch
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            assert app.main is not None and app.main.panes_ready
            assert gc.isenabled()
    finally:
        gc.enable()
    gc.disable()  # a collector that was off already is not held, nor turned on by the app
    try:
        assert not startup.hold_collector()
    finally:
        gc.enable()
