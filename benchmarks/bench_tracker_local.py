"""Benchmark: a local-files tracker with 10,000 issues, timed as whole CLI processes.

    .venv/bin/python benchmarks/bench_tracker_local.py [--issues 10000] [--runs 5] [--keep DIR]

Targets (start-up included): ``list --state all --search WORD`` at most 0.5 s and ``view``
at most 0.2 s. Each figure is printed beside a naive baseline measured in the same run: a
script that reads and YAML-parses every issue file on every call (list) and finds an issue by
scanning the folder and parsing its front matter with YAML (view).

The issues are generated in a temporary git working copy with mailtriage's own file format.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_LIST = 0.5
TARGET_VIEW = 0.2
RARE_WORD = "deserialization"

NAIVE_LIST = r"""
import json, os, sys, yaml
root, words = sys.argv[1], [w.lower() for w in sys.argv[2:]]
out = []
for name in sorted(os.listdir(root)):
    if not name.endswith(".md"):
        continue
    with open(os.path.join(root, name), encoding="utf-8") as fh:
        text = fh.read()
    _, fm, rest = text.split("---\n", 2)
    meta = yaml.safe_load(fm)
    hay = (meta["title"] + "\n" + rest).lower()
    if all(w in hay for w in words):
        out.append({"id": meta["id"], "title": meta["title"], "state": meta["state"], "labels": meta["labels"],
                    "updated": meta["updated"], "url": name})
out.sort(key=lambda i: i["updated"], reverse=True)
print(json.dumps(out))
"""

NAIVE_VIEW = r"""
import json, os, sys, yaml
root, wanted = sys.argv[1], sys.argv[2]
for name in os.listdir(root):
    if not name.endswith(".md"):
        continue
    with open(os.path.join(root, name), encoding="utf-8") as fh:
        text = fh.read()
    _, fm, rest = text.split("---\n", 2)
    meta = yaml.safe_load(fm)
    if meta["id"] == wanted:
        print(json.dumps(dict(meta, body=rest)))
        break
"""

WORDS = ("parser overflow heap buffer request header cookie session token upload path traversal injection "
         "template redirect crash denial service memory leak integer signed unsigned filter escape").split()


def generate(root: Path, count: int) -> None:
    from mailtriage.trackers import localformat as fmt
    from mailtriage.trackers import rollup

    rng = random.Random(1234)
    tracker = root / "security-tracker"
    tracker.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "project").mkdir()
    (root / "project" / "project.md").write_text(
        "# Bench\n\n## Configuration\n\n```yaml\ntracker:\n  platform: local-files\n  local:\n"
        "    path: ../security-tracker\n  labels: [bug, needs-triage]\n```\n", encoding="utf-8")
    (tracker / fmt.DESCRIPTOR_NAME).write_text(fmt.Descriptor("SEC", 4, True).render(), encoding="utf-8")
    rare = set(rng.sample(range(1, count + 1), 25))
    for n in range(1, count + 1):
        words = " ".join(rng.choice(WORDS) for _ in range(120))
        if n in rare:
            words += f" {RARE_WORD}"
        body = (f"Reported on the list.\n\n### Affected versions\n\n1.{n % 9}.{n % 7}\n\n"
                f"### Description\n\n{words}\n\n### Reporter\n\nreporter{n}@example.org\n")
        day = f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}"
        entry = rollup.Entry(day, "alice", "Imported", "Imported from the security list.")
        issue = fmt.IssueFile(
            {"id": f"SEC-{n:04d}", "title": f"Issue {n}: {rng.choice(WORDS)} {rng.choice(WORDS)}",
             "state": "open" if n % 3 else "closed", "labels": ["bug"] if n % 2 else ["needs-triage"],
             "assignees": [], "milestone": None, "author": "alice", "created": f"{day}T10:00:00Z",
             "updated": f"{day}T10:{n % 60:02d}:00Z", "close_reason": None},
            body,
            [fmt.StoredComment(1, "rollup", "alice", f"{day}T10:00:00Z", f"{day}T10:00:00Z",
                               rollup.append(None, entry))])
        (tracker / f"SEC-{n:04d}.md").write_text(fmt.render_issue(issue), encoding="utf-8")


def timed(args: list[str], runs: int) -> tuple[float, str]:
    samples = []
    out = ""
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(args, capture_output=True, text=True)
        samples.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(args[:6])} failed: {proc.stderr}")
        out = proc.stdout
    return statistics.median(samples), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--issues", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it")
    ns = ap.parse_args()
    base = Path(ns.keep) if ns.keep else Path(tempfile.mkdtemp(prefix="mt-bench-"))
    if ns.keep and base.exists():
        shutil.rmtree(base)
    try:
        t0 = time.perf_counter()
        generate(base, ns.issues)
        print(f"generated {ns.issues} issues in {time.perf_counter() - t0:.1f}s under {base}")
        cli = [sys.executable, "-m", "mailtriage.cli.tracker", "--project", str(base / "project")]
        tracker = str(base / "security-tracker")
        view_id = f"SEC-{ns.issues // 2:04d}"

        cold, _ = timed(cli + ["list", "--state", "all", "--search", RARE_WORD], 1)
        ours_list, out = timed(cli + ["list", "--state", "all", "--search", RARE_WORD], ns.runs)
        found = len(json.loads(out))
        naive_list, naive_out = timed([sys.executable, "-c", NAIVE_LIST, tracker, RARE_WORD], max(1, ns.runs // 2))
        assert found == len(json.loads(naive_out)), "our search and the naive one disagree"
        ours_plain, _ = timed(cli + ["list", "--state", "all"], ns.runs)
        ours_view, view_out = timed(cli + ["view", view_id], ns.runs)
        assert json.loads(view_out)["id"] == view_id
        naive_view, _ = timed([sys.executable, "-c", NAIVE_VIEW, tracker, view_id], max(1, ns.runs // 2))
        startup, _ = timed([sys.executable, "-c", "pass"], ns.runs)

        def row(name: str, ours: float, naive: float | None, target: float | None) -> None:
            verdict = "" if target is None else ("  ok" if ours <= target else "  OVER TARGET")
            naive_text = f"{naive:8.3f}s" if naive is not None else "        -"
            speed = f"{naive / ours:6.1f}x" if naive else "      "
            limit = f"{target:.1f}s" if target else "    "
            print(f"{name:44} {ours:8.3f}s {naive_text} {speed}  {limit}{verdict}")

        print(f"\n{'median of ' + str(ns.runs) + ' whole-process runs':44} {'ours':>9} {'naive':>9} {'faster':>7}  target")
        row(f"list --state all --search {RARE_WORD} ({found} hits)", ours_list, naive_list, TARGET_LIST)
        row("  same, first run (builds the index)", cold, None, None)
        row("list --state all (all issues)", ours_plain, None, None)
        row(f"view {view_id}", ours_view, naive_view, TARGET_VIEW)
        row("python -c pass (interpreter start-up)", startup, None, None)
        return 0 if ours_list <= TARGET_LIST and ours_view <= TARGET_VIEW else 1
    finally:
        if not ns.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
