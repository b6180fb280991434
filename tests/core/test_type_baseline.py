"""mypy's errors per module may only shrink (issue 36 §5).

The tree had 591 errors when this check came in (483 once ``lean_dataclass`` declared itself a
dataclass transform). ``tests/core/mypy_baseline.json`` holds each module's count: a module
with more errors than its baseline fails, naming the new errors; a module with fewer fails
too, asking for the lower number to be written down, so the baseline follows every fix.
Regenerate with ``python -m tests.core.test_type_baseline`` after fixing errors.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from tests.core.package_layout import ROOT, lay_out

BASELINE = Path(__file__).with_name("mypy_baseline.json")
ERROR = re.compile(r"^(mailtriage/[^:]+\.py):\d+: error: ")

pytest.importorskip("mypy", reason="mypy is a test dependency (pip install -e '.[test]')")


def mypy_errors(workdir: Path) -> list[str]:
    tree = lay_out(workdir / "tree")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "-p", "mailtriage", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(workdir / "cache"), "--no-error-summary", "--hide-error-context",
         "--no-pretty", "--no-color-output"],
        cwd=tree, capture_output=True, text=True, timeout=600)
    assert result.returncode in (0, 1), result.stderr  # 2: mypy itself failed
    return [line for line in result.stdout.splitlines() if ERROR.match(line)]


def per_module(lines: list[str]) -> dict[str, int]:
    return dict(sorted(Counter(ERROR.match(line).group(1) for line in lines).items()))


@pytest.mark.slow  # mypy over the whole tree
def test_type_errors_only_shrink(tmp_path):
    lines = mypy_errors(tmp_path)
    now = per_module(lines)
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    grown = {m: (baseline.get(m, 0), n) for m, n in now.items() if n > baseline.get(m, 0)}
    new_errors = [line for line in lines if ERROR.match(line).group(1) in grown]
    assert not grown, ("new type errors (baseline, now) per module: " + repr(grown) + "\n" + "\n".join(new_errors))
    shrunk = {m: (n, now.get(m, 0)) for m, n in baseline.items() if now.get(m, 0) < n}
    assert not shrunk, ("fewer type errors than the baseline, well done: lower tests/core/mypy_baseline.json "
                        f"(python -m tests.core.test_type_baseline): {shrunk}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as work:
        counts = per_module(mypy_errors(Path(work)))
    BASELINE.write_text(json.dumps(counts, indent=1) + "\n", encoding="utf-8")
    print(f"{sum(counts.values())} errors in {len(counts)} modules written to {BASELINE}")
