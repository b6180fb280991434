"""The alert cursor's upkeep (issue 39): threads idle for RETENTION leave it whichever poll's
acknowledgement writes it whole, and a journal line another process appended is never lost by
a rewrite of the file (what it acknowledged would be reported again)."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from mailtriage.application.flows.alerts import CursorStore, NewReportPoller, RETENTION
from mailtriage.application.flows.linking import iso_utc
from mailtriage.backends.registry import SourceSet
from mailtriage.core import private_files
from tests.application.flows.conftest import REPORT, mail, write_mbox


def test_a_thread_idle_past_retention_leaves_even_when_acknowledgements_come_late(mbox_env):
    # The app acknowledges a poll once its news were shown: in a storm the next poll is made
    # before that. A poll that judged every thread dropped the idle entry from its cursor, but
    # its acknowledgement merged onto the newer acknowledged cursor, which still held it.
    mbox_env.archive.unlink()
    write_mbox(mbox_env.archive, [mail(REPORT, "Rita <rita@reporter.example>", "Old report", "x\n",
                                       time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime()))])
    now = [datetime.now(timezone.utc).replace(microsecond=0)]
    poller = NewReportPoller(SourceSet(mbox_env.config()), clock=lambda: now[0])
    poller.acknowledge(poller.poll())  # the baseline
    stale = "msgid:<idle@reporter.example>"
    cursor = json.loads(poller.store.path.read_text())
    cursor["seen"][stale] = iso_utc(now[0] - RETENTION + timedelta(minutes=5))  # idle 90 days in 5 minutes
    CursorStore(poller.store.path).save(cursor)  # (another process wrote it: read anew, judged whole)

    first = poller.poll()
    now[0] += timedelta(minutes=11)  # past the entry's retention, and a poll that judges every thread
    second = poller.poll()
    assert stale in first.cursor["seen"] and stale not in second.cursor["seen"]
    poller.acknowledge(first)  # late: after the second poll was made
    poller.acknowledge(second)
    assert stale not in json.loads(poller.store.path.read_text())["seen"]


def test_a_journal_line_appended_between_another_processs_read_and_its_rewrite_is_kept(tmp_path):
    path = tmp_path / "alerts" / "cursor.json"
    path.parent.mkdir(mode=0o700)
    cursor = {"v": 2, "backend": "imap", "kind": "msgid", "list": "l@x", "checked": "2026-12-03T10:00:00Z",
              "seen": {"msgid:<a@x>": "2026-12-03T09:00:00Z"}}
    CursorStore(path).save(cursor)
    writer = CursorStore(path)  # a process that rewrites the file whole ...
    read = writer.load()
    poller = CursorStore(path)  # ... and a poller that acknowledged meanwhile, to the journal
    poller.load()
    acked = {**cursor, "seen": {**cursor["seen"], "msgid:<b@x>": "2026-12-03T10:01:00Z"}}
    assert poller.append(acked, {"msgid:<b@x>": "2026-12-03T10:01:00Z"})
    writer.save(read)
    assert CursorStore(path).load()["seen"] == {"msgid:<a@x>": "2026-12-03T09:00:00Z",
                                                "msgid:<b@x>": "2026-12-03T10:01:00Z"}


def _waiting_for_flock(inode: int) -> bool:
    """Whether a process or thread waits for an flock on the file ``inode`` (/proc/locks)."""
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and fields[fields.index("->") + 1] == "FLOCK" and any(
                f.endswith(f":{inode}") for f in fields):
            return True
    return False


def test_a_read_waits_for_a_whole_write_in_progress(tmp_path):
    """A read between another process's rewrite of the file and its emptying of the journal
    (the old file, then no journal) would lose the journal's lines: reported again, and gone
    for good if this process wrote the file whole from that read. A read takes the lock too."""
    path = tmp_path / "alerts" / "cursor.json"
    path.parent.mkdir(mode=0o700)
    cursor = {"v": 2, "backend": "imap", "kind": "msgid", "list": "l@x", "checked": "2026-12-03T10:00:00Z",
              "seen": {"msgid:<a@x>": "2026-12-03T09:00:00Z"}}
    store = CursorStore(path)
    store.save(cursor)
    acked = {**cursor, "seen": {**cursor["seen"], "msgid:<b@x>": "2026-12-03T10:01:00Z"}}
    assert store.append(acked, {"msgid:<b@x>": "2026-12-03T10:01:00Z"})
    fd = os.open(store.lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another process starts its whole write
    read: list = []
    reader = threading.Thread(target=lambda: read.append(CursorStore(path).load()))
    reader.start()
    try:
        while not _waiting_for_flock(os.fstat(fd).st_ino):
            assert reader.is_alive(), "the cursor was read during another process's whole write"
            time.sleep(0.01)
        private_files.write_atomic(path, json.dumps(acked).encode())  # ... the file, whole ...
        store.journal.unlink()  # ... then the journal emptied
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        reader.join()
    assert read[0]["seen"] == acked["seen"]
