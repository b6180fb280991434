"""Where the project is: the one decision every front end makes before anything else.

Kept apart from :mod:`.project` so that finding the folder loads no backend: the app
locates its project on the main thread before it starts, and opens it (backends, the
mail sources) on a worker thread.
"""

from __future__ import annotations

import os
from pathlib import Path


def project_dir(project: str | os.PathLike | None = None, *, demo: bool = False, demo_reset: bool = False,
                demo_session: bool = False) -> Path:
    """The project folder: the demo workspace, ``project``, ``$MAILTRIAGE_PROJECT`` or the current folder.

    ``demo_session``: a fresh demo workspace for this run (the app); otherwise the command
    line's demo workspace, kept between commands, made afresh with ``demo_reset``."""
    if demo or demo_reset or demo_session:
        # Only a --demo run loads (and builds) the workspace: git, the tracker, the demo data.
        from mailtriage.demo.workspace import ensure_demo_workspace, new_demo_session

        return new_demo_session() if demo_session else ensure_demo_workspace(reset=demo_reset)
    if project:
        return Path(project)
    env = os.environ.get("MAILTRIAGE_PROJECT")
    return Path(env) if env else Path.cwd()
