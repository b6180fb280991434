"""The local tracker's folder is team data (a pull request can add a symbolic link: git stores
them): an issue-named link or a link as the descriptor is never followed, so it can neither
make mailtriage read a file outside the tracker (~/.ssh/…) nor read /dev/zero or a FIFO
without end. The tracker's own listing and issue reads refused links already
(test_localfiles.py::test_symlinked_issue_files_are_refused); import's thread index and the
descriptor did not."""

from __future__ import annotations

import os

import pytest

from mailtriage.trackers.contract import BackendError, MalformedIssue
from mailtriage.trackers.localfiles import LocalFilesTracker
from mailtriage.application.flows.threadindex import ThreadIndex

MESSAGE_ID = "<outside-thread@reporter.example>"


def test_the_thread_index_does_not_follow_an_issue_named_link(tmp_path):
    root = tmp_path / "tracker"
    root.mkdir()
    (root / "SEC-1.md").write_text("# a real issue\n\n<real@reporter.example>\n", encoding="utf-8")
    outside = tmp_path / "home" / "private.md"
    outside.parent.mkdir()
    outside.write_text(f"{MESSAGE_ID}\n", encoding="utf-8")
    (root / "SEC-2.md").symlink_to(outside)
    index = ThreadIndex(root, None)
    assert index.candidates(MESSAGE_ID) == []
    assert index.candidates("<real@reporter.example>") == ["SEC-1"]


def test_a_descriptor_that_is_a_link_is_refused(git_env, tmp_path):
    root = git_env.tracker.root
    descriptor = root / "tracker-format.yaml"
    outside = tmp_path / "elsewhere.yaml"
    outside.write_bytes(descriptor.read_bytes())
    descriptor.unlink()
    descriptor.symlink_to(outside)
    with pytest.raises(MalformedIssue) as info:
        LocalFilesTracker(root).descriptor()
    assert "symbolic link" in str(info.value)


def test_an_issue_file_over_the_size_bound_is_not_read_whole(git_env):
    t = git_env.tracker
    t.create("Heap overflow", "### Affected versions\n\n1.2.3\n", [])
    path = next(t.root.glob("*-0001.md"))
    os.truncate(path, 17 * 1024 * 1024)  # sparse: costs no disk
    with pytest.raises(BackendError) as info:
        t.view("1")
    assert "larger than 16,777,216 bytes" in str(info.value)
    assert any("larger than" in p for p in t.list().problems)
