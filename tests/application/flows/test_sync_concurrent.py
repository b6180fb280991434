"""Several sync processes at once write each reply into one Sync entry (issue 30: "an
import, a draft or a Sync entry happens exactly once", also under a second writer).

Each process collects, waits for the others, then applies its (by then stale) proposal;
whatever the interleaving, the rollup ends with every reply named by exactly one entry.
"""

from __future__ import annotations

import multiprocessing

from mailtriage.backends.registry import SourceSet
from mailtriage.core.projectconfig import load_project
from mailtriage.trackers.registry import open_tracker
from mailtriage.application.flows.linking import message_key, rollup_state
from mailtriage.application.flows.sync import collect_sync, propose_sync
from tests.application.flows.test_sync_seen import _import, _reply

PROCESSES = 3


def _sync_after_barrier(project: str, barrier) -> None:
    config = load_project(project)
    sources = SourceSet(config)
    proposal = propose_sync(open_tracker(config), collect_sync(sources, open_tracker(config)))
    sources.close()
    barrier.wait(timeout=120)
    report = proposal.apply(confirmed=True)
    raise SystemExit(0 if report.ok else 1)


def test_concurrent_syncs_summarise_each_reply_once(mbox_env):
    issue = _import(mbox_env)
    _reply(mbox_env, 1, "Thu, 03 Sep 2026 12:00:00 +0000", "One.\n")
    _reply(mbox_env, 2, "Wed, 02 Sep 2026 12:00:00 +0000", "Two, dated earlier.\n")
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    runs = [context.Process(target=_sync_after_barrier, args=(str(mbox_env.project), barrier))
            for _ in range(PROCESSES)]
    for run in runs:
        run.start()
    for run in runs:
        run.join(timeout=180)
    assert [run.exitcode for run in runs] == [0] * PROCESSES
    entries = [e for e in rollup_state(mbox_env.tracker(), issue).entries if e.action == "Sync"]
    named = [key for e in entries for line in e.body.splitlines() if line.startswith("Covers messages:")
             for key in line.split(":", 1)[1].split()]
    assert sorted(named) == sorted(message_key(f"<followup-{n}@reporter.example>") for n in (1, 2)), \
        [e.body for e in entries]
