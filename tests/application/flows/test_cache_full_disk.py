"""A full disk under the cache folder (issue 38): the CLI lists without its caches (the mbox
index, the IMAP summary cache), says so once on stderr, and leaves no torn cache file that a
later run reads as valid; once there is room again the caches are written and read back.

The full disk is real: a small tmpfs mounted as the cache folder and filled with a ballast
file to the last byte, or to a few KiB short of it so that a cache write starts and fails
part-way (needs root to mount; skipped otherwise)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from tests.application.flows.conftest import mail, write_mbox
from tests.application.flows.test_concurrent_drafts import imap_env  # noqa: F401  (the fixture)
from tests.application.flows.test_concurrent_imports import child_keyring  # noqa: F401  (the fixture)
from tests.application.flows.test_kill_write_flows import BOUND, start
from tests.servers.tmpfs import fill, mounted_tmpfs

NO_SPACE = "No space left on device"


@dataclass
class FullDisk:
    folder: Path
    fill: Callable[..., None]
    free: Callable[[], None]


@pytest.fixture
def full_cache(tmp_path, monkeypatch):
    with mounted_tmpfs(tmp_path / "cache", "256k") as folder:
        monkeypatch.setenv("MAILTRIAGE_CACHE_DIR", str(folder))
        ballast = folder / "ballast"
        yield FullDisk(folder, lambda leave=0: fill(ballast, leave), ballast.unlink)


def listing(project: Path, extra_env: dict | None = None) -> tuple[str, list[str]]:
    """The list's stdout and its stderr lines about the cache."""
    proc = start(project, ["list", "--since", "3650d"], extra_env)
    out, err = proc.communicate(timeout=BOUND)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    return out, [line for line in err.splitlines() if "cache" in line.lower()]


def cache_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != "ballast")


def check_full_then_free(disk: FullDisk, project: Path, expect: str, extra_env: dict | None = None) -> None:
    out, said = listing(project, extra_env)
    assert expect in out
    assert len(said) == 1 and NO_SPACE in said[0] and "without" in said[0], said  # said once, and why
    assert [n for n in cache_files(disk.folder) if n.endswith(".tmp")] == []  # no torn temporary file left
    again, said_again = listing(project, extra_env)  # still full: the same listing, nothing torn read
    assert again == out and len(said_again) == 1
    disk.free()
    fresh, said_fresh = listing(project, extra_env)  # room again: the caches written, nothing said
    assert fresh == out and said_fresh == []
    assert cache_files(disk.folder), "nothing cached once there was room"
    assert listing(project, extra_env) == (out, [])  # and read back whole


@pytest.mark.parametrize("leave", [0, 8192], ids=["full", "a write fails part-way"])
def test_mbox_list_on_a_full_cache_disk_works_says_so_once_and_caches_later(env, full_cache, leave):
    messages = [mail(f"<bulk-{n}@reporter.example>", f"R{n} <r{n}@reporter.example>", f"Bug {n}", "x\n" * 50,
                     f"Tue, 01 Sep 2026 {n // 60 % 24:02d}:{n % 60:02d}:00 +0000") for n in range(400)]
    archive = write_mbox(env.project / "security.mbox", messages)
    env.write_project([("mbox", "primary", "yes")],
                      extra={"mail_sources.mbox": {"path": archive.name, "list": "security@frobnicator.example.org"}})
    full_cache.fill(leave)
    check_full_then_free(full_cache, env.project, "Bug 399")


def test_imap_list_on_a_full_cache_disk_works_says_so_once_and_caches_later(imap_env, full_cache):
    full_cache.fill()
    check_full_then_free(full_cache, imap_env.project, "Heap overflow", imap_env.child_env)
