"""The queue's derived records are private files like every cache (docs/security.md, files
we read and write): records another local user planted are not read, and nothing is written
into their folder; the queue is then built from the mail and the tracker."""

from __future__ import annotations

import json
import os

import pytest

from mailtriage.application.queue_records import VERSION, QueueRecords

NOBODY = 65534


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="giving a folder away needs root")
def test_records_in_a_data_folder_another_user_owns_are_not_read_nor_written(tmp_path):
    folder = tmp_path / "queue"
    folder.mkdir(mode=0o755)
    path = folder / "x.json"
    path.write_text(json.dumps({"v": VERSION, "team": [], "threads": {"msgid:<a@x>": [1, None, "planted", []]},
                                "issues": {}}))
    for p in (path, folder):
        os.chown(p, NOBODY, NOBODY, follow_symlinks=False)
    kept = QueueRecords(path)
    assert kept.thread("msgid:<a@x>", 1, None) is None
    kept.put_thread("msgid:<b@x>", 1, None, "ours", [])
    kept.save()  # refused quietly: rebuilt next time
    assert json.loads(path.read_text())["threads"]["msgid:<a@x>"][2] == "planted"
    assert sorted(p.name for p in folder.iterdir()) == ["x.json"]
