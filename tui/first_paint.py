"""The first paint: the main screen as the app last drew it, on the terminal before Textual loads.

Most of a start is importing Textual and building the first frame (about 0.3 s of 0.45 s on
the 2-core development machine), and none of it can show anything. So when the app has
listed a project, it keeps the frame of its main screen as it stood then (the list at its
top, its newest threads, the reading pane empty) in the cache folder. The next start writes
that frame to the terminal at once, in the alternate screen, before it imports Textual; the
app's own first frame then replaces it cell for cell (the same screen, now live: keys typed
meanwhile wait for it). What it shows is what the summary cache holds, one start earlier.

The frame is kept only where it may be:

* when the user allows mail metadata on disk (``[settings] cache_summaries`` and every
  account's), and ``[settings] first_paint`` is not false;
* it holds what the start screen shows: subjects, senders, dates and the panes' status,
  never a body (the reading pane is empty, the app checks that before keeping it);
* it is shown only on a terminal of the same size and kind (``TERM``, ``COLORTERM``,
  ``NO_COLOR``), with the same settings file, project file and installed app as when it was
  kept; otherwise it is removed and the start is as without it;
* it reaches the terminal only when it is made of printable text (none of the characters
  core/inert.py marks: controls, bidi controls, invisible ones), line ends, colours (SGR)
  and cursor positions: a frame file that anything else wrote cannot send the terminal any
  other control sequence;
* until the app takes the terminal over, a stop (ctrl+z) waits and an end gives the terminal
  back first (:class:`Shown`);
* it does not pretend to be live: a "starting…" mark sits in its top left corner until the
  app's first frame (live: its keys act from then on) replaces it, and the terminal stops
  echoing and line-editing what is typed meanwhile, so every key waits, as typed, for the app,
  which acts on it once its main screen is up (tui/app.py): an Enter typed on the frame opens
  the thread under the cursor.

Nothing here imports Textual: it runs before Textual loads.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import threading
import zlib
from pathlib import Path

from mailtriage.core import cache_file
from mailtriage.core.inert import MARKED
from mailtriage.core.errors import ConfigError
from mailtriage.core.paths import cache_dir, check_private_dir, private_cache_dir, user_allows_caches

KIND = "first-paint"
VERSION = 1
FOLDER = "frames"
#: What a kept frame may hold: text without the characters the inert boundary never lets
#: through as themselves (controls, ESC among them, bidi controls, invisible ones) or a tab,
#: line ends, SGR (colours and attributes) and cursor positions; exactly what Textual writes
#: for a full update of our screen. Checked in two linear passes (the allowed sequences taken
#: out, then any forbidden character looked for): no pattern here can backtrack.
#: (Pattern texts, compiled on first use by ``re``'s cache: a start without a kept frame never needs them.)
ALLOWED_SEQUENCE = "\x1b\\[[0-9;]{0,64}[mH]"
FORBIDDEN = f"[{MARKED}\t]"
ENTER = "\x1b[?1049h\x1b[?25l\x1b[?2026h"
#: What the app's header says until its keys act (tui/app.py).
STARTING = "starting…"
#: On the frame's top left corner (where the header's icon is): the frame is not live yet.
STARTING_MARK = f"\x1b[1;1H\x1b[0;1;7m {STARTING} \x1b[0m"
#: After the mark, the cursor goes to the top left corner (not the last cell, where anything
#: written would scroll).
LEAVE_SYNC = STARTING_MARK + "\x1b[1;1H\x1b[?2026l"
UNDO = "\x1b[?25h\x1b[?1049l"
#: How long after the whole listing is drawn the app keeps its screen (the footer's keys and
#: the panes' last updates are drawn by then).
KEEP_AFTER = 0.5
#: How many more times (each KEEP_AFTER later) the keep waits for the footer's keys to be drawn.
FOOTER_WAITS = 10
#: Frames kept of one project, one a terminal size: the sizes used last.
SIZES_KEPT = 3
#: A frame is a few tens of KB; anything much larger is not one.
MAX_BYTES = 4 << 20
_APP_FILE = Path(__file__).with_name("app.tcss")  # rewritten by every install: stands for the app's version


def frame_path(project_dir: Path, *, demo: bool, size: tuple[int, int]) -> Path:
    """Where the frame of this project at this terminal size is kept (the demo: one for every
    demo workspace). One file a size: two terminals of other sizes on one project each keep
    their own (they removed each other's before)."""
    return cache_dir() / FOLDER / f"{_name(project_dir, demo=demo)}-{size[0]}x{size[1]}.frame"


def frames_of(project_dir: Path, *, demo: bool) -> list[Path]:
    """The frames kept of this project, at any size, newest first (with one an older version
    kept under the project's name alone)."""
    name = _name(project_dir, demo=demo)
    try:
        folder = cache_dir() / FOLDER
        found = [(path.stat().st_mtime_ns, path) for pattern in (f"{name}-*.frame", f"{name}.frame")
                 for path in folder.glob(pattern)]
    except OSError:
        return []
    return [path for _, path in sorted(found, reverse=True)]


def _forget(project_dir: Path, *, demo: bool) -> None:
    """Remove every frame kept of this project (any size)."""
    for kept in frames_of(project_dir, demo=demo):
        cache_file.remove(kept)


def _name(project_dir: Path, *, demo: bool) -> str:
    if demo:
        return "demo"
    # A name, not a secret: the file says which project it is for (checked before it is shown).
    where = os.fsencode(_project_key(project_dir, demo=False))
    return f"{zlib.crc32(where):08x}{zlib.adler32(where):08x}"


def _project_key(project_dir: Path, *, demo: bool) -> str:
    return "demo" if demo else str(Path(project_dir).resolve())


def is_safe(frame: str) -> bool:
    """Whether ``frame`` holds only text, line ends, SGR and cursor positions (see FORBIDDEN).
    An ESC that does not start an allowed sequence stays after they are taken out, and is
    forbidden."""
    return re.search(FORBIDDEN, re.sub(ALLOWED_SEQUENCE, "", frame)) is None


def _stat(path: Path) -> list[int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return [found.st_size, found.st_mtime_ns]


def signature(project_dir: Path, *, demo: bool, size: tuple[int, int], settings_path: Path) -> list:
    """What the frame's look depends on besides the cached rows: a frame is shown only
    under the signature it was kept with (plain data: it is stored as it is)."""
    return [
        _project_key(project_dir, demo=demo),
        list(size),
        [os.environ.get(name, "") for name in ("TERM", "COLORTERM", "NO_COLOR", "TEXTUAL_COLOR_SYSTEM")],
        _stat(Path(settings_path)),
        None if demo else _stat(Path(project_dir) / "project.md"),
        _stat(_APP_FILE),
    ]


def allowed(settings_data: dict) -> bool:
    """Whether the user lets the app keep a frame: mail metadata on disk for every account
    (``cache_summaries``) and ``[settings] first_paint`` not false."""
    table = settings_data.get("settings")
    if isinstance(table, dict) and table.get("first_paint") is False:
        return False
    accounts = settings_data.get("accounts")
    accounts = accounts.values() if isinstance(accounts, dict) else ()
    return user_allows_caches(settings_data) and all(
        user_allows_caches(settings_data, account) for account in accounts if isinstance(account, dict))


def keep(project_dir: Path, *, demo: bool, size: tuple[int, int], frame: str, settings_path: Path,
         settings_data: dict) -> bool:
    """Keep ``frame`` (Textual's full update of the start screen) for the next start. False
    when it may not be kept (the settings say no) or is not a frame that may be shown; then
    any older one is removed, or the cache folder is one another user could write. Raises
    OSError when the cache folder cannot be written."""
    path = frame_path(project_dir, demo=demo, size=size)
    if not allowed(settings_data):
        _forget(project_dir, demo=demo)
        return False
    if len(frame) > MAX_BYTES or not is_safe(frame):
        cache_file.remove(path)
        return False
    try:
        private_cache_dir(FOLDER)
    except ConfigError:  # a cache folder another user could write: no frame is kept there
        return False
    key = signature(project_dir, demo=demo, size=size, settings_path=settings_path)
    cache_file.write(path, KIND, VERSION, {"signature": key, "frame": frame})
    for older in frames_of(project_dir, demo=demo)[SIZES_KEPT:]:
        cache_file.remove(older)
    cache_file.remove(path.with_name(f"{_name(project_dir, demo=demo)}.frame"))  # an older version's
    return True


class Shown:
    """A kept frame on the terminal (``fd``): the app takes the screen over from it.

    Until it does (:meth:`hand_over`), the terminal is not raw yet, so the keys that stop or
    end a process still work: a stop (ctrl+z) is ignored for that moment (the process would
    stop with the terminal in the alternate screen, the cursor hidden), and a signal that
    ends it gives the terminal back first. Ctrl+c raises KeyboardInterrupt, which the command
    answers with :meth:`undo`.

    Keys typed on the frame (:meth:`hold_keys`): the terminal that reads them (``keys_fd``)
    stops echoing them and editing lines, and passes a carriage return as it is, so each key
    waits, byte for byte, for the app to read it (in line mode an Enter became a line feed, a
    key Textual does not read as Enter, and every key was echoed onto the frame). Its modes
    as they were (:attr:`terminal_modes`) are what the app gives back when it ends or suspends
    (:meth:`give_back`)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        #: The modes of the terminal that reads the keys before :meth:`hold_keys` changed them.
        self.terminal_modes: list | None = None
        self._keys_fd: int | None = None
        self._previous: dict[int, object] = {}
        if threading.current_thread() is not threading.main_thread():
            return  # (signal handlers are set in the main thread only; the command runs there)
        self._previous[signal.SIGTSTP] = signal.signal(signal.SIGTSTP, signal.SIG_IGN)
        for ending in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            self._previous[ending] = signal.signal(ending, self._ended)

    def _ended(self, signum: int, _frame) -> None:
        self.undo()
        os.kill(os.getpid(), signum)  # as it would have ended without us (the handler is undone)

    def hold_keys(self, keys_fd: int) -> None:
        """Keys typed on the terminal ``keys_fd`` from now on wait for the app as typed (see the
        class). Signals stay on: ctrl+c still ends the start. Nothing typed so far is dropped."""
        import termios  # POSIX only, as the terminal this runs on

        try:
            modes = termios.tcgetattr(keys_fd)
            held = termios.tcgetattr(keys_fd)
            held[3] &= ~(termios.ICANON | termios.ECHO | termios.IEXTEN)  # lflag: no line editing, no echo
            held[0] &= ~termios.ICRNL  # iflag: an Enter stays a carriage return
            held[6][termios.VMIN], held[6][termios.VTIME] = 1, 0
            termios.tcsetattr(keys_fd, termios.TCSANOW, held)  # not TCSAFLUSH: a key typed already stays
        except (termios.error, OSError):  # not a terminal (any more): nothing to hold
            return
        self.terminal_modes, self._keys_fd = modes, keys_fd

    def give_back(self) -> None:
        """The terminal's modes as they were before :meth:`hold_keys` (the app has ended)."""
        modes, self.terminal_modes = self.terminal_modes, None
        if modes is not None and self._keys_fd is not None:
            import termios  # loaded by hold_keys

            try:
                termios.tcsetattr(self._keys_fd, termios.TCSANOW, modes)
            except (termios.error, OSError):  # the terminal went away
                pass

    def hand_over(self) -> None:
        """The app takes the terminal over now: the signals are handled as before."""
        previous, self._previous = self._previous, {}
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def undo(self) -> None:
        """The app never started: the terminal back as it was (modes, main screen, cursor shown)."""
        self.hand_over()
        self.give_back()
        try:
            os.write(self.fd, UNDO.encode())
        except OSError:
            pass


def show(project_dir: Path, *, demo: bool, settings_path: Path, fd: int, keys_fd: int | None = 0) -> Shown | None:
    """Write the kept frame of this project to the terminal ``fd`` when it fits (see the
    module's rules); a frame that does not is removed. None when nothing was shown. Keys typed
    on the terminal ``keys_fd`` (standard input) then wait for the app (:meth:`Shown.hold_keys`)."""
    if not os.isatty(fd):  # output to a file or a pipe: no screen to paint
        return None
    columns, lines = shutil.get_terminal_size()  # as Textual reads it (COLUMNS and LINES first)
    path = frame_path(project_dir, demo=demo, size=(columns, lines))
    if not os.path.lexists(path):
        return None
    try:  # a folder another user could write: what it holds is not ours, so it is neither shown nor removed
        check_private_dir(path.parent)
    except ConfigError:
        return None
    kept, _why = cache_file.read(path, KIND, VERSION)  # a link, a FIFO, a file of another user: refused
    frame = kept.get("frame") if isinstance(kept, dict) else None
    fits = (isinstance(frame, str) and len(frame) <= MAX_BYTES
            and kept.get("signature") == signature(project_dir, demo=demo, size=(columns, lines),
                                                   settings_path=settings_path))
    if not fits or not is_safe(frame):
        # Stale (the settings, the project file, the version changed: so are the other sizes'
        # frames) or not ours: every frame of the project goes, kept again later.
        _forget(project_dir, demo=demo)
        return None
    data = (ENTER + frame + LEAVE_SYNC).encode("utf-8", "replace")
    shown = Shown(fd)
    if keys_fd is not None and os.isatty(keys_fd):
        shown.hold_keys(keys_fd)  # before the frame: a key typed the moment it shows waits too
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:  # a terminal that went away, ctrl+c mid-write: nothing half-shown stays
        shown.undo()
        raise
    return shown
