"""Claims on a local-files tracker shared through one git remote (issue 37 §2, §3): several
triagers, each in their own clone and process, claim the same report; the remote decides
(a rejected push re-reads and asks again), exactly one owns it, the others are told who, and
every clone's queue shows the same owner after a sync. No lock of ours is involved."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from tests.queue.conftest import TRIAGERS, cli, doc, make_team, run_here
from tests.application.flows.conftest import sh

NOW = "2026-09-02T12:00:00+00:00"


def _owner(team, who: str) -> list[str]:
    proc = run_here(team.project(who), "tracker", "view", "SEC-0001")
    assert proc.returncode == 0, proc.stderr
    return doc(proc)["assignees"]


@pytest.mark.slow  # four processes on four clones
def test_concurrent_claims_from_four_clones_give_one_owner_and_tell_the_others_who(tmp_path):
    team = make_team(tmp_path)
    procs = {who: subprocess.Popen([sys.executable, "-m", "mailtriage.cli.main", "--project", str(team.project(who)),
                                    "queue", "claim", "SEC-0001", "--as", who, "--yes"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for who in TRIAGERS}
    results = {who: (p.wait(120), *p.communicate()) for who, p in procs.items()}
    winners = [who for who, (code, _, _) in results.items() if code == 0]
    assert len(winners) == 1, {w: (c, e[-300:]) for w, (c, _, e) in results.items()}
    winner = winners[0]
    for who, (code, out, err) in results.items():
        if who != winner:
            assert code == 3, err
            assert f"SEC-0001 is held by {winner}" in err
            assert doc(subprocess.CompletedProcess([], code, out, err))["holder"] == winner
    # the remote holds one claim commit; every clone converges on it after a sync
    log = sh(["git", "--git-dir", str(team.remote), "log", "--format=%s", "main"], tmp_path)
    assert log.count("claims it (queue)") == 1
    for who in TRIAGERS:
        assert doc(run_here(team.project(who), "queue", "sync"))["synced"] is True
        rows = doc(run_here(team.project(who), "queue", "--json", "--now", NOW))["rows"]
        assert [(r["issue"], r["owner"], r["state"]) for r in rows] == [("SEC-0001", winner, "in_progress")]
        assert _owner(team, who) == [winner]


def test_a_push_rejected_because_a_colleague_claimed_first_pulls_and_names_the_colleague(tmp_path):
    """Deterministic race: bob's pre-push hook lets alice's claim reach the remote between bob's
    pull and bob's push, so bob's push is rejected."""
    team = make_team(tmp_path, triagers=["alice", "bob"])
    hook = team.clones["bob"] / ".git" / "hooks" / "pre-push"
    marker = tmp_path / "alice-went"
    hook.write_text(f"#!/bin/sh\nif [ ! -e '{marker}' ]; then touch '{marker}'; "
                    f"'{sys.executable}' -m mailtriage.cli.main --project '{team.project('alice')}' "
                    f"queue claim SEC-0001 --as alice --yes >/dev/null 2>&1 || exit 1; fi\nexit 0\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    bob = cli(team.project("bob"), "queue", "claim", "SEC-0001", "--as", "bob", "--yes")
    assert marker.exists()  # bob's claim reached its push, and alice's went first
    assert bob.returncode == 3, bob.stderr
    assert "another triager was first; SEC-0001 is held by alice" in bob.stderr
    assert doc(bob)["holder"] == "alice"
    # bob's clone keeps no commit of the lost claim and now reads alice as the owner
    wc = team.clones["bob"]
    assert sh(["git", "status", "--porcelain"], wc) == ""
    assert sh(["git", "rev-parse", "HEAD"], wc) == sh(["git", "rev-parse", "origin/main"], wc)
    assert _owner(team, "bob") == ["alice"]


def test_claim_then_release_round_trip_and_a_claim_of_a_held_issue_writes_nothing(tmp_path):
    team = make_team(tmp_path, triagers=["alice", "bob"])
    assert run_here(team.project("alice"), "queue", "claim", "SEC-0001", "--as", "alice", "--yes").returncode == 0
    head = sh(["git", "--git-dir", str(team.remote), "rev-parse", "main"], tmp_path)
    # bob's clone is behind: the claim is proposed, and its write pulls first and finds alice
    stale = run_here(team.project("bob"), "queue", "claim", "SEC-0001", "--as", "bob", "--yes")
    assert stale.returncode == 3 and "another triager was first; SEC-0001 is held by alice" in stale.stderr
    # synced, bob sees the holder before anything is proposed
    held = run_here(team.project("bob"), "queue", "claim", "SEC-0001", "--as", "bob", "--yes")
    assert held.returncode == 3 and "nothing written: SEC-0001 is held by alice" in held.stderr
    assert doc(held)["written"] is False and doc(held)["proposal"]["writes"] == []
    assert doc(held)["holder"] == "alice" and doc(held)["proposal"]["facts"]["blocked_by"] == "held_by_other"
    assert sh(["git", "--git-dir", str(team.remote), "rev-parse", "main"], tmp_path) == head
    # a release by someone who does not hold it writes nothing either
    assert doc(run_here(team.project("bob"), "queue", "release", "SEC-0001", "--as", "bob", "--yes"))["written"] is False
    assert run_here(team.project("alice"), "queue", "release", "SEC-0001", "--as", "alice", "--yes").returncode == 0
    run_here(team.project("bob"), "queue", "sync")
    assert _owner(team, "bob") == []
    assert run_here(team.project("bob"), "queue", "claim", "SEC-0001", "--as", "bob", "--yes").returncode == 0
    run_here(team.project("alice"), "queue", "sync")
    assert _owner(team, "alice") == ["bob"]


def test_a_user_outside_tracker_assignees_is_refused_before_anything_is_proposed(tmp_path):
    team = make_team(tmp_path, triagers=["alice"])
    proc = run_here(team.project("alice"), "queue", "claim", "SEC-0001", "--as", "mallory", "--yes")
    assert proc.returncode == 4
    assert "assignee 'mallory' refused" in proc.stderr
    assert os.listdir(team.clones["alice"] / "security-tracker")  # nothing of it changed: the tree is clean
    assert sh(["git", "status", "--porcelain"], team.clones["alice"]) == ""


def test_on_svn_a_stale_checkout_updates_before_it_writes_and_names_the_holder(tmp_path):
    from mailtriage.application.queue import propose_claim, sync_tracker
    from mailtriage.core.projectconfig import load_project
    from mailtriage.trackers.registry import open_tracker
    from tests.trackers.conftest import make_svn_env

    env = make_svn_env(tmp_path)
    issue = env.tracker.create("Race on svn", "### CVE\n\nnone\n", [])["id"]
    sh(["svn", "add", "-q", "--force", "security-tracker"], env.wc)
    sh(["svn", "commit", "-q", "--non-interactive", "-m", "issue"], env.wc)
    other = tmp_path / "wc-bob"
    sh(["svn", "checkout", "-q", "--non-interactive", env.remote.as_uri(), str(other)], tmp_path)
    bob = open_tracker(load_project(other / "project"))
    late = propose_claim(bob, issue, "bob")  # bob looks while it is free
    assert propose_claim(env.tracker, issue, "alice").apply(confirmed=True).ok  # alice commits first
    report = late.apply(confirmed=True)
    assert not report.ok and late.facts["lost_to"] == "alice"
    assert report.failed[1] == f"ClaimLost: {issue} is held by alice"
    assert sh(["svn", "status", "-q"], other) == ""  # nothing of bob's claim is left
    assert sync_tracker(bob)["synced"] is True
    assert bob.view(issue)["assignees"] == ["alice"]


def test_a_clone_with_unpushed_commits_that_diverged_is_not_rebased_by_a_claim(tmp_path):
    team = make_team(tmp_path, triagers=["alice", "bob"])
    assert run_here(team.project("alice"), "queue", "claim", "SEC-0001", "--as", "alice", "--yes").returncode == 0
    wc = team.clones["bob"]
    (wc / "notes.txt").write_text("bob's own work\n")
    sh(["git", "add", "notes.txt"], wc)
    sh(["git", "commit", "-qm", "bob's local commit"], wc)
    mine = sh(["git", "rev-parse", "HEAD"], wc)
    proc = run_here(team.project("bob"), "queue", "sync")
    assert proc.returncode == 4 and "cannot fast-forward to its upstream" in proc.stderr
    claim = run_here(team.project("bob"), "queue", "release", "SEC-0001", "--as", "bob", "--yes")
    assert claim.returncode == 0 and doc(claim)["written"] is False  # bob holds nothing: no pull either
    stale = run_here(team.project("bob"), "queue", "claim", "SEC-0001", "--as", "bob", "--yes")
    # blocked in the proposal (bob's commit would ride along on the claim's push), before any pull
    assert stale.returncode == 3 and "nothing written" in stale.stderr and "bob's local commit" in stale.stderr
    assert sh(["git", "rev-parse", "HEAD"], wc) == mine  # bob's commit is where bob left it
    assert sh(["git", "status", "--porcelain"], wc) == ""
