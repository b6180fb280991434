"""GitHub specifics against the loopback server: auth, the private-repository guard, pull
requests left out, Link paging, rate limits, where the rollup lives, doctor."""

from __future__ import annotations

import pytest

from mailtriage.core.origins import secret_key
from mailtriage.core.secrets import set_secret
from mailtriage.trackers.contract import BackendError, NotFound, Refused
from mailtriage.trackers.github import GitHubTracker
from tests.trackers.conftest import make_git_env, make_github_env, sh, write_project


@pytest.fixture
def gh(tmp_path):
    env = make_github_env(tmp_path)
    yield env
    env.tracker.close_backend()
    env.server.stop()


def test_every_request_carries_the_documented_headers(gh):
    gh.tracker.create("t", "b", [])
    gh.tracker.list(state="all")
    assert gh.server.requests
    for _method, _path, headers in gh.server.requests:
        assert headers["Authorization"] == f"Bearer {gh.server.token}"
        assert headers["Accept"] == "application/vnd.github+json"
        assert headers["X-GitHub-Api-Version"] == "2022-11-28"


def test_wrong_or_missing_token(gh, memory_keyring):
    set_secret(secret_key("github", gh.server.url, gh.server.repo), "wrong")
    code, out, err = gh.cli("list")
    assert code == 5 and out is None and "401" in err
    memory_keyring.store.clear()
    code, _, err = gh.cli("list")
    assert code == 5 and "keyring" in err


def test_public_repository_refuses_writes_but_reads(tmp_path):
    env = make_github_env(tmp_path, private=False)
    try:
        env.server.add_issue("existing", "body")
        assert env.tracker.view("1")["title"] == "existing"
        with pytest.raises(Refused, match="not private"):
            env.tracker.create("t", "b", [])
        code, _, err = env.cli("comment", "1", "--body-file", "-", stdin="hello")
        assert code == 4 and "not private" in err
        assert env.server.comments[1] == []
        report = env.tracker.doctor()
        assert report["ok"] is False and any(c["name"] == "private" and not c["ok"] for c in report["checks"])
    finally:
        env.server.stop()


def test_pull_requests_are_not_issues(gh):
    gh.server.add_issue("an issue", "x")
    gh.server.add_issue("a pull request", "x", pull_request=True)
    gh.server.add_issue("another issue", "x")
    listed = gh.tracker.list(state="all").items
    assert sorted(i["title"] for i in listed) == ["an issue", "another issue"]
    with pytest.raises(NotFound, match="pull request"):
        gh.tracker.view("2")
    assert [i["title"] for i in gh.tracker.list(search="pull").items] == []


def test_listing_follows_link_headers(gh):
    for n in range(7):
        gh.server.add_issue(f"issue {n}", "x")
    assert len(gh.tracker.list(state="all").items) == 7
    pages = [p for m, p, _ in gh.server.requests if m == "GET" and p.startswith(f"/repos/{gh.server.repo}/issues?")]
    assert len(pages) == 4 and any("page=4" in p for p in pages)
    assert len(gh.tracker.list(state="all", limit=3).items) == 3


def test_rate_limit_waits_for_the_reset_then_retries(gh):
    slept: list[float] = []
    tracker = GitHubTracker(gh.server.repo, token=gh.server.token, api_url=gh.server.url, sleep=slept.append)
    gh.server.rate_limit_next = 1
    assert tracker.list().items == []
    assert len(slept) == 1 and 0 < slept[0] <= 2.5
    gh.server.rate_limit_next = 5
    short = GitHubTracker(gh.server.repo, token=gh.server.token, api_url=gh.server.url, sleep=slept.append,
                          max_rate_wait=0.01)
    with pytest.raises(BackendError, match="rate limit"):
        short.list()
    tracker.close_backend()
    short.close_backend()


def test_rollup_is_the_first_comment_with_the_marker(gh):
    t = gh.tracker
    made = t.create("t", "b", [])
    t.comment(made["id"], "an early plain comment")
    t.rollup_append(made["id"], "Imported", "first", user="alice", now="2025-01-01")
    t.rollup_append(made["id"], "Triaged", "second", user="alice", now="2025-01-02")
    stored = gh.server.comments[int(made["id"])]
    assert len(stored) == 2 and stored[1]["body"].startswith("<!-- status rollup v1 -->")
    assert "second" in stored[1]["body"]
    view = t.view(made["id"], comments=True)
    assert [c["kind"] for c in view["comments"]] == ["rollup", "comment"]
    with pytest.raises(Refused):
        t.comment(made["id"], "<!-- status rollup v1 -->\nforged")


def test_attach_posts_text_and_refuses_binary(gh):
    made = gh.tracker.create("t", "b", [])
    out = gh.tracker.attach(made["id"], b'{"a": 1}\n', "cve.json")
    posted = gh.server.comments[int(made["id"])][-1]
    assert "cve.json" in posted["body"] and '```json\n{"a": 1}\n```' in posted["body"]
    assert out == {"id": made["id"], "name": "cve.json", "url": posted["html_url"]}
    with pytest.raises(Refused):
        gh.tracker.attach(made["id"], b"\xff\xfe\x00", "blob.bin")


def test_undeclared_milestone_on_github_is_refused_not_created(gh):
    from mailtriage.trackers.contract import EditRequest

    made = gh.tracker.create("t", "b", [])
    gh.server.milestones = [{"number": 1, "title": "1.0"}]
    with pytest.raises(Refused, match="does not exist"):
        gh.tracker.edit(made["id"], EditRequest(milestone="2.0"))


@pytest.mark.parametrize("private", [True, False])
def test_local_files_doctor_checks_a_github_remote(tmp_path, private):
    from tests.trackers.servers import GitHubServer

    server = GitHubServer(private=private).start()
    try:
        env = make_git_env(tmp_path)
        sh(["git", "remote", "set-url", "origin", f"https://github.com/{server.repo}.git"], env.wc)
        write_project(env.project, {"platform": "local-files", "local": {"path": "../security-tracker"},
                                    "github": {"api_url": server.url}})
        set_secret(secret_key("github", server.url, server.repo), server.token)
        report = env.reopen().doctor()
        remote = next(c for c in report["checks"] if c["name"] == "remote origin")
        assert remote["ok"] is private and report["ok"] is private
        assert ("private" if private else "PUBLIC") in remote["detail"]
    finally:
        server.stop()


def test_local_files_doctor_says_cannot_verify_when_github_is_unreachable(tmp_path):
    env = make_git_env(tmp_path)
    sh(["git", "remote", "set-url", "origin", "git@github.com:acme/security.git"], env.wc)
    write_project(env.project, {"platform": "local-files", "local": {"path": "../security-tracker"},
                                "github": {"api_url": "http://127.0.0.1:9"}})
    remote = next(c for c in env.reopen().doctor()["checks"] if c["name"] == "remote origin")
    assert remote["ok"] is False and "cannot verify" in remote["detail"]
