"""Jira as the real service behaves (issue 12 §8): transition screens decide what close may
send, reopen never moves an open issue, v3 paging follows nextPageToken."""

from __future__ import annotations

import json

import pytest

from tests.trackers.conftest import make_jira_env

BODY = "### Affected versions\n\n1.2.3\n"


@pytest.fixture(params=[2, 3], ids=["v2", "v3"])
def jira(request, tmp_path):
    env = make_jira_env(tmp_path, request.param)
    yield env
    env.tracker.close_backend()
    env.server.stop()


def _posted(server, key: str) -> list[dict]:
    return [json.loads(raw) for method, path, raw in server.bodies
            if method == "POST" and path.endswith(f"/issue/{key}/transitions")]


@pytest.mark.parametrize("reason,resolution", [("completed", "Done"), ("not-planned", "Won't Do")])
def test_close_sends_the_resolution_the_done_screen_asks_for(jira, reason, resolution):
    made = jira.tracker.create("t", BODY, [])
    assert jira.tracker.close(made["id"], reason) == {"id": made["id"], "state": "closed"}
    fields = jira.server.issues[made["id"]]["fields"]
    assert fields["status"]["name"] == "Done" and fields["resolution"] == {"name": resolution}
    gets = [p for m, p, _ in jira.server.requests if m == "GET" and "/transitions" in p]
    assert gets and all("expand=transitions.fields" in p for p in gets)


@pytest.mark.parametrize("reason,status", [("completed", "Done"), ("not-planned", "Won't Do")])
def test_close_on_a_team_managed_project_sends_no_resolution(jira, reason, status):
    jira.server.workflow = "team"  # no transition screens: a resolution would be a 400
    made = jira.tracker.create("t", BODY, [])
    code, out, err = jira.cli("close", made["id"], "--reason", reason)
    assert code == 0, err
    fields = jira.server.issues[made["id"]]["fields"]
    assert fields["status"]["name"] == status  # the transition that fits the reason
    assert [sorted(b) for b in _posted(jira.server, made["id"])] == [["transition"]]


def test_reopen_on_an_open_issue_changes_nothing_and_says_so(jira):
    made = jira.tracker.create("t", BODY, [])
    out = jira.tracker.reopen(made["id"])
    assert out["id"] == made["id"] and out["state"] == "open" and out["changed"] is False
    assert "already open" in out["note"]
    assert jira.server.issues[made["id"]]["fields"]["status"]["name"] == "Open"  # not "In Progress"
    assert _posted(jira.server, made["id"]) == []


def test_reopen_takes_the_transition_back_to_a_to_do_status(jira):
    jira.server.workflow = "team"  # from Done: To Do, In Progress and Won't Do are all offered
    made = jira.tracker.create("t", BODY, [])
    jira.tracker.close(made["id"], "completed")
    out = jira.tracker.reopen(made["id"])
    assert out == {"id": made["id"], "state": "open"}
    fields = jira.server.issues[made["id"]]["fields"]
    assert fields["status"]["name"] == "Open" and fields["resolution"] is None


def test_v3_paging_follows_next_page_token_without_is_last(tmp_path):
    env = make_jira_env(tmp_path, 3)
    try:
        env.server.omit_is_last = True
        for n in range(5):
            env.server.add_issue(f"issue {n}", None)
        assert len(env.tracker.list(state="all").items) == 5
        assert len(env.tracker.labels()) == 0
    finally:
        env.tracker.close_backend()
        env.server.stop()
