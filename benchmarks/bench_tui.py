"""TUI benchmark: cold start and key-press latency, each beside a bare Textual baseline.

    .venv/bin/python benchmarks/bench_tui.py [--runs 5] [--presses 200]

Every figure comes from a fresh process driven through a pseudo-terminal, as a person
would use it: the benchmark plays the terminal (it answers Textual's query for
synchronized output, so each frame is bracketed and "painted" has a precise meaning)
and reads what the app writes.

1. Cold start: from spawning ``mailtriage --demo`` to the first frame that shows the
   thread list with its rows (the status line "N threads · via …"). Baseline, same
   run: a bare Textual app showing a DataTable (goal for us, issue 15: at most 0.40 s or
   within 1.6x of the bare app; benchmarks/bench_startup.py measures it alternated, with CPU
   time and import times beside it).
2. Key press to repaint: the median time from writing ``j`` to the end of the frame
   that shows the cursor on the next row, moving through a 100,000-row thread list
   (a generated source, see synthetic_source.py). Baseline, same run: Textual's own
   DataTable with 100,000 rows and the down arrow (goal for us: at most 33 ms).
3. With ``--imap N`` (e.g. 100000): launch to the newest threads painted, on an
   N-message folder of a real Dovecot (built like benchmarks/bench_imap.py builds it),
   threaded (our list is always threaded), and to the whole 30-day window. Baseline,
   same run: a bare Textual app that logs in with imapclient, asks the server for
   ``SORT (REVERSE DATE)`` and shows the 50 newest envelopes in a DataTable (no
   threading: the least a client can do). Goal for us: at most 1.0 s to the newest threads.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
COLS, ROWS = 120, 40
SYNC_QUERY = b"\x1b[?2026$p"
SYNC_REPLY = b"\x1b[?2026;2$y"  # "supported, currently reset", as kitty/wezterm/foot answer
FRAME_END = b"\x1b[?2026l"


class Terminal:
    """A child process on a pseudo-terminal of COLS x ROWS."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        full_env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor", **(env or {})}
        full_env.pop("TEXTUAL", None)
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=full_env,
                                     start_new_session=True, cwd=cwd)
        os.close(slave)
        self.fd = master
        self.buffer = b""

    def read_until(self, pattern: re.Pattern, timeout: float = 30.0, frame: bool = True) -> float:
        """Read until ``pattern`` shows up (and, with ``frame``, its frame ends); return the time."""
        deadline = time.perf_counter() + timeout
        while True:
            match = pattern.search(self.buffer)
            if match is not None:
                if not frame:
                    found = time.perf_counter()
                    self.buffer = self.buffer[match.end():]
                    return found
                end = self.buffer.find(FRAME_END, match.end())
                if end != -1:
                    found = time.perf_counter()
                    self.buffer = self.buffer[end + len(FRAME_END):]
                    return found
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                tail = self.buffer[-400:]
                raise TimeoutError(f"{pattern.pattern!r} not seen; last output: {tail!r}")
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise RuntimeError(f"the app exited; last output: {self.buffer[-400:]!r}")
                if SYNC_QUERY in chunk:
                    os.write(self.fd, SYNC_REPLY)
                self.buffer += chunk

    def send(self, data: bytes) -> float:
        self.buffer = b""
        now = time.perf_counter()
        os.write(self.fd, data)
        return now

    def close(self) -> None:
        try:
            os.write(self.fd, b"\x11")  # ctrl+q
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        os.close(self.fd)


BASELINE_APP = textwrap.dedent('''
    import sys
    from textual.app import App
    from textual.widgets import DataTable

    ROWS = int(sys.argv[1])

    class Bare(App):
        def compose(self):
            yield DataTable(cursor_type="row")

        def on_mount(self):
            table = self.query_one(DataTable)
            table.add_columns("date", "n", "from", "subject")
            table.add_rows(
                (f"2026-11-{1 + i % 27:02d} 12:00", str(1 + i % 5), f"Reporter {i % 1000}", f"row {i:06d} subject")
                for i in range(ROWS)
            )
            self.notify  # keep the app identical in spirit: one table, nothing else
            table.focus()

    Bare().run()
''')

SYNTHETIC_APP = textwrap.dedent('''
    import sys
    sys.path.insert(0, {bench!r})
    from mailtriage.backends import registry
    registry.BACKEND_KINDS["synthetic"] = "synthetic_source:SyntheticSource"
    from mailtriage.tui.app import run_app
    sys.exit(run_app(sys.argv[1]))
''')


def cold_start_ours(config_dir: str) -> float:
    # The demo workspace of this run (made by the warm-up start), not the user's.
    demo_dir = str(Path(config_dir).parent / "demo-workspace")
    term = Terminal([PYTHON, "-m", "mailtriage.cli.main", "--demo"],
                    {"MAILTRIAGE_CONFIG_DIR": config_dir, "MAILTRIAGE_DEMO_DIR": demo_dir})
    try:
        painted = term.read_until(re.compile(rb"\d+ threads? \xc2\xb7 via"))
        return painted - term.started
    finally:
        term.close()


def cold_start_baseline(script: str) -> float:
    term = Terminal([PYTHON, script, "41"])
    try:
        painted = term.read_until(re.compile(rb"row 000030 subject"))
        return painted - term.started
    finally:
        term.close()


def write_synthetic_project(folder: Path, threads: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "project.md").write_text(textwrap.dedent(f'''
        # Synthetic 100k

        ## Mail sources

        | Backend | Role | Mandatory | Notes |
        |---|---|---|---|
        | `synthetic` | primary | no | generated threads |

        ## Configuration

        ```yaml
        security_list: security@bench.invalid
        import:
          since: 2000-01-01
        mail_sources:
          synthetic:
            threads: {threads}
        ```
    '''), encoding="utf-8")
    return folder


def key_latency_ours(project: Path, config_dir: str, presses: int) -> list[float]:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(SYNTHETIC_APP.format(bench=str(ROOT / "benchmarks")))
    term = Terminal([PYTHON, script.name, str(project)], {"MAILTRIAGE_CONFIG_DIR": config_dir})
    try:
        term.read_until(re.compile(rb"1/100000 \xc2\xb7 100000 threads"), timeout=60)
        time.sleep(0.5)
        samples = []
        for i in range(2, presses + 2):
            sent = term.send(b"j")
            done = term.read_until(re.compile(rf"(?<![0-9]){i}/100000".encode()))
            samples.append(done - sent)
        return samples
    finally:
        term.close()
        os.unlink(script.name)


def key_latency_baseline(script: str, presses: int) -> list[float]:
    term = Terminal([PYTHON, script, "100000"])
    try:
        term.read_until(re.compile(rb"row 000030 subject"), timeout=60)
        time.sleep(0.5)
        samples = []
        for i in range(1, presses + 1):
            sent = term.send(b"\x1b[B")  # down arrow
            done = term.read_until(re.compile(rf"row {i:06d} subject".encode()))
            samples.append(done - sent)
        return samples
    finally:
        term.close()


IMAP_BASELINE_APP = textwrap.dedent('''
    import sys
    from imapclient import IMAPClient
    from textual.app import App
    from textual.widgets import DataTable

    port, user, password = int(sys.argv[1]), sys.argv[2], sys.argv[3]

    class Bare(App):
        def compose(self):
            yield DataTable(cursor_type="row")

        def on_mount(self):
            self.run_worker(self.load, thread=True)

        def load(self):
            client = IMAPClient("127.0.0.1", port, ssl=False, timeout=600)
            client.login(user, password)
            client.select_folder("INBOX", readonly=True)
            uids = client.sort(["REVERSE DATE"])[:50]
            data = client.fetch(uids, ["ENVELOPE"])
            rows = [(str(uid), (data[uid][b"ENVELOPE"].subject or b"").decode(errors="replace")) for uid in uids]
            self.call_from_thread(self.show, rows)

        def show(self, rows):
            table = self.query_one(DataTable)
            table.add_columns("uid", "subject")
            table.add_row("", "newest-envelopes-painted")
            table.add_rows(rows)
            table.focus()

    Bare().run()
''')


def imap_launch(tmp: Path, messages: int, runs: int) -> None:
    """Part 3: a real Dovecot with an N-message folder; our app and the bare baseline."""
    import multiprocessing
    import pwd
    from datetime import datetime, timedelta, timezone

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_imap import LIST, write_maildir
    from tests.servers.dovecot import DovecotServer

    server = DovecotServer().start()
    try:
        user = server.add_user("bench")
        t0 = time.perf_counter()
        server.mail_root.mkdir(exist_ok=True)
        child = multiprocessing.get_context("fork").Process(target=write_maildir, args=(user.home / "Maildir", messages))
        child.start()
        child.join()
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            for path in (user.home, user.home / "Maildir"):
                os.chown(path, nobody.pw_uid, nobody.pw_gid)
        print(f"IMAP: wrote {messages:,} Maildir files in {time.perf_counter() - t0:.1f} s")
        with server.client(user) as client:  # warm Dovecot's index and header cache, as bench_imap does
            t0 = time.perf_counter()
            client.select_folder("INBOX", readonly=True)
            uids = client.sort(["REVERSE DATE"])
            for i in range(0, len(uids), 5000):
                client.fetch(uids[i:i + 5000], ["UID", "FLAGS", "INTERNALDATE", "RFC822.SIZE",
                                                 "BODY.PEEK[HEADER.FIELDS (FROM TO CC SUBJECT DATE MESSAGE-ID "
                                                 "IN-REPLY-TO REFERENCES LIST-ID LIST-POST)]"])
            print(f"IMAP: warm-up {time.perf_counter() - t0:.1f} s")

        config = tmp / "imap-config"
        config.mkdir()
        (config / "config.toml").write_text(textwrap.dedent(f'''
            [accounts.bench]
            kind = "imap"
            host = "127.0.0.1"
            port = {server.port}
            security = "plain"
            username = "{user.name}"
            access = "read"
            timeout = 600
        '''), encoding="utf-8")
        keyring_file = tmp / "keyring.json"
        env = {"MAILTRIAGE_CONFIG_DIR": str(config), "MAILTRIAGE_BENCH_KEYRING": str(keyring_file),
               "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",
               "PYTHONPATH": str(ROOT / "benchmarks")}
        os.environ["MAILTRIAGE_BENCH_KEYRING"] = str(keyring_file)
        from file_keyring import FileKeyring

        FileKeyring().set_password("mailtriage", "imap:bench", user.password)
        since = (datetime.now(timezone.utc) - timedelta(days=30)).date().isoformat()
        project = tmp / "imap-project"
        project.mkdir()
        (project / "project.md").write_text(textwrap.dedent(f'''
            # IMAP {messages}

            ## Mail sources

            | Backend | Role | Mandatory | Notes |
            |---|---|---|---|
            | `imap` | primary | yes | the benchmark folder |

            ## Configuration

            ```yaml
            security_list: {LIST}
            import:
              since: {since}
            mail_sources:
              imap:
                account: bench
                list: {LIST}
            ```
        '''), encoding="utf-8")
        baseline = tmp / "bare_imap.py"
        baseline.write_text(IMAP_BASELINE_APP, encoding="utf-8")

        newest, whole, bare = [], [], []
        for _ in range(runs):
            term = Terminal([PYTHON, str(baseline), str(server.port), user.name, user.password])
            try:
                bare.append(term.read_until(re.compile(rb"newest-envelopes-painted"), timeout=120) - term.started)
            finally:
                term.close()
            term = Terminal([PYTHON, "-m", "mailtriage.cli.main", "--project", str(project)], env)
            try:
                newest.append(term.read_until(re.compile(rb"threads[^\x1b]{0,40} \xc2\xb7 via list_recent"),
                                              timeout=120) - term.started)
                whole.append(term.read_until(re.compile(rb"\d threads \xc2\xb7 via list_recent"),
                                             timeout=600) - term.started)
            finally:
                term.close()
        print(f"Launch on a {messages:,}-message IMAP folder (real Dovecot), median of {runs} fresh processes:")
        print(f"  mailtriage: newest threads    {statistics.median(newest):6.3f} s   "
              f"(min {min(newest):.3f}, max {max(newest):.3f}; threaded; goal <= 1.000 s)")
        print(f"  mailtriage: whole 30 days     {statistics.median(whole):6.3f} s   "
              f"(min {min(whole):.3f}, max {max(whole):.3f})")
        print(f"  bare Textual + SORT, 50 env.  {statistics.median(bare):6.3f} s   "
              f"(min {min(bare):.3f}, max {max(bare):.3f}; unthreaded)")
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="cold starts of each app (default 5)")
    parser.add_argument("--presses", type=int, default=200, help="key presses per latency run (default 200)")
    parser.add_argument("--imap", type=int, default=0, metavar="N",
                        help="also launch on an N-message Dovecot folder (e.g. 100000; takes minutes)")
    parser.add_argument("--imap-only", action="store_true", help="run part 3 only")
    args = parser.parse_args()
    if args.imap_only:
        with tempfile.TemporaryDirectory(prefix="mailtriage-bench-") as tmp:
            imap_launch(Path(tmp), args.imap or 100_000, args.runs)
        return 0

    with tempfile.TemporaryDirectory(prefix="mailtriage-bench-") as tmp:
        config_dir = str(Path(tmp) / "config")
        baseline = str(Path(tmp) / "bare_datatable.py")
        Path(baseline).write_text(BASELINE_APP, encoding="utf-8")
        project = write_synthetic_project(Path(tmp) / "synthetic", 100_000)

        # One warm-up of each, so the OS file cache is equally warm for both.
        cold_start_baseline(baseline)
        cold_start_ours(config_dir)
        ours, bare = [], []
        for _ in range(args.runs):
            bare.append(cold_start_baseline(baseline))
            ours.append(cold_start_ours(config_dir))
        print("Cold start to the first painted thread list (demo data), median of "
              f"{args.runs} fresh processes:")
        print(f"  mailtriage --demo           {statistics.median(ours):6.3f} s   "
              f"(min {min(ours):.3f}, max {max(ours):.3f}; "
              f"{statistics.median(ours) / statistics.median(bare):.2f}x the bare app; goal <= 0.40 s or <= 1.6x)")
        print(f"  bare Textual + DataTable    {statistics.median(bare):6.3f} s   "
              f"(min {min(bare):.3f}, max {max(bare):.3f})")

        ours_keys = key_latency_ours(project, config_dir, args.presses)
        bare_keys = key_latency_baseline(baseline, args.presses)
        print(f"Key press to repaint, 100,000-row list, {args.presses} presses:")
        for label, samples in (("mailtriage thread list (j)", ours_keys), ("Textual DataTable (down)", bare_keys)):
            ms = sorted(s * 1000 for s in samples)
            p95 = ms[int(len(ms) * 0.95) - 1]
            print(f"  {label:<27} median {statistics.median(ms):6.2f} ms   p95 {p95:6.2f} ms   "
                  f"max {ms[-1]:6.2f} ms" + ("   (goal: median <= 33 ms)" if label.startswith("mail") else ""))
        if args.imap:
            imap_launch(Path(tmp), args.imap, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
