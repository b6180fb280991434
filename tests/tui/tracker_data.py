"""An empty local-files tracker in its own git repository, for the import/publish tests.

The repository gets its own committer identity, so the publish commits of the tests
never depend on the machine's git configuration. (The three demo reports live in
``mailtriage.demo.tracker``.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=folder, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_empty_tracker(config, folder: Path):
    """An empty local-files tracker in a new git repository at ``folder`` (committed)."""
    from mailtriage.trackers.contract import Policy
    from mailtriage.trackers.localfiles import LocalFilesTracker

    folder.mkdir(parents=True, exist_ok=True)
    _git(folder, "init", "-q")
    _git(folder, "config", "user.name", "Test Triager")
    _git(folder, "config", "user.email", "triager@example.org")
    root = folder / "security-tracker"
    tracker = LocalFilesTracker(root, Policy.from_config(config), user="demo")
    tracker.init(str(config.get("tracker.prefix") or "SEC"), access_restricted=True)
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "empty tracker")
    return tracker
