"""Other mail clients beside ours, for bench_tui.py's IMAP part: aerc and neomutt in tmux.

Each client runs as a fresh process in a detached tmux session of the same size as
bench_tui's pseudo-terminal (120 x 40, no status line), started with ``new-session``; the
benchmark then polls ``capture-pane -p`` every 5 ms until a given text is on the screen
(the newest message's subject, which the folder builder makes unique). Launch (just
before ``new-session`` is sent) → the capture that shows the text is the figure. Both
commands go through one control-mode client (``tmux -C``), so a poll is a line written to
it, not a new tmux process, and costs the measured client little CPU. Our app is measured the same way in the same table, so the
methods match.

Every client gets a throwaway home (``HOME`` and the XDG directories in a temporary
folder): its configuration is written there, and nothing of the user's is read or
written. No client keeps a header cache between runs, so every run is cold, like a
first launch:

* aerc (Debian's 0.14): ``accounts.conf`` (mode 0600, aerc refuses another) with
  ``source = imap+insecure://user:password@127.0.0.1:PORT``; aerc's defaults otherwise
  (no ``cache-headers``, ``dirlist-delay`` 200 ms, newest UID on top) but for the
  ``text/plain=colorize`` filter of its shipped aerc.conf, so an opened message shows its
  body. Threaded:
  ``threading-enabled = true`` in ``[ui]`` (Dovecot offers THREAD, so the server threads).
* neomutt (Debian's 20220429): ``neomutt -n -F muttrc`` (no system muttrc), no header or
  body cache, ``sort = reverse-date``; threaded: ``sort = threads`` with
  ``sort_aux = reverse-last-date-received`` (newest thread on top).

A client that is not installed is skipped, with the command that installs it
(:data:`INSTALL`); they are optional, never part of ``scripts/install-debian``.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

COLS, ROWS = 120, 40
POLL = 0.005  # seconds between two captures (plus the capture itself, well under 1 ms)
INSTALL = "apt-get install -y aerc neomutt tmux"
# label -> (program, threaded)
CLIENTS = {
    "aerc": ("aerc", False),
    "aerc threaded": ("aerc", True),
    "neomutt": ("neomutt", False),
    "neomutt threaded": ("neomutt", True),
}


def installed(program: str) -> bool:
    return shutil.which(program) is not None


def child_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a measured child: ours less what would make it unlike a user's
    (no ``PYTHONDONTWRITEBYTECODE``: an installed app has its .pyc files; no Textual devtools;
    not inside another tmux)."""
    env = {**os.environ, **(extra or {})}
    for name in ("PYTHONDONTWRITEBYTECODE", "TEXTUAL", "TMUX", "TMUX_PANE"):
        env.pop(name, None)
    return env


class Tmux:
    """A private tmux server (its own socket in ``folder``) whose sessions are COLS x ROWS,
    driven through one control-mode client (``tmux -C``): a capture is a command written to
    that client, not a new tmux process, so polling costs the measured client little CPU."""

    def __init__(self, folder: Path, cols: int = COLS, rows: int = ROWS) -> None:
        self.cols, self.rows = cols, rows
        self.tmux = shutil.which("tmux") or "tmux"
        self.socket = folder / "tmux.sock"
        self.env = child_environment()
        self.count = 0
        self.polls: list[float] = []  # the time between two captures, for the resolution
        terminal = "tmux-256color" if _has_terminfo("tmux-256color") else "screen-256color"
        base = [self.tmux, "-S", str(self.socket)]
        # A session that holds the server up between runs; the options apply to every session.
        subprocess.run([*base, "-f", "/dev/null", "new-session", "-d", "-s", "hold", "-x", str(cols), "-y", str(rows),
                        "sleep", "1000000"], env=self.env, check=True, capture_output=True)
        self.control = subprocess.Popen([*base, "-C", "attach-session", "-t", "hold"], env=self.env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.buffer = b""
        for option in (("status", "off"), ("default-terminal", terminal), ("default-size", f"{cols}x{rows}"),
                       ("escape-time", "0"), ("history-limit", "0")):
            self.command("set-option", "-g", *option)

    def command(self, *args: str, check: bool = True, timeout: float = 30.0) -> tuple[bool, str]:
        """Run one tmux command on the control client; return (succeeded, its output)."""
        for arg in args:
            if "'" in arg or "\n" in arg:
                raise ValueError(f"cannot quote {arg!r} for tmux")
        os.write(self.control.stdin.fileno(), (" ".join(f"'{arg}'" for arg in args) + "\n").encode())
        deadline = time.perf_counter() + timeout
        lines: list[bytes] | None = None
        while True:
            line = self._line(deadline)
            if lines is None:
                # Notifications (%session-changed, ...) and the attach's own block carry flag 0.
                if line.startswith(b"%begin ") and line.endswith(b" 1"):
                    lines = []
                continue
            if (line.startswith(b"%end ") or line.startswith(b"%error ")) and line.endswith(b" 1"):
                ok = line.startswith(b"%end ")
                text = b"\n".join(lines).decode("utf-8", errors="replace")
                if check and not ok:
                    raise RuntimeError(f"tmux {' '.join(args)}: {text}")
                return ok, text
            lines.append(line)

    def _line(self, deadline: float) -> bytes:
        fd = self.control.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError("tmux did not answer")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError("the tmux control client exited")
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def measure(self, argv: list[str], env: dict[str, str], marks: dict[str, Callable[[str], bool]],
                timeout: float = 120.0, before_end: Callable[[], object] | None = None,
                keys: dict[str, str] | None = None) -> dict[str, float]:
        """Start ``argv`` in a new session; return, for each mark, the seconds from launch to
        the first capture whose screen text satisfies it. ``keys`` maps a mark to a tmux key
        name (``Enter``) typed the moment that mark is first seen, so a later mark can time
        what the key brings up, from launch. The process is ended afterwards (after
        ``before_end()``, when given)."""
        self.count += 1
        name = f"run{self.count}"
        settings = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
        found: dict[str, float] = {}
        screen = ""
        started = time.perf_counter()
        # More than one argument: tmux runs the program directly, not through sh -c.
        self.command("new-session", "-d", "-s", name, "-x", str(self.cols), "-y", str(self.rows), *settings, *argv)
        try:
            last = None
            while True:
                ok, text = self.command("capture-pane", "-p", "-t", name, check=False)
                now = time.perf_counter()
                if last is not None:
                    self.polls.append(now - last)
                last = now
                if not ok:
                    raise RuntimeError(f"{argv[0]} exited before {sorted(set(marks) - set(found))} showed; "
                                       f"last screen:\n{screen}")
                screen = text
                for mark, seen in marks.items():
                    if mark not in found and seen(screen):
                        found[mark] = now - started
                        if keys and mark in keys:
                            self.command("send-keys", "-t", name, keys[mark])
                if len(found) == len(marks):
                    if before_end is not None:
                        before_end()
                    return found
                if now - started > timeout:
                    raise TimeoutError(f"{argv[0]}: {sorted(set(marks) - set(found))} not seen in {timeout:.0f} s; "
                                       f"last screen:\n{screen}")
                time.sleep(POLL)
        finally:
            self._end(name)

    def measure_open(self, argv: list[str], env: dict[str, str], ready: Callable[[str], bool],
                     shown: Callable[[str], bool], *, idle: float, move: str, rest: float, key: str = "Enter",
                     timeout: float = 120.0, before_end: Callable[[], object] | None = None) -> float:
        """Opening a message once the client is live: start ``argv``, wait until ``ready(screen)``,
        then ``idle`` seconds (its start-up's work done), type ``move`` (to another row), wait
        ``rest`` seconds (a user finding the row), type ``key``: the seconds from that key to the
        first capture that satisfies ``shown``. The process is ended afterwards."""
        self.count += 1
        name = f"run{self.count}"
        settings = [arg for key_, value in env.items() for arg in ("-e", f"{key_}={value}")]
        self.command("new-session", "-d", "-s", name, "-x", str(self.cols), "-y", str(self.rows), *settings, *argv)
        try:
            screen = self._wait(name, ready, time.perf_counter() + timeout, argv[0])[0]
            time.sleep(idle)
            self.command("send-keys", "-t", name, move)
            time.sleep(rest)
            if shown(self.command("capture-pane", "-p", "-t", name, check=False)[1]):
                raise RuntimeError(f"{argv[0]}: shown before the key; screen:\n{screen}")
            started = time.perf_counter()
            self.command("send-keys", "-t", name, key)
            _screen, at = self._wait(name, shown, started + timeout, argv[0])
            if before_end is not None:
                before_end()
            return at - started
        finally:
            self._end(name)

    def _wait(self, name: str, seen: Callable[[str], bool], deadline: float, program: str) -> tuple[str, float]:
        """Poll ``name``'s screen until ``seen``: (that screen, when it was captured)."""
        screen = ""
        while True:
            ok, text = self.command("capture-pane", "-p", "-t", name, check=False)
            now = time.perf_counter()
            if not ok:
                raise RuntimeError(f"{program} exited; last screen:\n{screen}")
            screen = text
            if seen(screen):
                return screen, now
            if now > deadline:
                raise TimeoutError(f"{program}: not seen in time; last screen:\n{screen}")
            time.sleep(POLL)

    def _end(self, name: str) -> None:
        """Kill the session and wait until its process is gone, so runs never overlap."""
        ok, shown = self.command("display-message", "-p", "-t", name, "#{pane_pid}", check=False)
        self.command("kill-session", "-t", name, check=False)
        if not ok or not shown.strip().isdigit():
            return
        pid = int(shown.strip())
        deadline = time.perf_counter() + 5
        while _alive(pid):
            if time.perf_counter() > deadline:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                deadline = time.perf_counter() + 5
            time.sleep(0.02)

    def resolution(self) -> float:
        """The median time between two captures."""
        ordered = sorted(self.polls)
        return ordered[len(ordered) // 2] if ordered else POLL

    def close(self) -> None:
        try:
            self.command("kill-server", check=False, timeout=5)
        except (OSError, RuntimeError, TimeoutError):
            pass  # the server going away may end the control client before it answers
        try:
            self.control.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.control.kill()
            self.control.wait()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def _has_terminfo(name: str) -> bool:
    return any(Path(base, name[0], name).exists() for base in ("/usr/share/terminfo", "/lib/terminfo",
                                                                "/etc/terminfo"))


def client_home(folder: Path) -> dict[str, str]:
    """A throwaway home for one client: HOME and the XDG folders, all below ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(folder)}
    for var, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache"),
                     ("XDG_DATA_HOME", ".local/share"), ("XDG_STATE_HOME", ".local/state")):
        (folder / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(folder / sub)
    return env


def _private_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)


def aerc_command(folder: Path, port: int, user: str, password: str, threaded: bool) -> tuple[list[str], dict[str, str]]:
    env = client_home(folder)
    config = Path(env["XDG_CONFIG_HOME"]) / "aerc"
    _private_file(config / "accounts.conf", (
        "[bench]\n"
        f"source = imap+insecure://{user}:{password}@127.0.0.1:{port}\n"
        "outgoing = /bin/false\n"
        "default = INBOX\n"
        "from = Bench <bench@example.org>\n"))
    # The [filters] line of aerc's shipped aerc.conf (its built-in defaults have none, so a
    # message would open on "No filter configured" and never show its body).
    _private_file(config / "aerc.conf", "[ui]\n" + ("threading-enabled = true\n" if threaded else "")
                  + "[filters]\ntext/plain=colorize\n")
    # Two arguments, so tmux runs it directly rather than through sh -c (as it does our app).
    return [shutil.which("aerc") or "aerc", "-a", "bench"], env


def neomutt_command(folder: Path, port: int, user: str, password: str,
                    threaded: bool) -> tuple[list[str], dict[str, str]]:
    env = client_home(folder)
    muttrc = folder / "muttrc"
    sort = ("set sort = threads\nset sort_aux = reverse-last-date-received\n" if threaded
            else "set sort = reverse-date\n")
    _private_file(muttrc, (
        f'set imap_user = "{user}"\n'
        f'set imap_pass = "{password}"\n'
        f'set folder = "imap://127.0.0.1:{port}/"\n'
        'set spoolfile = "+INBOX"\n'
        "set ssl_starttls = no\n"
        "set ssl_force_tls = no\n"
        'set header_cache = ""\n'  # no header cache: every run is cold, like ours
        'set message_cachedir = ""\n'
        "set imap_check_subscribed = no\n"
        "set mail_check_stats = no\n"
        + sort))
    return [shutil.which("neomutt") or "neomutt", "-n", "-F", str(muttrc)], env


def command(label: str, folder: Path, port: int, user: str, password: str) -> tuple[list[str], dict[str, str]]:
    program, threaded = CLIENTS[label]
    build = aerc_command if program == "aerc" else neomutt_command
    return build(folder, port, user, password, threaded)
