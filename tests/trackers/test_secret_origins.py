"""A tracker token goes only to the origin it was stored for (issue 31, item 1).

project.md (team data) names the API URL; the token's keyring key names purpose, origin and
(for GitHub) the repository, so a URL that points at another server finds no token. Two
loopback servers: the user's real one, and a planted one that records every request and
answers "private" to everything.
"""

from __future__ import annotations

import pytest

from mailtriage.core.origins import secret_key
from mailtriage.core.projectconfig import ConfigError, load_project
from mailtriage.core.secrets import set_secret
from mailtriage.trackers.registry import open_tracker
from tests.trackers.conftest import TrackerEnv, make_git_env, sh, write_project
from tests.trackers.servers import GitHubServer, JiraServer

DEFAULT_API = "https://api.github.com"


def _carried(server, token: str) -> list[str]:
    """Every recorded request that carried ``token`` in a header or the path."""
    return [f"{method} {path}" for method, path, headers in server.requests
            if token in path or any(token in str(v) for v in headers.values())]


@pytest.fixture
def planted():
    server = GitHubServer(private=True).start()  # answers "private" for the repository, like a fake would
    yield server
    server.stop()


def test_github_token_is_not_sent_to_a_project_chosen_api_url(tmp_path, planted):
    # failed first on main: the token, keyed by repository only, went to tracker.github.api_url
    token = "ghp-users-real-token-8841"
    set_secret(f"github:{planted.repo}", token)  # the old, origin-less entry a user has today
    set_secret(secret_key("github", DEFAULT_API, planted.repo), token)
    project = tmp_path / "project"
    write_project(project, {"platform": "github", "github": {"repo": planted.repo, "api_url": planted.url}})
    env = TrackerEnv("github", project, None, server=planted)
    code, out, err = env.cli("doctor")
    assert _carried(planted, token) == []
    assert code != 0 and out["ok"] is False
    token_check = next(c for c in out["checks"] if c["name"] == "token")
    assert token_check["ok"] is False
    assert secret_key("github", planted.url, planted.repo) in token_check["detail"]
    code, _, err = env.cli("create", "--title", "embargoed", "--body-file", "-", stdin="details")
    assert code != 0 and planted.issues == {}
    assert _carried(planted, token) == []


def test_github_token_stored_for_the_api_origin_is_sent_there(tmp_path, planted):
    set_secret(secret_key("github", planted.url, planted.repo), planted.token)
    project = tmp_path / "project"
    write_project(project, {"platform": "github", "github": {"repo": planted.repo, "api_url": planted.url}})
    report = open_tracker(load_project(project)).doctor()
    assert report["ok"] is True
    assert planted.requests and all(h["Authorization"] == f"Bearer {planted.token}" for _, _, h in planted.requests)


def test_github_api_url_over_plain_http_to_another_host_is_refused(tmp_path):
    project = tmp_path / "project"
    write_project(project, {"platform": "github", "github": {"repo": "acme/security",
                                                             "api_url": "http://github.example.org/api/v3"}})
    with pytest.raises(ConfigError) as info:
        open_tracker(load_project(project))
    assert info.value.key == "tracker.github.api_url" and "plain http" in str(info.value)


def test_local_files_doctor_trusts_no_private_answer_from_a_planted_api(tmp_path, planted):
    # failed first on main: the planted API got the token and its "private" passed the guard
    token = "ghp-users-real-token-8842"
    set_secret(f"github:{planted.repo}", token)
    set_secret(secret_key("github", DEFAULT_API, planted.repo), token)
    env = make_git_env(tmp_path)
    sh(["git", "remote", "set-url", "origin", f"https://github.com/{planted.repo}.git"], env.wc)
    write_project(env.project, {"platform": "local-files", "local": {"path": "../security-tracker"},
                                "github": {"api_url": planted.url}})
    report = env.reopen().doctor()
    remote = next(c for c in report["checks"] if c["name"] == "remote origin")
    assert remote["ok"] is False and report["ok"] is False
    assert "cannot verify" in remote["detail"]
    assert secret_key("github", planted.url, planted.repo) in remote["detail"]
    assert _carried(planted, token) == []


@pytest.fixture
def jira():
    server = JiraServer(api_version=3).start()
    yield server
    server.stop()


def _jira_project(tmp_path, url: str, server) -> object:
    project = tmp_path / "project"
    write_project(project, {"platform": "jira", "jira": {"url": url, "project": server.project, "api_version": 3,
                                                         "security_level": "Embargoed"}})
    return project


def test_jira_over_plain_http_to_another_host_is_refused(tmp_path, jira):
    # failed first on main: an http:// Jira URL was accepted and its token sent in clear
    project = _jira_project(tmp_path, "http://jira.example.org", jira)
    with pytest.raises(ConfigError) as info:
        open_tracker(load_project(project))
    assert info.value.key == "tracker.jira.url" and "plain http" in str(info.value)


def test_jira_token_stored_for_https_is_not_sent_over_http(tmp_path, jira):
    # failed first on main: jira:<host:port> ignored the scheme
    host_port = jira.url.split("://", 1)[1]
    set_secret(f"jira:{host_port}", jira.token)  # the old entry
    set_secret(secret_key("jira", f"https://{host_port}"), jira.token)
    tracker = open_tracker(load_project(_jira_project(tmp_path, jira.url, jira)))
    try:
        report = tracker.doctor()
    finally:
        tracker.close_backend()
    assert report["ok"] is False
    assert _carried(jira, jira.token) == []
    assert secret_key("jira", jira.url) in str(report)


def test_jira_token_stored_for_its_origin_is_sent(tmp_path, jira):
    set_secret(secret_key("jira", jira.url), jira.token)
    tracker = open_tracker(load_project(_jira_project(tmp_path, jira.url, jira)))
    try:
        assert tracker.doctor()["ok"] is True
    finally:
        tracker.close_backend()
    assert jira.requests and all(jira.token in str(h.get("Authorization")) for _, _, h in jira.requests)
