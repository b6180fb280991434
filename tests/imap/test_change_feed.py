"""Issue 39: the change feed of the IMAP listing (``ImapSource.list_recent_changes``), against a
real Dovecot. With the token of its last answer the source says only which threads were added
or changed and which left; folded into the listing the caller holds, that equals a fresh full
listing of the window, whatever the order of arrivals, expunges, flag changes and lost
connections. Without a known token (the first call, another listing since) it answers whole.
(The poller above it: tests/application/flows/test_alerts_incremental.py.)
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import rule, run_state_machine_as_test

from mailtriage.backends.contract import RecentChanges
from tests.imap.conftest import make_mail
from tests.imap.test_incremental_poll import LIST, NOW, WINDOW, _seed_window, make_source, rows  # noqa: F401
from tests.imap.test_poll_edges import _expunge, folder_changes_machine

pytest.importorskip("imapclient")


class Folded:
    """A caller's listing, kept by the change feed: whole answers replace it, deltas fold in."""

    def __init__(self) -> None:
        self.threads: dict = {}
        self.token: object = None
        self.last: RecentChanges | None = None

    def poll(self, source) -> list:
        changes = source.list_recent_changes(LIST, WINDOW, self.token)
        self.last, self.token = changes, changes.token
        if changes.whole:
            self.threads = {t.thread_id: t for t in changes.threads}
        else:
            for thread_id in changes.removed:
                del self.threads[thread_id]  # (a thread the caller did not hold fails here)
            for t in changes.changed:
                self.threads[t.thread_id] = t
        return sorted(rows(self.threads.values()))


def _fresh_rows(make_source, folder: str) -> list:
    source = make_source(folder, poller=False, cached=False)
    try:
        return sorted(rows(source.list_recent_threads(LIST, WINDOW)))
    finally:
        source.close()


def test_the_feed_says_what_changed_and_answers_whole_when_it_cannot(make_source, seed, dovecot, dovecot_user):
    _seed_window(seed, count=6)
    seed("INBOX", make_mail(9, subject="Alone", message_id="<alone@x>"), when=NOW - timedelta(hours=2))
    source = make_source()
    folded = Folded()
    folded.poll(source)
    assert folded.last.whole and len(folded.last.threads) == 3  # the first call: whole
    folded.poll(source)  # (the memo keeps its components from its second call on)
    assert folded.poll(source) == _fresh_rows(make_source, "INBOX")
    assert not folded.last.whole and not folded.last.changed and not folded.last.removed  # nothing changed

    seed("INBOX", make_mail(10, subject="Fresh report", message_id="<fresh@x>"), when=NOW)
    assert folded.poll(source) == _fresh_rows(make_source, "INBOX")
    assert [t.root_message_id for t in folded.last.changed] == ["<fresh@x>"] and not folded.last.removed

    seed("INBOX", make_mail(11, subject="Re: Report 0", message_id="<re0@x>", references="<w0@x>",
                            in_reply_to="<w0@x>"), when=NOW - timedelta(minutes=1))
    assert folded.poll(source) == _fresh_rows(make_source, "INBOX")
    assert [(t.root_message_id, t.message_count) for t in folded.last.changed] == [("<w0@x>", 4)]

    _expunge(dovecot, dovecot_user, "INBOX", "<alone@x>")
    assert folded.poll(source) == _fresh_rows(make_source, "INBOX")
    assert [t.value for t in folded.last.removed] == ["<alone@x>"] and not folded.last.changed

    source.list_recent_threads(LIST, WINDOW)  # another listing on the source: the token is stale
    folded.poll(source)
    assert folded.last.whole
    assert source.list_recent_changes(LIST, WINDOW, object()).whole  # a token it never gave: whole


def test_the_folded_feed_equals_a_fresh_listing_after_any_changes(make_source, seed, dovecot, dovecot_user):
    """The model: after every poll the listing folded from the feed equals a fresh full listing
    of the window (ids, counts, unread, subjects, activity). Six short examples."""

    class FeedMachine(folder_changes_machine("Feed", seed, dovecot, dovecot_user)):
        def start_polling(self) -> None:
            self.source = make_source(self.folder)
            self.folded = Folded()
            self.folded.poll(self.source)

        @rule(lost=st.booleans())
        def poll(self, lost: bool) -> None:
            if lost:  # the server dropped the source's session since its last poll
                dovecot.kill_user_connections(dovecot_user)
            assert self.folded.poll(self.source) == _fresh_rows(make_source, self.folder)
            if not self.folded.last.whole:  # the delta, most recent activity first
                times = [t.last_activity for t in self.folded.last.changed]
                assert times == sorted(times, reverse=True)

    run_state_machine_as_test(FeedMachine, settings=settings(
        max_examples=6, stateful_step_count=10, deadline=None, database=None, derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]))
