"""Where the project is: the one decision every front end makes before anything else.

Kept apart from :mod:`.project` so that finding the folder loads no backend: the app
locates its project on the main thread before it starts, and opens it (backends, the
mail sources) on a worker thread.
"""

from __future__ import annotations

import os
from pathlib import Path


def project_dir(project: str | os.PathLike | None = None, *, demo: bool = False) -> Path:
    """The project folder: the demo workspace, ``project``, ``$MAILTRIAGE_PROJECT`` or the current folder."""
    if demo:
        from mailtriage.demo.workspace import ensure_demo_workspace  # only a --demo run builds it

        return ensure_demo_workspace()
    if project:
        return Path(project)
    env = os.environ.get("MAILTRIAGE_PROJECT")
    return Path(env) if env else Path.cwd()
