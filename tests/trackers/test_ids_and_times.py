"""Smaller tracker items of issue 12 §8 on every backend: an empty ID is a usage error,
full-width digits are not an issue number, --now dates the rollup comment too, and a Jira
v3 body of one non-breaking space is not emptied."""

from __future__ import annotations

import pytest

from mailtriage.trackers.contract import NotFound, UsageError
from tests.trackers.test_contract import create, number_of


@pytest.mark.parametrize("empty", ["", "   "])
def test_an_empty_issue_id_is_a_usage_error(tracker_env, empty):
    with pytest.raises(UsageError):
        tracker_env.tracker.view(empty)
    for args in (("view", empty), ("comment", empty, "--body-file", "-"), ("close", empty, "--reason", "completed")):
        code, out, err = tracker_env.cli(*args, stdin="x")
        assert code == 2 and out is None and "empty" in err


def test_full_width_digits_are_not_an_issue_number(tracker_env):
    made = create(tracker_env)
    number = number_of(made["id"])
    wide = "".join(chr(ord("０") + int(d)) for d in number)  # FULLWIDTH DIGIT ZERO …
    arabic = "".join(chr(0x0660 + int(d)) for d in number)  # ARABIC-INDIC DIGIT ZERO …
    for bad in (wide, arabic):
        with pytest.raises((NotFound, UsageError)):
            tracker_env.tracker.view(bad)
        code, out, _ = tracker_env.cli("comment", bad, "--body-file", "-", stdin="hi")
        assert code in (2, 3) and out is None
    assert all(c["body"] != "hi" for c in tracker_env.tracker.view(made["id"], comments=True)["comments"])


@pytest.mark.parametrize("kind", ["local-files-git", "local-files-svn"])
def test_now_dates_the_rollup_comment_as_well_as_the_entry(tmp_path, kind):
    from tests.trackers.conftest import make_git_env, make_svn_env

    env = make_git_env(tmp_path) if kind.endswith("git") else make_svn_env(tmp_path)
    made = env.tracker.create("t", "b", [])
    code, _, err = env.cli("rollup-append", made["id"], "--action", "Imported", "--entry-body-file", "-",
                           "--user", "alice", "--now", "2024-03-05T10:20:30+02:00", stdin="from the archive")
    assert code == 0, err
    rollup = env.tracker.view(made["id"], comments=True)["comments"][0]
    assert rollup["kind"] == "rollup" and "2024-03-05 · @alice · Imported" in rollup["body"]
    assert rollup["created"] == rollup["updated"] == "2024-03-05T08:20:30Z"
    env.cli("rollup-append", made["id"], "--action", "Triaged", "--entry-body-file", "-", "--user", "alice",
            "--now", "2024-03-06", stdin="later")
    rollup = env.tracker.view(made["id"], comments=True)["comments"][0]
    assert rollup["created"] == "2024-03-05T08:20:30Z" and rollup["updated"] == "2024-03-06T00:00:00Z"


def test_jira_v3_body_of_only_a_non_breaking_space_is_kept(tmp_path):
    from tests.trackers.conftest import make_jira_env

    env = make_jira_env(tmp_path, 3)
    try:
        made = env.tracker.create("t", "\u00a0", [])
        doc = env.server.issues[made["id"]]["fields"]["description"]
        assert doc["type"] == "doc" and doc["content"], doc
        assert env.tracker.body(made["id"]).strip("\n") == "\u00a0"
    finally:
        env.tracker.close_backend()
        env.server.stop()
