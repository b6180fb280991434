"""A run without -n of a file that mixes snapshot and ``async def`` tests exits 0 when every test
passes (issue 36 §8: it ended in syrupy's KeyError at session end, exit 1).

The suite's own conftest files are copied into a small tree beside such a file, and pytest runs
on it in a child process, as a developer runs one file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

MIXED = '''
async def test_an_async_test():
    assert True


def test_a_snapshot_test(snapshot):
    assert "the same text" == snapshot
'''
SNAPSHOT = """# serializer version: 1
# name: test_a_snapshot_test
  'the same text'
# ---
"""


def run_pytest(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                           "-p", "no:xdist", *args], cwd=root, capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # a child pytest run: its start-up is most of the cost
def test_a_plain_run_of_a_file_mixing_snapshot_and_async_tests_exits_0(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for folder in ("tui", "pgp"):
        (tmp_path / "tests" / folder).mkdir(parents=True)
        shutil.copy(TESTS / folder / "conftest.py", tmp_path / "tests" / folder / "conftest.py")
        (tmp_path / "tests" / folder / "__init__.py").touch()
        (tmp_path / "tests" / folder / "test_mixed.py").write_text(MIXED)
        (tmp_path / "tests" / folder / "__snapshots__").mkdir()
        (tmp_path / "tests" / folder / "__snapshots__" / "test_mixed.ambr").write_text(SNAPSHOT)
    shutil.copy(TESTS / "conftest.py", tmp_path / "tests" / "conftest.py")
    # The root conftest offers the real servers' fixtures (tests/servers/fixtures.py) to every test.
    shutil.copytree(TESTS / "servers", tmp_path / "tests" / "servers", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tests" / "__init__.py").touch()
    run = run_pytest(tmp_path, "tests/tui/test_mixed.py", "tests/pgp/test_mixed.py")  # files named, as a developer does
    assert "4 passed" in run.stdout and "2 snapshots passed" in run.stdout, run.stdout[-2000:]
    assert "KeyError" not in run.stdout + run.stderr, run.stdout[-2000:] + run.stderr[-2000:]
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
