"""Soak: new-report alerts under a long storm of mail (issue 38).

    .venv/bin/python benchmarks/soak_alerts.py [--mails 3000] [--minutes 20] [--interval 5]
    .venv/bin/python benchmarks/soak_alerts.py --mails 300 --minutes 2      # the short run

A real Dovecot holds a few quiet threads. ``mailtriage poll --watch`` runs as a child
process (IDLE wakes it; ``--interval`` is the fallback). Once its silent baseline is set, the
soak APPENDs ``--mails`` mails evenly over ``--minutes`` minutes: a third new reports, a third
replies to old threads, a third replies to new ones. Then it waits (bounded) for the watch to
announce every new report and prints:

* notifications (JSON documents the watch printed) and new reports announced;
* false "new": a thread announced that is not a new report, or one announced twice;
* missed threads: new reports never announced;
* the child's RSS after the baseline, at the end, and its growth;
* with the app open beside it (the default; ``--no-app`` leaves it out): the app runs headless
  in a child of its own (bench_alerts' child: Textual's test driver, 120x40, alerts on) and
  presses j/k every 100 ms through the whole storm; key latency median / p99 / max (from
  posting a key to the end of the refresh that shows the cursor on the next thread), and the
  app's RSS after its first paint and after the storm, once every new thread is listed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_alerts import _mail, _project, _spawn, _wait_line  # noqa: E402  (one mail shape, one project shape, one app child)


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return 0.0


class WatchReader:
    """Reads the watch's JSON documents on a thread: each notification's new-thread subjects."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.baseline = threading.Event()
        self.notifications: list[list[str]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if doc.get("baseline"):
                self.baseline.set()
                continue
            roots = [t.get("subject", "") for t in doc.get("new_threads", [])]
            with self.lock:
                self.notifications.append(roots)

    def announced(self) -> list[str]:
        with self.lock:
            return [r for n in self.notifications for r in n]


def _wait(condition, bound: float) -> bool:
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mails", type=int, default=3000, help="mails in the storm (default 3000)")
    parser.add_argument("--minutes", type=float, default=20.0, help="length of the storm (default 20)")
    parser.add_argument("--old", type=int, default=30, help="quiet threads before the storm (default 30)")
    parser.add_argument("--interval", type=float, default=5.0, help="the watch's poll interval, s (default 5)")
    parser.add_argument("--settle", type=float, default=120.0, help="bound on the wait after the storm, s")
    parser.add_argument("--no-app", dest="app", action="store_false", help="no app child (no key latency)")
    args = parser.parse_args()
    from tests.servers.dovecot import DovecotServer

    with tempfile.TemporaryDirectory(prefix="mailtriage-soak-alerts-") as tmp_name:
        tmp = Path(tmp_name)
        config = tmp / "config"
        config.mkdir()
        (config / "config.toml").write_text('name = "Soak"\n', encoding="utf-8")
        env = {"MAILTRIAGE_CONFIG_DIR": str(config), "MAILTRIAGE_DATA_DIR": str(tmp / "data"),
               "MAILTRIAGE_BENCH_KEYRING": str(tmp / "keyring.json"),
               "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",
               "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")])}
        os.environ["MAILTRIAGE_BENCH_KEYRING"] = env["MAILTRIAGE_BENCH_KEYRING"]
        server = DovecotServer().start()
        proc = app = None
        app_result: dict = {}
        try:
            user = server.add_user()
            client = server.client(user)
            start = datetime.now(timezone.utc) - timedelta(days=10)
            for i in range(args.old):
                when = start + timedelta(hours=5 * i)
                client.append("INBOX", _mail(f"Old report {i}", f"<old-{i}@example.org>", when), msg_time=when)
            project = _project(tmp / "project", env, server, user)
            proc = subprocess.Popen([sys.executable, "-m", "mailtriage.cli.main", "--project", str(project), "poll",
                                     "--watch", "--interval", f"{args.interval:g}"],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    text=True, cwd=ROOT, env={**os.environ, **env})
            reader = WatchReader(proc)
            alerts = tmp / "data" / "alerts"  # the silent baseline is its cursor file
            if not _wait(lambda: reader.baseline.is_set() or (alerts.is_dir() and any(alerts.glob("*.json"))), 120):
                raise RuntimeError("the watch never set its baseline")
            rss_start = _rss_mb(proc.pid)
            if args.app:
                app = _spawn("ours", tmp / "data-app", env, project, args.old + (args.mails + 2) // 3)
                _wait_line(app, "READY")
                app.stdin.write("GO\n")
                app.stdin.flush()
            truth: list[str] = []
            spacing = args.minutes * 60 / max(args.mails, 1)
            began = time.monotonic()
            for n in range(args.mails):
                delay = began + n * spacing - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                now = datetime.now(timezone.utc)
                if n % 3 == 0:
                    raw = _mail(f"Storm report {n}", f"<storm-{n}@example.org>", now)
                    truth.append(f"Storm report {n}")
                elif n % 3 == 1:
                    raw = _mail(f"Re: old {n}", f"<re-{n}@example.org>", now, f"<old-{n % args.old}@example.org>")
                else:
                    raw = _mail(f"Re: storm {n}", f"<re-{n}@example.org>", now, f"<storm-{(n // 3) * 3}@example.org>")
                client.append("INBOX", raw, msg_time=now)
            storm_seconds = time.monotonic() - began
            client.logout()
            _wait(lambda: set(truth) <= set(reader.announced()), args.settle)
            rss_end = _rss_mb(proc.pid)
            if app is not None:
                app.stdin.write("END\n")
                app.stdin.flush()
                app_result = json.loads(_wait_line(app, "RESULT"))
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(60)
            if app is not None:
                if app.poll() is None and not app_result:
                    app.kill()  # it failed on the way: no result to wait for
                app.wait(120)
            server.stop()

    announced = reader.announced()
    false_new = [r for r in announced if r not in set(truth)]
    doubled = len(announced) - len(set(announced))
    missed = sorted(set(truth) - set(announced))
    print(f"\nStorm of {args.mails} mails over {storm_seconds:.0f} s onto {args.old} quiet threads "
          f"(real Dovecot, `mailtriage poll --watch --interval {args.interval:g}`):")
    print(f"  notifications                         {len(reader.notifications)}")
    print(f"  new reports announced (truth)         {len(set(announced) & set(truth))}/{len(truth)}")
    print(f"  false 'new' (not a new report)        {len(false_new)}")
    print(f"  announced twice                       {doubled}")
    print(f"  missed threads                        {len(missed)}")
    print(f"  RSS after baseline / at end (MB)      {rss_start:.0f} / {rss_end:.0f}  ({rss_end - rss_start:+.0f})")
    if app_result:
        keys = sorted(app_result["latencies"])
        ms = lambda q: 1000 * keys[min(len(keys) - 1, int(q * len(keys)))]  # noqa: E731
        print(f"  app open beside it: {len(keys)} keys    median {ms(0.5):.0f} ms, p99 {ms(0.99):.0f} ms, "
              f"max {1000 * keys[-1]:.0f} ms")
        print(f"  app RSS after first paint / after storm (MB)  {app_result['rss_start']:.0f} / "
              f"{app_result['rss_after']:.0f}  ({app_result['rows_after']} threads listed)")
        print(f"  app CPU during the storm              {100 * app_result['cpu']:.0f}% of a core")
    print(f"  machine load average at the end       {os.getloadavg()[0]:.1f} (1 min), {os.getloadavg()[2]:.1f} (15 min)")
    return 0 if not (false_new or doubled or missed) else 1


if __name__ == "__main__":
    sys.exit(main())
