"""Fixtures of the mbox / MIME / threading tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from mailtriage.core.trace import TRACE

CPYTHON_EMAIL_DATA = Path("/usr/lib/python3.11/test/test_email/data")


@pytest.fixture(scope="session")
def cpython_email_data() -> Path:
    """CPython's own email test messages (Debian libpython3.11-testsuite, PSF License).

    Read in place at test time; nothing is copied into this repository.
    scripts/test installs the package.
    """
    if not CPYTHON_EMAIL_DATA.is_dir():
        pytest.fail(f"{CPYTHON_EMAIL_DATA} is missing: install Debian libpython3.11-testsuite (scripts/test does)")
    return CPYTHON_EMAIL_DATA


@pytest.fixture
def notes():
    """The notes of the mbox index (the backend console's ``cache:mbox`` channel) while the test runs."""
    lines: list[str] = []
    unsubscribe = TRACE.subscribe(lambda line: lines.append(line.text) if line.channel == "cache:mbox" else None)
    yield lines
    unsubscribe()
