"""The demo workspace: the bundled demo project copied into a temporary git repository.

``--demo`` runs on such a copy so the demo's local-files tracker can really be written,
reviewed and committed, and reply drafts really written to the local Maildir ``Mail/``
(the demo's ``drafts`` source), without touching the installed package. The tracker
starts with six filed reports (``demo/tracker.py``) so the tracker pane has something
to show.

* **The app** (``mailtriage --demo``, or ``d`` on the first-run screen) gets a fresh
  workspace for each run (:func:`new_demo_session`): ``<data dir>/demo-sessions/session-…``,
  so nothing an earlier run committed or drafted shows up again. Sessions older than a day
  are removed when the next one starts.
* **The command line** (``mailtriage --demo import …``) keeps one workspace between
  commands, ``<data dir>/demo`` (e.g. ``~/.local/share/mailtriage/demo``), so
  ``mailtriage --demo import …`` followed by ``mailtriage --demo tracker list`` sees the
  imported issue; ``--demo-reset`` starts it over (:func:`ensure_demo_workspace` with
  ``reset=True``).

``$MAILTRIAGE_DEMO_DIR`` names the command line's workspace; the sessions are made beside
it (``<that folder>-sessions``).

Never a predictable name in a shared folder: another local user could make that folder
first, with a project and a git hook of their choosing (publish runs the repository's
hooks). The folder and its parent must be the user's and writable by no one else
(``core/paths.py``), or the demo refuses to start.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from mailtriage.core.paths import check_private_dir, private_dir
from mailtriage.core.projectconfig import load_project
from mailtriage.core.settings import data_dir
from mailtriage.demo import demo_project_dir

READY_MARK = ".mailtriage-demo-ready"
#: The local Maildir of the demo's ``drafts`` source (relative to the workspace).
MAILDIR = "Mail"
SESSION_PREFIX = "session-"
#: A session workspace older than this is removed when a new session starts.
SESSION_MAX_AGE = 24 * 3600.0


def demo_workspace_dir() -> Path:
    override = os.environ.get("MAILTRIAGE_DEMO_DIR")
    if override:
        return Path(override)
    return data_dir() / "demo"


def demo_sessions_dir() -> Path:
    """Where the app's per-run demo workspaces are made."""
    shared = demo_workspace_dir()
    return shared.parent / f"{shared.name}-sessions"


def demo_template_dir() -> Path:
    """The pristine demo workspace each app session is copied from, built once per version
    of the demo data (its name carries a stamp of the bundled files)."""
    shared = demo_workspace_dir()
    return shared.parent / f"{shared.name}-template-{_demo_stamp()}"


def _demo_stamp() -> str:
    """Size and mtime of the bundled demo files and of the code that builds the workspace."""
    source = demo_project_dir()
    files = [source / "project.md", source / "security.mbox", *sorted((source / "templates").rglob("*")),
             Path(__file__), Path(__file__).with_name("tracker.py"), Path(__file__).with_name("personal.py")]
    text = "\n".join(f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files if f.is_file())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def ensure_demo_workspace(*, reset: bool = False) -> Path:
    """The command line's demo workspace: created when missing (atomically), or made
    afresh with ``reset`` (``--demo-reset``); returns it.

    Raises UnsafePath (a ConfigError) when the folder or its parent is not the user's own."""
    return _ensure_built(demo_workspace_dir(), reset=reset)


def _ensure_built(target: Path, *, reset: bool = False) -> Path:
    """``target`` holding a built demo workspace: built (atomically) when missing."""
    private_dir(target.parent)
    if os.path.lexists(target):
        check_private_dir(target)
        if reset:
            shutil.rmtree(target)
    if (target / READY_MARK).is_file():
        return target
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        _build(staging)
        try:
            staging.rename(target)
        except OSError:
            # Another process won the race (or an old half-made folder is in the way).
            if not (target / READY_MARK).is_file():
                shutil.rmtree(target, ignore_errors=True)
                staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def new_demo_session() -> Path:
    """A fresh demo workspace for one run of the app (private, in the user's data folder).

    Sessions older than :data:`SESSION_MAX_AGE` are removed first. Raises UnsafePath when
    the sessions folder or its parent is not the user's own."""
    sessions = demo_sessions_dir()
    private_dir(sessions.parent)
    private_dir(sessions)
    now = time.time()
    for old in sessions.glob(f"{SESSION_PREFIX}*"):
        try:
            if now - old.lstat().st_mtime > SESSION_MAX_AGE and not old.is_symlink():
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            continue
    # Building a workspace runs git a dozen times (about 0.3 s); a session copies the
    # pristine template instead, so a start of the demo app costs a file copy.
    template = _ensure_built(demo_template_dir())
    workspace = Path(tempfile.mkdtemp(prefix=SESSION_PREFIX, dir=sessions))  # mode 0700, a new name
    try:
        shutil.copytree(template, workspace, symlinks=True, dirs_exist_ok=True)
    except BaseException:
        shutil.rmtree(workspace, ignore_errors=True)
        raise
    return workspace


def _build(staging: Path) -> None:
    """The demo project, its git repository, its tracker and its Maildir, in ``staging``."""
    # lazy: the trackers load only when a workspace is built, never when an existing one is found
    # (the app finds its project on the UI thread: tests/tui/test_startup_imports.py)
    from mailtriage.demo.personal import MAILDIR as PERSONAL, write_personal_maildir
    from mailtriage.demo.tracker import demo_threads, file_demo_issues
    from mailtriage.trackers.contract import Policy
    from mailtriage.trackers.localfiles import LocalFilesTracker

    source = demo_project_dir()
    for name in ("project.md", "security.mbox"):
        shutil.copy2(source / name, staging / name)
    shutil.copytree(source / "templates", staging / "templates")
    _git(staging, "init", "-q", "-b", "main")
    _git(staging, "config", "user.name", "Demo Triager")
    _git(staging, "config", "user.email", "triager@example.org")
    config = load_project(staging)
    tracker = LocalFilesTracker(config.resolve_path(str(config.get("tracker.local.path"))),
                                Policy.from_config(config), user="demo")
    # A local repository with no remote: only this machine's user can read it.
    tracker.init(str(config.get("tracker.prefix") or "SEC"), access_restricted=True)
    # writes need the descriptor committed (the guard reads HEAD, not the file on disk)
    _git(staging, "add", "-A")
    _git(staging, "commit", "-q", "-m", "demo security tracker descriptor")
    # Linked to their threads as an import links them, so Sync and Import find them.
    file_demo_issues(tracker, demo_threads(config), queue=True)
    # The Maildirs are mail, not project history: git never sees them.
    (staging / ".gitignore").write_text(f"{READY_MARK}\n/{MAILDIR}/\n/{PERSONAL}/\n", encoding="utf-8")
    private_dir(staging / MAILDIR)
    write_personal_maildir(staging / PERSONAL)
    _git(staging, "add", "-A")
    _git(staging, "commit", "-q", "-m", "demo project and its security tracker")
    (staging / READY_MARK).write_text("ok\n", encoding="utf-8")


def demo_settings(settings, workspace: Path):
    """The user settings a demo run uses: the user's own (theme, keys, name), with the demo's
    personal account ``[accounts.demo]`` (``demo/personal.py``) in place of the user's
    accounts, so the demo never opens a real mailbox. A copy: the user's file is never
    written with it."""
    from mailtriage.demo.personal import ACCOUNT_ID, demo_account  # why: loads with a demo run only

    data = {key: value for key, value in settings.data.items() if key != "accounts"}
    data["accounts"] = {ACCOUNT_ID: demo_account(Path(workspace))}
    return replace(settings, data=data)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30)
