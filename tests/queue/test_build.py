"""build_queue over real parts: the list's mbox archive through the mbox backend and a
local-files tracker in a git working copy, judged at an injected ``now``; and the command
line's table and JSON, with hostile text from the mail made inert."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from mailtriage.application.project import Project
from mailtriage.application.queue import Breach, QueueState, build_queue, propose_claim
from tests.queue.conftest import doc, make_team, mail, run_here
from tests.application.flows.conftest import report_thread, sh

NOW = datetime(2026, 9, 4, 12, 0, tzinfo=timezone.utc)
HOSTILE = "Crash \x1b]0;pwned\x07 in \u202eparser"


def _messages():
    answered = report_thread(with_reply=True)  # Sam of the list's domain replied: a colleague's answer
    waiting = [mail("<report-2@other.example>", "Otto <otto@other.example>", HOSTILE, "It crashes.\n",
                    "Wed, 02 Sep 2026 08:00:00 +0000")]
    return answered + waiting


def test_the_queue_of_a_real_archive_and_tracker(tmp_path):
    team = make_team(tmp_path, _messages(), triagers=["alice"])
    project = Project.open(team.project("alice"))
    try:
        tracker = project.open_tracker()
        tracker.field_set("SEC-0001", "Disclosure date", "2026-09-03")
        tracker.field_set("SEC-0001", "CVE", "none yet")
        sh(["git", "commit", "-qam", "disclosure date"], team.clones["alice"])
        sh(["git", "push", "-q"], team.clones["alice"])  # a claim refuses to push unpushed commits unseen
        assert propose_claim(tracker, "SEC-0001", "alice").apply(confirmed=True).ok
        queue = build_queue(project, now=NOW)
    finally:
        project.close()
    assert queue.warnings == ()
    new, mine = queue.rows
    assert (new.state, new.reporter, new.issue, new.owner) == (QueueState.NEW, "otto@other.example", None, None)
    assert new.unanswered_since == datetime(2026, 9, 2, 8, 0, tzinfo=timezone.utc)
    assert new.breaches == (Breach.FIRST_RESPONSE,)  # two days passed at NOW
    assert (mine.state, mine.issue, mine.owner) == (QueueState.IN_PROGRESS, "SEC-0001", "alice")
    assert mine.unanswered_since is None  # the colleague's reply in the list archive answered it
    assert mine.disclosure_due == datetime(2026, 9, 3, tzinfo=timezone.utc)  # the issue's own field
    assert mine.breaches == (Breach.DISCLOSURE,)


def test_the_command_line_filters_and_keeps_hostile_subjects_inert(tmp_path):
    team = make_team(tmp_path, _messages(), triagers=["alice"])
    project = team.project("alice")
    table = run_here(project, "queue", "--now", NOW.isoformat()).stdout
    assert "\x1b" not in table and "\u202e" not in table and "\x07" not in table
    assert table.splitlines()[0].split()[:4] == ["STATE", "AGE", "WAITING", "OWNER"]
    assert [line.split()[0] for line in table.splitlines()[1:]] == ["new", "imported"]
    raw = run_here(project, "queue", "--json", "--state", "new", "--now", NOW.isoformat()).stdout
    assert "\x1b" not in raw and "\u202e" not in raw
    rows = json.loads(raw)["rows"]
    assert [r["reporter"] for r in rows] == ["otto@other.example"]
    assert rows[0]["subject"] == HOSTILE  # escaped in the JSON text, the same string once parsed
    assert doc(run_here(project, "queue", "--json", "--owner", "alice", "--now", NOW.isoformat()))["rows"] == []
    every = run_here(project, "queue", "--json", "--now", NOW.isoformat()).stdout
    rows = json.loads(every)["rows"]
    assert [json.loads(line.strip().rstrip(",")) for line in every.splitlines() if line.startswith("    {")] == rows
    assert len(rows) == 2 and len(every.splitlines()) == 9  # a row a line (command, now, rows, warnings)
    bad = run_here(project, "queue", "--now", "tomorrow")
    assert bad.returncode == 2 and "--now 'tomorrow'" in bad.stderr


def test_a_warm_queue_reads_no_thread_again_and_sees_what_changed(tmp_path):
    from mailtriage.core.trace import OPLOG
    from tests.application.flows.conftest import write_mbox

    team = make_team(tmp_path, _messages(), triagers=["alice"])
    reads: list[str] = []
    stop = OPLOG.subscribe(lambda rec: reads.append(rec.op) if rec.op == "read_thread" else None)
    project = Project.open(team.project("alice"))
    try:
        first = build_queue(project, now=NOW)
        assert reads.count("read_thread") == 2
        reads.clear()
        assert build_queue(project, now=NOW) == first  # from the records: the same queue, no thread read
        assert reads == []
        assert propose_claim(project.open_tracker(), "SEC-0001", "alice").apply(confirmed=True).ok
        follow_up = mail("<report-2-again@other.example>", "Otto <otto@other.example>", "Re: crash", "Any news?\n",
                         "Thu, 03 Sep 2026 08:00:00 +0000", in_reply_to="<report-2@other.example>")
        write_mbox(team.project("alice") / "security.mbox", [follow_up])  # appended to the archive
        again = build_queue(project, now=NOW)
    finally:
        stop()
        project.close()
    assert reads == ["read_thread"]  # only the thread with new mail
    waiting, mine = again.rows
    assert mine.owner == "alice" and mine.state is QueueState.IN_PROGRESS
    assert waiting.last_reporter_message == datetime(2026, 9, 3, 8, 0, tzinfo=timezone.utc)
    assert waiting.unanswered_since == datetime(2026, 9, 2, 8, 0, tzinfo=timezone.utc)


def test_a_warm_queue_sees_a_deadline_pass_and_a_changed_setting(tmp_path):
    """Rows kept from the last run (same thread, same issue) hold only while no deadline passed
    since and the queue settings are the same."""
    from datetime import timedelta

    team = make_team(tmp_path, _messages(), triagers=["alice"])
    project = Project.open(team.project("alice"))
    try:
        build_queue(project, now=NOW)  # cold: the threads are read
        assert build_queue(project, now=NOW).rows[1].breaches == ()  # warm: its rows are kept
        later = build_queue(project, now=NOW + timedelta(days=100)).rows  # the 90 days to disclosure passed
        assert [(r.issue, r.breaches) for r in later if r.issue] == [("SEC-0001", (Breach.DISCLOSURE,))]
    finally:
        project.close()
    md = team.project("alice") / "project.md"
    md.write_text(md.read_text().replace("import:\n", "queue:\n  disclosure_days: 200\nimport:\n"))
    project = Project.open(team.project("alice"))
    try:
        [mine] = [r for r in build_queue(project, now=NOW + timedelta(days=100)).rows if r.issue]
    finally:
        project.close()
    assert mine.breaches == () and mine.disclosure_due == mine.opened + timedelta(days=200)


def test_a_warm_queue_sees_an_issue_file_removed(tmp_path):
    team = make_team(tmp_path, _messages(), triagers=["alice"])
    project = Project.open(team.project("alice"))
    try:
        build_queue(project, now=NOW)
        assert [r.issue for r in build_queue(project, now=NOW).rows if r.issue] == ["SEC-0001"]
        (team.clones["alice"] / "security-tracker" / "SEC-0001.md").unlink()  # the other files are unchanged
        assert [r.issue for r in build_queue(project, now=NOW).rows] == [None, None]
    finally:
        project.close()


def test_a_queue_is_built_with_the_collector_paused(tmp_path):
    """A warm queue over 10,000 reports makes some 100,000 objects that all live and no cycle:
    the cyclic collector is paused while it is built (it ran 70-80 young and one full collection
    per warm queue at 10k, benchmarks/bench_queue.py) and on again after."""
    import gc
    import os
    import sys

    team = make_team(tmp_path, _messages(), triagers=["alice"])
    started: list[int] = []

    def seen(phase: str, info: dict) -> None:
        frame = sys._getframe(1)
        while frame is not None and phase == "start":  # a collection while the queue is built
            if frame.f_code.co_filename.endswith(os.path.join("application", "queue.py")):
                if frame.f_code.co_name != "build_queue":  # not on its way out, the collector back on
                    started.append((info["generation"], frame.f_code.co_name))
                return
            frame = frame.f_back

    project = Project.open(team.project("alice"))
    thresholds = gc.get_threshold()
    gc.set_threshold(1)  # a collection at every new container object, were the collector on
    gc.callbacks.append(seen)
    try:
        cold = build_queue(project, now=NOW)  # threads read, issue files parsed
        warm = build_queue(project, now=NOW)
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*thresholds)
        project.close()
    assert started == [] and gc.isenabled()
    assert warm == cold and len(warm.rows) == 2


def test_a_one_shot_queue_keeps_nothing_in_the_process_but_saves_its_records(tmp_path):
    """``keep_records=False`` (the command line): the same queue, nothing of it kept in the
    process, and the records file saved, so the next queue reads no thread again."""
    from mailtriage.application import queue_records
    from mailtriage.core.trace import OPLOG

    team = make_team(tmp_path, _messages(), triagers=["alice"])
    reads: list[str] = []
    stop = OPLOG.subscribe(lambda rec: reads.append(rec.op) if rec.op == "read_thread" else None)
    project = Project.open(team.project("alice"))
    try:
        once = build_queue(project, now=NOW, keep_records=False)
        assert reads.count("read_thread") == 2
        assert [kept.objects for kept in queue_records._open.values() if kept.path and tmp_path in kept.path.parents] == [{}]
        reads.clear()
        again = build_queue(project, now=NOW, keep_records=False)
        assert reads == [] and again == once  # from the saved records
        assert build_queue(project, now=NOW) == once
    finally:
        stop()
        project.close()


def test_the_command_line_shows_ages_as_the_app_does(tmp_path):
    """AGE and WAITING in whole hours under a day, else whole days, rounded down, as the app's
    queue shows them (one helper, ``application.queue_span``): a report 1 day 14 hours old is
    ``1d`` in both (the table said ``2d``), 23 h 40 min is ``23h`` (it said ``24h``)."""
    from mailtriage.tui.screens.queue import span

    team = make_team(tmp_path, _messages(), triagers=["alice"])
    opened = datetime(2026, 9, 2, 8, 0, tzinfo=timezone.utc)  # otto's report, unanswered
    for now, shown in ((datetime(2026, 9, 3, 22, 0, tzinfo=timezone.utc), "1d"),
                       (datetime(2026, 9, 3, 7, 40, tzinfo=timezone.utc), "23h"),
                       (datetime(2026, 9, 2, 8, 0, 30, tzinfo=timezone.utc), "0h")):
        table = run_here(team.project("alice"), "queue", "--now", now.isoformat()).stdout
        [row] = [line.split() for line in table.splitlines() if line.startswith("new ")]
        assert row[1:3] == [shown, shown] == [span(now - opened)] * 2, (now, row)
