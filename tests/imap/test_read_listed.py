"""Issue 33: opening a listed thread fetches the messages the listing already knows.

The listing knows each thread's UIDs (with the folder's UIDVALIDITY); opening a listed
thread fetches those, plus what arrived since, and sends no SEARCH or THREAD over the
list folder (1.9 s of server time on a 100k folder). A thread read by ID alone, by a
source that never listed it, still works (tests/imap/test_source.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.imap.source import ImapSource
from mailtriage.core.trace import TRACE
from tests.imap.conftest import make_mail

LIST = "security@example.org"
NOW = datetime.now(timezone.utc).replace(microsecond=0)
SINCE = NOW - timedelta(days=1)


@pytest.fixture
def source(account):
    src = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=account)
    try:
        yield src
    finally:
        src.close()


class Commands:
    """The IMAP commands a block sends, each with the folder selected when it was sent."""

    def __init__(self, source: ImapSource) -> None:
        self.sent: list[tuple[str | None, str]] = []
        state = source.mailbox.conn.state  # the folder the listing left selected
        self._folder: str | None = state.name if state is not None else None

    def __enter__(self) -> "Commands":
        self._stop = TRACE.subscribe(self._seen)
        return self

    def __exit__(self, *exc) -> None:
        self._stop()

    def _seen(self, line) -> None:
        if line.direction != ">":
            return
        words = line.text.split(None, 3)
        command = " ".join(words[1:3]).upper()
        if command.startswith(("SELECT", "EXAMINE")):
            self._folder = words[2].strip('"')
        self.sent.append((self._folder, command))

    def searches_in(self, folder: str) -> list[str]:
        return [c for f, c in self.sent if f == folder and ("SEARCH" in c or "THREAD" in c)]


def _report(seed) -> None:
    seed("INBOX", make_mail(1, subject="RCE in parser", message_id="<rce@r>"), when=NOW - timedelta(hours=5))
    seed("INBOX", make_mail(2, subject="Re: RCE in parser", message_id="<rce2@r>", references="<rce@r>",
                            in_reply_to="<rce@r>"), when=NOW - timedelta(hours=4))
    seed("INBOX", make_mail(3, subject="Unrelated", message_id="<other@r>"), when=NOW - timedelta(hours=3))


def test_a_listed_thread_opens_without_searching_the_list_folder(source, seed):
    _report(seed)
    row = next(r for r in source.list_recent_threads(LIST, SINCE) if r.root_message_id == "<rce@r>")
    with Commands(source) as commands:
        thread = source.read_thread(row.thread_id)
    assert [m.message_id for m in thread.messages] == ["<rce@r>", "<rce2@r>"]
    assert commands.searches_in("INBOX") == []
    assert any("FETCH" in c for f, c in commands.sent if f == "INBOX")


def test_a_listed_thread_reads_what_arrived_since_the_listing(source, seed):
    _report(seed)
    row = next(r for r in source.list_recent_threads(LIST, SINCE) if r.root_message_id == "<rce@r>")
    # A reply that names only the mid-thread message, and one to another thread.
    seed("INBOX", make_mail(4, subject="Re: Re: RCE", message_id="<rce3@r>", in_reply_to="<rce2@r>"),
         when=NOW - timedelta(minutes=5))
    seed("INBOX", make_mail(5, subject="Re: Unrelated", message_id="<other2@r>", references="<other@r>"),
         when=NOW - timedelta(minutes=4))
    with Commands(source) as commands:
        thread = source.read_thread(row.thread_id)
    assert [m.message_id for m in thread.messages] == ["<rce@r>", "<rce2@r>", "<rce3@r>"]
    assert commands.searches_in("INBOX") == []


def test_a_listed_message_expunged_since_is_left_out(source, seed, dovecot, dovecot_user):
    _report(seed)
    row = next(r for r in source.list_recent_threads(LIST, SINCE) if r.root_message_id == "<rce@r>")
    with dovecot.client(dovecot_user) as client:
        client.select_folder("INBOX")
        uids = client.search(["HEADER", "Message-ID", "<rce2@r>"])
        client.delete_messages(uids)
        client.expunge()
    assert [m.message_id for m in source.read_thread(row.thread_id).messages] == ["<rce@r>"]


def test_after_a_folder_reset_the_thread_is_found_by_searching(source, seed, dovecot, dovecot_user):
    _report(seed)
    row = next(r for r in source.list_recent_threads(LIST, SINCE) if r.root_message_id == "<rce@r>")
    # The listing's UIDs name nothing any more: another UIDVALIDITY (the folder recreated).
    listed = source._listed_threads
    listed.uidvalidity += 1
    assert [m.message_id for m in source.read_thread(row.thread_id).messages] == ["<rce@r>", "<rce2@r>"]


def test_a_thread_the_listing_does_not_hold_is_read_by_id(source, seed):
    _report(seed)
    source.list_recent_threads(LIST, SINCE)
    seed("INBOX", make_mail(6, subject="Late report", message_id="<late@r>"), when=NOW - timedelta(minutes=1))
    assert [m.subject for m in source.read_thread(ThreadId("msgid", "<late@r>")).messages] == ["Late report"]


def test_our_replies_in_sent_are_read_without_searching_or_reselecting(source, seed):
    _report(seed)
    seed("Sent", make_mail(7, subject="Re: RCE in parser", sender=f"Security <{LIST}>", to="reporter@example.net",
                           message_id="<ours@example.org>", references="<rce@r> <rce2@r>", in_reply_to="<rce2@r>"),
         when=NOW - timedelta(hours=3, minutes=30))
    rows = {r.root_message_id: r for r in source.list_recent_threads(LIST, SINCE)}
    with Commands(source) as commands:
        thread = source.read_thread(rows["<rce@r>"].thread_id)
    assert [m.message_id for m in thread.messages] == ["<rce@r>", "<rce2@r>", "<ours@example.org>"]
    assert [c for _f, c in commands.sent if "SEARCH" in c or "THREAD" in c] == []
    # Another thread, Sent unchanged: one STATUS tells, the list folder stays selected for it.
    source.read_thread(rows["<rce@r>"].thread_id)
    with Commands(source) as commands:
        thread = source.read_thread(rows["<other@r>"].thread_id)
    assert [m.message_id for m in thread.messages] == ["<other@r>"]
    assert [c for _f, c in commands.sent if c.startswith("SELECT")] == ['SELECT "INBOX"']
    assert [c for _f, c in commands.sent if "SEARCH" in c or "THREAD" in c] == []


def test_a_thread_read_by_id_uses_the_summary_cache_another_process_wrote(source, account, seed):
    # `mailtriage list` (or the app's start-up child) listed and wrote the cache; then
    # `mail read-thread <id>` runs in a new process: a source that never listed anything.
    _report(seed)
    source.list_recent_threads(LIST, SINCE)
    source.close()  # its cache is written
    seed("INBOX", make_mail(4, subject="Re: Re: RCE", message_id="<rce3@r>", in_reply_to="<rce2@r>"),
         when=NOW - timedelta(minutes=5))
    reader = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=account)
    try:
        reader.mailbox.conn.select("INBOX")
        with Commands(reader) as commands:
            thread = reader.read_thread(ThreadId("msgid", "<rce@r>"))
        assert [m.message_id for m in thread.messages] == ["<rce@r>", "<rce2@r>", "<rce3@r>"]
        assert commands.searches_in("INBOX") == []
    finally:
        reader.close()


def test_prepared_while_idle_the_next_read_selects_nothing_and_the_newest_message_was_opened(source, seed):
    """Issue 33: the app, idle after the row marks (which select Drafts and Sent), prepares the
    next read: the list folder is selected again and its newest message's first byte read, so
    the Enter that follows sends no SELECT (Dovecot's first open of a 100k folder: 0.6-1.2 s)."""
    _report(seed)
    seed("Sent", make_mail(8, subject="Re: Unrelated", message_id="<ours2@example.org>", references="<other@r>"),
         when=NOW - timedelta(hours=2))
    rows = {r.root_message_id: r for r in source.list_recent_threads(LIST, SINCE)}
    source.list_sent_since_of([rows["<rce@r>"].thread_id], SINCE)  # as the row marks do: Sent selected
    assert source.mailbox.conn.state.name == "Sent"
    with Commands(source) as commands:
        source.prepare_read(open_message=True)
    assert [c for _f, c in commands.sent if c.startswith("SELECT")] == ['SELECT "INBOX"']
    # Sent's rows (where a listed thread's replies are looked up), then the newest message's first byte.
    assert [(f, c) for f, c in commands.sent if "FETCH" in c] == [("Sent", "UID FETCH"), ("INBOX", "UID FETCH")]
    with Commands(source) as commands:
        source.prepare_read(open_message=True)  # the same selection: its message was read already
    assert [c for _f, c in commands.sent if "SELECT" in c or "FETCH" in c] == []
    with Commands(source) as commands:
        thread = source.read_thread(rows["<rce@r>"].thread_id)
    assert [m.message_id for m in thread.messages] == ["<rce@r>", "<rce2@r>"]
    assert [c for _f, c in commands.sent if "SELECT" in c] == []  # Sent told by one STATUS


def test_an_empty_sent_is_asked_by_status_and_the_list_folder_stays_selected(source, seed):
    """Issue 33: the row marks ask Sent (and Drafts) for every screen; an empty one is told by
    one STATUS, not a SELECT that unselects the list folder (a 100k folder's next SELECT: 0.6-1.2 s)."""
    _report(seed)
    rows = {r.root_message_id: r for r in source.list_recent_threads(LIST, SINCE)}
    source.read_thread(rows["<rce@r>"].thread_id)  # the list folder selected, Sent known (empty)
    with Commands(source) as commands:
        replied = source.list_sent_since_of([rows["<rce@r>"].thread_id], SINCE)
    assert replied == {rows["<rce@r>"].thread_id: []}
    assert [c for _f, c in commands.sent if "SELECT" in c] == []
    assert any(c.startswith("STATUS") for _f, c in commands.sent)
    assert source.mailbox.conn.state.name == "INBOX"



def test_a_first_listing_right_after_the_sign_in_takes_its_selection(source, seed):
    """Issue 33, a cold start: start-up's child signs in (prepare_read: the list folder selected),
    then lists at once; that listing took a second SELECT of the folder (~50 ms of Dovecot at 100k
    messages), now one NOOP."""
    _report(seed)
    with Commands(source) as commands:
        source.prepare_read()
        rows = {r.root_message_id for r in source.list_recent_threads(LIST, SINCE, limit=50)}
    assert [c for _f, c in commands.sent if c.startswith(("SELECT", "EXAMINE"))] == ['SELECT "INBOX"']
    assert rows == {"<rce@r>", "<other@r>"}


def test_mail_that_came_between_the_sign_in_and_the_listing_is_listed(source, seed):
    """The NOOP that stands in for the second SELECT brings the news: the folder is selected
    again (no summary cache to catch up with yet) and the new message is listed."""
    _report(seed)
    source.prepare_read()
    seed("INBOX", make_mail(9, subject="Late report", message_id="<late@r>"), when=NOW)
    rows = {r.root_message_id for r in source.list_recent_threads(LIST, SINCE, limit=50)}
    assert rows == {"<rce@r>", "<other@r>", "<late@r>"}
