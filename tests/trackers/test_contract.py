"""One contract suite, run on every backend (see ``tracker_env`` in conftest.py)."""

from __future__ import annotations

import types
import typing

import pytest

from mailtriage.trackers.contract import EditRequest, NotFound, Refused, UsageError
from mailtriage.trackers import rollup
from mailtriage.trackers import values as v

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
    assert "comments" not in issue  # the keys of the view: test_every_value_has_its_typed_shape


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


# -- the typed values and the wire ------------------------------------------------------------
#
# trackers/values.py types every value the contract returns. The checks below tie those types
# to the spec's key lists and to what every backend really returns (library and CLI JSON), so
# neither the types nor the wire can drift from the other.

# The Output column of /work/shared/specs/tracker-backend-contract.md: (type, keys, optional keys).
SPEC_OUTPUT = {
    "view": (v.IssueView, {"id", "title", "state", "labels", "assignees", "milestone", "author", "created",
                           "updated", "body", "url"}, {"comments"}),
    "list": (v.IssueSummary, {"id", "title", "state", "labels", "updated", "url"}, set()),
    "field-get": (v.FieldValue, {"id", "heading", "value"}, set()),
    "create": (v.WriteResult, {"id", "url"}, set()),
    "edit": (v.WriteResult, {"id", "url"}, set()),
    "field-set": (v.FieldSetResult, {"id", "heading", "created"}, set()),
    "comment": (v.CommentResult, {"id", "comment_id", "url"}, set()),
    "close": (v.StateResult, {"id", "state"}, set()),
    "reopen": (v.StateResult, {"id", "state"}, set()),
    "rollup-append": (v.WriteResult, {"id", "url"}, set()),
    "rollup-amend-latest": (v.WriteResult, {"id", "url"}, set()),
    "attach": (v.AttachResult, {"id", "name", "url"}, set()),
    "pending": (v.Pending, {"backend", "changes", "unpushed_commits", "needs_publish"}, set()),
    "publish": (v.PublishResult, {"committed", "pushed", "revision"}, set()),
    "doctor": (v.DoctorReport, {"backend", "ok", "checks"}, set()),
    "doctor checks[]": (v.DoctorCheck, {"name", "ok", "detail"}, set()),
}
# What mailtriage adds to the spec's keys, each on purpose: (required, optional).
EXTENSIONS = {
    "close": (set(), {"changed", "note"}),  # the same type as reopen
    "reopen": (set(), {"changed", "note"}),  # Jira: reopening an open issue changes nothing, and says so
    "publish": ({"files"}, set()),  # the paths committed, which the publish review shows
}


@pytest.mark.parametrize("operation", sorted(SPEC_OUTPUT))
def test_the_typed_values_carry_the_spec_keys(operation):
    typed, keys, optional = SPEC_OUTPUT[operation]
    more, more_optional = EXTENSIONS.get(operation, (set(), set()))
    assert typed.__required_keys__ == keys | more
    assert typed.__optional_keys__ == optional | more_optional


def _conforms(value, hint) -> bool:
    """``value`` is of the type ``hint`` (the hints values.py uses); a TypedDict is checked by
    :func:`assert_shape`, which raises with the path of the first difference."""
    origin = typing.get_origin(hint)
    if typing.is_typeddict(hint):
        return isinstance(value, dict)
    if origin in (types.UnionType, typing.Union):
        return any(_conforms(value, h) for h in typing.get_args(hint))
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin is list:
        return isinstance(value, list) and all(_conforms(x, typing.get_args(hint)[0]) for x in value)
    if origin is dict:
        key, item = typing.get_args(hint)
        return isinstance(value, dict) and all(_conforms(k, key) and _conforms(x, item) for k, x in value.items())
    if hint is type(None):
        return value is None
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def assert_shape(value, typed, where: str) -> None:
    """``value`` has exactly the keys of the TypedDict ``typed`` (its required ones, and no key it
    does not declare), each of its declared type, nested values included."""
    assert isinstance(value, dict), f"{where}: {type(value).__name__}, not a {typed.__name__}"
    missing = typed.__required_keys__ - set(value)
    unknown = set(value) - typed.__required_keys__ - typed.__optional_keys__
    assert not missing and not unknown, \
        f"{where}: missing {sorted(missing)}, not in {typed.__name__}: {sorted(unknown)}"
    for key, hint in typing.get_type_hints(typed).items():
        if key not in value:
            continue
        assert _conforms(value[key], hint), f"{where}[{key!r}] = {value[key]!r} is not {hint}"
        inner = typing.get_args(hint)[0] if typing.get_origin(hint) is list else None
        if inner is not None and typing.is_typeddict(inner):
            for i, item in enumerate(value[key]):
                assert_shape(item, inner, f"{where}[{key!r}][{i}]")


def test_every_value_has_its_typed_shape(tracker_env):
    """Every operation, on every backend, through the library and as the CLI prints it."""
    t, cli = tracker_env.tracker, tracker_env.cli
    seen: dict[str, object] = {}

    def run(operation: str, *args: str, stdin: str = "", typed=None):
        code, out, err = cli(operation, *args, stdin=stdin)
        # doctor prints its report and fails when a check does (a local remote it cannot verify)
        assert code == 0 or (operation == "doctor" and isinstance(out, dict)), f"{operation}: exit {code}: {err}"
        assert_shape(out, typed or SPEC_OUTPUT[operation][0], f"cli {operation}")
        seen[operation] = out
        return out

    made = run("create", "--title", "Heap overflow", "--body-file", "-", "--label", "bug", stdin=BODY)
    issue = made["id"]
    run("edit", issue, "--add-label", "needs-triage", "--add-assignee", "alice", "--milestone", "1.0")
    run("field-get", issue, "Reporter")
    run("field-get", issue, "No such section")
    run("field-set", issue, "Impact", "--value-file", "-", stdin="high\n")
    run("comment", issue, "--body-file", "-", stdin="A plain comment.\n")
    run("rollup-append", issue, "--action", "Imported", "--entry-body-file", "-", "--user", "alice", stdin="one\n")
    run("rollup-amend-latest", issue, "--action", "Imported", "--entry-body-file", "-", stdin="one, amended\n")
    run("attach", issue, "-", "--name", "cve.json", stdin='{"cve": "CVE-2025-0001"}\n')
    run("view", issue)
    assert len(run("view", issue, "--comments")["comments"]) >= 2  # the rollup and the comment, each checked
    for words in ("--state=all", "--search=overflow"):
        code, listed, err = cli("list", words)
        assert code == 0 and listed, err
        for i, item in enumerate(listed):
            assert_shape(item, v.IssueSummary, f"cli list {words} [{i}]")
    run("close", issue, "--reason", "completed")
    run("reopen", issue)
    run("reopen", issue)  # already open: Jira says so in changed/note, the others answer {id, state}
    run("doctor")

    # the library values the CLI does not print as such
    assert_shape(t.view(issue, comments=True), v.IssueView, "view")
    assert_shape(t.list(state="all").items[0], v.IssueSummary, "list")
    assert_shape(t.rollup_append(issue, "Triaged", "two", user="bob"), v.WriteResult, "rollup_append")
    assert_shape(t.rollup_append(issue, "Other", "x", user="bob", unless_action="Triaged"), v.Existing,
                 "rollup_append unless_action")
    assert_shape(t.find_or_create("x", "y", [], lambda: issue), v.Existing, "find_or_create found")
    assert_shape(t.find_or_create("New one", BODY, ["bug"], lambda: None), v.Created, "find_or_create made")
    if t.features.publishes_changes:
        assert_shape(t.pending(), v.Pending, "pending")
        run("pending", typed=v.PendingReview)
        run("publish", "--message-file", "-", "--push", stdin="security: typed values\n")
    if t.features.set_up_locally:
        run("detect", typed=v.SetupResult)
