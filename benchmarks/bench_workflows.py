"""Benchmark: finding the issue of a thread (what every import and re-import does first)
in a local-files tracker of 10,000 issues, beside a naive baseline measured in the same run.

    .venv/bin/python benchmarks/bench_workflows.py [--issues 10000] [--runs 5]

Ours: ``flows.linking.find_issue_for_thread`` — the thread index (a stat of each
issue file, re-reading only changed ones), then the thread field of the few candidates.
For a new thread it is also shown beside the scan it replaced (two ``list --search``
passes over every issue file).
Naive: read the thread field of every issue (``list`` everything, ``field_get`` each), the
obvious way to honour "the thread URL in the tracker is the key". Target: at most 0.5 s
for ours on 10,000 issues (the derived list index warm, as after the first run).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 0.5
THREAD_FIELD = "Security mailing list thread"


def pony_thread(n: int):
    """The Pony Mail thread reference of report ``n``: an archive hash, its root Message-ID beside it."""
    from mailtriage.backends.contract import ThreadId

    return ThreadId("ponymail", f"{n:012x}pm", f"<r{n}@example.net>")


def generate(root: Path, count: int) -> str:
    """A git working copy with ``count`` issues, each linked to its own thread; returns
    the link of one issue in the middle."""
    from mailtriage.trackers import localformat as fmt
    from mailtriage.trackers import rollup

    rng = random.Random(7)
    tracker = root / "security-tracker"
    tracker.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "project").mkdir()
    (root / "project" / "project.md").write_text(
        "# Bench\n\n## Configuration\n\n```yaml\ntracker:\n  platform: local-files\n  local:\n"
        "    path: ../security-tracker\n  labels: [needs triage]\n```\n", encoding="utf-8")
    (tracker / fmt.DESCRIPTOR_NAME).write_text(fmt.Descriptor("SEC", 4, True).render(), encoding="utf-8")
    wanted = ""
    for n in range(1, count + 1):
        link = f"https://lists.example.org/thread/{rng.getrandbits(64):016x}?security@example.org"
        if n == count // 2:
            wanted = link
        body = (f"Report received on the security list; imported by mailtriage.\n\n### {THREAD_FIELD}\n\n{link}\n\n"
                f"### Reporter\n\nreporter{n} (reporter{n}@example.net)\n\n### Received\n\n2026-01-01 10:00 UTC\n\n"
                "### Affected versions\n")
        day = f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}"
        entry = rollup.Entry(day, "tess", "Import", f"Imported from the security list: {link}\n"
                                                    f"Thread: `{pony_thread(n)}`")
        issue = fmt.IssueFile(
            {"id": f"SEC-{n:04d}", "title": f"Report {n}", "state": "open" if n % 4 else "closed",
             "labels": ["needs triage"], "assignees": [], "milestone": None, "author": "tess",
             "created": f"{day}T10:00:00Z", "updated": f"{day}T10:{n % 60:02d}:00Z", "close_reason": None},
            body, [fmt.StoredComment(1, "rollup", "tess", f"{day}T10:00:00Z", f"{day}T10:00:00Z",
                                     rollup.append(None, entry))])
        (tracker / f"SEC-{n:04d}.md").write_text(fmt.render_issue(issue), encoding="utf-8")
    return wanted


def naive_find(tracker, key: str) -> str | None:
    for item in tracker.list(state="all").items:
        value = tracker.field_get(item["id"], THREAD_FIELD)["value"] or ""
        if key in [line.strip() for line in value.splitlines()]:
            return item["id"]
    return None


def timed(fn, runs: int) -> tuple[float, object]:
    samples, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples), result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--issues", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=5)
    ns = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="mt-bench-wf-"))
    try:
        from mailtriage.backends.contract import ThreadId
        from mailtriage.core.projectconfig import load_project
        from mailtriage.trackers.registry import open_tracker
        from mailtriage.application.flows.linking import find_issue_for_thread

        t0 = time.perf_counter()
        key = generate(base, ns.issues)
        print(f"generated {ns.issues} linked issues in {time.perf_counter() - t0:.1f}s under {base}")
        tracker = open_tracker(load_project(base / "project"))
        expected = f"SEC-{ns.issues // 2:04d}"
        tid = pony_thread(ns.issues // 2)
        cold, found = timed(lambda: find_issue_for_thread(tracker, key, tid), 1)
        assert found == expected, found
        ours, found = timed(lambda: find_issue_for_thread(tracker, key, tid), ns.runs)
        assert found == expected
        missing, none = timed(lambda: find_issue_for_thread(
            tracker, "https://lists.example.org/thread/new?security@example.org", ThreadId("ponymail", "0new0hash0", "<new@x>")),
            ns.runs)
        assert none is None
        from mailtriage.application.flows.linking import _search_words

        # The lookup before the thread index: a `list --search` over every issue file for the
        # link's words, then one for the thread ID's (what a new thread cost twice per import).
        searched, _ = timed(lambda: (tracker.list(state="all", search=_search_words(key), limit=50),
                                     tracker.list(state="all", search=_search_words(str(tid)), limit=50)), ns.runs)
        naive, found = timed(lambda: naive_find(tracker, key), max(1, ns.runs // 2))
        assert found == expected, "our lookup and the naive one disagree"

        print(f"\n{'median of ' + str(ns.runs) + ' runs, in process':46} {'ours':>9} {'naive':>9} {'faster':>7}  target")
        verdict = "ok" if ours <= TARGET else "OVER TARGET"
        print(f"{'find the issue of a thread (it exists)':46} {ours:8.3f}s {naive:8.3f}s {naive / ours:6.1f}x  "
              f"{TARGET:.1f}s {verdict}")
        print(f"{'find the issue of a new thread (none)':46} {missing:8.3f}s {searched:8.3f}s "
              f"{searched / missing:6.1f}x  (baseline: the two list --search scans of the old lookup)")
        print(f"{'  first lookup (builds the list index)':46} {cold:8.3f}s")
        return 0 if ours <= TARGET else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
