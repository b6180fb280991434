"""Fixtures of the workflow tests: a real git working copy holding a local-files tracker
(with a bare remote to push to), a project folder, and archives written as real mbox files.

Every flow runs on real parts: the tracker writes files in the git working copy and
publishes with git; mail is read from an mbox file by the mbox backend (or from the real
Dovecot in the end-to-end tests).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from mailtriage.core.projectconfig import load_project
from mailtriage.trackers.registry import open_tracker
from tests.git_env_copy import copy_git_env

LABELS = ["needs triage", "valid", "invalid", "duplicate", "cve allocated"]
FIELDS = ["Security mailing list thread", "Reporter", "Received", "Affected versions", "CVE"]


def sh(args: list[str], cwd: Path, input: str | None = None) -> str:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    proc = subprocess.run(args, cwd=cwd, input=input, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, f"{args} failed: {proc.stderr}"
    return proc.stdout


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    """User settings and data (alert cursors) in the test's own folders."""
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path / "data"))


@dataclass
class Env:
    wc: Path
    remote: Path
    project: Path
    tracker_root: Path
    archive: Path | None = None

    def config(self):
        return load_project(self.project)

    def tracker(self):
        return open_tracker(self.config())

    def write_project(self, sources: list[tuple[str, str, str]] | None = None, extra: dict | None = None) -> None:
        config = {
            "organization": "asf",
            "security_list": "security@frobnicator.example.org",
            "tracker": {"platform": "local-files", "user": "tess", "labels": LABELS, "fields": FIELDS,
                        "local": {"path": "../security-tracker"}},
            "templates": {"receipt": "templates/receipt.md"},
        }
        for key, value in (extra or {}).items():
            node = config
            *head, last = key.split(".")
            for part in head:
                node = node.setdefault(part, {})
            node[last] = value
        parts = ["# Frobnicator\n\nA project for the workflow tests.\n"]
        if sources:
            rows = "".join(f"| `{n}` | {r} | {m} | test source |\n" for n, r, m in sources)
            parts.append("## Mail sources\n\n| Backend | Role | Mandatory | Notes |\n|---|---|---|---|\n" + rows)
        parts.append("## Configuration\n\n```yaml\n" + yaml.safe_dump(config, sort_keys=False) + "```\n")
        (self.project / "project.md").write_text("\n".join(parts), encoding="utf-8")

    def git(self, *args: str) -> str:
        return sh(["git", *args], self.wc)

    def remote_log(self) -> str:
        return sh(["git", "--git-dir", str(self.remote), "log", "--format=%B---", "main"], self.wc)


RECEIPT = ("Hi {reporter_name},\n\nThanks for \"{subject}\" — the {project} team ({security_list}) has it.\n\n"
           "{sender_name}\n")


def _build_env(root: Path) -> None:
    """A bare remote and a working copy of it, holding the project folder and an initialized
    local-files tracker, committed and pushed (``root/remote.git``, ``root/wc``)."""
    remote = root / "remote.git"
    sh(["git", "init", "-q", "--bare", "-b", "main", str(remote)], root)
    wc = root / "wc"
    sh(["git", "clone", "-q", str(remote), str(wc)], root)
    sh(["git", "config", "user.name", "Tess Tester"], wc)
    sh(["git", "config", "user.email", "tess@example.org"], wc)
    sh(["git", "checkout", "-q", "-b", "main"], wc)
    project = wc / "project"
    (project / "templates").mkdir(parents=True)
    (project / "templates" / "receipt.md").write_text(RECEIPT, encoding="utf-8")
    e = Env(wc, remote, project, wc / "security-tracker")
    e.write_project()
    e.tracker().init("SEC", access_restricted=True)
    sh(["git", "add", "-A"], wc)
    sh(["git", "commit", "-q", "-m", "start"], wc)
    sh(["git", "push", "-q", "-u", "origin", "main"], wc)


@pytest.fixture(scope="session")
def env_template(tmp_path_factory) -> Path:
    """``_build_env`` once a worker (eight git runs and the tracker's init: ~70 ms CPU and
    ~0.4 s at load 17); each test's ``env`` is a copy of it (~14 ms)."""
    root = tmp_path_factory.mktemp("env-template")
    with pytest.MonkeyPatch.context() as patch:  # nothing of the build reaches the user's folders
        patch.setenv("MAILTRIAGE_CONFIG_DIR", str(root / "config"))
        patch.setenv("MAILTRIAGE_DATA_DIR", str(root / "data"))
        _build_env(root)
    return root


@pytest.fixture
def env(tmp_path, env_template) -> Env:
    """This test's own copy of the git tracker env: the working copy's ``origin`` is this
    copy's remote (the one absolute path the build leaves in it, in ``.git/config``)."""
    remote, wc = copy_git_env(env_template, tmp_path)
    return Env(wc, remote, wc / "project", wc / "security-tracker")


def imap_primary(env: Env, port: int, username: str, password: str, settings: str = "") -> None:
    """The user's ``work`` IMAP account (plain, on loopback ``port``; ``settings``: more of its
    config.toml lines) as the env's mandatory primary source, the list in its INBOX."""
    from mailtriage.backends.imap.account import password_key
    from mailtriage.core.secrets import set_secret

    config_dir = Path(os.environ["MAILTRIAGE_CONFIG_DIR"])  # this test's own (private_dirs)
    config_dir.mkdir(exist_ok=True)
    (config_dir / "config.toml").write_text(f"""
[accounts.work]
kind = "imap"
host = "127.0.0.1"
port = {port}
security = "plain"
username = "{username}"
{settings}
""", encoding="utf-8")
    set_secret(password_key("work"), password)
    env.write_project([("imap", "primary", "yes")],
                      extra={"mail_sources.imap": {"account": "work", "list": "security@frobnicator.example.org"}})


# -- mail ------------------------------------------------------------------------------------

def mail(message_id: str, sender: str, subject: str, body: str, date: str, *, to: str = "security@frobnicator.example.org",
         in_reply_to: str | None = None, references: str | None = None, headers: dict | None = None):
    """One RFC 5322 message (stdlib email, policy.default)."""
    from email import policy
    from email.message import EmailMessage

    msg = EmailMessage(policy=policy.default)
    msg["Message-ID"] = message_id
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = date
    if in_reply_to:
        msg["In-Reply-To"] = in_reply_to
        msg["References"] = references or in_reply_to
    for name, value in (headers or {}).items():
        msg[name] = value
    msg.set_content(body)
    return msg


def write_mbox(path: Path, messages) -> Path:
    import mailbox

    box = mailbox.mbox(str(path), create=True)
    try:
        for message in messages:
            box.add(message)
        box.flush()
    finally:
        box.close()
    return path


REPORT = "<report-1@reporter.example>"


def report_thread(with_reply: bool = False):
    msgs = [mail(REPORT, "Rita Reporter <rita@reporter.example>", "Heap overflow in the frob parser",
                 "The parser overflows on a long header.\nAffects 1.2.3.\n", "Tue, 01 Sep 2026 10:00:00 +0000")]
    if with_reply:
        msgs.append(mail("<reply-1@frobnicator.example.org>", "Sam Security <sam@frobnicator.example.org>",
                         "Re: Heap overflow in the frob parser", "Thanks, we are looking.\n",
                         "Wed, 02 Sep 2026 09:00:00 +0000", in_reply_to=REPORT))
    return msgs


@pytest.fixture
def mbox_env(env) -> Env:
    """The git tracker env plus an mbox archive as the primary, mandatory mail source."""
    archive = write_mbox(env.project / "security.mbox", report_thread())
    env.write_project([("mbox", "primary", "yes")],
                      extra={"mail_sources.mbox": {"path": archive.name, "list": "security@frobnicator.example.org"}})
    env.archive = archive
    return env
