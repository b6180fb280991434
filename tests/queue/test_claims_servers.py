"""Claims on GitHub and Jira (the emulators of tests/trackers/servers.py): neither server has a
compare-and-swap on assignees, so a claim reads the issue back (the first assignee holds it;
Jira keeps the last write). Triagers racing for one issue end with exactly one owner, and
every other one is told who it is."""

from __future__ import annotations

import threading

import pytest

from mailtriage.application import BlockedBy
from mailtriage.application.queue import ClaimLost, propose_claim, propose_release
from mailtriage.core.projectconfig import load_project
from mailtriage.trackers.contract import EditRequest
from mailtriage.trackers.registry import open_tracker
from tests.trackers.conftest import make_github_env, make_jira_env, memory_keyring  # noqa: F401 (fixture)

RACERS = ["alice", "bob", "carol", "dave"]


@pytest.fixture(params=["github", "jira-v2", "jira-v3"])
def server_env(request, tmp_path):
    kind = request.param
    env = make_github_env(tmp_path) if kind == "github" else make_jira_env(tmp_path, int(kind[-1]))
    text = (env.project / "project.md").read_text(encoding="utf-8")
    (env.project / "project.md").write_text(text.replace("  - alice\n  - bob\n", "".join(f"  - {r}\n" for r in RACERS)),
                                            encoding="utf-8")
    env.reopen()
    yield env
    env.tracker.close_backend()
    env.server.stop()


def test_racing_claims_leave_one_owner_and_tell_the_others_who(server_env):
    issue = server_env.tracker.create("Race for it", "### CVE\n\nnone\n", [])["id"]
    trackers = [open_tracker(load_project(server_env.project)) for _ in RACERS]
    proposals = [propose_claim(t, issue, who) for t, who in zip(trackers, RACERS)]
    assert all(len(p.writes) == 1 for p in proposals)  # nobody held it when they looked
    reports: dict[str, object] = {}
    barrier = threading.Barrier(len(RACERS))

    def claim(i: int) -> None:
        barrier.wait()
        reports[RACERS[i]] = proposals[i].apply(confirmed=True)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(RACERS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for t in trackers:
        t.close_backend()
    winners = [who for who, report in reports.items() if report.ok]
    assert len(winners) == 1, {who: r.describe() for who, r in reports.items()}
    owner = winners[0]
    assert server_env.reopen().view(issue)["assignees"] == [owner]
    for i, who in enumerate(RACERS):
        if who != owner:
            assert proposals[i].facts["lost_to"] == owner
            assert reports[who].failed[1] == f"ClaimLost: {issue} is held by {owner}"


def test_a_claim_of_a_held_issue_proposes_nothing_and_the_holder_can_release(server_env):
    tracker = server_env.tracker
    issue = tracker.create("Held", "### CVE\n\nnone\n", [])["id"]
    assert propose_claim(tracker, issue, "alice").apply(confirmed=True).ok
    held = propose_claim(tracker, issue, "bob")
    assert held.empty and held.facts["holder"] == "alice"
    assert held.blocked is not None and held.blocked.reason is BlockedBy.HELD_BY_OTHER
    assert "is held by alice" in held.blocked.text and held.to_json()["facts"]["blocked_by"] == "held_by_other"
    assert propose_release(tracker, issue, "bob").empty  # bob holds nothing to release
    assert propose_release(tracker, issue, "alice").apply(confirmed=True).ok
    assert tracker.view(issue)["assignees"] == []
    with pytest.raises(ClaimLost, match="held by bob"):
        other = open_tracker(load_project(server_env.project))
        late = propose_claim(other, issue, "carol")  # carol looked while it was free
        assert propose_claim(tracker, issue, "bob").apply(confirmed=True).ok
        late.writes[0].apply(late.writes[0])


@pytest.fixture(params=["jira-v2", "jira-v3"])
def jira_env(request, tmp_path):
    env = make_jira_env(tmp_path, int(request.param[-1]))
    yield env
    env.tracker.close_backend()
    env.server.stop()


def test_a_late_claim_landing_over_the_first_is_undone_and_told_who(jira_env):
    """Bob read the issue free, but his write lands only after alice claimed it and read it
    back (Jira keeps the last write): the change history says alice was first, so bob puts
    her back and is told she holds it, however late his write came; one owner, not two."""
    tracker, server = jira_env.tracker, jira_env.server
    issue = tracker.create("Late race", "### CVE\n\nnone\n", [])["id"]
    held, release = threading.Event(), threading.Event()

    def hold_bobs_write(method: str, path: str, raw: bytes) -> None:
        if method == "PUT" and b'"bob"' in raw and not release.is_set():
            held.set()
            release.wait(30)

    server.before_handle = hold_bobs_write
    bob = open_tracker(load_project(jira_env.project))
    late = propose_claim(bob, issue, "bob")  # free when bob looked
    got: dict[str, object] = {}
    racer = threading.Thread(target=lambda: got.update(bob=late.apply(confirmed=True)))
    racer.start()
    assert held.wait(30)  # bob's write is on its way
    assert propose_claim(tracker, issue, "alice").apply(confirmed=True).ok  # alice: written and read back
    release.set()
    racer.join(60)
    bob.close_backend()
    assert got["bob"].failed[1] == f"ClaimLost: {issue} is held by alice"
    assert late.facts["lost_to"] == "alice"
    assert jira_env.reopen().view(issue)["assignees"] == ["alice"]


def _race_with_put_back_dropped(jira_env, drops: int):
    """Bob's claim lands over alice's (held until she was told she holds it); the first
    ``drops`` PUTs after that (bob's put-back of alice) are cut off on the way to Jira."""
    tracker, server = jira_env.tracker, jira_env.server
    issue = tracker.create("Late race", "### CVE\n\nnone\n", [])["id"]
    held, release = threading.Event(), threading.Event()
    dropped = []

    def stage(method: str, path: str, raw: bytes) -> None:
        if method == "PUT" and b'"bob"' in raw and not release.is_set():
            held.set()
            release.wait(30)
        elif method == "PUT" and release.is_set() and b'"alice"' in raw and len(dropped) < drops:
            dropped.append(path)
            raise ConnectionResetError("the put-back never reaches Jira")

    server.before_handle = stage
    bob = open_tracker(load_project(jira_env.project))
    late = propose_claim(bob, issue, "bob")
    got: dict[str, object] = {}
    racer = threading.Thread(target=lambda: got.update(bob=late.apply(confirmed=True)))
    racer.start()
    assert held.wait(30)
    alice = propose_claim(tracker, issue, "alice").apply(confirmed=True)
    release.set()
    racer.join(60)
    bob.close_backend()
    server.before_handle = None
    return issue, alice, got["bob"], late, dropped


def test_a_put_back_cut_off_once_is_read_back_and_sent_again(jira_env):
    issue, alice, bob, late, dropped = _race_with_put_back_dropped(jira_env, 1)
    assert dropped  # the first put-back was lost on the way
    assert alice.ok
    assert bob.failed[1] == f"ClaimLost: {issue} is held by alice"
    assert jira_env.reopen().view(issue)["assignees"] == ["alice"]


def test_a_put_back_that_never_lands_tells_the_loser_the_issue_is_unsettled(jira_env):
    issue, _alice, bob, late, _dropped = _race_with_put_back_dropped(jira_env, 99)
    assert not bob.ok
    _summary, text = bob.failed
    assert text.startswith("ClaimUnsettled: ")
    assert f"{issue} is held by bob" in text and "alice claimed it first" in text
    assert late.facts["first_claimant"] == "alice" and late.facts["held_now_by"] == "bob"
    assert "lost_to" not in late.facts  # not a settled loss: the CLI says the write failed (exit 4)
    assert jira_env.reopen().view(issue)["assignees"] == ["bob"]


def test_the_first_claimant_finds_a_later_claim_over_hers_and_restores_it(jira_env):
    """Bob's write lands over alice's before she reads the history (and bob never checks: his
    process was killed): the history names her first, so she reads who holds it now rather
    than trusting the history alone, and puts her claim back."""
    tracker, server = jira_env.tracker, jira_env.server
    issue = tracker.create("Late race", "### CVE\n\nnone\n", [])["id"]
    bob = open_tracker(load_project(jira_env.project))
    state = {"alice_wrote": False, "bob_wrote": False}

    def bob_lands_after_alice(method: str, path: str, raw: bytes) -> None:
        if method == "PUT" and b'"alice"' in raw:
            state["alice_wrote"] = True
        elif method == "GET" and state["alice_wrote"] and not state["bob_wrote"]:
            state["bob_wrote"] = True
            bob.edit(issue, EditRequest(add_assignees=["bob"], remove_assignees=["alice"]))

    server.before_handle = bob_lands_after_alice
    report = propose_claim(tracker, issue, "alice").apply(confirmed=True)
    server.before_handle = None
    bob.close_backend()
    assert state["bob_wrote"]
    assert report.ok
    assert jira_env.reopen().view(issue)["assignees"] == ["alice"]


def test_the_claim_proposal_says_a_lost_race_is_undone(server_env):
    """What the user confirms includes the compensating write: a claim that lost the race is
    taken back off the issue (on Jira the first claimant is put back)."""
    issue = server_env.tracker.create("Say so", "### CVE\n\nnone\n", [])["id"]
    write = propose_claim(server_env.tracker, issue, "alice").writes[0]
    assert "if another triager claimed it first, this claim is undone" in write.where
    if server_env.tracker.kind == "jira":
        assert "the first claimant is put back as the assignee" in write.where
