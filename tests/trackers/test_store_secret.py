"""``mailtriage account store-secret``: the user's own command that stores a cookie or token
for one origin, or moves an entry kept under the old origin-less key (issue 31, item 1)."""

from __future__ import annotations

import io
import json
import sys

import pytest

from mailtriage.cli.accounts import main as account_main
from mailtriage.core.origins import secret_key
from mailtriage.core.projectconfig import load_project
from mailtriage.core.secrets import get_secret, set_secret
from mailtriage.trackers.registry import open_tracker
from tests.trackers.conftest import write_project
from tests.trackers.servers import GitHubServer

TOKEN = "ghp-stored-by-hand-5512"


def run(monkeypatch, capsys, *args: str, stdin: str = "") -> tuple[int, object, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = account_main(["store-secret", *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def test_stores_a_token_under_its_origin_key(monkeypatch, capsys):
    code, out, err = run(monkeypatch, capsys, "github", "https://api.github.com", "--repo", "acme/security",
                         stdin=TOKEN + "\n")
    key = "github:https://api.github.com:443/acme/security"
    assert code == 0 and out == {"stored": key, "origin": "https://api.github.com:443"}
    assert get_secret(key) == TOKEN
    assert TOKEN not in json.dumps(out) + err


def test_plain_http_to_another_host_is_refused_and_nothing_is_stored(monkeypatch, capsys, memory_keyring):
    code, out, err = run(monkeypatch, capsys, "jira", "http://jira.example.org", stdin=TOKEN + "\n")
    assert code == 2 and out is None
    assert "plain http" in err and TOKEN not in err
    assert memory_keyring.store == {}


def test_github_needs_the_repository(monkeypatch, capsys, memory_keyring):
    code, _, err = run(monkeypatch, capsys, "github", "https://api.github.com", stdin=TOKEN + "\n")
    assert code == 2 and "--repo" in err and memory_keyring.store == {}


def test_an_empty_secret_is_refused(monkeypatch, capsys, memory_keyring):
    code, _, err = run(monkeypatch, capsys, "ponymail", "https://lists.example.org", stdin="\n")
    assert code == 2 and "empty" in err and memory_keyring.store == {}


def test_from_old_key_without_an_old_entry_says_so(monkeypatch, capsys, memory_keyring):
    code, _, err = run(monkeypatch, capsys, "ponymail", "https://lists.example.org", "--from-old-key")
    assert code == 2 and "ponymail:lists.example.org" in err and memory_keyring.store == {}


def test_moving_the_old_entry_makes_the_tracker_work_again(tmp_path, monkeypatch, capsys, memory_keyring):
    server = GitHubServer().start()
    try:
        set_secret(f"github:{server.repo}", server.token)  # stored before keys named the origin
        project = tmp_path / "project"
        write_project(project, {"platform": "github", "github": {"repo": server.repo, "api_url": server.url}})
        report = open_tracker(load_project(project)).doctor()
        assert report["ok"] is False and "--from-old-key" in json.dumps(report) and server.requests == []
        code, out, _ = run(monkeypatch, capsys, "github", server.url, "--repo", server.repo, "--from-old-key")
        key = secret_key("github", server.url, server.repo)
        assert code == 0 and out["stored"] == key and out["moved_from"] == f"github:{server.repo}"
        assert get_secret(key) == server.token and get_secret(f"github:{server.repo}") is None
        assert open_tracker(load_project(project)).doctor()["ok"] is True
    finally:
        server.stop()


@pytest.mark.parametrize("purpose", ["ponymail", "jira"])
def test_old_host_keys_move_for_the_same_host_and_port(monkeypatch, capsys, memory_keyring, purpose):
    set_secret(f"{purpose}:127.0.0.1:8443", TOKEN)
    code, out, _ = run(monkeypatch, capsys, purpose, "https://127.0.0.1:8443", "--from-old-key")
    assert code == 0 and out["stored"] == f"{purpose}:https://127.0.0.1:8443"
    assert get_secret(f"{purpose}:https://127.0.0.1:8443") == TOKEN
