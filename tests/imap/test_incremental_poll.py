"""Issue 39: an alert poll costs what changed, not its window (a real Dovecot).

The poller's source (``hold_window_only``: its window in memory, as the app's poller runs it)
reads only the new UIDs after a new mail, the flags changed since (CHANGEDSINCE), and the cached
range only when EXISTS says a message left; a UIDVALIDITY change lists the window whole. The
poller above it judges only the threads whose summaries changed. Whatever the order of
appends, flag changes and expunges by another client, an incremental listing equals a fresh
full one. (The poller's side: tests/application/flows/test_alerts_incremental.py.)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mailtriage.backends.imap.source import ImapSource
from tests.imap.conftest import make_mail

LIST = "security@example.org"
NOW = datetime.now(timezone.utc).replace(microsecond=0)
WINDOW = NOW - timedelta(days=3)
_folders = itertools.count()



@contextmanager
def sources_of(account) -> Iterator[Callable[..., ImapSource]]:
    """Makes sources of ``account`` on the list's folder (a poller's, its window held in memory
    as the app's poller holds it, unless ``poller=False``) and closes each one made."""
    made: list[ImapSource] = []

    def make(folder: str = "INBOX", *, poller: bool = True, cached: bool = True) -> ImapSource:
        acct = account if cached else replace(account, cache_summaries=False)
        src = ImapSource("imap", {"folder": folder, "list": LIST}, account=acct)
        if poller:
            src.hold_window_only()
        made.append(src)
        return src

    try:
        yield make
    finally:
        for src in made:
            src.close()


@pytest.fixture
def make_source(account, cache):
    with sources_of(account) as make:
        yield make


def rows(threads) -> list[tuple]:
    return [(t.root_message_id, t.subject, t.message_count, t.unread, t.last_activity) for t in threads]


def sent(trace) -> list[str]:
    return [text for direction, text in trace if direction == ">"]


def _seed_window(seed, folder: str = "INBOX", count: int = 30) -> None:
    for n in range(count):
        parent = None if n % 3 == 0 else f"<w{n - n % 3}@x>"
        seed(folder, make_mail(100 + n, subject=f"Report {n - n % 3}", message_id=f"<w{n}@x>",
                               references=parent, in_reply_to=parent),
             when=NOW - timedelta(hours=40 - n))


def _fresh(make_source, folder: str = "INBOX") -> list[tuple]:
    """The window as a fresh source lists it, walking the folder (no cache)."""
    return rows(make_source(folder, poller=False, cached=False).list_recent_threads(LIST, WINDOW))


def listed_after_a_fresh_report(poller: ImapSource, seed, trace, uid: int) -> list:
    """The poller's listing after its first one and a new report (UID ``uid``) in INBOX, the
    report on top; ``trace`` holds that second poll's commands only."""
    poller.list_recent_threads(LIST, WINDOW)
    seed("INBOX", make_mail(uid, subject="Fresh report", message_id="<fresh@x>"), when=NOW)
    trace.clear()
    listed = poller.list_recent_threads(LIST, WINDOW)
    assert listed[0].root_message_id == "<fresh@x>"
    return listed


def test_a_poll_after_one_new_mail_reads_the_new_uids_and_the_changed_flags_only(make_source, seed, trace):
    _seed_window(seed)
    listed = listed_after_a_fresh_report(make_source(), seed, trace, 1)
    commands = sent(trace)
    # Before issue 39's work each poll searched the whole cached range (UID SEARCH 1:n), then
    # selected the folder again; now one SEARCH asks what changed since the last HIGHESTMODSEQ.
    assert not [c for c in commands if ("SEARCH" in c and " MODSEQ " not in c) or " SELECT " in c], commands
    fetches = [c for c in commands if "FETCH" in c]
    # The new UIDs only: the search named no older message changed, so no flags are read
    # (before the catch-up: a CHANGEDSINCE over the whole cached range each poll).
    assert len(fetches) == 1 and " 31:* " in fetches[0], fetches
    assert rows(listed) == _fresh(make_source)


def test_a_flag_change_by_another_client_is_seen_by_the_next_poll(make_source, seed, dovecot, dovecot_user):
    _seed_window(seed, count=6)
    poller = make_source()
    assert all(t.unread for t in poller.list_recent_threads(LIST, WINDOW))
    with dovecot.client(dovecot_user) as other:
        other.select_folder("INBOX")
        other.add_flags(other.search(["HEADER", "Subject", "Report 0"]), [b"\\Seen"])
    listed = poller.list_recent_threads(LIST, WINDOW)
    assert [t.unread for t in listed if t.subject == "Report 0"] == [False]
    assert rows(listed) == _fresh(make_source)


def test_an_expunge_by_another_client_drops_the_row(make_source, seed, dovecot, dovecot_user, trace):
    _seed_window(seed, count=6)
    seed("INBOX", make_mail(7, subject="Alone", message_id="<alone@x>"), when=NOW - timedelta(hours=1))
    poller = make_source()
    assert "<alone@x>" in {t.root_message_id for t in poller.list_recent_threads(LIST, WINDOW)}
    with dovecot.client(dovecot_user) as other:
        other.select_folder("INBOX")
        other.delete_messages(other.search(["HEADER", "Message-ID", "<alone@x>"]))
        other.expunge()
    seed("INBOX", make_mail(8, subject="Fresh report", message_id="<fresh@x>"), when=NOW)  # EXISTS unchanged
    trace.clear()
    listed = poller.list_recent_threads(LIST, WINDOW)
    assert "<alone@x>" not in {t.root_message_id for t in listed}
    assert any("SEARCH" in c for c in sent(trace))  # EXISTS said one left: the cached range was asked
    assert rows(listed) == _fresh(make_source)


def test_a_uidvalidity_change_lists_the_window_whole(make_source, seed, dovecot, dovecot_user, trace):
    _seed_window(seed, "Reports", count=6)
    poller = make_source("Reports")
    poller.list_recent_threads(LIST, WINDOW)
    with dovecot.client(dovecot_user) as other:
        other.delete_folder("Reports")
        other.create_folder("Reports")
    seed("Reports", make_mail(1, subject="After the reset", message_id="<b@x>"), when=NOW - timedelta(hours=1))
    trace.clear()
    assert rows(poller.list_recent_threads(LIST, WINDOW)) == _fresh(make_source, "Reports")
    assert any("UIDVALIDITY changed" in text for direction, text in trace if direction == "!"), trace


OPS = st.lists(st.sampled_from(["report", "reply", "flag", "unflag", "expunge", "old"]), min_size=1, max_size=6)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_an_incremental_listing_equals_a_fresh_one(make_source, seed, dovecot, dovecot_user, ops):
    folder = f"Inc{next(_folders)}"
    _seed_window(seed, folder, count=6)
    poller = make_source(folder)
    poller.list_recent_threads(LIST, WINDOW)
    made = itertools.count(1000)
    for op in ops:
        n = next(made)
        if op in ("report", "reply", "old"):
            parent = "<w0@x>" if op == "reply" else None
            when = NOW - timedelta(days=5) if op == "old" else NOW - timedelta(minutes=60 - n % 60)
            seed(folder, make_mail(n, subject=f"Op {n}", message_id=f"<op{n}@x>", references=parent,
                                   in_reply_to=parent), when=when)
        else:
            with dovecot.client(dovecot_user) as other:
                other.select_folder(folder)
                uids = other.search(["ALL"])
                if uids:
                    target = uids[n % len(uids)]
                    if op == "flag":
                        other.add_flags([target], [b"\\Seen"])
                    elif op == "unflag":
                        other.remove_flags([target], [b"\\Seen"])
                    else:
                        other.delete_messages([target])
                        other.expunge()
        assert rows(poller.list_recent_threads(LIST, WINDOW)) == _fresh(make_source, folder), ops


def test_threads_that_age_out_of_the_window_leave_without_a_whole_relisting(make_source, seed, trace):
    _seed_window(seed, count=12)  # arrived 40 to 29 hours ago
    poller = make_source()
    poller.list_recent_threads(LIST, WINDOW)
    poller.list_recent_threads(LIST, WINDOW)
    for hours in (35, 32, 30, 20):  # the window's lower edge moves on: its oldest threads leave
        since = NOW - timedelta(hours=hours)
        trace.clear()
        listed = rows(poller.list_recent_threads(LIST, since))
        assert not [c for c in sent(trace) if "FETCH" in c or "SEARCH" in c]
        assert listed == rows(make_source(poller=False, cached=False).list_recent_threads(LIST, since))
    assert listed == []


def test_a_pollers_source_walks_its_window_whole_now_and_then(make_source, seed, trace, monkeypatch):
    from mailtriage.backends.imap import source

    _seed_window(seed, count=6)
    poller = make_source()
    poller.list_recent_threads(LIST, WINDOW)
    seed("INBOX", make_mail(1, subject="Fresh report", message_id="<fresh@x>"), when=NOW)
    monkeypatch.setattr(source, "RELIST_SECONDS", 0.0)  # the safety net is due
    trace.clear()
    listed = rows(poller.list_recent_threads(LIST, WINDOW))
    assert any("YOUNGER" in c for c in sent(trace)), sent(trace)  # the window found again, and read whole
    assert listed == _fresh(make_source)


# -- the answer from what changed, without a server ----------------------------------------------

from mailtriage.backends.imap import recent, recent_threads  # noqa: E402
from mailtriage.backends.imap import summary_cache as sc  # noqa: E402
from tests.imap.test_summaries import described, ref_summaries, row_strategy  # noqa: E402

# A step: a message arrives (the next UID), leaves (expunged), has its flags changed (a new row
# object for its UID), or the window's start moves on (rows that arrived before it leave).
changes = st.lists(st.tuples(st.sampled_from(["arrive", "arrive", "leave", "flag", "age"]), row_strategy(False),
                             st.integers(0, 10 ** 6)), max_size=20)
LISTED = b"security@example.org"


@settings(max_examples=80, deadline=None)
@given(start=st.lists(row_strategy(False), max_size=30), storm=changes, wanted=st.sampled_from([None, LIST]),
       kind=st.sampled_from(["imap", "msgid"]))
def test_an_answer_from_what_changed_equals_a_whole_answer(start, storm, wanted, kind):
    cache = sc.FolderCache(1, 1, 1, 0, 1, float("-inf"), {})
    next_uid = 1

    def add(r) -> int:
        nonlocal next_uid
        uid, next_uid = next_uid, next_uid + 1
        cache.rows[uid] = (*r[:sc.UID], uid, *r[sc.UID + 1:])
        return uid

    for r in start:
        add(r)
    since = datetime.fromtimestamp(0.5e9, timezone.utc)
    memo = recent_threads.SummaryMemo()

    def whole() -> list[str]:
        rows = recent.answer_from_cache(cache, since, wanted, None)
        return described(ref_summaries(rows, kind))

    rows = recent.answer_from_cache(cache, since, wanted, None)
    recent_threads.summaries(rows, kind, memo)
    recent_threads.answered_whole(memo, cache, wanted, since)
    for what, r, pick in storm:
        touched = []
        if what == "arrive" or not cache.rows:
            touched.append(add(r))
        elif what == "age":
            since += timedelta(seconds=pick * 1000)
        else:
            uid = sorted(cache.rows)[pick % len(cache.rows)]
            touched.append(uid)
            if what == "leave":
                del cache.rows[uid]
            else:
                old = cache.rows[uid]
                cache.rows[uid] = (*old[:sc.SEEN], not old[sc.SEEN], *old[sc.SEEN + 1:])
        got = recent_threads.summaries_of_changes(memo, cache, touched, since, wanted, kind)
        assert got is not None
        assert described(got) == whole()
