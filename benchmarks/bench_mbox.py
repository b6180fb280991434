"""Benchmark: list_recent_threads over a 100,000-message (~450 MB) mbox, beside a stdlib baseline.

Not a test. Run it from the repository root:

    .venv/bin/python benchmarks/bench_mbox.py            # generates the archive once
    .venv/bin/python benchmarks/bench_mbox.py --repeat 5 --data-dir /dev/shm/mailtriage-bench

What it does:

1. Generates ``bench-100k.mbox`` (``benchmarks/mboxgen.py``: threads with replies,
   two years of dates, realistic header blocks, ~1.5% 10-70 KB attachments and a few
   1-3 MB ones) into ``benchmarks/data/`` (git-ignored), unless it is already there.
2. Reads the file once so it is in the page cache.
3. Runs each measurement in a fresh Python process (imports excluded from the call
   time, included in the process time) and reads back wall time, peak RSS of the
   process and of any child it forked (the mbox scan forks one for big files):
   - ours: ``MboxSource.list_recent_threads`` with ``since`` 30 and 365 days before
     the newest message (threading and summaries included);
   - baseline: ``mailbox.mbox`` reading every message with a full ``email`` parse,
     then the same threading and the same ``since`` filter. By default the parse
     uses ``compat32``, what ``mailbox.mbox`` itself does (about 15 s here; the
     ratio goal is against this one); ``--baseline default`` or ``both`` adds a run
     with ``email.policy.default`` (how mailtriage parses a message it shows),
     which is several times slower still.
4. Prints both, the ratio, and whether both found the same threads.

Goal: ours at most 1.0 s, at least 15x faster than the baseline, under 200 MB peak RSS
(largest process), on a 2-core machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MESSAGES = 100_000
SEED = 1
ARCHIVE_NAME = "bench-100k.mbox"


# --- the measured code (runs in a fresh child process) ------------------------------------

def _peak_rss_mb() -> tuple[float, float]:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def _cpu_seconds() -> float:
    """CPU time of this process and its (waited-for) children: less noisy than wall time on a busy machine."""
    import resource

    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def _digest(rows: list[tuple]) -> str:
    return hashlib.sha256(json.dumps(sorted(rows)).encode()).hexdigest()[:16]


def run_ours(path: str, since_epoch: float) -> dict:
    from datetime import datetime, timezone

    from mailtriage.backends.contract import SourceOrigin
    from mailtriage.backends.mbox import MboxSource

    since = datetime.fromtimestamp(since_epoch, tz=timezone.utc)
    source = MboxSource("bench", {"path": path}, origin=SourceOrigin(project_dir=Path(HERE)))
    cpu = _cpu_seconds()
    start = time.perf_counter()
    rows = source.list_recent_threads(None, since)
    elapsed = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu
    own, children = _peak_rss_mb()
    digest = _digest([(str(r.thread_id), r.message_count, r.last_activity.timestamp()) for r in rows])
    return {"seconds": elapsed, "cpu_seconds": cpu, "rss_mb": own, "child_rss_mb": children, "threads": len(rows),
            "digest": digest}


def run_baseline(path: str, since_epoch: float, policy_name: str) -> dict:
    """The naive way: let the stdlib parse every message, then thread and filter.

    ``compat32`` is what ``mailbox.mbox`` does by default; ``default`` parses with
    ``email.policy.default``, as mailtriage's own MIME code does.
    """
    import email
    import mailbox
    from datetime import datetime, timezone
    from email import policy

    from mailtriage.backends.mime_dates import parse_date_epoch
    from mailtriage.backends.mime_header_text import decode_header_text, parse_address
    from mailtriage.backends.mime_headers import split_header_block, synthetic_message_id
    from mailtriage.backends.mime_ids import extract_msgid, extract_msgids
    from mailtriage.backends.thread_reconstruction import thread_records

    chosen = policy.default if policy_name == "default" else policy.compat32
    cpu = _cpu_seconds()
    start = time.perf_counter()
    box = mailbox.mbox(path, factory=lambda f: mailbox.mboxMessage(email.message_from_binary_file(f, policy=chosen)),
                       create=False)
    records, dates, subjects, senders = [], [], [], []
    for key, message in box.iteritems():
        def header(name):
            value = message.get(name)
            return None if value is None else str(value)
        mid = extract_msgid(header("Message-ID"))
        synthetic = mid is None
        if synthetic:
            mid = synthetic_message_id(split_header_block(box.get_bytes(key))[0])
        epoch = parse_date_epoch(header("Date"))
        if epoch is None:  # the delivery time of the From_ line, as the mbox backend falls back to
            envelope = box.get_file(key, from_=True).readline().decode("latin-1").split()
            try:
                epoch = datetime.strptime(" ".join(envelope[-5:]), "%a %b %d %H:%M:%S %Y").replace(
                    tzinfo=timezone.utc).timestamp()
            except ValueError:
                epoch = None
        records.append((mid, extract_msgids(header("References")), extract_msgid(header("In-Reply-To")), synthetic))
        dates.append(epoch)
        subjects.append(header("Subject"))
        senders.append(header("From"))
    box.close()
    rows = []
    for group in thread_records(records):
        known = [dates[m] for m in group.members if dates[m] is not None]
        if known and max(known) >= since_epoch:
            head = group.members[0]
            decode_header_text(subjects[head])
            parse_address(senders[head])
            kind = "mbox-synthetic" if group.synthetic else "mbox"
            rows.append((f"{kind}:{group.root_id}", len(group.members), max(known)))
    elapsed = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu
    own, children = _peak_rss_mb()
    return {"seconds": elapsed, "cpu_seconds": cpu, "rss_mb": own, "child_rss_mb": children, "threads": len(rows),
            "digest": _digest(rows)}


def child_main(mode: str, path: str, since_epoch: float) -> None:
    started = time.perf_counter()
    result = run_ours(path, since_epoch) if mode == "ours" else run_baseline(path, since_epoch, mode.split("-", 1)[1])
    result["process_seconds"] = time.perf_counter() - started
    print(json.dumps(result))


# --- the driver ----------------------------------------------------------------------------

def ensure_archive(data_dir: Path) -> tuple[Path, float]:
    """Generate the archive once; return it and its newest message's date (epoch)."""
    sys.path.insert(0, str(HERE))
    import mboxgen

    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / ARCHIVE_NAME
    stamp = data_dir / (ARCHIVE_NAME + ".json")
    wanted = {"messages": MESSAGES, "seed": SEED, "generator": hashlib.sha256(
        (HERE / "mboxgen.py").read_bytes()).hexdigest()[:16]}
    if path.exists() and stamp.exists():
        info = json.loads(stamp.read_text())
        if {k: info.get(k) for k in wanted} == wanted and info.get("bytes") == path.stat().st_size:
            return path, info["last_date"]
    print(f"generating {MESSAGES:,} messages into {path} ...", flush=True)
    started = time.perf_counter()
    generated = mboxgen.generate(path, MESSAGES, seed=SEED)
    print(f"  {generated.bytes / 1e6:.0f} MB in {time.perf_counter() - started:.1f} s", flush=True)
    stamp.write_text(json.dumps({**wanted, "bytes": path.stat().st_size,
                                 "last_date": generated.last_date.timestamp()}))
    return path, generated.last_date.timestamp()


def warm_page_cache(path: Path) -> None:
    with open(path, "rb") as handle:
        while handle.read(16 << 20):
            pass


def measure(mode: str, path: Path, since_epoch: float) -> dict:
    env = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run([sys.executable, __file__, "--child", mode, str(path), str(since_epoch)],
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{mode} run failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    parser.add_argument("--repeat", type=int, default=3, help="fresh-process runs of ours per window (best and median shown)")
    parser.add_argument("--baseline-repeat", type=int, default=1)
    parser.add_argument("--baseline", choices=("compat32", "default", "both"), default="compat32",
                        help="email policy of the stdlib baseline's full parse: compat32 (mailbox's default, "
                             "the goal's baseline), default (email.policy.default, ~4x slower still) or both")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "PATH", "SINCE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args.child[0], args.child[1], float(args.child[2]))
        return

    path, last = ensure_archive(args.data_dir)
    size_mb = path.stat().st_size / 1e6
    warm_page_cache(path)
    print(f"archive: {path} ({size_mb:.0f} MB, {MESSAGES:,} messages); cores: {os.cpu_count()}; "
          f"load average: {os.getloadavg()[0]:.2f}")
    print("call s: best wall time of list_recent_threads; cpu s: its CPU time, own process plus the forked scan child")
    print()
    header = f"{'window':>8}  {'what':<17} {'call s':>8} {'median s':>9} {'cpu s':>7} {'process s':>10} " \
             f"{'peak RSS MB':>12} {'child RSS MB':>13} {'threads':>8}"
    print(header)
    print("-" * len(header))
    verdicts = []
    baselines = ["baseline-compat32", "baseline-default"] if args.baseline == "both" else [f"baseline-{args.baseline}"]
    for days in (30, 365):
        since = last - days * 86400
        ours = [measure("ours", path, since) for _ in range(max(1, args.repeat))]
        runs_of = {"ours": ours}
        for name in baselines:
            runs_of[name] = [measure(name, path, since) for _ in range(max(1, args.baseline_repeat))]
        for label, runs in runs_of.items():
            best = min(runs, key=lambda r: r["seconds"])
            print(f"{days:>6} d  {label.replace('baseline-', 'stdlib/'):<17} {best['seconds']:>8.3f} "
                  f"{statistics.median(r['seconds'] for r in runs):>9.3f} {min(r['cpu_seconds'] for r in runs):>7.3f} "
                  f"{best['process_seconds']:>10.3f} {max(r['rss_mb'] for r in runs):>12.1f} "
                  f"{max(r['child_rss_mb'] for r in runs):>13.1f} {best['threads']:>8}")
        ours_best = min(r["seconds"] for r in ours)
        ours_median = statistics.median(r["seconds"] for r in ours)
        same = len({r["digest"] for runs in runs_of.values() for r in runs}) == 1
        ratios = {}
        for name in baselines:
            base_best = min(r["seconds"] for r in runs_of[name])
            ratios[name] = base_best / ours_best
            print(f"{'':>10}{name.replace('baseline-', 'stdlib/')} / ours: {base_best / ours_best:.1f}x "
                  f"(against our median: {base_best / ours_median:.1f}x)")
        print(f"{'':>10}same threads in every run: {'yes' if same else 'NO'}")
        peak = max(max(r["rss_mb"], r["child_rss_mb"]) for r in ours)
        verdicts.append((days, ours_best, ratios, peak, same))
    print()
    for days, seconds, ratios, peak, same in verdicts:
        ratio = ratios[baselines[0]]
        ok = seconds <= 1.0 and ratio >= 15 and peak < 200 and same
        print(f"{days:>4} d: {seconds:.3f} s (goal <= 1.0), {ratio:.1f}x vs {baselines[0].replace('baseline-', 'stdlib/')} "
              f"(goal >= 15x), peak RSS {peak:.0f} MB (goal < 200), same threads {same} -> "
              f"{'goal met' if ok else 'GOAL MISSED'}")


if __name__ == "__main__":
    main()
