"""Jira specifics against the loopback server: the exact security-level guard, v2 wiki and v3
ADF bodies, both paging styles, 404 for hidden issues, Retry-After, auth."""

from __future__ import annotations

import pytest

from mailtriage.core.origins import secret_key
from mailtriage.core.secrets import set_secret
from mailtriage.trackers.contract import EditRequest, NotFound, Refused
from mailtriage.trackers.jira import JiraTracker
from tests.trackers.conftest import make_jira_env

BODY = "Report.\n\n### Affected versions\n\n1.2.3\n\n### Reporter\n\nalice\n"


@pytest.fixture(params=[2, 3], ids=["v2", "v3"])
def jira(request, tmp_path):
    env = make_jira_env(tmp_path, request.param)
    yield env
    env.tracker.close_backend()
    env.server.stop()


def test_create_always_sets_the_configured_level(jira):
    made = jira.tracker.create("t", BODY, ["bug"])
    stored = jira.server.issues[made["id"]]["fields"]
    assert stored["security"]["id"] == "10001" and stored["security"]["name"] == "Embargoed"
    create_calls = [p for m, p, _ in jira.server.requests if m == "POST" and p.endswith("/issue")]
    assert create_calls == [f"/rest/api/{jira.server.v}/issue"]
    assert made["url"] == f"{jira.server.url}/browse/{made['id']}"


@pytest.mark.parametrize("level", [None, "10002"], ids=["no-level", "other-level"])
def test_issues_without_exactly_the_level_are_refused_never_fixed(jira, level):
    issue = jira.server.add_issue("legacy", None, ["bug"], security=level)
    key = issue["key"]
    assert jira.tracker.view(key)["title"] == "legacy"  # reads work
    attempts = [
        lambda: jira.tracker.edit(key, EditRequest(add_labels=["needs-triage"])),
        lambda: jira.tracker.comment(key, "hello"),
        lambda: jira.tracker.field_set(key, "CVE", "CVE-1"),
        lambda: jira.tracker.close(key, "completed"),
        lambda: jira.tracker.rollup_append(key, "Imported", "x", user="a"),
        lambda: jira.tracker.attach(key, b"x", "a.txt"),
    ]
    for attempt in attempts:
        with pytest.raises(Refused, match="security level"):
            attempt()
    fields = jira.server.issues[key]["fields"]
    assert fields["labels"] == ["bug"] and jira.server.comments[key] == []
    assert (fields["security"] or {}).get("id") == level  # never "fixed"
    code, out, err = jira.cli("comment", key, "--body-file", "-", stdin="hi")
    assert code == 4 and out is None and "security level" in err


def test_hidden_issue_is_not_found(jira):
    made = jira.tracker.create("t", BODY, [])
    jira.server.hidden.add(made["id"])
    with pytest.raises(NotFound):
        jira.tracker.view(made["id"])
    code, _, err = jira.cli("comment", made["id"], "--body-file", "-", stdin="x")
    assert code == 3


def test_bodies_are_stored_in_the_versions_format(jira):
    made = jira.tracker.create("t", BODY + "\n```python\nprint('### not a field')\n```\n", [])
    description = jira.server.issues[made["id"]]["fields"]["description"]
    if jira.server.v == 2:
        assert isinstance(description, str)
        assert "h3. Affected versions" in description and "{code:python}" in description
        assert "### " not in description.replace("print('### not a field')", "")
    else:
        assert description["type"] == "doc" and description["version"] == 1
        headings = [n for n in description["content"] if n["type"] == "heading"]
        assert [(h["attrs"]["level"], h["content"][0]["text"]) for h in headings] == [
            (3, "Affected versions"), (3, "Reporter")]
        assert any(n["type"] == "codeBlock" and n["attrs"]["language"] == "python" for n in description["content"])
    assert jira.tracker.body(made["id"]).startswith(BODY)
    assert jira.tracker.field_get(made["id"], "reporter")["value"].startswith("alice")


def test_v3_field_set_keeps_other_nodes_untouched(tmp_path):
    env = make_jira_env(tmp_path, 3)
    try:
        odd_node = {"type": "bulletList", "content": [{"type": "listItem", "content": [
            {"type": "paragraph", "content": [{"type": "text", "text": "kept", "marks": [{"type": "strong"}]}]}]}]}
        doc = {"type": "doc", "version": 1, "content": [
            {"type": "heading", "attrs": {"level": 3}, "content": [{"type": "text", "text": "Affected versions"}]},
            {"type": "paragraph", "content": [{"type": "text", "text": "1.0"}]},
            {"type": "heading", "attrs": {"level": 3}, "content": [{"type": "text", "text": "Notes"}]},
            odd_node]}
        key = env.server.add_issue("adf", doc)["key"]
        assert env.tracker.field_set(key, "affected versions", "2.0")["created"] is False
        content = env.server.issues[key]["fields"]["description"]["content"]
        assert content[1] == {"type": "paragraph", "content": [{"type": "text", "text": "2.0"}]}
        assert content[3] == odd_node
        assert env.tracker.field_get(key, "notes")["value"] == "- kept"
    finally:
        env.server.stop()


def test_search_paging_styles(jira):
    for n in range(5):
        jira.tracker.create(f"issue {n}", "x", [])
    assert len(jira.tracker.list().items) == 5
    searches = [p for m, p, _ in jira.server.requests if m == "POST" and "/search" in p]
    if jira.server.v == 3:
        assert set(searches) == {"/rest/api/3/search/jql"} and len(searches) == 3
    else:
        assert set(searches) == {"/rest/api/2/search"} and len(searches) == 3
    assert [i["title"] for i in jira.tracker.list(search="issue 3").items][:1] == ["issue 3"]


def test_retry_after_is_honoured(jira):
    slept: list[float] = []
    t = jira.tracker
    tracker = JiraTracker(t.base, t.project, api_version=t.v, security_level="Embargoed", token=jira.server.token,
                          sleep=slept.append)
    jira.server.retry_after_next = 1
    assert tracker.list().items == []
    assert slept == [1.0]
    tracker.close_backend()


def test_wrong_credentials(jira):
    set_secret(secret_key("jira", jira.server.url), "wrong-password-7731")
    code, _, err = jira.cli("list")
    assert code == 5 and "401" in err


def test_basic_auth_with_email(tmp_path):
    env = make_jira_env(tmp_path, 3, auth="basic")
    try:
        assert env.tracker.create("t", "b", [])["id"] == "FOOSEC-1"
        assert env.server.requests[-1][2]["Authorization"].startswith("Basic ")
    finally:
        env.server.stop()


def test_one_assignee_only(jira):
    made = jira.tracker.create("t", "b", [])
    jira.tracker.edit(made["id"], EditRequest(add_assignees=["alice"]))
    with pytest.raises(Refused, match="one assignee"):
        jira.tracker.edit(made["id"], EditRequest(add_assignees=["bob"]))
    jira.tracker.edit(made["id"], EditRequest(remove_assignees=["alice"], add_assignees=["bob"]))
    assert jira.tracker.view(made["id"])["assignees"] == ["bob"]


def test_keys_of_other_projects_are_not_this_tracker(jira):
    with pytest.raises(NotFound):
        jira.tracker.view("OTHER-1")


def test_doctor(jira):
    report = jira.tracker.doctor()
    assert report["ok"] is True, report
    jira.tracker.security_level = "Nonexistent"
    report = jira.tracker.doctor()
    assert report["ok"] is False
