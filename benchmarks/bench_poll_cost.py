"""Benchmark: what one alert poll costs when one mail arrived, against the size of its window.

    .venv/bin/python benchmarks/bench_poll_cost.py [--window 20000] [--polls 30] [--base DIR]

A real Dovecot holds ``--window`` messages that arrived over the last 2.5 days (a third new
reports, the rest replies: the 3-day window of a poller late in a 30-minute storm holds some
20,000). The app's poller (``PollFlow.for_alerts``: its own sources, window-only, as the app
runs it) sets its silent baseline, then ``--polls`` times one mail is APPENDed by another
client (a new report, a reply to an old thread, a reply to a new one, in turn) and the poller
polls and acknowledges. Per poll: the UI-independent CPU time of the poll (``time.thread_time``
of the thread that polls: load does not inflate it), its wall time, and the IMAP commands it
sent (from the protocol trace). ``--base DIR`` runs the same in a checkout of the code
before (its ``mailtriage`` found first), on the same server, one after the other.

Issue 39's goal: a poll costs what changed, not the window (CPU per poll flat as the window
grows, and no SEARCH/FETCH over the whole window after one new mail).

Figures of 2026-12-03 (2 cores shared with other helpers), 612ee71 (base) / the poll branch:
``--window 20000 --polls 20``, load 6.1: thread CPU per poll median 26.7 / 6.4 ms (the
listing's part 15.5 / 3.2), max 49.3 / 14.1 ms, wall 171 / 129 ms; 4 IMAP commands a poll
(NOOP, SELECT, UID FETCH of the new UIDs, UID FETCH CHANGEDSINCE) against 5 (and a UID SEARCH
of the whole cached range); 7 new / 13 updated found by each. ``--window 6000 --polls 12``,
load 5.7: 15.7 / 5.2 ms.

``--windows 2000,6000,20000`` runs each size on a server of its own and ends with a table of the
poll's CPU against the window, with the cursor save (the app saves each acknowledgement, on a
worker thread). Figures of 2026-12-03, the change feed and the cursor journal (pollcpu) against
ee086a7 (base), ``--windows 2000,6000,20000 --polls 15 --base``, load 9.5 -> 9.2, median ms of
thread CPU, base / now: poll 4.3 / 3.9, 6.1 / 4.7, 10.8 / 5.3 (the poller's own part, the poll
less the listing: 1.0 / 0.4, 2.3 / 0.5, 6.2 / 0.6: flat); the listing 3.3 / 3.5, 3.8 / 4.2,
4.6 / 4.7 (its Python work is a few hundred microseconds: cProfile of 20 polls at 20,000; the
rest is the four commands' socket work); the cursor save 1.9 / 0.5, 3.5 / 0.5, 10.2 / 0.7 (the
whole cursor, pretty-printed, against one journal line). Same threads found (5 new / 10 updated).

Figures of 2026-12-03, the catch-up without a SELECT (pollimap7) against a163c0b (base), same
command, load 10.1 -> 10.6, median ms of thread CPU, base / now: the listing 2.9 / 2.1,
2.8 / 2.3, 4.3 / 2.7; the poll 3.4 / 2.5, 3.3 / 2.8, 4.7 / 3.2; poll wall 28.7 / 17.6, 71.6 /
27.8, 345 / 46.5 (a SELECT cost Dovecot ~200 ms at 20,000 messages); 3 IMAP commands a poll
(NOOP, UID SEARCH MODSEQ, UID FETCH of the new UIDs) against 4 (NOOP, SELECT, UID FETCH new,
UID FETCH CHANGEDSINCE over the cached range); the cursor save 0.5 / 0.6, 0.5 / 0.6, 0.6 / 0.7
(the journal's flock). Same threads found. What is left of the listing's growth is mostly
waiting on Dovecot's NOOP (its Maildir sync: ~45 ms wall at 20,000, 1 ms at 2,000).
``BENCH_PROFILE=1`` (own time) or ``=cumulative`` prints a cProfile of the polls' thread CPU.

Figures of 2026-12-04 (storm8), b67b714 (base) / storm8, ``--windows 2000,6000,20000 --polls 15
--base``, load 16.3 -> 17.5, median ms of thread CPU: the listing 1.6 / 1.9, 2.1 / 2.1, 2.1 /
2.0; the poll 2.0 / 2.2, 2.4 / 2.5, 2.5 / 2.3; the cursor save 0.5-0.6 in both; poll wall 25.4 /
22.6 ms at 6,000, 55.0 / 43.6 at 20,000. Flat. ``BENCH_PROFILE=1 --windows 2000,20000 --polls 20``:
45,881 against 46,158 function calls for the 20 polls, 0.174 against 0.176 s; no function of
ours grows with the window (the few that differ are imaplib's reads of the longer UIDs; a fifth
of the poll's profiled time is the protocol trace's redaction, subscribed to by this benchmark).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_alerts  # noqa: E402  (the mail shape, the project shape)


def child(project: Path, polls: int, window: int) -> int:
    from imapclient import IMAPClient

    from mailtriage.application.flows.alerts import PollFlow
    from mailtriage.core.projectconfig import load_project
    from mailtriage.core.trace import TRACE

    config = load_project(project)
    flow = PollFlow.for_alerts(config)
    listing_cpu: list[float] = []  # the thread CPU of each poll's listing (the backend's part)
    for backend in flow.poller.sources.backends.values():
        # What the poller calls: the change feed (since issue 39's feed), else the listing.
        name = "list_recent_changes" if hasattr(backend, "list_recent_changes") else "list_recent_threads"
        listing = getattr(backend, name)

        def timed(*args, _listing=listing, **kwargs):
            c = time.thread_time()
            try:
                return _listing(*args, **kwargs)
            finally:
                listing_cpu.append(time.thread_time() - c)

        setattr(backend, name, timed)
    poller = flow.poller
    sent: list[str] = []
    TRACE.subscribe(lambda line: sent.append(line.text) if line.direction == ">" else None)
    t0 = time.perf_counter()
    c0 = time.thread_time()
    baseline = poller.poll()
    poller.acknowledge(baseline)
    first = {"wall": time.perf_counter() - t0, "cpu": time.thread_time() - c0}
    for _ in range(3):  # settled: the listing's memo and cache in step
        poller.acknowledge(poller.poll())
    host, port, user, password = os.environ["BENCH_IMAP"].split("|")
    other = IMAPClient(host, port=int(port), ssl=False)
    other.login(user, password)
    out = []
    tag = os.environ.get("BENCH_TAG", "x")
    profile = None
    if os.environ.get("BENCH_PROFILE"):  # a diagnostic: where the polls' time goes, on stderr
        import cProfile

        profile = cProfile.Profile(time.thread_time)  # CPU, as the figures: not the waits
    try:
        for n in range(polls):
            now = datetime.now(timezone.utc)
            if n % 3 == 0:
                raw = bench_alerts._mail(f"Poll report {tag}-{n}", f"<poll-{tag}-{n}@example.org>", now)
            elif n % 3 == 1:
                raw = bench_alerts._mail(f"Re: old {n}", f"<poll-re-{tag}-{n}@example.org>", now,
                                         f"<win-{(n * 7) % window // 3 * 3}@example.org>")
            else:
                raw = bench_alerts._mail(f"Re: poll {n}", f"<poll-re-{tag}-{n}@example.org>", now,
                                         f"<poll-{tag}-{(n // 3) * 3}@example.org>")
            if out:  # each mail a second after the last poll's: activity is compared by the second
                time.sleep(max(0.0, 1.05 - (time.perf_counter() - t0)))
            other.append("INBOX", raw, msg_time=now)
            sent.clear()
            t0 = time.perf_counter()
            c0 = time.thread_time()
            if profile is not None:
                profile.enable()
            outcome = poller.poll()
            poller.acknowledge(outcome, save=False)
            cpu = time.thread_time() - c0
            wall = time.perf_counter() - t0
            c1 = time.thread_time()
            poller.save()  # as the app saves each acknowledgement (on a worker thread)
            save_cpu = time.thread_time() - c1
            if profile is not None:
                profile.disable()
            out.append({"wall": wall, "cpu": cpu, "save_cpu": save_cpu,
                        "listing_cpu": listing_cpu[-1] if listing_cpu else 0.0,
                        "new": len(outcome.new_threads), "updated": len(outcome.updated_threads),
                        "commands": [c[:90] for c in sent]})
    finally:
        other.logout()
        flow.poller.sources.close()
    if profile is not None:
        import pstats

        order = os.environ["BENCH_PROFILE"]  # BENCH_PROFILE=cumulative sorts so; any other value by own time
        pstats.Stats(profile, stream=sys.stderr).sort_stats(
            "cumulative" if order == "cumulative" else "tottime").print_stats(40)
    print("RESULT " + json.dumps({"first": first, "polls": out}), flush=True)
    return 0


def _seed(server, user, window: int) -> None:
    client = server.client(user)
    try:
        start = datetime.now(timezone.utc) - timedelta(days=2.5)
        batch: list[dict] = []
        for i in range(window):  # in MULTIAPPENDs of 500: a 20,000-message window in seconds
            when = start + timedelta(seconds=int(2.5 * 86400 * i / max(window, 1)))
            # A third new reports, the rest replies to the report before them or to an older one.
            parent = None if i % 3 == 0 else f"<win-{(i // 3) * 3 if i % 3 == 2 else (i * 7) % i // 3 * 3}@example.org>"
            batch.append({"msg": bench_alerts._mail(f"Report {i}", f"<win-{i}@example.org>", when, parent),
                          "date": when})
            if len(batch) == 500 or i == window - 1:
                client.multiappend("INBOX", batch)
                batch = []
    finally:
        client.logout()


def _run(label: str, code: Path | None, tmp: Path, env: dict, project: Path, server, user, polls: int,
         window: int) -> dict:
    data = tmp / f"data-{label}"
    data.mkdir()
    run_env = {**os.environ, **env, "MAILTRIAGE_DATA_DIR": str(data), "BENCH_TAG": label,
               "BENCH_IMAP": f"127.0.0.1|{server.port}|{user.name}|{user.password}"}
    if code is not None:  # the code before: its mailtriage found first
        shim = tmp / "base-shim"
        shim.mkdir(exist_ok=True)
        if not (shim / "mailtriage").exists():
            (shim / "mailtriage").symlink_to(code, target_is_directory=True)
        run_env["PYTHONPATH"] = os.pathsep.join([str(shim), run_env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, __file__, "--child", str(project), "--polls", str(polls),
                           "--window", str(window)], env=run_env, cwd=ROOT, capture_output=True, text=True,
                          timeout=1800)
    if os.environ.get("BENCH_PROFILE"):
        sys.stderr.write(proc.stderr)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{label}: no result (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--window", type=int, default=20000, help="messages in the poll's window (default 20000)")
    parser.add_argument("--windows", help="several window sizes, comma-separated (e.g. 2000,6000,20000): each on "
                                          "a server of its own, then a table of the poll's CPU against the size")
    parser.add_argument("--polls", type=int, default=30, help="polls, one new mail before each (default 30)")
    parser.add_argument("--base", help="a checkout of the code before: run beside this one on the same server")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(Path(args.child), args.polls, args.window)
    windows = [int(w) for w in args.windows.split(",")] if args.windows else [args.window]
    load = os.getloadavg()
    table = [(window, _one_window(args, window)) for window in windows]
    if len(table) > 1:
        after = os.getloadavg()
        print(f"\nPoll CPU (thread) against the window, median ms (the listing's part; the cursor save's "
              f"median, as the app saves each acknowledgement); load {load[0]:.1f} before, {after[0]:.1f} after")
        labels = list(table[0][1])
        print(f"  {'window':>8}" + "".join(f"{v:>34}" for v in labels))
        for window, runs in table:
            print(f"  {window:>8}" + "".join(
                "{:>34}".format("{:.1f} ({:.1f}; save {:.1f})".format(
                    statistics.median(p["cpu"] for p in runs[v]["polls"]) * 1000,
                    statistics.median(p.get("listing_cpu", 0) for p in runs[v]["polls"]) * 1000,
                    statistics.median(p.get("save_cpu", 0) for p in runs[v]["polls"]) * 1000)) for v in labels))
    return 0


def _one_window(args, window: int) -> dict[str, dict]:
    from tests.servers.dovecot import DovecotServer

    load = os.getloadavg()
    runs: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="mailtriage-bench-poll-") as tmp_name:
        tmp = Path(tmp_name)
        config = tmp / "config"
        config.mkdir()
        (config / "config.toml").write_text('name = "Bench"\n[alerts]\npoll_seconds = 1\n', encoding="utf-8")
        env = {"MAILTRIAGE_CONFIG_DIR": str(config), "MAILTRIAGE_BENCH_KEYRING": str(tmp / "keyring.json"),
               "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",
               "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")])}
        os.environ["MAILTRIAGE_BENCH_KEYRING"] = env["MAILTRIAGE_BENCH_KEYRING"]
        server = DovecotServer().start()
        try:
            user = server.add_user()
            t0 = time.perf_counter()
            _seed(server, user, window)
            seeded = time.perf_counter() - t0
            project = bench_alerts._project(tmp / "project", env, server, user)
            if args.base:
                runs["base"] = _run("base", Path(args.base).resolve(), tmp, env, project, server, user, args.polls,
                                    window)
            runs["now"] = _run("now", None, tmp, env, project, server, user, args.polls, window)
        finally:
            server.stop()
    after = os.getloadavg()
    print(f"\nOne mail, then one poll, {args.polls} times; window of {window} messages (seeded in {seeded:.0f} s); "
          f"load average {load[0]:.1f} before, {after[0]:.1f} after")
    labels = list(runs)
    print(f"  {'':44}" + "".join(f"{v:>14}" for v in labels))

    def row(label: str, value) -> None:
        print(f"  {label:44}" + "".join(f"{value(runs[v]):>14}" for v in labels))

    row("baseline poll, wall / CPU (ms)", lambda r: f"{r['first']['wall'] * 1000:.0f} / {r['first']['cpu'] * 1000:.0f}")
    row("poll CPU (thread), median (ms)", lambda r: f"{statistics.median(p['cpu'] for p in r['polls']) * 1000:.1f}")
    row("... of it the listing (backend), median (ms)",
        lambda r: f"{statistics.median(p.get('listing_cpu', 0) for p in r['polls']) * 1000:.1f}")
    row("poll CPU (thread), max (ms)", lambda r: f"{max(p['cpu'] for p in r['polls']) * 1000:.1f}")
    row("cursor save CPU, median (ms)",
        lambda r: f"{statistics.median(p.get('save_cpu', 0) for p in r['polls']) * 1000:.1f}")
    row("poll wall, median (ms)", lambda r: f"{statistics.median(p['wall'] for p in r['polls']) * 1000:.1f}")
    row("IMAP commands per poll, median", lambda r: f"{statistics.median(len(p['commands']) for p in r['polls']):.0f}")
    row("new / updated threads found", lambda r: "{}/{}".format(sum(p["new"] for p in r["polls"]),
                                                              sum(p["updated"] for p in r["polls"])))
    for v in labels:
        print(f"  {v}: the commands of the last poll: " + " | ".join(runs[v]["polls"][-1]["commands"]))
    return runs


if __name__ == "__main__":
    sys.exit(main())
