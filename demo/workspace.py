"""The demo workspace: the bundled demo project copied into a temporary git repository.

``--demo`` (CLI and app alike) runs on this copy so the demo's local-files tracker can
really be written, reviewed and committed without touching the installed package. The
tracker starts with three filed reports (``demo/tracker.py``) so the tracker pane has
something to show. The workspace lives in the user's own data folder
(``<data dir>/demo``, e.g. ``~/.local/share/mailtriage/demo``; ``$MAILTRIAGE_DEMO_DIR``
overrides) and is kept between commands, so ``mailtriage --demo import …`` followed by
``mailtriage --demo tracker list`` sees the imported issue. Delete the folder to start over.

Never a predictable name in a shared folder: another local user could make that folder
first, with a project and a git hook of their choosing (publish runs the repository's
hooks). The folder and its parent must be the user's and writable by no one else
(``core/paths.py``), or the demo refuses to start.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

READY_MARK = ".mailtriage-demo-ready"


def demo_workspace_dir() -> Path:
    override = os.environ.get("MAILTRIAGE_DEMO_DIR")
    if override:
        return Path(override)
    from mailtriage.core.settings import data_dir

    return data_dir() / "demo"


def ensure_demo_workspace() -> Path:
    """Create the workspace when missing (atomically) and return it.

    Raises UnsafePath (a ConfigError) when the folder or its parent is not the user's own."""
    from mailtriage.core.paths import check_private_dir, private_dir

    target = demo_workspace_dir()
    private_dir(target.parent)
    if os.path.lexists(target):
        check_private_dir(target)
    if (target / READY_MARK).is_file():
        return target
    from mailtriage.demo import demo_project_dir

    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        source = demo_project_dir()
        for name in ("project.md", "security.mbox"):
            shutil.copy2(source / name, staging / name)
        shutil.copytree(source / "templates", staging / "templates")
        _git(staging, "init", "-q", "-b", "main")
        _git(staging, "config", "user.name", "Demo Triager")
        _git(staging, "config", "user.email", "triager@example.org")
        from mailtriage.core.projectconfig import load_project
        from mailtriage.demo.tracker import file_demo_issues
        from mailtriage.trackers.contract import Policy
        from mailtriage.trackers.localfiles import LocalFilesTracker

        config = load_project(staging)
        tracker = LocalFilesTracker(config.resolve_path(str(config.get("tracker.local.path"))),
                                    Policy.from_config(config), user="demo")
        # A local repository with no remote: only this machine's user can read it.
        tracker.init(str(config.get("tracker.prefix") or "SEC"), access_restricted=True)
        # writes need the descriptor committed (the guard reads HEAD, not the file on disk)
        _git(staging, "add", "-A")
        _git(staging, "commit", "-q", "-m", "demo security tracker descriptor")
        file_demo_issues(tracker)
        (staging / ".gitignore").write_text(f"{READY_MARK}\n", encoding="utf-8")
        _git(staging, "add", "-A")
        _git(staging, "commit", "-q", "-m", "demo project and its security tracker")
        (staging / READY_MARK).write_text("ok\n", encoding="utf-8")
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


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30)
