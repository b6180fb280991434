"""Fixtures of the queue tests: a team of triagers, each with their own git clone of one
tracker remote (a local-files tracker and the list's mbox archive, both committed), and the
real ``mailtriage`` command line run as a separate process per triager."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.application.flows.conftest import mail, report_thread, sh, write_mbox

LIST = "security@frobnicator.example.org"
TRIAGERS = ["alice", "bob", "carol", "dave"]
THREAD = "msgid:<report-1@reporter.example>"


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    """User settings and data (caches, indexes) in the test's own folders, for every process."""
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path / "data"))


def project_md(extra: dict | None = None) -> str:
    config = {
        "organization": "asf",
        "security_list": LIST,
        "tracker": {"platform": "local-files", "labels": ["needs triage", "fixed"], "assignees": TRIAGERS,
                    "fields": ["Security mailing list thread", "Reporter", "Received"],
                    "local": {"path": "../security-tracker"}},
        "mail_sources": {"mbox": {"path": "security.mbox", "list": LIST}},
        "import": {"since": "2026-08-01"},
    }
    config.update(extra or {})
    return ("# Frobnicator\n\n## Mail sources\n\n| Backend | Role | Mandatory | Notes |\n|---|---|---|---|\n"
            "| `mbox` | primary | yes | the list archive |\n\n## Configuration\n\n```yaml\n"
            + yaml.safe_dump(config, sort_keys=False) + "```\n")


def cli(project: Path, *args: str, check: bool = False) -> subprocess.CompletedProcess:
    """``mailtriage --project PROJECT ARGS`` in its own process."""
    proc = subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "--project", str(project), *args],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, LC_ALL="C"))
    if check:
        assert proc.returncode == 0, f"{args}: exit {proc.returncode}: {proc.stderr}"
    return proc


def run_here(project: Path, *args: str) -> subprocess.CompletedProcess:
    """``mailtriage --project PROJECT ARGS`` in this process (faster than a process)."""
    from mailtriage.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--project", str(project), *args])
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def cli_here(project: Path, *args: str) -> None:
    proc = run_here(project, *args)
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}: {proc.stderr}"


def doc(proc: subprocess.CompletedProcess) -> dict:
    return json.loads(proc.stdout)


@dataclass
class Team:
    remote: Path
    clones: dict[str, Path] = field(default_factory=dict)  # triager -> working copy

    def project(self, who: str) -> Path:
        return self.clones[who] / "project"

    def clone(self, who: str, tmp: Path) -> Path:
        wc = tmp / f"wc-{who}"
        sh(["git", "clone", "-q", str(self.remote), str(wc)], tmp)
        sh(["git", "config", "user.name", who], wc)
        sh(["git", "config", "user.email", f"{who}@frobnicator.example.org"], wc)
        self.clones[who] = wc
        return wc


def make_team(tmp_path: Path, messages=None, triagers=TRIAGERS, *, imported: bool = True) -> Team:
    """A remote with project.md, the list archive and a tracker holding the report (imported by
    the first triager with the real import flow), and one clone per triager."""
    remote = tmp_path / "remote.git"
    sh(["git", "init", "-q", "--bare", "-b", "main", str(remote)], tmp_path)
    seed = tmp_path / "seed"
    sh(["git", "clone", "-q", str(remote), str(seed)], tmp_path)
    sh(["git", "config", "user.name", "seed"], seed)
    sh(["git", "config", "user.email", "seed@frobnicator.example.org"], seed)
    sh(["git", "checkout", "-q", "-b", "main"], seed)
    project = seed / "project"
    project.mkdir()
    (project / "project.md").write_text(project_md(), encoding="utf-8")
    write_mbox(project / "security.mbox", messages if messages is not None else report_thread())
    cli_here(project, "tracker", "init", "--prefix", "SEC", "--access-restricted")
    sh(["git", "add", "-A"], seed)
    sh(["git", "commit", "-q", "-m", "start"], seed)
    sh(["git", "push", "-q", "-u", "origin", "main"], seed)
    if imported:
        cli_here(project, "import", THREAD, "--yes", "--publish")
    team = Team(remote)
    for who in triagers:
        team.clone(who, tmp_path)
    return team


__all__ = ["LIST", "THREAD", "TRIAGERS", "Team", "cli", "doc", "mail", "make_team", "project_md", "run_here"]
