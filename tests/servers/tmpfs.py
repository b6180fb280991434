"""A small real file system that can be filled: a tmpfs mounted in the test's folder (root only;
the test is skipped where mounting is not possible)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest


@contextlib.contextmanager
def mounted_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """``folder`` (created, mode 0700) holding a tmpfs of ``size`` (e.g. "64k"); unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    folder.mkdir(mode=0o700)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def fill(path: Path, leave: int = 0) -> None:
    """Append zeros to ``path`` until its file system is full (ENOSPC), then give back ``leave`` bytes."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass  # ENOSPC: full
    finally:
        os.close(fd)
    if leave:
        os.truncate(path, max(path.stat().st_size - leave, 0))
