"""``mailtriage poll`` with a full data folder (issue 39 §3): a clear error, the exit code of a
failed command, no traceback, and no temporary file left behind.

The full disk is real: a 64 KiB tmpfs filled to the last byte, mounted as the data folder
(needs root to mount; skipped otherwise).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from mailtriage.cli.exit_codes import ExitCode
from tests.servers.tmpfs import fill, mounted_tmpfs
from tests.application.flows.conftest import REPORT, mail, write_mbox


@pytest.fixture
def full_data_dir(tmp_path):
    with mounted_tmpfs(tmp_path / "data", "64k") as folder:
        (folder / "alerts").mkdir(mode=0o700)
        fill(folder / "ballast")
        yield folder


def test_poll_with_a_full_data_folder_fails_clearly_and_leaves_no_temporary_file(mbox_env, full_data_dir):
    mbox_env.archive.unlink()
    write_mbox(mbox_env.archive, [mail(REPORT, "Rita <rita@reporter.example>", "A report", "x\n",
                                       time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime()))])
    env = dict(os.environ, MAILTRIAGE_DATA_DIR=str(full_data_dir))
    done = subprocess.run([sys.executable, "-c", "import sys; from mailtriage.cli.main import main; sys.exit(main())",
                           "--project", str(mbox_env.project), "poll"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == ExitCode.FAILED, done.stderr
    assert "No space left on device" in done.stderr and "alert cursor" in done.stderr
    left = sorted(p.name for p in full_data_dir.rglob("*") if p.name != "ballast")
    assert [name for name in left if "tmp" in name] == [], left
