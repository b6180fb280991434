"""Sync over IMAP reads the linked threads' messages at once, not thread by thread (issue 39 §2).

The tracker and the mail come from ``benchmarks/bench_sync.py`` (issues linked to their own
threads, a few with new mail, one undated reply, one reply with no date at all, one issue
naming a thread the folder lacks), stored in a real Dovecot. The reference is the collect
of every issue and every thread (the benchmark's baseline); the cost is counted in the op
log's thread reads: only the threads that may hold new mail are read whole.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from benchmarks.bench_sync import BASE, _message, as_rfc5322, baseline_collect, generate
from mailtriage.backends.imap.account import password_key
from mailtriage.backends.registry import SourceSet
from mailtriage.core.projectconfig import load_project
from mailtriage.core.secrets import set_secret
from mailtriage.core.trace import OPLOG
from mailtriage.trackers.registry import open_tracker
from mailtriage.application.flows.sync import collect_sync

COUNT = 12


@pytest.fixture
def imap_bench(tmp_path, dovecot, dovecot_user, memory_keyring):
    config_dir = Path(os.environ["MAILTRIAGE_CONFIG_DIR"])
    config_dir.mkdir(exist_ok=True)
    (config_dir / "config.toml").write_text(f"""
[accounts.work]
kind = "imap"
host = "127.0.0.1"
port = {dovecot.port}
security = "plain"
username = "{dovecot_user.name}"
access = "draft"
""", encoding="utf-8")
    set_secret(password_key("work"), dovecot_user.password)

    def deliver(messages, folder="INBOX"):
        with dovecot.client(dovecot_user) as client:
            for raw in messages:
                client.append(folder, raw)

    root = tmp_path / "bench"
    changed = generate(root, COUNT, 3, deliver)
    return root, changed, deliver


def _run(root, collect=collect_sync):
    config = load_project(root / "project")
    OPLOG.clear()
    sources = SourceSet(config)
    try:
        items = collect(sources, open_tracker(config))
    finally:
        sources.close()
    reads = sum(1 for r in OPLOG.items() if r.op == "read_thread")
    return {i.issue_id: i.to_json() for i in items}, reads


def test_sync_over_imap_reads_only_the_threads_with_new_mail_and_gives_a_full_reads_items(imap_bench):
    root, changed, deliver = imap_bench
    full, full_reads = _run(root, baseline_collect)
    assert full_reads == COUNT  # the reference reads every linked thread (one of them is missing)
    assert changed == ["SEC-00008", "SEC-00012"]
    assert sorted(i for i, item in full.items() if item["new_messages"]) == changed
    assert {i: item["undated"] for i, item in full.items() if item["undated"]} == {"SEC-00003": 1, "SEC-00005": 1}
    assert [i for i, item in full.items() if item["problem"]] == ["SEC-00004"]

    ours, reads = _run(root)
    assert ours == full
    # The two threads with new mail, and the one the folder lacks (its problem kept as a read gives it).
    assert reads == 3

    # A late reply with an old Date (covered by date, but not named by any entry) and a
    # reply with no date at all: the first is new mail, the second counted as undated.
    deliver([as_rfc5322(_message("<late2@reporter.example>", "reporter2@reporter.example", "Re: Report 2",
                                 "Released in 1.2.4.", BASE + timedelta(days=90), "<r2@reporter.example>")),
             as_rfc5322(_message("<nd7@example.org>", "sam@example.org", "Re: Report 7", "No date.", None,
                                 "<r7@reporter.example>", envelope=False))])
    full, _ = _run(root, baseline_collect)
    assert full["SEC-00002"]["new_messages"] and full["SEC-00007"]["undated"] == 1
    ours, reads = _run(root)
    assert ours == full and reads == 4


def test_a_reply_of_ours_in_sent_is_new_mail_on_its_thread(imap_bench):
    root, _changed, deliver = imap_bench
    reply = _message("<ours6@example.org>", "sam@example.org", "Re: Report 6", "We shipped the fix.",
                     BASE + timedelta(days=70), "<r6@reporter.example>")
    deliver([as_rfc5322(reply)], folder="Sent")
    full, _ = _run(root, baseline_collect)
    assert [m["message_id"] for m in full["SEC-00006"]["new_messages"]] == ["<ours6@example.org>"]
    ours, _reads = _run(root)
    assert ours == full
