"""One conversation seen through IMAP and archives: grouped by root Message-ID, typed IDs kept apart."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from mailtriage.backends.contract import Address, Message, Thread, ThreadId, ThreadSummary
from mailtriage.backends.identity import (
    group_threads,
    hyperkitty_hash,
    normalize_message_id,
    root_message_id,
)

WHEN = datetime(2025, 3, 1, tzinfo=timezone.utc)


def summary(kind: str, value: str, root: str) -> ThreadSummary:
    return ThreadSummary(ThreadId(kind, value), "Report", root, Address("A", "a@example.org"), WHEN, 1)


def test_normalize_message_id():
    assert normalize_message_id("abc@example.org") == "<abc@example.org>"
    assert normalize_message_id(" <abc@\n example.org> ") == "<abc@example.org>"
    assert normalize_message_id(None) == "" and normalize_message_id("  ") == ""


def test_same_root_groups_but_typed_ids_stay_distinct():
    root = "<report-1@reporter.example>"
    imap = summary("imap", root, root)
    pony = summary("ponymail", "c396ps3p5pb05srb4269dzcg9j7sof42", root)
    hk = summary("hyperkitty", hyperkitty_hash(root), "report-1@reporter.example")  # archive stores it bare
    other = summary("imap", "<other@x>", "<other@x>")
    groups = group_threads([imap, other, pony, hk])
    assert [g.root_message_id for g in groups] == [root, "<other@x>"]
    first = groups[0]
    assert first.thread_ids == (imap.thread_id, pony.thread_id, hk.thread_id)
    assert len(set(first.thread_ids)) == 3  # never deduped across kinds
    assert first.id_of_kind("ponymail") == pony.thread_id
    assert first.id_of_kind("gmail") is None


def test_hyperkitty_summary_without_root_joins_by_hash():
    root = "<87myycy5eh.fsf@uwakimon.sk.tsukuba.ac.jp>"
    imap = summary("imap", root, root)
    hk = summary("hyperkitty", "JJIGKPKB6CVDX6B2CUG4IHAJRIQIOUTP", "")
    lone = summary("hyperkitty", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "")
    groups = group_threads([imap, hk, lone])
    assert groups[0].thread_ids == (imap.thread_id, hk.thread_id)
    assert groups[1].root_message_id == "" and groups[1].thread_ids == (lone.thread_id,)


def test_threads_use_their_root_message():
    root = Message("<r@x>", "Report", Address("", "a@x"), date=WHEN)
    reply = Message("<s@x>", "Re: Report", Address("", "b@x"), date=WHEN + timedelta(hours=1), in_reply_to="<r@x>")
    # listed reply-first: the root is still the message that answers nothing inside the thread
    thread = Thread(ThreadId("ponymail", "mid1"), "Report", (reply, root))
    assert root_message_id(thread) == "<r@x>"
    groups = group_threads([thread, summary("imap", "<r@x>", "<r@x>")])
    assert len(groups) == 1 and groups[0].thread_ids == (ThreadId("ponymail", "mid1"), ThreadId("imap", "<r@x>"))


def test_same_id_twice_is_listed_once():
    a = summary("imap", "<r@x>", "<r@x>")
    groups = group_threads([a, a])
    assert groups[0].thread_ids == (a.thread_id,) and len(groups[0].members) == 2
