"""Property tests never fail on the machine's load alone (issue 36 §7: green at load 10).
Hypothesis's deadline and its "too slow" health check measure wall-clock time; the suite's
profile turns both off, and a test's own ``suppress_health_check`` list replaces the
profile's, so each such list must name ``too_slow`` again."""

import re
from pathlib import Path

from hypothesis import HealthCheck, settings

TESTS = Path(__file__).resolve().parents[1]


def test_the_suite_profile_has_no_wall_clock_check():
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check


def test_every_test_that_lists_its_own_health_checks_keeps_too_slow_off():
    missing = []
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"suppress_health_check\s*=\s*\[([^\]]*)\]", text):
            if "too_slow" not in match.group(1) and path.name != "test_hypothesis_load_proof.py":
                missing.append(f"{path.relative_to(TESTS)}:{text.count(chr(10), 0, match.start()) + 1}")
    assert not missing, f"suppress_health_check without HealthCheck.too_slow: {missing}"
