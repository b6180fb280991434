"""Sync cost follows what changed (issue 21 §5), and the items stay those of a full read.

The tracker and archive come from ``benchmarks/bench_sync.py``: issues linked to their own
mbox threads, each rollup covering its thread; a few threads with new mail, one with an
undated reply (no Date header: the archive's delivery time stands in), one with a reply
that has no date at all, one issue whose rollup names a thread the archive lacks.
The reference is the collect before this change, kept as the benchmark's baseline.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta

import pytest

from benchmarks.bench_sync import BASE, _message, baseline_collect, generate
from mailtriage.backends.registry import SourceSet
from mailtriage.core.projectconfig import load_project
from mailtriage.core.trace import OPLOG
from mailtriage.trackers.registry import open_tracker
from mailtriage.application.flows.sync import collect_sync

COUNT = 12


@pytest.fixture
def bench(tmp_path):
    changed = generate(tmp_path / "bench", COUNT, 3)
    return tmp_path / "bench", changed


def _run(root, issue_ids=None):
    config = load_project(root / "project")
    OPLOG.clear()
    items = collect_sync(SourceSet(config), open_tracker(config), issue_ids)
    reads = sum(1 for r in OPLOG.items() if r.op == "read_thread")
    return {i.issue_id: i.to_json() for i in items}, reads


def _full(root):
    """What the collect before issue 21 §5 gives (every issue file, every thread read), kept
    verbatim in the benchmark as its baseline."""
    config = load_project(root / "project")
    OPLOG.clear()
    items = baseline_collect(SourceSet(config), open_tracker(config))
    assert sum(1 for r in OPLOG.items() if r.op == "read_thread") == sum(1 for i in items if i.thread_id)
    return {i.issue_id: i.to_json() for i in items}


def _append(root, text: str) -> None:
    with open(root / "project" / "security.mbox", "a", encoding="utf-8") as handle:
        handle.write(text)


def test_items_are_those_of_a_full_read_with_new_mail_undated_and_broken_links(bench):
    root, changed = bench
    full = _full(root)
    # The pinned facts of this tracker, as a full read gives them.
    assert changed == ["SEC-00008", "SEC-00012"]
    assert sorted(i for i, item in full.items() if item["new_messages"]) == sorted(changed)
    assert {i: item["undated"] for i, item in full.items() if item["undated"]} == {"SEC-00003": 1, "SEC-00005": 1}
    problems = {i: item["problem"] for i, item in full.items() if item["problem"]}
    assert list(problems) == ["SEC-00004"] and problems["SEC-00004"].startswith(
        "cannot read thread msgid:<missing4@reporter.example> of SEC-00004")
    for issue_id in changed:
        assert "Fixed in trunk, CVE-2026-1234 please." in full[issue_id]["entry"]
        assert full[issue_id]["signals"]

    first, _ = _run(root)   # records the full reads
    second, _ = _run(root)  # skips the quiet threads
    assert first == full and second == full

    # New mail after the skips: a dated reply on a quiet thread, and a reply with no date
    # at all on another (it moves neither the listing's date nor its notes, only its count).
    _append(root, _message("<late2@reporter.example>", "reporter2@reporter.example", "Re: Report 2",
                           "Released in 1.2.4.", BASE + timedelta(days=90), "<r2@reporter.example>"))
    _append(root, _message("<nd7@example.org>", "sam@example.org", "Re: Report 7", "No date.", None,
                           "<r7@reporter.example>", envelope=False))
    full = _full(root)
    assert full["SEC-00002"]["new_messages"] and full["SEC-00007"]["undated"] == 1
    assert _run(root)[0] == full
    assert _run(root)[0] == full


def test_a_sync_reads_only_the_threads_that_changed(bench):
    root, changed = bench
    _, reads = _run(root)
    assert reads == COUNT  # nothing recorded yet: every thread is read once
    _, reads = _run(root)
    # The threads with new mail, the one with a delivery-time date (always read), the broken link.
    assert reads == len(changed) + 2
    _append(root, _message("<late2@reporter.example>", "reporter2@reporter.example", "Re: Report 2",
                           "Released in 1.2.4.", BASE + timedelta(days=90), "<r2@reporter.example>"))
    _, reads = _run(root)
    assert reads == len(changed) + 3
    # One listing of the archive per run, whatever the number of issues.
    assert sum(1 for r in OPLOG.items() if r.op == "list_recent_threads") == 1


def test_an_issue_run_reads_every_thread_it_names(bench):
    root, _ = bench
    _run(root)
    _, reads = _run(root, ["SEC-00001", "SEC-00002"])
    assert reads == 2
    assert not any(r.op == "list_recent_threads" for r in OPLOG.items())


def test_an_issue_file_that_changed_is_read_again(bench):
    """The link and coverage come from a stat-refreshed record: an edited file is re-read,
    a file turned into a symlink is never taken from the record."""
    root, changed = bench
    _run(root)
    tracker_dir = root / "security-tracker"
    # Advance SEC-00008's coverage past its new mail, as an applied Sync entry would.
    path = tracker_dir / "SEC-00008.md"
    text = path.read_text(encoding="utf-8")
    assert "Covers mail up to: 2026-03-01T10:08:00Z" in text
    path.write_text(text.replace("Covers mail up to: 2026-03-01T10:08:00Z", "Covers mail up to: 2026-06-01T00:00:00Z"),
                    encoding="utf-8")
    # SEC-00009 becomes a symlink to a copy outside the tracker folder.
    outside = root / "outside.md"
    outside.write_text((tracker_dir / "SEC-00009.md").read_text(encoding="utf-8"), encoding="utf-8")
    (tracker_dir / "SEC-00009.md").unlink()
    (tracker_dir / "SEC-00009.md").symlink_to(outside)
    full = _full(root)
    assert not full["SEC-00008"]["new_messages"] and "SEC-00009" not in full  # the listing leaves symlinks out
    assert _run(root)[0] == full
    assert _run(root)[0] == full


def test_a_sync_lists_the_issue_folder_once(bench):
    """The issue list's scan stats every issue file; the stat-refreshed record of links and
    coverage takes its stats from that scan instead of a second pass over the folder (each
    listing of the folder is followed by a stat of each of its issue files)."""
    root, _ = bench
    folder = os.path.realpath(root / "security-tracker")
    listed: list[str] | None = None

    def watch(event, args):  # audit hooks stay for the process: only counts while a list is set
        if listed is not None and event == "os.scandir" and args[0] is not None \
                and os.path.realpath(args[0]) == folder:
            listed.append(event)

    sys.addaudithook(watch)
    for _ in range(2):  # the first sync records every issue's facts, the second reuses them
        listed = []
        try:
            items, _reads = _run(root)
        finally:
            count, listed = len(listed), None
        assert count == 1, f"the issue folder was listed {count} times in one sync"
        assert items == _full(root)
