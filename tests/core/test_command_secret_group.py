"""A ``password_command`` that times out is ended with everything it started (issue 31,
item 4): it runs in its own session, and the whole process group goes on timeout."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mailtriage.core.secrets import SecretCommandFailed, command_secret


def _alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _wait_until(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_a_timed_out_command_takes_its_grandchild_with_it(tmp_path):
    # failed first on main: the shell was killed, its background sleep kept running
    pidfile = tmp_path / "grandchild.pid"
    script = tmp_path / "slow-pass"
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pidfile}\nsleep 300\n")
    script.chmod(0o755)
    with pytest.raises(SecretCommandFailed, match="did not finish within"):
        command_secret(str(script), timeout=2)
    assert _wait_until(lambda: pidfile.exists() and pidfile.read_text().strip().isdigit())
    grandchild = int(pidfile.read_text())
    try:
        assert _wait_until(lambda: not _alive(grandchild)), "the grandchild outlived the timeout"
    finally:
        if _alive(grandchild):
            os.kill(grandchild, 9)


def test_a_command_that_answers_in_time_still_gives_its_first_line(tmp_path):
    script = tmp_path / "pass"
    script.write_text("#!/bin/sh\necho 'correct horse battery'\necho second\n")
    script.chmod(0o755)
    assert command_secret(str(script), timeout=30) == "correct horse battery"
