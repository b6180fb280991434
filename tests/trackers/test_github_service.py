"""GitHub as the real service behaves (issue 12 §8): the supported issue search, and 301/307
redirects for a renamed repository or a transferred issue."""

from __future__ import annotations

import pytest

from mailtriage.core.origins import secret_key
from mailtriage.core.secrets import set_secret
from tests.trackers.conftest import TrackerEnv, make_github_env, write_project


@pytest.fixture
def gh(tmp_path):
    env = make_github_env(tmp_path)
    yield env
    env.tracker.close_backend()
    env.server.stop()


def test_search_uses_advanced_search_not_the_deprecated_legacy_one(gh):
    gh.server.add_issue("Heap overflow in parser", "crash (with parens)", ["bug"])
    gh.server.add_issue("Heap overflow in writer", "or so", [])
    gh.server.add_issue("Unrelated", "nothing", ["bug"])
    code, out, err = gh.cli("list", "--search", "heap overflow", "--label", "bug")
    assert code == 0, err
    assert [i["title"] for i in out] == ["Heap overflow in parser"]
    # words that mean something to the advanced syntax stay words
    assert [i["title"] for i in gh.tracker.list(search="(with").items] == ["Heap overflow in parser"]
    assert [i["title"] for i in gh.tracker.list(search="or so").items] == ["Heap overflow in writer"]
    searches = [p for m, p, _ in gh.server.requests if p.startswith("/search/issues")]
    assert searches and all("advanced_search=true" in p for p in searches)
    assert gh.server.legacy_search_calls == 0


def make_renamed_env(tmp_path) -> TrackerEnv:
    from tests.trackers.servers import GitHubServer

    server = GitHubServer(repo="acme/security-tracker").start()
    server.renamed_from = "acme/security"  # project.md still names the old one
    set_secret(secret_key("github", server.url, "acme/security"), server.token)
    project = tmp_path / "project"
    write_project(project, {"platform": "github", "github": {"repo": "acme/security", "api_url": server.url}})
    env = TrackerEnv("github", project, None, server=server)
    env.reopen()
    return env


def test_a_renamed_repository_is_followed_and_reported(tmp_path):
    env = make_renamed_env(tmp_path)
    try:
        env.server.add_issue("existing", "body")
        code, out, err = env.cli("view", "1")
        assert code == 0, err
        assert out["url"] == "https://github.com/acme/security-tracker/issues/1"
        assert "acme/security-tracker" in err and "tracker.github.repo" in err
        code, out, err = env.cli("list")
        assert code == 0 and [i["id"] for i in out] == ["1"], err
        code, out, err = env.cli("comment", "1", "--body-file", "-", stdin="still works")
        assert code == 0, err
        assert env.server.comments[1][-1]["body"] == "still works"
        statuses = {(m, p.split("?")[0]) for m, p, _ in env.server.requests if p.startswith("/repos/acme/security/")}
        assert ("POST", "/repos/acme/security/issues/1/comments") in statuses  # answered 307, then followed
    finally:
        env.tracker.close_backend()
        env.server.stop()


def test_a_transferred_issue_is_followed_and_reported(gh):
    gh.server.add_issue("moved away", "body")
    gh.server.transfer(1, "acme/security-archive")
    code, out, err = gh.cli("view", "1")
    assert code == 0, err
    assert out["title"] == "moved away" and out["url"] == "https://github.com/acme/security-archive/issues/1"
    assert "transferred" in err and "acme/security-archive" in err


def test_a_write_to_an_issue_transferred_to_a_public_repository_is_refused(gh):
    gh.server.add_issue("moved away", "body")
    gh.server.transfer(1, "acme/public-bugs", visibility="public")
    code, out, err = gh.cli("comment", "1", "--body-file", "-", stdin="embargoed detail")
    assert code == 4 and out is None and "acme/public-bugs" in err
    other = next(iter(gh.server.others.values()))
    assert other["comments"][1] == []


def test_a_redirect_to_another_host_is_not_followed(gh):
    from tests.trackers.servers import GitHubServer

    elsewhere = GitHubServer().start()
    try:
        gh.server.add_issue("x", "y")
        gh.server.transfer(1, "acme/elsewhere")
        gh.server.redirect_base = elsewhere.url  # a Location on another host must never get the token
        code, out, err = gh.cli("view", "1")
        assert code == 5 and out is None and "another host" in err
        assert elsewhere.requests == []
    finally:
        elsewhere.stop()
