"""Benchmark: the team's triage queue (``application.queue.build_queue``) over a local-files
tracker of 10,000 issues, each linked to its thread of a 100,000-message mbox archive,
warm, beside a plain listing of the same threads measured in the same run.

    .venv/bin/python benchmarks/bench_queue.py [--threads 10000] [--per-thread 10] [--runs 3] [--profile]

Baseline: ``Project.list_threads`` (what ``mailtriage list`` reads: the listing alone, no
thread read, no tracker). Ours: ``build_queue`` as shipped: the same listing, the facts of
each thread and each issue (from the queue's derived records when the thread's listing row
and the issue file are unchanged), the state, deadlines and order. The first run (no
derived records yet) is printed too, and each as a command in a new process (``mailtriage
list`` beside ``mailtriage queue --json``, the records then read from their file). Wall and CPU
time are printed: on a shared machine the CPU time of our process is the steadier figure.
Goal: ours <= 1 s warm.

Measured (issue 37 §4, 10,000 threads / 100,000 messages / 10,000 issues, 2 shared cores):
before the row-a-line JSON, the collector pause and keep_records=False (load 0.5-0.8): warm
queue 0.507 s wall / 0.506 s CPU beside the listing's 0.138 / 0.137; ``queue --json`` 2.16 s
wall / 2.00 s CPU beside ``list`` 0.63 / 0.62. After (load 12.6-14.2): warm queue 0.830 s wall
(best 0.518) / 0.273 s CPU beside the listing's 0.509 / 0.147; ``queue --json`` 3.83 s wall /
1.26 s CPU beside ``list`` 0.80 / 0.49.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

THREAD_FIELD = "Security mailing list thread"
BASE = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
LIST = "security@example.org"


def _message(mid: str, sender: str, subject: str, body: str, when: datetime, irt: str | None = None) -> str:
    head = [f"From {sender} {when.strftime('%a %b %d %H:%M:%S %Y')}", f"Message-ID: {mid}", f"From: {sender}",
            f"To: {LIST}", f"Subject: {subject}", f"Date: {format_datetime(when)}"]
    if irt:
        head += [f"In-Reply-To: {irt}", f"References: {irt}"]
    return "\n".join(head) + "\n\n" + body + "\n\n"


def generate(root: Path, threads: int, per_thread: int) -> int:
    """A project whose mbox archive holds ``threads`` report threads of ``per_thread`` messages
    (the reporter and the team taking turns; every fifth thread waits for the team), and a
    local-files tracker with one issue per thread (linked as the import links it; some
    assigned, fixed or closed). Returns the number of messages."""
    from mailtriage.trackers import localformat as fmt
    from mailtriage.trackers import rollup

    tracker = root / "security-tracker"
    tracker.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    project = root / "project"
    project.mkdir()
    (project / "project.md").write_text(
        "# Bench\n\n## Mail sources\n\n| Backend | Role | Mandatory | Notes |\n|---|---|---|---|\n"
        "| `mbox` | primary | yes | bench |\n\n## Configuration\n\n```yaml\n"
        f"security_list: {LIST}\nimport:\n  since: 2026-01-01\n"
        "tracker:\n  platform: local-files\n  local:\n    path: ../security-tracker\n"
        "  labels: [needs triage, fixed]\n  assignees: [alice, bob]\n"
        f"mail_sources:\n  mbox:\n    path: security.mbox\n    list: {LIST}\n```\n", encoding="utf-8")
    (tracker / fmt.DESCRIPTOR_NAME).write_text(fmt.Descriptor("SEC", 5, True).render(), encoding="utf-8")
    chunks = []
    for n in range(1, threads + 1):
        root_id = f"<r{n}@reporter.example>"
        when = BASE + timedelta(minutes=n)
        reporter = f"reporter{n}@reporter.example"
        chunks.append(_message(root_id, reporter, f"Report {n}", f"Report number {n}: the parser overflows.", when))
        for k in range(1, per_thread):
            team = k % 2 == 1 and not (n % 5 == 0 and k == per_thread - 1)
            sender = "sam@example.org" if team else reporter
            chunks.append(_message(f"<m{n}.{k}@x.example>", sender, f"Re: Report {n}", "More on it.",
                                   when + timedelta(hours=k), root_id))
        link = f"file://{project}/security.mbox#{root_id}"
        body = (f"Report received on the security list.\n\n### {THREAD_FIELD}\n\n{link}\n\n"
                f"### Reporter\n\n{reporter}\n")
        day = when.strftime("%Y-%m-%d")
        entry = rollup.Entry(day, "tess", "Import", f"Imported from the security list: {link}\n"
                                                    f"Thread: `msgid:{root_id}`")
        issue = fmt.IssueFile(
            {"id": f"SEC-{n:05d}", "title": f"Report {n}", "state": "closed" if n % 11 == 0 else "open",
             "labels": ["fixed"] if n % 13 == 0 else ["needs triage"],
             "assignees": ["alice"] if n % 3 == 0 else [], "milestone": None, "author": "tess",
             "created": f"{day}T10:00:00Z", "updated": f"{day}T10:00:00Z", "close_reason": None},
            body, [fmt.StoredComment(1, "rollup", "tess", f"{day}T10:00:00Z", f"{day}T10:00:00Z",
                                     rollup.append(None, entry))])
        (tracker / f"SEC-{n:05d}.md").write_text(fmt.render_issue(issue), encoding="utf-8")
    (project / "security.mbox").write_text("".join(chunks), encoding="utf-8")
    return len(chunks)


def measure(fn, runs: int, profile: bool, label: str):
    """Median wall time, median CPU time of this process (less moved by other load on a shared
    machine), and the last result."""
    samples, cpu, result = [], [], None
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        samples.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    if profile:
        prof = cProfile.Profile()
        prof.runcall(fn)
        print(f"\n--- cProfile: {label} (cumulative, top 22) ---")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(22)
    return statistics.median(samples), statistics.median(cpu), result, min(samples)


def _process(project: Path, args: list[str], now: datetime) -> tuple[float, float]:
    """Wall and CPU time of one ``mailtriage`` process (its output thrown away)."""
    import resource

    if args[0] == "queue":
        args = [*args, "--now", now.isoformat()]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "--project", str(project), *args],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=10000)
    ap.add_argument("--per-thread", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ns = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="mt-bench-queue-"))
    os.environ["MAILTRIAGE_DATA_DIR"] = str(base / "data")  # derived records: not the user's
    os.environ["MAILTRIAGE_CONFIG_DIR"] = str(base / "config")
    try:
        from mailtriage.application.project import Project
        from mailtriage.application.queue import QueueState, build_queue

        t0 = time.perf_counter()
        messages = generate(base, ns.threads, ns.per_thread)
        print(f"generated {ns.threads} threads ({messages} messages) and {ns.threads} linked issues in "
              f"{time.perf_counter() - t0:.1f}s under {base}; load average {os.getloadavg()[0]:.2f}")
        project = Project.open(base / "project")
        now = BASE + timedelta(days=30)
        listing = lambda: project.list_threads(LIST).value  # noqa: E731
        queue = lambda: build_queue(project, now=now)  # noqa: E731
        first, first_cpu = time.perf_counter(), time.process_time()
        rows = listing()
        cold_list, cold_list_cpu = time.perf_counter() - first, time.process_time() - first_cpu
        first, first_cpu = time.perf_counter(), time.process_time()
        got = queue()
        cold, cold_cpu = time.perf_counter() - first, time.process_time() - first_cpu
        plain, plain_cpu, rows, plain_best = measure(listing, ns.runs, ns.profile, "plain listing")
        ours, ours_cpu, got, ours_best = measure(queue, ns.runs, ns.profile, "queue")
        assert len(got.rows) == len(rows) == ns.threads, (len(got.rows), len(rows))
        assert not got.warnings, got.warnings[:3]
        states = {s.value: sum(1 for r in got.rows if r.state is s) for s in QueueState}
        waiting = sum(1 for r in got.rows if r.unanswered_since is not None)
        print(f"queue: {states}; {waiting} reporters waiting")
        print(f"\n{'median of ' + str(ns.runs) + ' runs, in process, warm':48} {'wall':>9} {'cpu':>9} {'best wall':>10}")
        print(f"{'plain listing (Project.list_threads)':48} {plain:8.3f}s {plain_cpu:8.3f}s {plain_best:9.3f}s")
        print(f"{'queue (build_queue) over ' + str(ns.threads) + ' issues':48} {ours:8.3f}s {ours_cpu:8.3f}s "
              f"{ours_best:9.3f}s  ({ours / plain:.1f}x the listing; goal <= 1 s)")
        print(f"{'  first run of the listing (no index yet)':48} {cold_list:8.3f}s {cold_list_cpu:8.3f}s")
        print(f"{'  first run of the queue (no derived records)':48} {cold:8.3f}s {cold_cpu:8.3f}s")
        project.close()
        # the command line: a fresh process each, the records read from their file
        for label, args in (("CLI: mailtriage list", ["list"]), ("CLI: mailtriage queue --json", ["queue", "--json"])):
            wall, cpu = _process(base / "project", args, now)
            print(f"{label + ' (new process)':48} {wall:8.3f}s {cpu:8.3f}s")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        return 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
