"""Package discovery for the ``mailtriage`` namespace.

The source folders sit at the top of the repository (``tui/``, ``backends/``, …) but install as
``mailtriage.<folder>``: PyPI already has top-level packages of those names. setuptools' own
discovery cannot map several top-level folders into one namespace, so the package list, the
package-dir mapping and the package data are computed here from the tree itself; nothing is kept
by hand, so a new pane folder or data file cannot be left out of the wheel.

Every other setting lives in pyproject.toml.
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
# Top-level folders that are not part of the installed package.
NOT_INSTALLED = {"tests", "benchmarks", "scripts", "docs", "build", "dist"}
# Build and cache litter never shipped as package data.
LITTER_DIRS = {"__pycache__", ".pytest_cache", ".hypothesis"}
LITTER_SUFFIXES = {".pyc", ".pyo", ".orig", ".rej", ".swp"}


def top_level_packages() -> list[str]:
    """Top-level folders holding an ``__init__.py``: each one is ``mailtriage.<folder>``."""
    return sorted(
        entry.name
        for entry in HERE.iterdir()
        if entry.is_dir()
        and not entry.name.startswith(".")
        and entry.name not in NOT_INSTALLED
        and not entry.name.endswith(".egg-info")
        and (entry / "__init__.py").is_file()
    )


def discover() -> tuple[list[str], dict[str, str], dict[str, list[str]]]:
    packages: list[str] = []
    package_dir: dict[str, str] = {}
    package_data: dict[str, list[str]] = {}
    for top in top_level_packages():
        for folder, dirs, files in os.walk(HERE / top):
            dirs[:] = sorted(d for d in dirs if d not in LITTER_DIRS and not d.startswith("."))
            rel = Path(folder).relative_to(HERE)
            if not any(name.endswith(".py") for name in files):
                continue  # data-only folders ship as package data of the package above them
            name = "mailtriage." + ".".join(rel.parts)
            packages.append(name)
            package_dir[name] = rel.as_posix()
            data: list[str] = []
            for sub_folder, sub_dirs, sub_files in os.walk(folder):
                sub_dirs[:] = sorted(d for d in sub_dirs if d not in LITTER_DIRS and not d.startswith("."))
                sub_rel = Path(sub_folder).relative_to(folder)
                if sub_rel.parts and any(n.endswith(".py") for n in sub_files):
                    # A sub-folder with Python files is a package of its own; it gets its data there.
                    sub_dirs[:] = []
                    continue
                for file in sorted(sub_files):
                    if file.endswith(".py") or Path(file).suffix in LITTER_SUFFIXES or file.startswith("."):
                        continue
                    data.append((sub_rel / file).as_posix())
            if data:
                package_data[name] = data
    return packages, package_dir, package_data


PACKAGES, PACKAGE_DIR, PACKAGE_DATA = discover()

setup(packages=PACKAGES, package_dir=PACKAGE_DIR, package_data=PACKAGE_DATA, include_package_data=False)
