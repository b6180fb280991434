"""The alert cursor's upkeep (issue 39): threads idle for RETENTION leave it whichever poll's
acknowledgement writes it whole, and a journal line another process appended is never lost by
a rewrite of the file (what it acknowledged would be reported again)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

from mailtriage.application.flows.alerts import CursorStore, NewReportPoller, RETENTION
from mailtriage.application.flows.linking import iso_utc
from mailtriage.backends.registry import SourceSet
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
