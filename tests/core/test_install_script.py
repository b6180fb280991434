"""scripts/install-debian leaves no policy-rc.d behind (issue 20, "Also").

The script runs for real; only the package manager is a stand-in on PATH (we must not
install Debian packages from a test), and POLICY_RC_D points into a temp dir.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "install-debian"
TOOLS = ("bash", "env", "id", "mktemp", "cp", "mv", "rm", "tee", "chmod", "cat", "test", "tail")


def run(tmp_path: Path, apt_exit: int = 0) -> tuple[subprocess.CompletedProcess, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in TOOLS:  # a PATH without svn, so the script has something to install
        found = shutil.which(tool)
        if found and not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(found)
    log = tmp_path / "apt.log"
    policy = tmp_path / "policy-rc.d"
    (bin_dir / "apt-get").write_text(
        "#!/bin/sh\n"
        f'echo "apt-get $* policy=$(cat {policy} 2>/dev/null | tail -1)" >> {log}\n'
        f"exit {apt_exit}\n")
    (bin_dir / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    for stub in ("apt-get", "sudo"):
        (bin_dir / stub).chmod(0o755)
    env = {"PATH": str(bin_dir), "POLICY_RC_D": str(policy), "HOME": str(tmp_path)}
    done = subprocess.run([str(bin_dir / "bash"), str(SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=60)
    return done, log


def test_policy_rc_d_blocks_service_starts_during_the_install_and_is_removed_after(tmp_path):
    done, log = run(tmp_path)
    assert done.returncode == 0, done.stderr
    calls = log.read_text()
    assert "install" in calls and "subversion" in calls
    assert "policy=exit 101" in calls  # dovecot did not start while apt installed it
    assert not (tmp_path / "policy-rc.d").exists() and not (tmp_path / "policy-rc.d").is_symlink()


def test_an_existing_policy_rc_d_is_put_back(tmp_path):
    policy = tmp_path / "policy-rc.d"
    policy.write_text("#!/bin/sh\n# the admin's own policy\nexit 0\n")
    policy.chmod(0o750)
    done, log = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "policy=exit 101" in log.read_text()
    assert policy.read_text() == "#!/bin/sh\n# the admin's own policy\nexit 0\n"
    assert policy.stat().st_mode & 0o777 == 0o750


def test_a_failed_install_still_removes_it(tmp_path):
    done, _ = run(tmp_path, apt_exit=100)
    assert done.returncode != 0
    assert not (tmp_path / "policy-rc.d").exists()


def test_scripts_test_uses_it():
    text = (SCRIPT.parent / "test").read_text()
    assert "scripts/install-debian" in text and "policy-rc.d" not in text
