"""The local tracker's index cache (``.git/mailtriage/tracker-index-*.json``) is a cache file:
read and written under the one file rule (core/private_files.py). A working copy on a shared
machine can have a metadata folder others can write; an index planted there could show forged
titles and states, and a link planted under its name must not be followed on read or write."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

BODY = "### Affected versions\n\n1.2.3\n"
NOBODY = 65534
as_root = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                             reason="planting a file as another user needs root")


def _index(git_env) -> Path:
    files = list((git_env.wc / ".git" / "mailtriage").glob("tracker-index-*.json"))
    assert len(files) == 1, files
    return files[0]


def _forge(path: Path) -> str:
    """The index's own content with every title forged (keys kept, so it would be believed)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for record in data["files"].values():
        record[3]["title"] = "FORGED: nothing to see, closed"
    return json.dumps(data)


@as_root
def test_an_index_planted_in_a_metadata_folder_another_user_owns_is_not_read(git_env):
    t = git_env.tracker
    t.create("Heap overflow", BODY, [])
    assert t.list().items[0]["title"] == "Heap overflow"
    index = _index(git_env)
    index.write_text(_forge(index), encoding="utf-8")
    os.chown(index, NOBODY, NOBODY)
    os.chown(index.parent, NOBODY, NOBODY)
    assert t.list().items[0]["title"] == "Heap overflow"


def test_an_index_that_is_a_symlink_is_neither_read_nor_written_through(git_env, tmp_path):
    t = git_env.tracker
    t.create("Heap overflow", BODY, [])
    t.list()
    index = _index(git_env)
    target = tmp_path / "victim.json"
    target.write_text(_forge(index), encoding="utf-8")
    before = target.read_text(encoding="utf-8")
    index.unlink()
    index.symlink_to(target)
    assert t.list().items[0]["title"] == "Heap overflow"
    t.create("Second report", BODY, [])  # a new file: the index is saved again
    assert sorted(i["title"] for i in t.list().items) == ["Heap overflow", "Second report"]
    assert target.read_text(encoding="utf-8") == before
