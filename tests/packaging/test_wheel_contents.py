"""What a user installs: the built wheel holds every package folder and every data file.

Every other test runs against the editable install, where folders are found anyway; these build
the real wheel (and sdist) and look inside, so a folder or a data file left out of the
distribution fails here. scripts/check_install.py then installs both into fresh environments
and runs the app from them (part of the README's test command).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOT_SHIPPED_TOP = {"tests", "benchmarks", "scripts", "docs"}


def shipped_top_folders() -> list[Path]:
    """The top-level folders that install as ``mailtriage.<folder>``: those with an __init__.py."""
    return [p for p in sorted(REPO.iterdir())
            if p.is_dir() and p.name not in NOT_SHIPPED_TOP and (p / "__init__.py").is_file()]


def source_files(suffixes: set[str] | None) -> set[str]:
    """Files under the shipped folders as ``mailtriage/<path>``; ``None`` picks every non-Python file."""
    found = set()
    for top in shipped_top_folders():
        for path in top.rglob("*"):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            if (suffixes is None and path.suffix != ".py") or (suffixes and path.suffix in suffixes):
                found.add("mailtriage/" + path.relative_to(REPO).as_posix())
    return found


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("dist")
    src = out / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info",
                                                              "__pycache__", ".pytest_cache", ".hypothesis"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # sdist first, then the wheel built from that sdist (what pip does with an sdist).
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out / "dist"), str(src)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (wheel,) = (out / "dist").glob("*.whl")
    (sdist,) = (out / "dist").glob("*.tar.gz")
    return wheel, sdist


def wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def test_every_python_file_is_in_the_wheel(artifacts):
    names = wheel_names(artifacts[0])
    expected = source_files({".py"})
    # The folders the first wheel left out, named so a regression is obvious.
    for must in ("mailtriage/tui/screens/main.py", "mailtriage/tui/panes/threads.py",
                 "mailtriage/tui/dialogs/proposal.py", "mailtriage/cli/main.py"):
        assert must in expected
    missing = sorted(expected - names)
    assert not missing, f"Python files missing from the wheel: {missing}"


def test_every_data_file_is_in_the_wheel(artifacts):
    names = wheel_names(artifacts[0])
    expected = source_files(None)
    for must in ("mailtriage/tui/app.tcss", "mailtriage/themes/dark.tcss", "mailtriage/demo/security.mbox",
                 "mailtriage/demo/project.md", "mailtriage/demo/templates/receipt.md", "mailtriage/core/orgs/asf.yaml"):
        assert must in expected, f"{must} is no longer in the tree: update this test"
    missing = sorted(expected - names)
    assert not missing, f"data files (.tcss, templates, demo, org defaults) missing from the wheel: {missing}"


def test_wheel_ships_no_tests_or_litter(artifacts):
    names = wheel_names(artifacts[0])
    shipped = [n for n in names if not n.startswith("mailtriage-")]  # skip .dist-info
    assert all(n.startswith("mailtriage/") for n in shipped), sorted(n for n in shipped if not n.startswith("mailtriage/"))
    assert not [n for n in shipped if "__pycache__" in n or n.endswith(".pyc") or n.startswith("mailtriage/tests/")]


def test_sdist_holds_the_sources_and_the_build_script(artifacts):
    sdist = artifacts[1]
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    prefix = f"mailtriage-{version}/"
    with tarfile.open(sdist) as tf:
        names = {m.name.removeprefix(prefix) for m in tf.getmembers()}
    expected = {n.removeprefix("mailtriage/") for n in source_files({".py"}) | source_files(None)}
    missing = sorted(expected - names)
    assert not missing, f"files missing from the sdist: {missing}"
    assert {"setup.py", "pyproject.toml", "README.md"} <= names


def test_version_flag_prints_the_installed_version():
    from importlib.metadata import version

    exe = Path(sys.executable).with_name("mailtriage")
    done = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"mailtriage {version('mailtriage')}"
    assert version("mailtriage") == tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
