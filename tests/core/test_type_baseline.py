"""mypy's errors per module may only shrink (issue 36 §5).

The tree had 591 errors when this check came in (483 once ``lean_dataclass`` declared itself a
dataclass transform). ``tests/core/mypy_baseline.json`` holds each module's count: a module
with more errors than its baseline fails, naming the new errors; a module with fewer fails
too, asking for the lower number to be written down, so the baseline follows every fix.
Regenerate with ``python -m tests.core.test_type_baseline`` after fixing errors.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.core.package_layout import ROOT, lay_out

BASELINE = Path(__file__).with_name("mypy_baseline.json")
ERROR = re.compile(r"^(mailtriage/[^:]+\.py):\d+: error: ")

pytest.importorskip("mypy", reason="mypy is a test dependency (pip install -e '.[test]')")


#: mypy's cache, kept between runs of this check: with it a run re-checks only the modules that
#: changed since the last one (1.5 CPU-s instead of 16, 5 s wall instead of 40 at load 20). It
#: lives in the user's cache folder, beside pip's, not in the checkout: a clean clone (CI's
#: ``.ci/run``, another worktree) finds the entries of the installed packages and of the modules
#: it did not change (mypy compares each file's size and hash, not its path, so a new ``.venv``
#: of the same packages is a hit). The tree is laid out at the same place each time (copied with
#: its files' times); a lock keeps two runs (of one checkout or of several) from laying it out at
#: once. Outside the checkout, the copies of it (tests/packaging, scripts/check_install.py, run
#: beside the tests by scripts/test) never meet a tree going away under them. MAILTRIAGE_MYPY_CACHE
#: names another folder (issue 36 §7).
WORK = Path(os.environ.get("MAILTRIAGE_MYPY_CACHE")
            or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mailtriage-tests" / "mypy-baseline")


def mypy_errors(workdir: Path | None = None) -> list[str]:
    """mypy's error lines over the tree laid out as the package, in ``workdir`` (default: the
    kept folder WORK, whose cache makes a second run cost a few seconds instead of a minute)."""
    work = WORK if workdir is None else workdir
    work.mkdir(parents=True, exist_ok=True)
    with open(work / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(work / "tree", ignore_errors=True)
        tree = lay_out(work / "tree")
        result = subprocess.run(
            [sys.executable, "-m", "mypy", "-p", "mailtriage", "--config-file", str(ROOT / "pyproject.toml"),
             "--cache-dir", str(work / "cache"), "--no-error-summary", "--hide-error-context",
             "--no-pretty", "--no-color-output"],
            cwd=tree, capture_output=True, text=True, timeout=600)
    assert result.returncode in (0, 1), result.stderr  # 2: mypy itself failed
    return [line for line in result.stdout.splitlines() if ERROR.match(line)]


def per_module(lines: list[str]) -> dict[str, int]:
    return dict(sorted(Counter(ERROR.match(line).group(1) for line in lines).items()))


@pytest.mark.slow  # mypy over the whole tree
def test_type_errors_only_shrink():
    lines = mypy_errors()
    now = per_module(lines)
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    grown = {m: (baseline.get(m, 0), n) for m, n in now.items() if n > baseline.get(m, 0)}
    new_errors = [line for line in lines if ERROR.match(line).group(1) in grown]
    assert not grown, ("new type errors (baseline, now) per module: " + repr(grown) + "\n" + "\n".join(new_errors))
    shrunk = {m: (n, now.get(m, 0)) for m, n in baseline.items() if now.get(m, 0) < n}
    assert not shrunk, ("fewer type errors than the baseline, well done: lower tests/core/mypy_baseline.json "
                        f"(python -m tests.core.test_type_baseline): {shrunk}")


if __name__ == "__main__":
    counts = per_module(mypy_errors())
    BASELINE.write_text(json.dumps(counts, indent=1) + "\n", encoding="utf-8")
    print(f"{sum(counts.values())} errors in {len(counts)} modules written to {BASELINE}")
