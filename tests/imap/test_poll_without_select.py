"""Issue 39: a poll that follows its own last listing catches the selected folder up without a
SELECT (a real Dovecot). After mail came, flags changed or messages left, the NOOP's news is
caught up with one ``UID SEARCH MODSEQ`` (what changed since the listing's HIGHESTMODSEQ: the new
UIDs and the modseq now), not a SELECT, which on Dovecot costs ~200 ms at 20,000 messages
(benchmarks/bench_poll_cost.py). A server without CONDSTORE keeps today's path: a SELECT each poll.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from mailtriage.backends.imap.account import password_key
from mailtriage.core.secrets import set_secret
from tests.imap.conftest import account_for, make_mail
from tests.imap.test_incremental_poll import (LIST, NOW, WINDOW, _fresh, _seed_window,  # noqa: F401
                                             listed_after_a_fresh_report, make_source, rows, sent,
                                             sources_of)

pytest.importorskip("imapclient")


def _selects(trace) -> list[str]:
    return [c for c in sent(trace) if " SELECT " in c or " EXAMINE " in c]


def test_a_poll_after_changes_catches_up_without_a_select(make_source, seed, dovecot, dovecot_user, trace):
    _seed_window(seed, count=6)
    seed("INBOX", make_mail(7, subject="Alone", message_id="<alone@x>"), when=NOW - timedelta(hours=1))
    poller = make_source()
    listed = listed_after_a_fresh_report(poller, seed, trace, 8)
    assert not _selects(trace), sent(trace)
    assert any("MODSEQ" in c and "SEARCH" in c for c in sent(trace)), sent(trace)
    assert rows(listed) == _fresh(make_source)

    with dovecot.client(dovecot_user) as other:  # a flag change
        other.select_folder("INBOX")
        other.add_flags(other.search(["HEADER", "Message-ID", "<fresh@x>"]), [b"\\Seen"])
    trace.clear()
    listed = poller.list_recent_threads(LIST, WINDOW)
    assert [t.unread for t in listed if t.root_message_id == "<fresh@x>"] == [False]
    assert not _selects(trace), sent(trace)
    assert not [c for c in sent(trace) if "CHANGEDSINCE" in c], sent(trace)  # its flags read by UID
    assert rows(listed) == _fresh(make_source)

    with dovecot.client(dovecot_user) as other:  # an expunge
        other.select_folder("INBOX")
        other.delete_messages(other.search(["HEADER", "Message-ID", "<alone@x>"]))
        other.expunge()
    trace.clear()
    listed = poller.list_recent_threads(LIST, WINDOW)
    assert "<alone@x>" not in {t.root_message_id for t in listed}
    assert not _selects(trace), sent(trace)
    assert rows(listed) == _fresh(make_source)

    trace.clear()  # nothing changed: one NOOP, nothing else
    assert rows(poller.list_recent_threads(LIST, WINDOW)) == rows(listed)
    assert [c.split(" ", 1)[1] for c in sent(trace)] == ["NOOP"], sent(trace)


def test_changes_read_by_another_command_in_between_are_caught_up_too(make_source, seed, dovecot, dovecot_user,
                                                                      trace):
    """A command between two polls on the source's connection (a thread read, the watch's NOOP)
    takes the flag change's untagged FETCH: the NOOP after it brings no news, and the poll still
    sees the change (the MODSEQ search asks the server, not the responses it happened to get)."""
    _seed_window(seed, count=6)
    poller = make_source()
    poller.list_recent_threads(LIST, WINDOW)
    with dovecot.client(dovecot_user) as other:
        other.select_folder("INBOX")
        other.add_flags(other.search(["HEADER", "Subject", "Report 0"]), [b"\\Seen"])
    poller.mailbox.conn.select("INBOX")  # another command on the connection: a NOOP takes the news
    trace.clear()
    listed = poller.list_recent_threads(LIST, WINDOW)
    assert [t.unread for t in listed if t.subject == "Report 0"] == [False]
    assert not _selects(trace), sent(trace)
    assert rows(listed) == _fresh(make_source)


@pytest.fixture
def minimal_source(dovecot_minimal, minimal_user, memory_keyring):
    account = account_for(dovecot_minimal, minimal_user)
    set_secret(password_key(account.id), minimal_user.password)
    with sources_of(replace(account, cache_summaries=False)) as make:
        yield make


def test_without_condstore_each_poll_selects_and_lists_right(dovecot_minimal, minimal_user, minimal_source, trace):
    def seed(raw: bytes, when) -> None:
        dovecot_minimal.append(minimal_user, "INBOX", raw, when=when)

    def fresh() -> list:
        return rows(minimal_source(poller=False).list_recent_threads(LIST, WINDOW))

    for n in range(6):
        parent = None if n % 3 == 0 else f"<w{n - n % 3}@x>"
        seed(make_mail(100 + n, subject=f"Report {n - n % 3}", message_id=f"<w{n}@x>", references=parent,
                       in_reply_to=parent), NOW - timedelta(hours=40 - n))
    poller = minimal_source()
    assert not poller.mailbox.conn.has("CONDSTORE")
    poller.list_recent_threads(LIST, WINDOW)
    seed(make_mail(8, subject="Fresh report", message_id="<fresh@x>"), NOW)
    trace.clear()
    listed = poller.list_recent_threads(LIST, WINDOW)
    assert listed[0].root_message_id == "<fresh@x>"
    assert _selects(trace) and not [c for c in sent(trace) if "MODSEQ" in c], sent(trace)
    assert rows(listed) == fresh()
    with dovecot_minimal.client(minimal_user) as other:
        other.select_folder("INBOX")
        other.add_flags(other.search(["HEADER", "Message-ID", "<fresh@x>"]), [b"\\Seen"])
        other.delete_messages(other.search(["HEADER", "Message-ID", "<w0@x>"]))
        other.expunge()
    listed = poller.list_recent_threads(LIST, WINDOW)
    assert [t.unread for t in listed if t.root_message_id == "<fresh@x>"] == [False]
    assert rows(listed) == fresh()


def test_a_thread_opens_whole_after_polls_that_changed_nothing_the_listing_keeps(make_source, seed):
    """A poll whose answer did not change keeps the last listing's rows (no copy of the window)
    with the UIDs given out since: a thread opened then reads its listed messages and what
    arrived after, not fewer."""
    from mailtriage.backends.contract import ThreadId

    _seed_window(seed, count=6)
    poller = make_source()
    poller.list_recent_threads(LIST, WINDOW)
    poller.list_recent_threads(LIST, WINDOW)  # nothing changed
    seed("INBOX", make_mail(50, subject="Elsewhere", to="other@example.org", message_id="<else@x>"),
         when=NOW - timedelta(minutes=3))  # not on the list: the listing keeps nothing of it
    poller.list_recent_threads(LIST, WINDOW)
    seed("INBOX", make_mail(51, subject="Re: Report 0", message_id="<late@x>", references="<w0@x>",
                            in_reply_to="<w0@x>"), when=NOW - timedelta(minutes=2))  # after the last poll
    thread = poller.read_thread(ThreadId("msgid", "<w0@x>"))
    assert sorted(m.message_id for m in thread.messages) == ["<late@x>", "<w0@x>", "<w1@x>", "<w2@x>"]
    # A poll that changed the answer keeps the rows as of then (made at the first read)
    poller.list_recent_threads(LIST, WINDOW)
    seed("INBOX", make_mail(52, subject="Re: Report 0", message_id="<later@x>", references="<w0@x>",
                            in_reply_to="<w0@x>"), when=NOW - timedelta(minutes=1))
    poller.list_recent_threads(LIST, WINDOW)  # (unread: the reply's row changed nothing else)
    seed("INBOX", make_mail(53, subject="Re: Report 3", message_id="<last@x>", references="<w3@x>",
                            in_reply_to="<w3@x>"), when=NOW)
    assert sorted(m.message_id for m in poller.read_thread(ThreadId("msgid", "<w0@x>")).messages) == [
        "<late@x>", "<later@x>", "<w0@x>", "<w1@x>", "<w2@x>"]
    assert sorted(m.message_id for m in poller.read_thread(ThreadId("msgid", "<w3@x>")).messages) == [
        "<last@x>", "<w3@x>", "<w4@x>", "<w5@x>"]


def test_mail_announced_during_the_catch_up_search_is_listed_by_the_next_poll(make_source, seed, dovecot,
                                                                                 dovecot_user):
    """Mail that lands between the NOOP and the MODSEQ search: Dovecot announces it (EXISTS) in
    the search's answer but the search does not name it. The catch-up must not forget that news,
    or the next poll's NOOP (quiet: nothing new) keeps the state and never lists the mail."""
    _seed_window(seed, count=6)
    poller = make_source()
    poller.list_recent_threads(LIST, WINDOW)
    with dovecot.client(dovecot_user) as other:  # a flag change: the catch-up fetches no new mail
        other.select_folder("INBOX")
        other.add_flags(other.search(["HEADER", "Subject", "Report 0"]), [b"\\Seen"])
    client = poller.mailbox.conn.client  # imapclient's, not ours: a hook to time the arrival
    search = client.search

    def search_after_a_landing(*args, **kwargs):
        client.search = search
        seed("INBOX", make_mail(9, subject="Landed mid-search", message_id="<mid@x>"), when=NOW)
        with dovecot.client(dovecot_user) as other:  # another client (the watch) takes \\Recent
            other.select_folder("INBOX")
        return search(*args, **kwargs)

    client.search = search_after_a_landing
    poller.list_recent_threads(LIST, WINDOW)
    assert client.search is search  # the catch-up searched
    listed = poller.list_recent_threads(LIST, WINDOW)
    assert "<mid@x>" in {t.root_message_id for t in listed}
    assert rows(listed) == _fresh(make_source)


def test_a_connection_dropped_between_the_noop_and_the_search_reconnects(make_source, seed, dovecot, dovecot_user):
    """The server drops the session after the NOOP brought news (a restart, a killed session):
    the poll SELECTs on a new connection, as when the NOOP itself fails, rather than failing."""
    _seed_window(seed, count=6)
    poller = make_source()
    poller.list_recent_threads(LIST, WINDOW)
    seed("INBOX", make_mail(8, subject="Fresh report", message_id="<fresh@x>"), when=NOW)
    client = poller.mailbox.conn.client  # imapclient's, not ours: a hook to time the drop
    search = client.search

    def search_after_a_drop(*args, **kwargs):
        client.search = search
        assert dovecot.kill_user_connections(dovecot_user) >= 1
        return search(*args, **kwargs)

    client.search = search_after_a_drop
    listed = poller.list_recent_threads(LIST, WINDOW)
    assert client.search is search  # the catch-up searched
    assert listed[0].root_message_id == "<fresh@x>"
    assert rows(listed) == _fresh(make_source)
