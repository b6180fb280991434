"""Benchmark: what the alert poller holds after a long storm of polls, beside fresh pollers.

    .venv/bin/python benchmarks/bench_poll_memory.py [--threads 14000] [--polls 900] [--per-poll 20]
    .venv/bin/python benchmarks/bench_poll_memory.py --tracemalloc        # what grew, by line

No app, no screen: the poller as the app runs it (``PollFlow.for_alerts``: its own sources,
window-only) on a real Dovecot holding ``--threads`` quiet reports over the last 20 days. The
storm child sets its silent baseline, then ``--polls`` times another client APPENDs
``--per-poll`` mails (bench_storm's shape: a third new reports, the rest replies to old and new
threads) and the poller polls and acknowledges, as the app's loop does. Then children start
fresh on the mail it left and poll once (the baseline), twice and three times with nothing new.
Each reports, after a full collection, its memory parts (RSS, pymalloc's blocks, glibc's heap
in use, objects the collector tracks). The storm's figures beside the fresh ones say what the
poller's state keeps that a fresh start in the same steady state does not (issue 39); the CPU
of the storm's polls by tenths says whether a poll's cost grows with the polls before it.
"""

from __future__ import annotations

import argparse
import gc
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


def _mails(first: int, count: int, old: int) -> list[dict]:
    """bench_alerts._burst's mail, numbered from ``first``."""
    out = []
    now = datetime.now(timezone.utc)
    for n in range(first, first + count):
        if n % 3 == 0:
            raw = bench_alerts._mail(f"Burst report {n}", f"<burst-{n}@example.org>", now)
        elif n % 3 == 1:
            raw = bench_alerts._mail(f"Re: old {n}", f"<re-{n}@example.org>", now, f"<old-{n % old}@example.org>")
        else:
            raw = bench_alerts._mail(f"Re: burst {n}", f"<re-{n}@example.org>", now,
                                     f"<burst-{(n // 3) * 3}@example.org>")
        out.append({"msg": raw, "date": now})
    return out


def _parts() -> dict:
    import bench_storm

    gc.collect()
    return bench_storm._memory_parts()


def child(project: Path, mode: str, polls: int, per_poll: int, old: int, trace: bool) -> int:
    from imapclient import IMAPClient

    from mailtriage.application.flows.alerts import PollFlow
    from mailtriage.core.projectconfig import load_project

    config = load_project(project)
    flow = PollFlow.for_alerts(config)
    poller = flow.poller
    host, port, user, password = os.environ["BENCH_IMAP"].split("|")
    other = IMAPClient(host, port=int(port), ssl=False)
    other.login(user, password)
    out: dict = {"mode": mode}
    cpu: list[float] = []
    snapshot = None
    try:
        if mode == "storm":
            poller.acknowledge(poller.poll(), save=False)
            poller.acknowledge(poller.poll(), save=False)
            out["start"] = _parts()
            if trace:
                import tracemalloc

                tracemalloc.start(6)
                snapshot = tracemalloc.take_snapshot()
            for n in range(polls):
                other.multiappend("INBOX", _mails(n * per_poll, per_poll, old))
                c0 = time.thread_time()
                poller.acknowledge(poller.poll(), save=False)
                cpu.append(time.thread_time() - c0)
                if n % 50 == 49:
                    sys.stderr.write(f"poll {n + 1}: {cpu[-1] * 1000:.1f} ms\n")
                    sys.stderr.flush()
            out["cpu"] = cpu
            if os.environ.get("BENCH_PROFILE"):  # a diagnostic: where a late poll's time goes, on stderr
                import cProfile
                import pstats

                profile = cProfile.Profile()
                for n in range(int(os.environ["BENCH_PROFILE"])):
                    other.multiappend("INBOX", _mails((polls + n) * per_poll, 10, old))
                    profile.enable()
                    poller.acknowledge(poller.poll(), save=False)
                    profile.disable()
                pstats.Stats(profile, stream=sys.stderr).sort_stats("tottime").print_stats(30)
        else:
            for _ in range(int(mode.removeprefix("fresh"))):
                poller.acknowledge(poller.poll(), save=False)
        out["end"] = _parts()
        if snapshot is not None:
            import tracemalloc

            end = tracemalloc.take_snapshot()
            for stat in end.compare_to(snapshot, "lineno")[:20]:
                sys.stderr.write(f"{stat.size_diff / 1e6:+8.2f} MB {stat.count_diff:+8d} blocks  {stat.traceback[0]}\n")
            sys.stderr.write("by traceback:\n")
            for stat in end.compare_to(snapshot, "traceback")[:12]:
                sys.stderr.write(f"{stat.size_diff / 1e6:+8.2f} MB {stat.count_diff:+8d} blocks\n")
                for line in stat.traceback.format()[-6:]:
                    sys.stderr.write(f"      {line}\n")
        source = next(iter(flow.poller.sources.backends.values()))
        out["rows_held"] = getattr(source, "rows_held", 0)
    finally:
        other.logout()
        flow.poller.sources.close()
    print("RESULT " + json.dumps(out), flush=True)
    return 0


def _seed(server, user, old: int) -> None:
    client = server.client(user)
    try:
        start = datetime.now(timezone.utc) - timedelta(days=20)
        batch: list[dict] = []
        for i in range(old):
            when = start + timedelta(seconds=int(20 * 86400 * i / max(old, 1)))
            batch.append({"msg": bench_alerts._mail(f"Old report {i}", f"<old-{i}@example.org>", when),
                          "date": when})
            if len(batch) == 500 or i == old - 1:
                client.multiappend("INBOX", batch)
                batch = []
    finally:
        client.logout()


def _run(mode: str, tmp: Path, env: dict, project: Path, server, user, args, code: Path | None = None) -> dict:
    data = tmp / f"data-{mode}-{time.monotonic_ns()}"
    data.mkdir()
    run_env = {**os.environ, **env, "MAILTRIAGE_DATA_DIR": str(data),
               "BENCH_IMAP": f"127.0.0.1|{server.port}|{user.name}|{user.password}"}
    if code is not None:
        shim = tmp / "base-shim"
        shim.mkdir(exist_ok=True)
        if not (shim / "mailtriage").exists():
            (shim / "mailtriage").symlink_to(code, target_is_directory=True)
        run_env["PYTHONPATH"] = os.pathsep.join([str(shim), run_env.get("PYTHONPATH", "")])
    cmd = [sys.executable, __file__, "--child", mode, "--project", str(project), "--polls", str(args.polls),
           "--per-poll", str(args.per_poll), "--threads", str(args.threads)]
    if args.tracemalloc and mode == "storm":
        cmd.append("--tracemalloc")
    log = tmp / f"{mode}-{user.name}.log"  # the child's stderr (progress, --tracemalloc's sites)
    with log.open("w") as err:
        proc = subprocess.run(cmd, env=run_env, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True,
                              timeout=7200)
    if args.tracemalloc or proc.returncode:
        sys.stderr.write(log.read_text()[-8000:])
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{mode}: no result (exit {proc.returncode})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=14000, help="quiet reports over 20 days (default 14000)")
    parser.add_argument("--polls", type=int, default=900, help="polls of the storm (default 900)")
    parser.add_argument("--per-poll", type=int, default=20, help="mails APPENDed before each poll (default 20)")
    parser.add_argument("--tracemalloc", action="store_true", help="the storm child prints what grew (slower)")
    parser.add_argument("--base", help="a checkout of the code before: its storm and fresh children too")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--project", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(Path(args.project), args.child, args.polls, args.per_poll, args.threads, args.tracemalloc)

    import signal

    from tests.servers.dovecot import DovecotServer

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the server stops (finally) when killed
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="mailtriage-bench-pollmem-") as tmp_name:
        tmp = Path(tmp_name)
        config = tmp / "config"
        config.mkdir()
        (config / "config.toml").write_text('name = "Bench"\n', encoding="utf-8")
        env = {"MAILTRIAGE_CONFIG_DIR": str(config), "MAILTRIAGE_BENCH_KEYRING": str(tmp / "keyring.json"),
               "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",
               "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")])}
        os.environ["MAILTRIAGE_BENCH_KEYRING"] = env["MAILTRIAGE_BENCH_KEYRING"]
        server = DovecotServer().start()
        runs: dict[str, dict] = {}
        try:
            codes = {"": None, "base ": Path(args.base).resolve()} if args.base else {"": None}
            for label, code in codes.items():
                user = server.add_user()
                _seed(server, user, args.threads)
                project = bench_alerts._project(tmp / f"project-{user.name}", env, server, user)
                runs[label + "storm"] = _run("storm", tmp, env, project, server, user, args, code)
                for k in (1, 2, 3):
                    runs[f"{label}fresh{k}"] = _run(f"fresh{k}", tmp, env, project, server, user, args, code)
                load.append(os.getloadavg()[0])
        finally:
            server.stop()
    print(f"\n{args.polls} polls of {args.per_poll} mails each onto {args.threads} quiet threads; "
          f"load {min(load):.1f}-{max(load):.1f}; memory after a full collection (MB unless named)")
    keys = ["rss", "pymalloc blocks MB", "pymalloc arenas", "malloc used MB", "malloc free MB", "gc objects"]
    print(f"  {'':22}" + "".join(f"{k[:18]:>20}" for k in keys) + f"{'rows held':>11}")
    for label, r in runs.items():
        for when in ("start", "end"):
            if when in r:
                print(f"  {label + ' ' + when:22}" + "".join(f"{r[when].get(k, 0):>20,.1f}" for k in keys)
                      + f"{r.get('rows_held', 0) if when == 'end' else '':>11}")
        if r.get("cpu"):
            cpu = r["cpu"]
            tenth = max(1, len(cpu) // 10)
            print(f"  {label}: poll CPU median per tenth of the storm (ms): "
                  + " ".join(f"{statistics.median(cpu[i:i + tenth]) * 1000:.1f}" for i in range(0, len(cpu), tenth)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
