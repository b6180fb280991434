"""Benchmark: a burst of new mail with the app open, beside a naive baseline in the same run.

    .venv/bin/python benchmarks/bench_alerts.py [--threads 500] [--rate 50] [--seconds 30]

A real Dovecot holds a quiet list (``--threads`` reports over the last twenty days). The app
runs headless in a child process of its own (Textual's test driver, 120x40) with
new-report alerts on and a fast poll (``poll_seconds = 1``; IDLE wakes it as well). Once
the list is painted and the silent baseline is set, the benchmark APPENDs ``--rate`` mails a
second for ``--seconds`` seconds (a third new reports, the rest replies to old and new
threads) while the child presses j/k every 100 ms. Figures per child:

* key latency, median and p99: from posting a key (j/k, 10 a second) to the end of the
  refresh that shows the cursor on the next thread;
* notifications per minute, and how many "new reports" they announced in total (the
  truth: the number of new threads);
* memory (RSS) after the burst, once every new thread is listed, against a fresh start on
  the same mail (a third child that opens the list as a user does, its alert poller on,
  measured once the poller set its baseline; before 2026-12-02 it ran without a poller, a
  baseline too low by the poller's own memory);
* CPU, as a share of one core, from the first mail to the last (process CPU time / wall).

Baseline, same run: the same app with the alert handling it had before (every poll's news
notified at once and the whole list reloaded; the news acknowledged once the reload is
painted). Goals: a few notifications a minute, announcing each new report once; memory
after the burst within 20 % of a fresh start; CPU under 30 % of one core at 50 mails/s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIST = "security@bench.example"


def _mail(subject: str, message_id: str, when: datetime, parent: str | None = None) -> bytes:
    thread = f"In-Reply-To: {parent}\r\nReferences: {parent}\r\n" if parent else ""
    return (f"From: Eve Reporter <eve@example.org>\r\nTo: {LIST}\r\nSubject: {subject}\r\n"
            f"Date: {format_datetime(when)}\r\nMessage-ID: {message_id}\r\n{thread}"
            "Content-Type: text/plain; charset=utf-8\r\n\r\ndetails follow\r\n").encode()


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


# -- the child: the app, headless -------------------------------------------------------------

def _naive_app_class():
    """The app with the alert handling it had before coalescing (the baseline): every poll's
    news notified at once, the whole list listed again, and the news acknowledged once that
    listing is painted. Since issue 36 §2 the alerts are a component of the main screen
    (tui/controllers/alerts.py), so the baseline is that component with its handler of the
    news swapped; the listing, the marks and the poll loop are the app's own."""
    from mailtriage.tui.app import MailTriageApp
    from mailtriage.tui.controllers.alerts import Alerts
    from mailtriage.tui.sanitize import inert
    from mailtriage.tui.screens.main import MainScreen

    class NaiveAlerts(Alerts):
        def __init__(self, listing) -> None:
            super().__init__(listing)
            self.pending: list = []  # outcomes shown by the next whole listing

        def on_alerts_found(self, message) -> None:
            if self._listing.defer(self.on_alerts_found, message):
                return
            loop = self.alert_loop
            if loop is None or message.loop is not loop:
                return
            outcome = message.outcome
            self._alert_marks |= {str(t.thread_id) for t in list(outcome.new_threads) + list(outcome.updated_threads)}
            lines = [inert(t.subject or "(no subject)") for t in outcome.new_threads[:5]]
            count = len(outcome.new_threads)
            self.notify("\n".join(lines), title=f"{count} new reports" if count else "New mail", markup=False,
                        timeout=15)
            self.pending.append(outcome)
            self._listing.listing.load_threads(self._listing.current_list)  # every alert: the whole list again

        def forget_news(self, whole: int | None = None) -> None:
            super().forget_news(whole)
            loop = self.alert_loop
            if whole is not None and self.pending and loop is not None:  # a whole listing is shown
                done, self.pending = self.pending, []
                self.call_after_refresh(lambda: [loop.poller.acknowledge(o) for o in done])

    class NaiveMainScreen(MainScreen):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.alerts = NaiveAlerts(self)  # before compose() mounts it

    class NaiveAlertsApp(MailTriageApp):
        def get_default_screen(self) -> MainScreen:
            return NaiveMainScreen()

    return NaiveAlertsApp


#: The fresh start is measured once its poller has listed this many times (1: its baseline).
#: bench_storm.py sets 2: see its docstring.
FRESH_LISTINGS = 1
#: Called as ``hook(when, out)`` where the driver measures memory: ``"start"`` (the fresh
#: start's figure, a storm child's before the storm) and ``"after"`` (after the storm).
MEASURED: list = []


async def _drive(variant: str, project: Path, expected: int) -> dict:
    from mailtriage.core.trace import OPLOG
    from mailtriage.tui.app import MailTriageApp

    listings: list[float] = []  # the poller's listings, as they end
    OPLOG.subscribe(lambda rec: listings.append(time.monotonic())
                    if rec.caller == "poller" and rec.op == "list_recent_threads" else None)

    cls = _naive_app_class() if variant == "naive" else MailTriageApp
    # The fresh start runs its poller too, as a user's does: measured once it set its baseline.
    app = cls(project, cursor_blink=False, alerts=True)
    app.freeze_gc_after_start = True  # as run_app (the mailtriage command) sets it
    # Full collections paced to the idle moments, as run_app does; bench_storm.py's "old" child
    # runs without, for its comparison.
    app.pace_collections = variant != "old"
    out: dict = {"variant": variant}
    go, end = threading.Event(), threading.Event()

    def stdin_reader() -> None:
        for line in sys.stdin:
            if line.strip() == "GO":
                go.set()
            elif line.strip() == "END":
                end.set()
                return

    threading.Thread(target=stdin_reader, daemon=True).start()
    async with app.run_test(size=(120, 40)) as pilot:
        tl = None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            main = app.main
            tl = main.threads.thread_list if main is not None else None
            data = Path(os.environ["MAILTRIAGE_DATA_DIR"]) / "alerts"
            ready = tl is not None and len(tl.rows) > 0 and not main.threads.partial
            if ready and data.is_dir() and any(data.glob("*.json")):
                break
            await pilot.pause(0.05)
        if variant == "fresh":
            while time.monotonic() < deadline and len(listings) < FRESH_LISTINGS:
                await pilot.pause(0.05)
            out["fresh_listings"] = len(listings)
        await pilot.pause(0.5)
        out["rss_start"] = _rss_mb()
        out["rows_start"] = len(tl.rows)
        for hook in MEASURED:
            hook("start", out)
        if variant == "fresh":
            return out
        print("READY", flush=True)
        while not go.is_set():
            await pilot.pause(0.02)
        tl.focus()
        cpu0, wall0 = time.process_time(), time.monotonic()
        latencies, alerts = [], {}
        key_starts: list[float] = []  # perf_counter at each key's post (bench_storm.py's slow keys)
        sampling = True

        async def sample() -> None:
            # Every alert notification seen, on a clock of its own (a slow key never hides one).
            import asyncio

            while sampling:
                try:
                    notes = list(app._notifications)
                except RuntimeError:  # changed meanwhile (a notice expired or came): the next tick sees it
                    notes = []
                for note in notes:
                    if "new report" in (note.title or "") or note.title == "New mail":
                        alerts[note.identity] = note.title
                await asyncio.sleep(0.05)

        import asyncio

        sampler = asyncio.create_task(sample())
        keys = "jjjjjkkkkk"
        n = 0
        key_cpu: list[tuple[float, float]] = []  # (UI thread, whole process) CPU seconds inside each key
        while not end.is_set():
            key_starts.append(time.perf_counter())
            ui0, proc0 = time.thread_time(), time.process_time()
            latencies.append(await _key_latency(app, tl, keys[n % len(keys)]))
            key_cpu.append((time.thread_time() - ui0, time.process_time() - proc0))
            n += 1
            await pilot.pause(0.1)
        out["cpu"] = (time.process_time() - cpu0) / (time.monotonic() - wall0)
        out["burst_seconds"] = time.monotonic() - wall0
        # Settle: every new thread listed (or a minute at most), then memory.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(app.main.threads.thread_list.rows) < expected:
            await pilot.pause(0.1)
        await pilot.pause(getattr(app, "alert_notice_seconds", 5.0) + 2.0)  # the last coalesced notice
        sampling = False
        await sampler
        out["settle_seconds"] = time.monotonic() - wall0 - out["burst_seconds"]
        import gc

        collect0 = time.perf_counter()
        gc.collect()  # what a full collection walks once the storm is over (the frozen state is not)
        out["full_collect_ms"] = (time.perf_counter() - collect0) * 1000
        await pilot.pause(1.0)
        out["rss_after"] = _rss_mb()
        for hook in MEASURED:
            hook("after", out)
        try:  # what of it is heap freed but not given back (glibc keeps it): a diagnostic figure
            import ctypes  # why: glibc's malloc_trim, only here

            ctypes.CDLL("libc.so.6").malloc_trim(0)
            out["rss_after_trim"] = _rss_mb()
        except (OSError, AttributeError):
            pass
        out["rows_after"] = len(app.main.threads.thread_list.rows)
        out["latencies"] = latencies
        out["key_starts"] = key_starts
        out["key_cpu"] = key_cpu
        out["notifications"] = len(alerts)
        out["announced"] = sum(int(m.group(1)) for t in alerts.values() if (m := re.match(r"(\d+) new report", t)))
    return out


async def _key_latency(app, tl, key: str) -> float:
    """From posting ``key`` to the end of the refresh that shows the cursor on another thread."""
    import asyncio

    from textual import events

    before = tl.current.thread_id if tl.current is not None else None
    painted = asyncio.Event()
    t0 = time.perf_counter()
    app.post_message(events.Key(key, key))
    while (tl.current.thread_id if tl.current is not None else None) == before:
        if time.perf_counter() - t0 > 10:
            return time.perf_counter() - t0
        await asyncio.sleep(0.001)
    app.call_after_refresh(painted.set)
    await painted.wait()
    return time.perf_counter() - t0


def child(variant: str, project: Path, expected: int) -> int:
    import asyncio

    result = asyncio.run(_drive(variant, project, expected))
    print("RESULT " + json.dumps(result), flush=True)
    return 0


# -- the parent: Dovecot, the burst, the table ---------------------------------------------------

def _spawn(variant: str, data: Path, env: dict, project: Path, expected: int, *,
           script: str = __file__, extra: tuple[str, ...] = ()) -> subprocess.Popen:
    """A child running ``script --child variant`` (this file's, or a benchmark's that drives
    the app with this file's driver) with a data folder of its own."""
    data.mkdir()
    return subprocess.Popen([sys.executable, script, "--child", variant, "--project", str(project),
                             "--expected", str(expected), *extra],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, **env, "MAILTRIAGE_DATA_DIR": str(data)})


def _wait_line(proc: subprocess.Popen, prefix: str) -> str:
    for line in proc.stdout:
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    raise RuntimeError(f"the {prefix.strip()} line never came (exit {proc.wait()})")


def _burst(server, user, rate: float, seconds: float, tag: str, old: int) -> int:
    """APPEND rate x seconds mails; returns the number of new threads."""
    client = server.client(user)
    new = 0
    try:
        start = time.monotonic()
        total = int(rate * seconds)
        for n in range(total):
            delay = start + n / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            now = datetime.now(timezone.utc)
            if n % 3 == 0:
                raw = _mail(f"Burst report {tag}-{n}", f"<burst-{tag}-{n}@example.org>", now)
                new += 1
            elif n % 3 == 1:
                raw = _mail(f"Re: old {n}", f"<re-{tag}-{n}@example.org>", now, f"<old-{n % old}@example.org>")
            else:
                raw = _mail(f"Re: burst {n}", f"<re-{tag}-{n}@example.org>", now,
                            f"<burst-{tag}-{(n // 3) * 3}@example.org>")
            client.append("INBOX", raw, msg_time=now)
    finally:
        client.logout()
    return new


def _run_variant(variant: str, tmp: Path, env: dict, server, old: int, rate: float, seconds: float) -> dict:
    user = server.add_user()
    client = server.client(user)
    try:
        start = datetime.now(timezone.utc) - timedelta(days=20)
        for i in range(old):
            when = start + timedelta(minutes=57 * i)
            client.append("INBOX", _mail(f"Old report {i}", f"<old-{i}@example.org>", when), msg_time=when)
    finally:
        client.logout()
    project = _project(tmp / f"project-{variant}", env, server, user)
    expected = old + int(rate * seconds + 2) // 3
    proc = _spawn(variant, tmp / f"data-{variant}", env, project, expected)
    try:
        _wait_line(proc, "READY")
        proc.stdin.write("GO\n")
        proc.stdin.flush()
        _burst(server, user, rate, seconds, variant, old)
        proc.stdin.write("END\n")
        proc.stdin.flush()
        result = json.loads(_wait_line(proc, "RESULT"))
    finally:
        proc.wait(timeout=120)
    # A fresh start on the mail the burst left, in a process of its own.
    fresh = _spawn("fresh", tmp / f"data-{variant}-fresh", env, project, expected)
    try:
        result["fresh"] = json.loads(_wait_line(fresh, "RESULT"))
    finally:
        fresh.wait(timeout=120)
    result["new_threads"] = expected - old
    return result


def _project(folder: Path, env: dict, server, user) -> Path:
    from file_keyring import FileKeyring

    account = f"bench{user.name}"
    FileKeyring().set_password("mailtriage", f"imap:{account}", user.password)
    config = Path(env["MAILTRIAGE_CONFIG_DIR"])
    with (config / "config.toml").open("a", encoding="utf-8") as f:
        f.write(textwrap.dedent(f'''
            [accounts.{account}]
            kind = "imap"
            host = "127.0.0.1"
            port = {server.port}
            security = "plain"
            username = "{user.name}"
            access = "read"
        '''))
    folder.mkdir(parents=True)
    since = (datetime.now(timezone.utc) - timedelta(days=30)).date().isoformat()
    (folder / "project.md").write_text(textwrap.dedent(f'''
        # Burst

        ## Mail sources

        | Backend | Role | Mandatory | Notes |
        |---|---|---|---|
        | `imap` | primary | yes | the list folder |

        ## Configuration

        ```yaml
        security_list: {LIST}
        import:
          since: {since}
        mail_sources:
          imap:
            account: {account}
            list: {LIST}
        ```
    '''), encoding="utf-8")
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=500, help="old threads before the burst (default 500)")
    parser.add_argument("--rate", type=float, default=50.0, help="mails a second during the burst (default 50)")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the burst (default 30)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--project", help=argparse.SUPPRESS)
    parser.add_argument("--expected", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, Path(args.project), args.expected)

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from tests.servers.dovecot import DovecotServer

    with tempfile.TemporaryDirectory(prefix="mailtriage-bench-alerts-") as tmp_name:
        tmp = Path(tmp_name)
        config = tmp / "config"
        config.mkdir()
        (config / "config.toml").write_text('name = "Bench"\n[alerts]\npoll_seconds = 1\n', encoding="utf-8")
        os.environ["MAILTRIAGE_BENCH_KEYRING"] = str(tmp / "keyring.json")
        env = {"MAILTRIAGE_CONFIG_DIR": str(config), "MAILTRIAGE_BENCH_KEYRING": str(tmp / "keyring.json"),
               "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",
               "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")])}
        server = DovecotServer().start()
        try:
            results = {v: _run_variant(v, tmp, env, server, args.threads, args.rate, args.seconds)
                       for v in ("ours", "naive")}
        finally:
            server.stop()

    print(f"\nBurst of {args.rate:g} mails/s for {args.seconds:g} s onto {args.threads} quiet threads "
          f"(real Dovecot, app headless, poll every 1 s):")
    print(f"  {'':44} {'ours':>12} {'naive':>12}")

    def row(label: str, fmt, key) -> None:
        print(f"  {label:44} {fmt(key(results['ours'])):>12} {fmt(key(results['naive'])):>12}")

    def ms(q):
        return lambda r: sorted(r["latencies"])[min(len(r["latencies"]) - 1, int(len(r["latencies"]) * q))] * 1000

    row("key latency, median (ms)", "{:.1f}".format, lambda r: statistics.median(r["latencies"]) * 1000)
    row("key latency, p99 (ms)", "{:.1f}".format, ms(0.99))
    row("key presses", "{:d}".format, lambda r: len(r["latencies"]))
    row("notifications per minute", "{:.1f}".format,
        lambda r: r["notifications"] * 60 / (r["burst_seconds"] + r["settle_seconds"]))
    row("notifications", "{:d}".format, lambda r: r["notifications"])
    row("'new reports' announced (truth: new threads)", "{}".format,
        lambda r: f"{r['announced']}/{r['new_threads']}")
    row("threads listed after the burst", "{}".format, lambda r: f"{r['rows_after']}/{r['fresh']['rows_start']}")
    row("memory before the burst (MB)", "{:.0f}".format, lambda r: r["rss_start"])
    row("memory after the burst (MB)", "{:.0f}".format, lambda r: r["rss_after"])
    row("memory of a fresh start, same mail (MB)", "{:.0f}".format, lambda r: r["fresh"]["rss_start"])
    row("after burst vs fresh start", "{:+.0%}".format, lambda r: r["rss_after"] / r["fresh"]["rss_start"] - 1)
    row("CPU during the burst (% of one core)", "{:.0%}".format, lambda r: r["cpu"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
