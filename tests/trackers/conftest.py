"""Fixtures: real git and svn working copies, loopback GitHub/Jira servers, an in-memory keyring.

``tracker_env`` is parametrized over every backend, so one contract suite runs the same
behaviour checks on local-files (git and svn), GitHub and Jira (v2 and v3).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import keyring
import pytest
from keyring.backend import KeyringBackend

from mailtriage.core.projectconfig import load_project
from mailtriage.cli.tracker import main as tracker_main
from mailtriage.trackers.registry import open_tracker
from tests.git_env_copy import copy_git_env, copy_svn_env

LABELS = ["needs-triage", "bug", "cve-allocated"]
ASSIGNEES = ["alice", "bob"]
MILESTONES = ["1.0", "2.0"]


class MemoryKeyring(KeyringBackend):
    """A real keyring backend that keeps secrets in this process's memory (tests only)."""

    priority = 1

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        from keyring.errors import PasswordDeleteError

        if (service, username) not in self.store:
            raise PasswordDeleteError(username)
        del self.store[(service, username)]


@pytest.fixture(autouse=True)
def memory_keyring():
    previous = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.set_keyring(previous)


def sh(args: list[str], cwd: Path, input: str | None = None) -> str:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    proc = subprocess.run(args, cwd=cwd, input=input, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, f"{args} failed: {proc.stderr}"
    return proc.stdout


def write_project(project: Path, tracker: dict) -> None:
    """project.md with a configuration block: the given tracker keys plus the declared values."""
    import yaml

    project.mkdir(parents=True, exist_ok=True)
    settings = {"labels": LABELS, "assignees": ASSIGNEES, "milestones": MILESTONES, "user": "tester"}
    settings.update(tracker)
    config = yaml.safe_dump({"tracker": settings}, sort_keys=False)
    (project / "project.md").write_text(f"# Test project\n\n## Configuration\n\n```yaml\n{config}```\n",
                                        encoding="utf-8")


@dataclass
class TrackerEnv:
    kind: str  # local-files-git, local-files-svn, github, jira-v2, jira-v3
    project: Path
    tracker: Any
    wc: Path | None = None
    remote: Path | None = None
    server: Any = None
    extra: dict = field(default_factory=dict)

    def reopen(self):
        """A fresh tracker object for the same project (as a new CLI process would build)."""
        self.tracker = open_tracker(load_project(self.project))
        return self.tracker

    def cli(self, *args: str, stdin: str | bytes = b"") -> tuple[int, Any, str]:
        """Run the CLI in-process: (exit code, parsed JSON stdout or raw text, stderr)."""
        data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        out, err = io.StringIO(), io.StringIO()
        code = tracker_main(["--project", str(self.project), *args], stdin=io.BytesIO(data), stdout=out, stderr=err)
        text = out.getvalue()
        try:
            parsed = json.loads(text) if text.strip() else None
        except ValueError:
            parsed = text
        return code, parsed, err.getvalue()


# -- local-files ---------------------------------------------------------------------

#: One built git tracker env per (worker process, ``restricted``): each ``make_git_env`` copies it.
_GIT_TEMPLATES: dict[bool, Path] = {}
_TEMPLATE_ROOT = tempfile.TemporaryDirectory(prefix="mailtriage-git-env-")  # removed when the worker ends


def make_git_env(tmp_path: Path, restricted: bool = True) -> TrackerEnv:
    """A git working copy with its bare remote and an initialized local-files tracker, committed
    and pushed: a copy of one built once a worker (eleven git runs and the tracker's init,
    ~70 ms CPU and ~0.4 s at load 17, against ~14 ms for the copy). The copy's ``origin`` is
    rewritten to its own remote (the one absolute path the build leaves, in ``.git/config``)."""
    return _copied("local-files-git", _GIT_TEMPLATES, restricted, _build_git_env, copy_git_env, tmp_path)


def _copied(kind: str, templates: dict[bool, Path], restricted: bool, build: Callable[[Path, bool], object],
            copy: Callable[[Path, Path], tuple[Path, Path]], tmp_path: Path) -> TrackerEnv:
    """A ``kind`` env in ``tmp_path``: ``copy`` of the template ``build`` made once a worker
    per ``restricted`` (kept in ``templates``), its tracker opened."""
    template = templates.get(restricted)
    if template is None:
        template = Path(_TEMPLATE_ROOT.name) / f"{kind}-restricted-{restricted}"
        template.mkdir()
        build(template, restricted)
        templates[restricted] = template
    remote, wc = copy(template, tmp_path)
    env = TrackerEnv(kind, wc / "project", None, wc=wc, remote=remote)
    env.reopen()
    return env


def _build_git_env(tmp_path: Path, restricted: bool) -> TrackerEnv:
    remote = tmp_path / "remote.git"
    sh(["git", "init", "-q", "--bare", "-b", "main", str(remote)], tmp_path)
    wc = tmp_path / "wc"
    sh(["git", "clone", "-q", str(remote), str(wc)], tmp_path)
    sh(["git", "config", "user.name", "Tess Tester"], wc)
    sh(["git", "config", "user.email", "tess@example.org"], wc)
    sh(["git", "checkout", "-q", "-b", "main"], wc)
    (wc / "README").write_text("unrelated file\n")
    sh(["git", "add", "README"], wc)
    sh(["git", "commit", "-q", "-m", "start"], wc)
    sh(["git", "push", "-q", "-u", "origin", "main"], wc)
    project = wc / "project"
    write_project(project, {"platform": "local-files", "local": {"path": "../security-tracker"}})
    env = TrackerEnv("local-files-git", project, None, wc=wc, remote=remote)
    tracker = env.reopen()
    tracker.init("SEC", access_restricted=restricted)
    # the write guard reads the committed descriptor (HEAD), so set-up commits it as a person would
    sh(["git", "add", "security-tracker"], wc)
    sh(["git", "commit", "-q", "-m", "tracker descriptor"], wc)
    sh(["git", "push", "-q"], wc)
    return env


#: One built svn tracker env per (worker process, ``restricted``): each ``make_svn_env`` copies it.
_SVN_TEMPLATES: dict[bool, Path] = {}


def make_svn_env(tmp_path: Path, restricted: bool = True) -> TrackerEnv:
    """An svn repository and a working copy holding the project and an initialized local-files
    tracker, committed: a copy of one built once a worker (svnadmin, six svn runs and the
    tracker's init: 0.14 CPU-s and 0.7 s wall at load 12), its working copy relocated to the
    copied repository (one svn run; copy and relocate 0.026 CPU-s, 0.06 s wall)."""
    return _copied("local-files-svn", _SVN_TEMPLATES, restricted,
                   lambda template, restricted: _build_svn_env(template, restricted).tracker.close_backend(),
                   copy_svn_env, tmp_path)


def _build_svn_env(tmp_path: Path, restricted: bool) -> TrackerEnv:
    repo = tmp_path / "svnrepo"
    sh(["svnadmin", "create", str(repo)], tmp_path)
    wc = tmp_path / "wc"
    sh(["svn", "checkout", "-q", "--non-interactive", repo.as_uri(), str(wc)], tmp_path)
    project = wc / "project"
    write_project(project, {"platform": "local-files", "local": {"path": "../security-tracker"}})
    sh(["svn", "add", "-q", "project"], wc)
    sh(["svn", "commit", "-q", "--non-interactive", "-m", "project config"], wc)
    env = TrackerEnv("local-files-svn", project, None, wc=wc, remote=repo)
    tracker = env.reopen()
    tracker.init("SEC", access_restricted=restricted)
    # the write guard reads the committed descriptor (BASE), so set-up commits it as a person would
    sh(["svn", "add", "-q", "security-tracker"], wc)
    sh(["svn", "commit", "-q", "--non-interactive", "-m", "tracker descriptor"], wc)
    return env


@pytest.fixture
def git_env(tmp_path):
    return make_git_env(tmp_path)


@pytest.fixture
def svn_env(tmp_path):
    return make_svn_env(tmp_path)


# -- servers ----------------------------------------------------------------------------

def make_github_env(tmp_path: Path, private: bool = True) -> TrackerEnv:
    from mailtriage.core.origins import secret_key
    from mailtriage.core.secrets import set_secret
    from tests.trackers.servers import GitHubServer

    server = GitHubServer(private=private).start()
    set_secret(secret_key("github", server.url, server.repo), server.token)
    project = tmp_path / "project"
    write_project(project, {"platform": "github", "github": {"repo": server.repo, "api_url": server.url}})
    env = TrackerEnv("github", project, None, server=server)
    env.reopen()
    return env


def make_jira_env(tmp_path: Path, version: int, auth: str = "bearer") -> TrackerEnv:
    from mailtriage.core.origins import secret_key
    from mailtriage.core.secrets import set_secret
    from tests.trackers.servers import JiraServer

    server = JiraServer(api_version=version).start()
    set_secret(secret_key("jira", server.url), server.token)
    project = tmp_path / "project"
    jira = {"url": server.url, "project": server.project, "api_version": version, "security_level": "Embargoed",
            "auth": auth}
    if auth == "basic":
        jira["email"] = server.email
    write_project(project, {"platform": "jira", "jira": jira})
    env = TrackerEnv(f"jira-v{version}", project, None, server=server)
    env.reopen()
    return env


BACKENDS = ["local-files-git", "local-files-svn", "github", "jira-v2", "jira-v3"]


@pytest.fixture(params=BACKENDS)
def tracker_env(request, tmp_path):
    kind = request.param
    if kind == "local-files-git":
        env = make_git_env(tmp_path)
    elif kind == "local-files-svn":
        env = make_svn_env(tmp_path)
    elif kind == "github":
        env = make_github_env(tmp_path)
    elif kind.startswith("jira-v"):
        env = make_jira_env(tmp_path, int(kind[-1]))
    else:  # pragma: no cover
        raise AssertionError(kind)
    yield env
    env.tracker.close_backend()
    if env.server is not None:
        env.server.stop()


def run_cli_process(project: Path, *args: str, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    """The real console entry point in a child process."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "mailtriage.cli.tracker", "--project", str(project), *args],
                          input=stdin, capture_output=True, text=True, env=full_env, timeout=60)
