"""The source tree laid out as the installed ``mailtriage`` package, for tools that read a
package from disk (import-linter, mypy): the folders install as ``mailtriage.<folder>``
through an editable-install hook those tools cannot follow. Only the ``.py`` files are
copied (about a second)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def packages() -> list[str]:
    """The top-level folders that install as ``mailtriage.<folder>`` (see setup.py)."""
    skip = {"tests", "benchmarks", "scripts", "docs", "build", "dist"}
    return sorted(p.name for p in ROOT.iterdir()
                  if p.is_dir() and p.name not in skip and not p.name.startswith(".") and (p / "__init__.py").is_file())


def lay_out(target: Path) -> Path:
    """A copy of the source tree as the package ``mailtriage`` under ``target``."""
    package = target / "mailtriage"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")

    def not_python(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if n == "__pycache__" or (not n.endswith(".py") and not os.path.isdir(os.path.join(folder, n)))]

    for name in packages():
        shutil.copytree(ROOT / name, package / name, ignore=not_python)
    return target
