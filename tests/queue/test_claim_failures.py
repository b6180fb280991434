"""Claims that fail on a local-files tracker in git (issue 37 review): a claim publishes no
commit it did not show, and every failure leaves the working copy as it was before the claim
(the user's staged and unstaged changes included)."""

from __future__ import annotations

import json
import stat
import sys

import pytest

from tests.application.flows.conftest import sh
from tests.queue.conftest import cli, make_team, run_here


def _claim(team, who: str):
    return run_here(team.project(who), "queue", "claim", "SEC-0001", "--as", who, "--yes")


def _remote_log(team, tmp_path) -> str:
    return sh(["git", "--git-dir", str(team.remote), "log", "--format=%s", "main"], tmp_path)


def test_a_claim_pushes_no_commit_it_did_not_show(tmp_path):
    team = make_team(tmp_path, triagers=["alice"])
    wc = team.clones["alice"]
    (wc / "security-tracker" / "NOTES-draft.txt").write_text("embargoed draft notes\n")
    sh(["git", "add", "-A"], wc)
    sh(["git", "commit", "-qm", "alice: embargoed draft, not for the team yet"], wc)
    mine = sh(["git", "rev-parse", "HEAD"], wc)
    # refused in the proposal, before anyone confirms: a blocked proposal naming the commit
    proc = run_here(team.project("alice"), "queue", "claim", "SEC-0001", "--as", "alice", "--yes")
    assert proc.returncode == 3, proc.stderr
    assert "nothing written" in proc.stderr and "mailtriage publish" in proc.stderr
    assert "embargoed draft, not for the team yet" in proc.stderr
    got = json.loads(proc.stdout)
    assert got["written"] is False and got["proposal"]["facts"]["blocked_by"] == "unpushed_commits"
    assert got["proposal"]["writes"] == []
    assert "embargoed draft" not in _remote_log(team, tmp_path)
    assert sh(["git", "rev-parse", "HEAD"], wc) == mine  # nothing written, nothing undone
    assert sh(["git", "status", "--porcelain"], wc) == ""


def test_a_claim_refused_by_a_commit_hook_leaves_nothing(tmp_path):
    team = make_team(tmp_path, triagers=["alice"])
    wc = team.clones["alice"]
    hook = wc / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'secret scanner says no' >&2\nexit 1\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    before = sh(["git", "rev-parse", "HEAD"], wc)
    proc = _claim(team, "alice")
    assert proc.returncode != 0 and "secret scanner says no" in proc.stderr
    assert sh(["git", "status", "--porcelain"], wc) == ""
    assert sh(["git", "rev-parse", "HEAD"], wc) == before


def test_a_claim_whose_push_is_refused_leaves_no_commit(tmp_path):
    team = make_team(tmp_path, triagers=["alice"])
    wc = team.clones["alice"]
    (wc / "project" / "notes.txt").write_text("mine\n")
    sh(["git", "add", "-A"], wc)
    sh(["git", "commit", "-qm", "alice: code change, not pushed"], wc)
    mine = sh(["git", "rev-parse", "HEAD"], wc)
    proc = _claim(team, "alice")
    assert proc.returncode != 0 and "alice: code change, not pushed" in proc.stderr
    assert "claims it" not in sh(["git", "log", "--format=%s", "-3"], wc)
    assert sh(["git", "rev-parse", "HEAD"], wc) == mine
    assert sh(["git", "status", "--porcelain"], wc) == ""


def test_a_claim_on_a_branch_without_upstream_is_refused_before_writing(tmp_path):
    team = make_team(tmp_path, triagers=["alice"])
    wc = team.clones["alice"]
    sh(["git", "branch", "--unset-upstream"], wc)
    before = sh(["git", "rev-parse", "HEAD"], wc)
    proc = _claim(team, "alice")
    assert proc.returncode != 0 and "needs an upstream" in proc.stderr
    assert sh(["git", "rev-parse", "HEAD"], wc) == before
    assert sh(["git", "status", "--porcelain"], wc) == ""


@pytest.mark.slow  # two processes: bob's pre-push hook runs alice's claim
def test_a_lost_claim_keeps_the_users_staged_and_unstaged_changes(tmp_path):
    team = make_team(tmp_path, triagers=["alice", "bob"])
    wc = team.clones["bob"]
    (wc / "project" / "staged.txt").write_text("staged version\n")
    sh(["git", "add", "project/staged.txt"], wc)
    (wc / "project" / "staged.txt").write_text("working version\n")
    (wc / "project" / "project.md").write_text((wc / "project" / "project.md").read_text() + "\n<!-- wip -->\n")
    hook = wc / ".git" / "hooks" / "pre-push"
    marker = tmp_path / "alice-went"
    hook.write_text(f"#!/bin/sh\nif [ ! -e '{marker}' ]; then touch '{marker}'; "
                    f"'{sys.executable}' -m mailtriage.cli.main --project '{team.project('alice')}' "
                    f"queue claim SEC-0001 --as alice --yes >/dev/null 2>&1 || exit 1; fi\nexit 0\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    bob = cli(team.project("bob"), "queue", "claim", "SEC-0001", "--as", "bob", "--yes")
    assert marker.exists() and bob.returncode == 3 and "held by alice" in bob.stderr
    assert sh(["git", "show", ":project/staged.txt"], wc) == "staged version\n"  # the staged version survives
    assert (wc / "project" / "staged.txt").read_text() == "working version\n"
    assert sorted(sh(["git", "status", "--porcelain"], wc).splitlines()) == [" M project/project.md",
                                                                            "AM project/staged.txt"]
    assert sh(["git", "rev-parse", "HEAD"], wc) == sh(["git", "rev-parse", "origin/main"], wc)


def test_a_sync_or_claim_does_not_fast_forward_files_outside_the_tracker(tmp_path):
    team = make_team(tmp_path, triagers=["alice", "bob"])
    bob = team.clones["bob"]
    (bob / "project" / "project.md").write_text((bob / "project" / "project.md").read_text() + "\n<!-- bob -->\n")
    sh(["git", "commit", "-qam", "bob: project.md"], bob)
    sh(["git", "push", "-q"], bob)
    alice = team.clones["alice"]
    before = sh(["git", "rev-parse", "HEAD"], alice)
    for args in (("queue", "sync"), ("queue", "claim", "SEC-0001", "--as", "alice", "--yes")):
        proc = run_here(team.project("alice"), *args)
        assert proc.returncode != 0 and "outside the tracker folder" in proc.stderr and "project/project.md" in proc.stderr
        assert sh(["git", "rev-parse", "HEAD"], alice) == before
        assert sh(["git", "status", "--porcelain"], alice) == ""


def test_a_file_moved_from_outside_into_the_tracker_counts_as_outside(tmp_path):
    # git lists a rename under its new name only: a move of project.md into the tracker folder
    # must still name project/project.md (review finding: the fast-forward would delete it)
    team = make_team(tmp_path, triagers=["alice", "bob"])
    bob = team.clones["bob"]
    sh(["git", "mv", "project/project.md", "security-tracker/moved.md"], bob)
    sh(["git", "commit", "-qm", "bob: move project.md into the tracker"], bob)
    sh(["git", "push", "-q"], bob)
    alice = team.clones["alice"]
    before = sh(["git", "rev-parse", "HEAD"], alice)
    proc = run_here(team.project("alice"), "queue", "sync")
    assert proc.returncode != 0 and "project/project.md" in proc.stderr
    assert sh(["git", "rev-parse", "HEAD"], alice) == before


def test_a_sync_blocked_by_uncommitted_changes_says_so(tmp_path):
    team = make_team(tmp_path, triagers=["alice", "bob"])
    assert _claim(team, "bob").returncode == 0
    alice = team.clones["alice"]
    issue = alice / "security-tracker" / "SEC-0001.md"
    issue.write_text(issue.read_text() + "\nalice's note\n")
    proc = run_here(team.project("alice"), "queue", "sync")
    assert proc.returncode != 0 and "uncommitted local changes" in proc.stderr
    assert "alice's note" in issue.read_text()
