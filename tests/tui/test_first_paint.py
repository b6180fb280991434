"""The first paint (tui/first_paint.py): the start screen the app kept, shown before Textual loads.

End to end on a pseudo-terminal (the real command, a real mbox project), and the rules of
keeping and showing a frame on their own: same terminal and settings only, only when the
user allows mail metadata on disk, never a body, never a control sequence the app would not
write itself.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import stat
import struct
import subprocess
import sys
import termios
import time
import tty
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mailtriage.core import cache_file
from mailtriage.core.inert import terminal_line
from mailtriage.tui import first_paint
from tests.tui.helpers import mbox_project, quit_on_pty

SYNC_QUERY = b"\x1b[?2026$p"
SYNC_REPLY = b"\x1b[?2026;2$y"
LIVE = b"\x1b[?1000h"  # Textual has the terminal (it turns mouse reporting on)
PAINTED = b"threads \xc2\xb7 via"
FRAME = "\x1b[1;1H\x1b[38;2;216;222;230;48;2;0;4;14m Heap overflow \x1b[0m\n\x1b[2;1H  \u2709 row two"


def run_app(project: Path, env: dict[str, str], *, until: bytes, timeout: float = 30.0,
            linger: Path | None = None, stay: float = 0.0) -> bytes:
    """Start the app on a 140x40 pseudo-terminal, read until ``until`` shows up after the app
    went live (and, with ``linger``, until that file exists; then ``stay`` seconds more), quit
    it (ctrl+q); return everything it wrote."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    child_env = {**os.environ, "TERM": "xterm-256color", **env}
    for name in ("COLUMNS", "LINES"):
        child_env.pop(name, None)
    proc = subprocess.Popen([sys.executable, "-m", "mailtriage.cli.main", "--project", str(project)],
                            stdin=slave, stdout=slave, stderr=slave, start_new_session=True, env=child_env)
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + timeout
        while until not in seen[max(seen.find(LIVE), 0):] or LIVE not in seen:
            assert time.monotonic() < deadline, f"{until!r} never drawn; last output: {seen[-600:]!r}"
            if select.select([master], [], [], 0.5)[0]:
                chunk = os.read(master, 65536)
                assert chunk, f"the app exited; last output: {seen[-600:]!r}"
                if SYNC_QUERY in chunk:
                    os.write(master, SYNC_REPLY)
                seen += chunk
        while linger is not None and not linger.exists():
            assert time.monotonic() < deadline, f"{linger} never written"
            if select.select([master], [], [], 0.05)[0]:
                seen += os.read(master, 65536)
        until_time = time.monotonic() + stay
        while time.monotonic() < until_time:
            if select.select([master], [], [], 0.05)[0]:
                seen += os.read(master, 65536)
        return seen
    finally:
        quit_on_pty(proc, master)




def _app_env(folder: Path) -> tuple[Path, dict[str, str], Path]:
    project = mbox_project(folder / "p")
    config, cache = folder / "config", folder / "cache"
    config.mkdir()
    env = {"MAILTRIAGE_CONFIG_DIR": str(config), "MAILTRIAGE_CACHE_DIR": str(cache)}
    return project, env, cache / "frames" / first_paint.frame_path(project, demo=False, size=(140, 40)).name


@pytest.fixture
def app_env(tmp_path) -> tuple[Path, dict[str, str], Path]:
    """A project, the environment the app runs in (config and cache folders of its own) and
    where the app keeps its start screen."""
    return _app_env(tmp_path)


@pytest.fixture(scope="module")
def first_start(tmp_path_factory):
    """The first start of the app on a project of its own (``app_env``), run until it kept its
    screen: the environment, what it wrote to the terminal, and the kept file's mode and bytes
    as they were then. One start for the two tests below: the first starts the app again on
    the same folders, the second reads only what was taken here."""
    project, env, path = _app_env(tmp_path_factory.mktemp("first-start"))
    # Kept a moment after the whole listing is drawn (here after the head start's rows).
    first = run_app(project, env, until=PAINTED, linger=path)
    kept, _ = cache_file.read(path, first_paint.KIND, first_paint.VERSION)
    return project, env, path, first, stat.S_IMODE(path.stat().st_mode), path.read_bytes(), kept


def test_the_next_start_paints_the_kept_screen_before_the_app_is_live(first_start):
    project, env, path, first, mode, _, _ = first_start
    assert first.find(b"Heap overflow in the frob parser") > first.find(LIVE) > 0  # nothing kept before: live only
    assert mode == 0o600
    second = run_app(project, env, until=PAINTED)
    before_live = second[:second.find(LIVE)]
    # The rows, before Textual loaded: in the alternate screen, with the cursor hidden.
    assert before_live.startswith(first_paint.ENTER.encode())
    for subject in (b"Heap overflow in the frob parser", b"Question about 3.4 fixes"):
        assert subject in before_live
    assert b"3 threads \xc2\xb7 via list_recent_threads" in before_live
    assert b"Heap overflow in the frob parser" in second[second.find(LIVE):]  # then the app itself


def test_a_kept_screen_holds_no_body_and_shows_hostile_text_inert(first_start):
    *_, data, kept = first_start
    assert b"Heap overflow in the frob parser" in data  # a subject: metadata, as the summary cache holds
    for body in (b"overflows the parser's heap buffer", b"Will 3.4 get the fix?", b"compromised",
                 b"leak@attacker.invalid"):
        assert body not in data
    # The hostile subject's escape sequence is not in it: only colours and cursor positions are.
    assert "\x1b[31mURGENT" not in kept["frame"] and first_paint.is_safe(kept["frame"])


def test_no_screen_is_kept_when_the_user_keeps_no_mail_metadata_on_disk(app_env):
    project, env, path = app_env
    settings = Path(env["MAILTRIAGE_CONFIG_DIR"]) / "config.toml"
    settings.write_text("[settings]\ncache_summaries = false\n", encoding="utf-8")
    # Long enough after the whole listing for the app to keep its screen, were it allowed to.
    run_app(project, env, until=PAINTED, stay=first_paint.KEEP_AFTER + 2.0)
    assert not path.parent.exists() or not any(path.parent.iterdir())


# -- keeping and showing, on their own ----------------------------------------------------------

@pytest.fixture
def terminal(monkeypatch, cache):
    """A pseudo-terminal of 100x30 (as the app's size is read: COLUMNS and LINES first);
    yields (the app's end, a reader of what reached the other end)."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("LINES", "30")
    master, slave = os.openpty()
    tty.setraw(slave)  # the bytes as written (no "\r" added before "\n")

    def written() -> bytes:
        out = b""
        while select.select([master], [], [], 0.1)[0]:
            out += os.read(master, 65536)
        return out

    yield slave, written
    os.close(master)
    os.close(slave)


@pytest.fixture
def settings_path(tmp_path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text('name = "T"\n', encoding="utf-8")
    return path


def keep(project: Path, settings_path: Path, frame: str = FRAME, size=(100, 30), data: dict | None = None) -> bool:
    return first_paint.keep(project, demo=False, size=size, frame=frame, settings_path=settings_path,
                            settings_data={} if data is None else data)


def test_a_kept_frame_is_shown_on_the_same_terminal(tmp_path, terminal, settings_path):
    fd, written = terminal
    assert keep(tmp_path, settings_path)
    assert first_paint.show(tmp_path, demo=False, settings_path=settings_path, fd=fd) is not None
    assert written().decode() == first_paint.ENTER + FRAME + first_paint.LEAVE_SYNC


def test_nothing_is_written_where_the_app_draws_to_no_terminal(tmp_path, settings_path, monkeypatch, cache):
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("LINES", "30")
    keep(tmp_path, settings_path)
    read_end, write_end = os.pipe()
    try:
        assert first_paint.show(tmp_path, demo=False, settings_path=settings_path, fd=write_end) is None
        os.close(write_end)
        assert os.read(read_end, 100) == b""
    finally:
        os.close(read_end)


def test_an_app_that_never_starts_gives_the_terminal_back(tmp_path, terminal, settings_path):
    fd, written = terminal
    keep(tmp_path, settings_path)
    shown = first_paint.show(tmp_path, demo=False, settings_path=settings_path, fd=fd)
    written()
    shown.undo()
    assert written() == b"\x1b[?25h\x1b[?1049l"


@pytest.mark.parametrize("change", ["settings", "project", "term"])
def test_a_frame_of_another_terminal_or_settings_is_not_shown_and_removed(tmp_path, terminal, settings_path,
                                                                         monkeypatch, change):
    fd, written = terminal
    (tmp_path / "project.md").write_text("# P\n", encoding="utf-8")
    keep(tmp_path, settings_path)
    if change == "settings":
        settings_path.write_text('name = "T"\ntheme = "nord"\n', encoding="utf-8")
    elif change == "project":
        (tmp_path / "project.md").write_text("# P, renamed\n", encoding="utf-8")
    else:
        monkeypatch.setenv("TERM", "vt100")
    assert first_paint.show(tmp_path, demo=False, settings_path=settings_path, fd=fd) is None
    assert written() == b""
    assert not first_paint.frames_of(tmp_path, demo=False)


def test_a_frame_of_another_size_is_not_shown_and_stays_for_that_size(tmp_path, terminal, settings_path,
                                                                      monkeypatch):
    """Two terminals of other sizes on one project: each start shows its own size's frame (they
    removed each other's before, so neither had a first paint)."""
    fd, written = terminal
    assert keep(tmp_path, settings_path, frame="\x1b[1;1Hat 100x30")
    assert keep(tmp_path, settings_path, frame="\x1b[1;1Hat 101x30", size=(101, 30))
    assert first_paint.show(tmp_path, demo=False, settings_path=settings_path, fd=fd) is not None
    assert "at 100x30" in written().decode()
    monkeypatch.setenv("COLUMNS", "101")
    assert first_paint.show(tmp_path, demo=False, settings_path=settings_path, fd=fd) is not None
    assert "at 101x30" in written().decode()
    monkeypatch.setenv("COLUMNS", "102")
    assert first_paint.show(tmp_path, demo=False, settings_path=settings_path, fd=fd) is None
    assert written() == b""
    assert len(first_paint.frames_of(tmp_path, demo=False)) == 2


def test_only_the_sizes_used_last_are_kept(tmp_path, settings_path):
    for columns in range(100, 100 + first_paint.SIZES_KEPT + 2):
        assert keep(tmp_path, settings_path, size=(columns, 30))
        os.utime(first_paint.frame_path(tmp_path, demo=False, size=(columns, 30)), ns=(columns * 10**9,) * 2)
    assert first_paint.frames_of(tmp_path, demo=False) == [
        first_paint.frame_path(tmp_path, demo=False, size=(columns, 30))
        for columns in range(100 + first_paint.SIZES_KEPT + 1, 100 + 1, -1)]


@pytest.mark.parametrize("hostile", [
    "\x1b]52;c;ZWNobyBwd25lZA==\x07",  # OSC 52: write the clipboard
    "\x1b[2J",  # clear the screen
    "\x1b[?1049l",  # leave the alternate screen
    "\x1bP$q\x1b\\",  # a DCS query, answered into the input
    "\x9b31m",  # a C1 CSI
    "\x07",  # bell
    "\r",
    "\t",
    "\u202e",  # a bidi override (the inert boundary shows it as a marker, the app never writes it)
    "\u200b",  # zero width
])
def test_a_frame_with_any_other_control_sequence_is_never_written(tmp_path, terminal, settings_path, hostile):
    fd, written = terminal
    assert not keep(tmp_path, settings_path, frame=FRAME + hostile)
    assert not first_paint.frames_of(tmp_path, demo=False)
    # Written by something else than the app (the same file format, the right signature):
    path = first_paint.frame_path(tmp_path, demo=False, size=(100, 30))
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = first_paint.signature(tmp_path, demo=False, size=(100, 30), settings_path=settings_path)
    cache_file.write(path, first_paint.KIND, first_paint.VERSION, {"signature": key, "frame": FRAME + hostile})
    assert first_paint.show(tmp_path, demo=False, settings_path=settings_path, fd=fd) is None
    assert written() == b""
    assert not path.exists()


def test_a_damaged_frame_file_is_not_shown(tmp_path, terminal, settings_path):
    fd, written = terminal
    keep(tmp_path, settings_path)
    path = first_paint.frame_path(tmp_path, demo=False, size=(100, 30))
    path.write_bytes(path.read_bytes()[:-7])
    assert first_paint.show(tmp_path, demo=False, settings_path=settings_path, fd=fd) is None
    assert written() == b""


@pytest.mark.parametrize("settings", [
    {"settings": {"cache_summaries": False}},
    {"settings": {"first_paint": False}},
    {"accounts": {"work": {"kind": "imap", "cache_summaries": False}}},
])
def test_no_frame_is_kept_against_the_settings_and_an_older_one_goes(tmp_path, settings_path, settings):
    assert keep(tmp_path, settings_path)
    assert not keep(tmp_path, settings_path, data=settings)
    assert not first_paint.frames_of(tmp_path, demo=False)


def test_the_demo_has_one_frame_for_all_its_workspaces(tmp_path):
    size = (100, 30)
    assert first_paint.frame_path(tmp_path / "a", demo=True, size=size) == \
        first_paint.frame_path(tmp_path / "b", demo=True, size=size)
    assert first_paint.frame_path(tmp_path / "a", demo=False, size=size) != \
        first_paint.frame_path(tmp_path / "b", demo=False, size=size)


# What Textual writes for our screen: mail text as the inert boundary renders it for a
# terminal, line ends, colours and cursor positions.
# The colours and positions are the strings of ``\x1b\[[0-9;]{0,8}[mH]``, built from their parts:
# drawn through ``st.from_regex(..., fullmatch=True)`` they were ~45% of this test's CPU (the
# regex strategy's filtered draws and its per-draw cache), the same strings.
_SEQUENCE = st.builds(lambda params, end: f"\x1b[{params}{end}", st.text("0123456789;", max_size=8),
                      st.sampled_from("mH"))
_ALLOWED = st.one_of(st.text(min_size=1).map(terminal_line), st.just("\n"), _SEQUENCE)


#: Hypothesis's too_slow check is a wall clock: at load 16-23 one draw took 1.7 s and failed it.
LOADED = settings(suppress_health_check=[HealthCheck.too_slow])


@LOADED
@given(st.lists(_ALLOWED, max_size=12))
def test_any_mail_text_through_the_inert_boundary_makes_a_safe_frame(parts):
    assert first_paint.is_safe("".join(parts))


@LOADED
@given(st.text(), st.sampled_from([chr(c) for c in [*range(0, 10), *range(11, 32), *range(0x7f, 0xa0)]]),
       st.text())
def test_a_control_character_outside_colours_and_positions_is_refused(before, control, after):
    text = before + control + after
    if control == "\x1b":
        text = before + "\x1b" + "]" + after  # an escape that starts no SGR or cursor position
    assert not first_paint.is_safe(text)


# -- what the app keeps -----------------------------------------------------------------------

async def test_the_app_keeps_its_start_screen_once_the_listing_is_whole(tmp_path, user_config, cache,
                                                                         monkeypatch):
    from tests.tui.helpers import make_app, screen_text, settle, until

    # The keep waits for the footer's keys FOOTER_WAITS times (5 s), then keeps the frame without
    # them: at load 16-23 the footer came later. Here it waits as long as the footer takes.
    monkeypatch.setattr(first_paint, "FOOTER_WAITS", 10**6)
    project = mbox_project(tmp_path / "p")
    app = make_app(project)
    app.first_paint_project = (project, False)
    path = first_paint.frame_path(project, demo=False, size=(140, 40))
    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, path.exists, "the start screen kept")  # once the footer's keys are drawn too
        await settle(pilot)
        kept, _ = cache_file.read(path, first_paint.KIND, first_paint.VERSION)
        assert kept is not None and kept["signature"][1] == [140, 40]
        assert app.main.footer_drawn()
        lines = screen_text(app).splitlines()
    # The screen as it stands, every line in its place (the footer's keys too).
    assert [line.rstrip() for line in re_sub_sequences(kept["frame"]).split("\n")] == lines
    assert "Question about 3.4 fixes" in lines[2] and "q Quit" in lines[-1]


async def test_the_screen_is_kept_only_once_the_footer_shows_its_keys(tmp_path, user_config, cache):
    """On a busy machine the footer's keys come late: a screen kept before them would paint an
    empty footer at the next start (seen under load). The keep waits for them."""
    from textual.widgets import Footer

    from tests.tui.helpers import make_app, settle

    project = mbox_project(tmp_path / "p")
    app = make_app(project)
    path = first_paint.frame_path(project, demo=False, size=(140, 40))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        footer = app.main.query_one(Footer)
        footer.display = False  # its keys not laid out, as before they are drawn
        await settle(pilot)
        assert not app.main.footer_drawn()
        app.first_paint_project = (project, False)
        app.keep_first_frame()
        await pilot.pause(first_paint.KEEP_AFTER + 0.3)
        await settle(pilot)
        assert not path.exists()
        footer.display = True
        for _ in range(5):
            await pilot.pause(first_paint.KEEP_AFTER + 0.3)
            await settle(pilot)
            if path.exists():
                break
        kept, _ = cache_file.read(path, first_paint.KIND, first_paint.VERSION)
    assert kept is not None and "q Quit" in re_sub_sequences(kept["frame"]).split("\n")[-1]


async def test_no_screen_without_the_footer_s_keys_is_ever_kept(tmp_path, user_config, cache):
    """A full run at load 13-20 kept a start screen whose last line was blank (the next start
    would paint it without its keys): the keys were laid out (``footer_drawn``) but not in the
    frame, or the keep stopped waiting for them. Only a frame that shows them is kept; when
    they do not come, none is (the next start draws as without one)."""
    from textual.widgets import Footer

    from tests.tui.helpers import make_app, settle

    project = mbox_project(tmp_path / "p")
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        footer = app.main.query_one(Footer)
        footer.line_keys = lambda: []  # the line of keys drawn with none (tui/footer.py)
        for key in footer.query("FooterKey"):
            key.key_display = key.description = ""  # laid out, keys and all, but no text painted
            key.refresh()
        await settle(pilot)
        assert app.main.footer_drawn()
        app.first_paint_project = (project, False)
        for _ in range(first_paint.FOOTER_WAITS + 1):  # every wait used, the keys never painted
            app.keep_first_frame()
        await settle(pilot)
    assert not first_paint.frames_of(project, demo=False)


async def test_no_screen_is_kept_while_a_thread_is_open(tmp_path, user_config, cache):
    from tests.tui.helpers import make_app, reader_text, settle

    project = mbox_project(tmp_path / "p")
    app = make_app(project)
    path = first_paint.frame_path(project, demo=False, size=(140, 40))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert "Will 3.4 get the fix?" in reader_text(app)  # a body on screen
        app.first_paint_project = (project, False)
        app.keep_first_frame()
        await settle(pilot)
    assert not first_paint.frames_of(project, demo=False)


def re_sub_sequences(frame: str) -> str:
    """The frame's text: its colours and cursor positions taken out."""
    import re

    return re.sub(r"\x1b\[[0-9;]*[mH]", "", frame)


async def test_no_screen_is_kept_while_another_list_is_shown(tmp_path, user_config, cache):
    from tests.tui.helpers import make_app, settle

    project = mbox_project(tmp_path / "p", extra_rows=[("other", "fallback", "no")],
                           extra_config={"mail_sources": {
                               "mbox": {"path": "list.mbox", "list": "security@frob.example", "parallel": False},
                               "other": {"kind": "mbox", "path": "list.mbox", "list": "dev@frob.example"}}})
    app = make_app(project)
    path = first_paint.frame_path(project, demo=False, size=(140, 40))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        folders = app.main.folders
        assert folders.start_list() == "security@frob.example"
        app.main.listing.load_threads("dev@frob.example")
        await settle(pilot)
        app.first_paint_project = (project, False)
        app.keep_first_frame()
        await settle(pilot)
    assert not first_paint.frames_of(project, demo=False)


def test_the_first_paint_is_written_before_textual_loads():
    """The command writes the kept screen before it imports the app: nothing it needs may load Textual."""
    done = subprocess.run([sys.executable, "-c", "import sys, mailtriage.cli.main, mailtriage.tui.first_paint, "
                           "mailtriage.tui.head_start, mailtriage.tui.startup; print(sorted(m for m in sys.modules if m.startswith('textual')))"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


async def test_no_screen_is_kept_when_the_settings_file_cannot_be_read(tmp_path, user_config, cache):
    """A settings file with a typo may be the one that says cache_summaries = false."""
    from tests.tui.helpers import make_app, settle

    (user_config / "config.toml").write_text("[settings]\ncache_summaries = false\n[broken\n", encoding="utf-8")
    project = mbox_project(tmp_path / "p")
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        app.clear_notifications()  # (the problem is notified; without the notification it still holds)
        app.first_paint_project = (project, False)
        app.keep_first_frame()
        await settle(pilot)
    assert not first_paint.frames_of(project, demo=False)


def test_checking_a_long_frame_that_fails_ends_at_once():
    """The check is linear: a long run of text then one bad character (it once backtracked for
    ever, the app hung and ctrl+c did nothing)."""
    code = ("from mailtriage.tui import first_paint\n"
            "print(first_paint.is_safe('a' * 200000 + '\\x07'), first_paint.is_safe('a' * 200000))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "True"], done.stderr


STOP_SCRIPT = """
import os, pty, select, signal, sys
from pathlib import Path
from mailtriage.tui import first_paint
project, settings = Path(sys.argv[1]), Path(sys.argv[2])
os.environ["COLUMNS"], os.environ["LINES"] = "100", "30"
first_paint.keep(project, demo=False, size=(100, 30), frame="\\x1b[1;1Hrow", settings_path=settings,
                 settings_data={})
master, slave = pty.openpty()
pid = os.fork()
if pid == 0:  # the command: the kept screen shown, then a stop and an end before the app takes over
    os.close(master)
    first_paint.show(project, demo=False, settings_path=settings, fd=slave)
    os.kill(os.getpid(), signal.SIGTSTP)  # ignored for now
    os.write(slave, b"still running")
    os.kill(os.getpid(), signal.SIGTERM)
    os._exit(0)
os.close(slave)
_, status = os.waitpid(pid, 0)
out = b""
while select.select([master], [], [], 0.5)[0]:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # the other end is closed
        break
    if not chunk:
        break
    out += chunk
print(os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM)
print(out.hex())
"""


def test_a_stop_or_an_end_before_the_app_takes_over_leaves_the_terminal_usable(tmp_path, cache):
    settings = tmp_path / "config.toml"
    settings.write_text("", encoding="utf-8")
    script = tmp_path / "stop.py"
    script.write_text(STOP_SCRIPT, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), str(tmp_path), str(settings)], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "MAILTRIAGE_CACHE_DIR": str(cache)})
    ended_by_term, written = done.stdout.split()
    written = bytes.fromhex(written)
    assert ended_by_term == "True", done.stderr
    assert written.startswith(first_paint.ENTER.encode()) and b"row" in written
    # Still running after the stop, and the terminal given back before the end.
    assert written.endswith(b"still running" + first_paint.UNDO.encode())


async def test_the_demo_opened_from_the_first_run_screen_is_not_kept_as_the_project(tmp_path, monkeypatch,
                                                                                   user_config, cache):
    """`d` on the first-run screen lists the demo: its screen is not the missing project's start screen."""
    from tests.tui.helpers import make_app, settle

    monkeypatch.setenv("MAILTRIAGE_DEMO_DIR", str(tmp_path / "demo-workspace"))
    missing = tmp_path / "nowhere"
    app = make_app(missing)
    app.first_paint_project = (missing, False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        await pilot.pause(first_paint.KEEP_AFTER + 0.3)
        await settle(pilot)
        assert len(app.main.threads.thread_list.rows) == 42  # the demo is listed (and would be kept)
    assert not first_paint.frames_of(missing, demo=False)
    assert not first_paint.frames_of(missing, demo=True)


def test_changed_settings_remove_the_frames_of_every_size(tmp_path, terminal, settings_path):
    """A review found that only the current size's frame went when the settings changed: the
    others stayed on disk (with subjects and senders) until a later keep."""
    fd, written = terminal
    assert keep(tmp_path, settings_path)
    assert keep(tmp_path, settings_path, size=(120, 40))
    settings_path.write_text('name = "T"\n[settings]\nfirst_paint = false\n', encoding="utf-8")
    assert first_paint.show(tmp_path, demo=False, settings_path=settings_path, fd=fd) is None
    assert written() == b""
    assert not first_paint.frames_of(tmp_path, demo=False)


def test_the_frame_an_older_version_kept_goes_with_the_others(tmp_path, settings_path):
    older = first_paint.frame_path(tmp_path, demo=False, size=(100, 30)).with_name(
        first_paint.frame_path(tmp_path, demo=False, size=(100, 30)).name.split("-")[0] + ".frame")
    older.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    cache_file.write(older, first_paint.KIND, first_paint.VERSION, {"signature": [], "frame": FRAME})
    assert first_paint.frames_of(tmp_path, demo=False) == [older]
    assert not keep(tmp_path, settings_path, data={"settings": {"cache_summaries": False}})
    assert not older.exists()
    cache_file.write(older, first_paint.KIND, first_paint.VERSION, {"signature": [], "frame": FRAME})
    assert keep(tmp_path, settings_path)
    assert not older.exists()
