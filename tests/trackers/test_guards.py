"""Tracker guards (issue 20 §9): the committed descriptor unlocks writes, publish and pending
take the tracker root as a literal path, and GitHub's visibility decides "private"."""

from __future__ import annotations

import pytest

from mailtriage.trackers import localformat as fmt
from tests.trackers.conftest import TrackerEnv, make_git_env, make_svn_env, sh, write_project


def tracker_dir(env) -> "Path":  # noqa: F821
    return env.wc / "security-tracker"


# -- the local-files write guard reads the committed descriptor ---------------------------

@pytest.mark.parametrize("make", [make_git_env, make_svn_env], ids=["git", "svn"])
def test_an_uncommitted_access_restricted_edit_does_not_unlock_writes(tmp_path, make):
    env = make(tmp_path, restricted=False)  # the committed descriptor says false
    descriptor = tracker_dir(env) / fmt.DESCRIPTOR_NAME
    descriptor.write_text(descriptor.read_text().replace("access_restricted: false", "access_restricted: true"))
    code, out, err = env.cli("create", "--title", "t", "--body-file", "-", stdin="b")
    assert code == 4 and out is None and "committed" in err
    assert not list(tracker_dir(env).glob("SEC-*.md"))
    # publishing (which the user confirms) is how the descriptor gets committed; then writes go through
    code, out, err = env.cli("publish", "--message-file", "-", stdin="tracker: access restricted\n")
    assert code == 0 and out["committed"] is True, err
    code, out, err = env.cli("create", "--title", "t", "--body-file", "-", stdin="b")
    assert code == 0 and out["id"] == "SEC-0001", err
    # and the reverse: an uncommitted edit back to false locks again at once
    descriptor.write_text(descriptor.read_text().replace("access_restricted: true", "access_restricted: false"))
    code, _, err = env.cli("comment", "1", "--body-file", "-", stdin="hi")
    assert code == 4 and "access_restricted" in err


def test_a_descriptor_never_committed_refuses_writes(tmp_path):
    wc = tmp_path / "solo"
    sh(["git", "init", "-q", str(wc)], tmp_path)
    write_project(wc / "project", {"platform": "local-files", "local": {"path": "../t"}})
    env = TrackerEnv("local-files-git", wc / "project", None, wc=wc)
    env.reopen().init("SEC", access_restricted=True)
    code, _, err = env.cli("create", "--title", "t", "--body-file", "-", stdin="b")
    assert code == 4 and "not committed" in err
    check = next(c for c in env.tracker.doctor()["checks"] if c["name"] == "access_restricted")
    assert check["ok"] is False and "not committed" in check["detail"]


# -- publish and pending: literal pathspecs, exactly the same files ---------------------------

def make_odd_root_env(tmp_path, name: str) -> TrackerEnv:
    env = make_git_env(tmp_path)
    write_project(env.project, {"platform": "local-files", "local": {"path": f"../{name}"}})
    tracker = env.reopen()
    tracker.init("SEC", access_restricted=True)
    sh(["git", "add", "--", f":(literal){name}"], env.wc)
    sh(["git", "commit", "-q", "-m", "odd tracker"], env.wc)
    sh(["git", "push", "-q"], env.wc)
    return env


@pytest.mark.parametrize("name", ["sec[ab]", "sec*", "sec?"])
def test_publish_commits_only_a_root_named_like_a_glob(tmp_path, name):
    env = make_odd_root_env(tmp_path, name)
    # neighbours the root's name would match as a pattern
    for neighbour in ("seca", "secb", "secX"):
        (env.wc / neighbour).mkdir()
        (env.wc / neighbour / "unrelated.md").write_text("not tracker data\n")
    env.tracker.create("One", "### CVE\n\nnone\n", [])
    # a file staged and then deleted: git status shows it, publish has nothing of it to commit
    (env.wc / name / "scratch.md").write_text("x\n")
    sh(["git", "add", "--", f":(literal){name}/scratch.md"], env.wc)
    (env.wc / name / "scratch.md").unlink()
    pending = env.tracker.pending()
    listed = sorted(c["path"] for c in pending["changes"])
    assert listed == [f"{name}/SEC-0001.md"]
    out = env.tracker.publish("import SEC-0001")
    assert out["committed"] is True
    shown = sh(["git", "show", "--name-only", "--format=", "HEAD"], env.wc).split()
    assert shown == listed == sorted(out["files"])
    status = sh(["git", "status", "--porcelain", "--untracked-files=all"], env.wc)
    assert "?? seca/unrelated.md" in status and "?? secX/unrelated.md" in status


def test_a_pre_commit_hook_refusal_leaves_nothing_staged(git_env):
    hook = git_env.wc / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'secret scanner: refused' >&2\nexit 1\n")
    hook.chmod(0o755)
    (git_env.wc / "README").write_text("the user's own staged change\n")
    sh(["git", "add", "README"], git_env.wc)
    before = sh(["git", "diff", "--cached", "--name-only"], git_env.wc)
    git_env.tracker.create("One", "b", [])
    code, out, err = git_env.cli("publish", "--message-file", "-", stdin="import\n")
    assert code == 5 and "secret scanner: refused" in err
    assert sh(["git", "diff", "--cached", "--name-only"], git_env.wc) == before == "README\n"
    assert "nothing was committed" in err
    assert "?? security-tracker/SEC-0001.md" in sh(["git", "status", "--porcelain"], git_env.wc)


# -- GitHub: visibility decides "private" ------------------------------------------------------

def test_an_internal_enterprise_repository_is_not_private(tmp_path):
    from tests.trackers.conftest import make_github_env

    env = make_github_env(tmp_path)
    env.server.visibility = "internal"  # private: true, but the whole enterprise can read it
    try:
        env.server.add_issue("existing", "body")
        assert env.tracker.view("1")["title"] == "existing"
        code, _, err = env.cli("comment", "1", "--body-file", "-", stdin="hello")
        assert code == 4 and "internal" in err
        assert env.server.comments[1] == []
        report = env.tracker.doctor()
        check = next(c for c in report["checks"] if c["name"] == "private")
        assert report["ok"] is False and check["ok"] is False and "internal" in check["detail"]
    finally:
        env.tracker.close_backend()
        env.server.stop()


@pytest.mark.parametrize("visibility,ok", [("private", True), ("internal", False), ("public", False)])
def test_local_files_doctor_requires_visibility_private_on_a_github_remote(tmp_path, visibility, ok):
    from mailtriage.core.origins import secret_key
    from mailtriage.core.secrets import set_secret
    from tests.trackers.servers import GitHubServer

    server = GitHubServer(visibility=visibility).start()
    try:
        env = make_git_env(tmp_path)
        sh(["git", "remote", "set-url", "origin", f"https://github.com/{server.repo}.git"], env.wc)
        write_project(env.project, {"platform": "local-files", "local": {"path": "../security-tracker"},
                                    "github": {"api_url": server.url}})
        set_secret(secret_key("github", server.url, server.repo), server.token)
        remote = next(c for c in env.reopen().doctor()["checks"] if c["name"] == "remote origin")
        assert remote["ok"] is ok and visibility in remote["detail"].lower()
    finally:
        server.stop()


# -- local-files doctor: remotes the operator checked themselves --------------------------------

@pytest.mark.parametrize("make", [make_git_env, make_svn_env], ids=["git", "svn"])
def test_doctor_accepts_a_non_github_remote_the_operator_recorded_as_checked(tmp_path, make):
    env = make(tmp_path)
    remote = next(c for c in env.tracker.doctor()["checks"] if c["name"].startswith("remote"))
    url = remote["detail"].split(": ", 1)[0]
    assert remote["ok"] is False and "cannot verify" in remote["detail"]
    assert "verified_remotes" in remote["detail"]  # it says how to record the check
    write_project(env.project, {"platform": "local-files", "local": {"path": "../security-tracker",
                                                                      "verified_remotes": [url]}})
    code, out, err = env.cli("doctor")
    assert code == 0 and out["ok"] is True, out
    check = next(c for c in out["checks"] if c["name"].startswith("remote"))
    assert check["ok"] is True and "operator" in check["detail"]


def test_doctor_keeps_failing_a_public_github_remote_even_when_recorded(tmp_path):
    from mailtriage.core.origins import secret_key
    from mailtriage.core.secrets import set_secret
    from tests.trackers.servers import GitHubServer

    server = GitHubServer(private=False).start()
    try:
        env = make_git_env(tmp_path)
        url = f"https://github.com/{server.repo}.git"
        sh(["git", "remote", "set-url", "origin", url], env.wc)
        write_project(env.project, {"platform": "local-files",
                                    "local": {"path": "../security-tracker", "verified_remotes": [url]},
                                    "github": {"api_url": server.url}})
        set_secret(secret_key("github", server.url, server.repo), server.token)
        code, out, _ = env.cli("doctor")
        remote = next(c for c in out["checks"] if c["name"] == "remote origin")
        assert code == 4 and remote["ok"] is False and "PUBLIC" in remote["detail"]
    finally:
        server.stop()


def test_verified_remotes_must_be_a_list_of_urls(git_env):
    write_project(git_env.project, {"platform": "local-files",
                                    "local": {"path": "../security-tracker", "verified_remotes": "yes"}})
    code, _, err = git_env.cli("doctor")
    assert code == 2 and "verified_remotes" in err


def test_svn_pending_lists_exactly_what_publish_commits(svn_env):
    t = svn_env.tracker
    made = t.create("One", "b", [])
    t.attach(made["id"], b"patch\n", "fix.patch")
    listed = sorted(c["path"] for c in t.pending()["changes"])
    out = t.publish("import with a patch")
    assert out["committed"] is True
    assert listed == sorted(out["files"])
    assert "security-tracker/SEC-0001.attachments/fix.patch" in listed
