"""One contract suite, run on every backend (see ``tracker_env`` in conftest.py)."""

from __future__ import annotations

import pytest

from mailtriage.trackers.contract import EditRequest, NotFound, Refused, UsageError
from mailtriage.trackers import rollup

BODY = "Report text.\n\n### Affected versions\n\n1.2.3\n\n### Reporter\n\nalice\n"


def create(env, title="Heap overflow in parser", body=BODY, labels=("needs-triage",)):
    return env.tracker.create(title, body, list(labels))


def number_of(issue_id: str) -> str:
    return issue_id.rsplit("-", 1)[-1].lstrip("0") or "0"


def test_create_then_view(tracker_env):
    made = create(tracker_env)
    assert made["id"] and made["url"]
    issue = tracker_env.tracker.view(made["id"])
    assert issue["id"] == made["id"]
    assert issue["title"] == "Heap overflow in parser"
    assert issue["state"] == "open"
    assert issue["labels"] == ["needs-triage"]
    assert issue["body"] == BODY
    assert issue["url"] == made["url"]
    assert set(issue) >= {"id", "title", "state", "labels", "assignees", "milestone", "author", "created",
                          "updated", "body", "url"}
    assert "comments" not in issue


def test_bare_number_expands_with_the_prefix(tracker_env):
    made = create(tracker_env)
    assert tracker_env.tracker.view(number_of(made["id"]))["id"] == made["id"]


def test_unknown_and_escaping_ids(tracker_env):
    with pytest.raises(NotFound):
        tracker_env.tracker.view("9999")
    for bad in ("../1", "../../etc/passwd", "/etc/passwd"):
        with pytest.raises(Refused):
            tracker_env.tracker.view(bad)
    code, _, err = tracker_env.cli("view", "9999")
    assert code == 3 and "9999" in err
    code, out, err = tracker_env.cli("view", "../1")
    assert code == 4 and out is None and err


def test_list_filters_by_state_label_and_words(tracker_env):
    t = tracker_env.tracker
    a = create(tracker_env, "Heap overflow in parser", labels=["needs-triage", "bug"])
    b = create(tracker_env, "Path traversal in uploads", body="The uploader trusts names.\n", labels=["bug"])
    c = create(tracker_env, "Closed one", body="nothing\n", labels=[])
    t.close(c["id"], "completed")
    open_ids = [i["id"] for i in t.list().items]
    assert set(open_ids) == {a["id"], b["id"]}
    assert [i["id"] for i in t.list(state="closed").items] == [c["id"]]
    assert {i["id"] for i in t.list(state="all").items} == {a["id"], b["id"], c["id"]}
    assert [i["id"] for i in t.list(labels=["bug", "needs-triage"]).items] == [a["id"]]
    assert [i["id"] for i in t.list(state="all", search="UPLOADER trusts").items] == [b["id"]]
    assert [i["id"] for i in t.list(state="all", search="overflow").items] == [a["id"]]
    assert t.list(state="all", search="nosuchword").items == []
    assert len(t.list(state="all", limit=2).items) == 2
    item = t.list(search="traversal").items[0]
    assert set(item) == {"id", "title", "state", "labels", "updated", "url"}
    with pytest.raises(UsageError):
        t.list(state="bogus")


def test_labels_in_use(tracker_env):
    create(tracker_env, labels=["bug"])
    create(tracker_env, labels=["needs-triage", "bug"])
    assert {"bug", "needs-triage"} <= set(tracker_env.tracker.labels())


def test_field_get_and_set(tracker_env):
    t = tracker_env.tracker
    made = create(tracker_env)
    assert t.field_get(made["id"], "affected VERSIONS") == {"id": made["id"], "heading": "affected VERSIONS",
                                                            "value": "1.2.3"}
    assert t.field_get(made["id"], "CVE")["value"] is None
    assert t.field_set(made["id"], "Affected versions", "1.2.3, 1.2.4\n") == {
        "id": made["id"], "heading": "Affected versions", "created": False}
    assert t.view(made["id"])["body"] == BODY.replace("1.2.3\n", "1.2.3, 1.2.4\n")
    assert t.field_set(made["id"], "CVE", "CVE-2025-0001")["created"] is True
    body = t.view(made["id"])["body"]
    assert body == BODY.replace("1.2.3\n", "1.2.3, 1.2.4\n") + "\n### CVE\n\nCVE-2025-0001\n"
    assert t.field_get(made["id"], "reporter")["value"] == "alice"
    assert t.body(made["id"]) == body


def test_edit_labels_assignees_milestone_title_body(tracker_env):
    t = tracker_env.tracker
    made = create(tracker_env)
    t.edit(made["id"], EditRequest(add_labels=["bug"], remove_labels=["needs-triage"], add_assignees=["alice"],
                                   milestone="1.0", title="Renamed"))
    issue = t.view(made["id"])
    assert issue["labels"] == ["bug"]
    assert issue["assignees"] == ["alice"]
    assert issue["milestone"] == "1.0"
    assert issue["title"] == "Renamed"
    t.edit(made["id"], EditRequest(remove_assignees=["alice"], clear_milestone=True, body="New body.\n"))
    issue = t.view(made["id"])
    assert issue["assignees"] == [] and issue["milestone"] is None and issue["body"] == "New body.\n"


def test_undeclared_values_are_refused(tracker_env):
    t = tracker_env.tracker
    made = create(tracker_env)
    with pytest.raises(Refused, match="not declared"):
        t.create("x", "y", ["invented-label"])
    with pytest.raises(Refused):
        t.edit(made["id"], EditRequest(add_labels=["invented-label"]))
    with pytest.raises(Refused):
        t.edit(made["id"], EditRequest(add_assignees=["mallory"]))
    with pytest.raises(Refused):
        t.edit(made["id"], EditRequest(milestone="9.9"))
    assert t.view(made["id"])["labels"] == ["needs-triage"]
    code, _, err = tracker_env.cli("edit", made["id"], "--add-label", "invented-label")
    assert code == 4 and "invented-label" in err


def test_titles_are_one_line(tracker_env):
    with pytest.raises(UsageError):
        create(tracker_env, title="two\nlines")
    with pytest.raises(UsageError):
        create(tracker_env, title="escape \x1b[31m")
    code, _, err = tracker_env.cli("create", "--title", "a\nb", "--body-file", "-", stdin="x")
    assert code == 2 and "one line" in err


def test_comments_and_rollup_first(tracker_env):
    t = tracker_env.tracker
    made = create(tracker_env)
    c = t.comment(made["id"], "First plain comment.\n")
    assert c["id"] == made["id"] and c["comment_id"] and c["url"]
    t.rollup_append(made["id"], "Imported", "Imported from the list.", user="alice", now="2025-01-02T10:00:00Z")
    t.rollup_append(made["id"], "Triaged", "Valid.", user="bob", now="2025-01-03")
    comments = t.view(made["id"], comments=True)["comments"]
    assert comments[0]["kind"] == "rollup"
    assert [c["kind"] for c in comments[1:]] == ["comment"]
    assert comments[1]["body"].strip() == "First plain comment."
    entries = rollup.entries(comments[0]["body"])
    assert [(e.date, e.user, e.action, e.body) for e in entries] == [
        ("2025-01-02", "alice", "Imported", "Imported from the list."),
        ("2025-01-03", "bob", "Triaged", "Valid."),
    ]


def test_rollup_amend_latest(tracker_env):
    t = tracker_env.tracker
    made = create(tracker_env)
    with pytest.raises(NotFound):
        t.rollup_amend_latest(made["id"], "Imported", "x")
    t.rollup_append(made["id"], "Imported", "one", user="alice", now="2025-01-02")
    t.rollup_append(made["id"], "Triaged", "two", user="bob", now="2025-01-03")
    with pytest.raises(Refused):
        t.rollup_amend_latest(made["id"], "Imported", "changed")
    assert t.rollup_amend_latest(made["id"], "Triaged", "two, amended")["id"] == made["id"]
    rollup_text = t.view(made["id"], comments=True)["comments"][0]["body"]
    assert [(e.date, e.user, e.action, e.body) for e in rollup.entries(rollup_text)] == [
        ("2025-01-02", "alice", "Imported", "one"), ("2025-01-03", "bob", "Triaged", "two, amended")]
    code, _, err = tracker_env.cli("rollup-amend-latest", made["id"], "--action", "Imported",
                                   "--entry-body-file", "-", stdin="x")
    assert code == 4 and "Triaged" in err


def test_close_and_reopen(tracker_env):
    t = tracker_env.tracker
    made = create(tracker_env)
    assert t.close(made["id"], "not-planned") == {"id": made["id"], "state": "closed"}
    assert t.view(made["id"])["state"] == "closed"
    assert t.reopen(made["id"]) == {"id": made["id"], "state": "open"}
    assert t.view(made["id"])["state"] == "open"
    with pytest.raises(UsageError):
        t.close(made["id"], "wontfix")


def test_attach(tracker_env):
    t = tracker_env.tracker
    made = create(tracker_env)
    out = t.attach(made["id"], b'{"cve": "CVE-2025-0001"}\n', "cve.json")
    assert out["id"] == made["id"] and out["name"] == "cve.json" and out["url"]
    with pytest.raises(Refused):
        t.attach(made["id"], b"x", "../escape.txt")


def test_cli_json_on_stdout_errors_on_stderr(tracker_env):
    code, out, err = tracker_env.cli("create", "--title", "From the CLI", "--body-file", "-", "--label", "bug",
                                     stdin=BODY)
    assert code == 0 and err == ""
    issue_id = out["id"]
    code, out, _ = tracker_env.cli("field-get", issue_id, "Reporter")
    assert code == 0 and out["value"] == "alice"
    code, out, _ = tracker_env.cli("field-set", issue_id, "Reporter", "--value-file", "-", stdin="bob\n")
    assert code == 0 and out == {"id": issue_id, "heading": "Reporter", "created": False}
    code, text, _ = tracker_env.cli("body", issue_id)
    assert code == 0 and text == BODY.replace("alice", "bob")
    code, out, _ = tracker_env.cli("list", "--state", "all", "--label", "bug")
    assert code == 0 and [i["id"] for i in out] == [issue_id]
    code, out, err = tracker_env.cli("milestone-list")
    assert code == 4 and out is None and "milestone-list" in err
    code, out, err = tracker_env.cli("board-add-item", "1")
    assert code == 4 and "board-add-item" in err
    code, _, err = tracker_env.cli("close", issue_id, "--reason", "wontfix")
    assert code == 2
