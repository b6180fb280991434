"""The persisted IMAP summary cache (backends/imap/summary_cache.py, backends/imap/recent.py)
against a real Dovecot: a second listing is served from the cache after reading only what
changed; the cache is never trusted across a UIDVALIDITY change or a HIGHESTMODSEQ it has not
seen; damaged files are rebuilt with a note; files are private and hold no bodies."""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import asdict, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mailtriage.core import cache_file
from mailtriage.backends.imap import recent, recent_rows, summary_cache
from mailtriage.backends.imap.account import load_account, password_key
from mailtriage.backends.imap.source import ImapSource
from mailtriage.core.secrets import set_secret
from mailtriage.core.settings import load_settings
from mailtriage.backends.errors import ConnectionLost
from tests.imap.conftest import account_for, make_mail
from tests.servers.faultproxy import FaultProxy

LIST = "security@example.org"
NOW = datetime.now(timezone.utc).replace(microsecond=0)
SINCE = NOW - timedelta(days=30)



@pytest.fixture
def make_source(account):
    made: list[ImapSource] = []

    def make(acct=None, **settings) -> ImapSource:
        src = ImapSource("imap", {"folder": "INBOX", "list": LIST, **settings}, account=acct or account)
        made.append(src)
        return src

    yield make
    for src in made:
        src.close()


@pytest.fixture
def mail(seed):
    """Three threads on the list, one private message, one too old; bodies carry a secret."""
    seed("INBOX", make_mail(1, subject="XSS in login", message_id="<r1@x>", body="BODY-SECRET one\n"),
         when=NOW - timedelta(hours=6))
    seed("INBOX", make_mail(2, subject="Re: XSS in login", message_id="<r2@x>", references="<r1@x>",
                            in_reply_to="<r1@x>", body="BODY-SECRET two\n"), when=NOW - timedelta(hours=5))
    seed("INBOX", make_mail(3, subject="SQL injection", message_id="<s1@x>", body="BODY-SECRET three\n"),
         when=NOW - timedelta(hours=4))
    seed("INBOX", make_mail(4, subject="Private", to="someone@else.org", message_id="<p@x>"),
         when=NOW - timedelta(hours=3))
    seed("INBOX", make_mail(5, subject="Ancient", message_id="<old@x>"), when=NOW - timedelta(days=90))


def rows(threads) -> list[tuple]:
    return [(t.root_message_id, t.subject, t.message_count, t.unread) for t in threads]


def cache_files(cache: Path) -> list[Path]:
    """The cache files on disk once the listings' writes have landed (each is written a moment
    after its listing returns; see test_a_listing_is_answered_before_its_cache_is_written)."""
    summary_cache.flush_all()
    folder = cache / "imap"
    return sorted(folder.glob("*.cache")) if folder.exists() else []


def sent(trace) -> list[str]:
    return [text for direction, text in trace if direction == ">"]


def notes(trace) -> list[str]:
    return [text for direction, text in trace if direction == "!" and "summary cache" in text]


def test_the_test_dovecot_offers_condstore_and_qresync(mailbox):
    assert {"CONDSTORE", "QRESYNC", "ESEARCH", "WITHIN", "ENABLE"} <= mailbox.conn.capabilities
    assert mailbox.conn.reselect("INBOX").highestmodseq is not None  # ENABLE CONDSTORE at login


def test_a_second_listing_is_served_from_the_cache(make_source, mail, cache, trace):
    first = make_source().list_recent_threads(LIST, SINCE)
    assert rows(first) == [("<s1@x>", "SQL injection", 1, True), ("<r1@x>", "XSS in login", 2, True)]
    assert len(cache_files(cache)) == 1
    trace.clear()
    again = make_source().list_recent_threads(LIST, SINCE)  # a new source: as in a fresh process
    assert rows(again) == rows(first)
    commands = sent(trace)
    assert not [c for c in commands if "FETCH" in c or "SEARCH" in c], commands  # one SELECT, nothing read
    assert any("SELECT" in c for c in commands)


def test_a_first_page_from_the_cache_equals_the_uncached_one(make_source, seed, cache, account):
    for n in range(30):
        seed("INBOX", make_mail(10 + n, subject=f"Report {n}", message_id=f"<t{n}@x>"),
             when=NOW - timedelta(hours=40 - n))
    uncached = make_source(replace(account, cache_summaries=False)).list_recent_threads(LIST, SINCE, limit=5)
    assert cache_files(cache) == []
    make_source().list_recent_threads(LIST, SINCE)
    assert rows(make_source().list_recent_threads(LIST, SINCE, limit=5)) == rows(uncached)


def test_only_what_changed_is_read_and_shown(make_source, mail, seed, dovecot, dovecot_user, cache, trace):
    make_source().list_recent_threads(LIST, SINCE)
    with dovecot.client(dovecot_user) as client:
        client.select_folder("INBOX")
        by_mid = {mid: client.search(["HEADER", "Message-ID", mid])[0] for mid in ("<r1@x>", "<r2@x>", "<s1@x>")}
        client.add_flags([by_mid["<r1@x>"], by_mid["<r2@x>"]], [b"\\Seen"])  # the XSS thread read elsewhere
        client.delete_messages([by_mid["<s1@x>"]])
        client.expunge()  # the SQL report removed elsewhere
    seed("INBOX", make_mail(6, subject="CSRF in settings", message_id="<c1@x>"), when=NOW - timedelta(hours=1))
    trace.clear()
    listed = make_source().list_recent_threads(LIST, SINCE)
    assert rows(listed) == [("<c1@x>", "CSRF in settings", 1, True), ("<r1@x>", "XSS in login", 2, False)]
    commands = sent(trace)
    assert any("CHANGEDSINCE" in c for c in commands), commands
    fetches = [c for c in commands if "FETCH" in c]
    assert len(fetches) == 2, fetches  # the flag changes and the one new message, nothing else
    assert any("reconciled: 1 new, 2 flag change(s), 1 expunged" in n for n in notes(trace)), notes(trace)
    # The reconciled cache was saved: the next listing reads nothing.
    trace.clear()
    assert rows(make_source().list_recent_threads(LIST, SINCE)) == rows(listed)
    assert not [c for c in sent(trace) if "FETCH" in c]


def _read(path: Path) -> summary_cache.FolderCache:
    summary_cache.flush_all()  # what the listings wrote, once their writes have landed
    cache, why = summary_cache.read_file(path)
    assert why is None and cache is not None
    return cache


def _forge(path: Path, **changes) -> None:
    forged = _read(path)
    for name, value in changes.items():
        setattr(forged, name, value)
    summary_cache.write_file(path, forged)


def _ghost_rows(cache_path: Path) -> dict:
    old = _read(cache_path)
    uid, row = max(old.rows.items())
    ghost = list(row)
    ghost[summary_cache.MESSAGE_ID] = "<ghost@x>"
    ghost[summary_cache.SUBJECT] = "GHOST from another UIDVALIDITY"
    return {**old.rows, uid: tuple(ghost)}


def test_never_served_after_a_uidvalidity_change(make_source, mail, cache, trace):
    make_source().list_recent_threads(LIST, SINCE)
    (path,) = cache_files(cache)
    real = _read(path)
    # A cache of the same folder under another UIDVALIDITY, whose newest row is a ghost.
    _forge(path, uidvalidity=real.uidvalidity + 1, rows=_ghost_rows(path))
    src = make_source()
    listed = src.list_recent_threads(LIST, SINCE)
    assert "<ghost@x>" not in [t.root_message_id for t in listed]
    assert rows(listed)[0][0] == "<s1@x>"
    assert any("UIDVALIDITY changed" in n for n in notes(trace)), notes(trace)
    # Replaced by a cache of the real folder.
    assert _read(path).uidvalidity == real.uidvalidity


def test_never_served_at_a_highestmodseq_it_has_not_seen(make_source, mail, dovecot, dovecot_user, cache, trace):
    make_source().list_recent_threads(LIST, SINCE)
    (path,) = cache_files(cache)
    # The server moved on (a flag changed): the cached "unread" must not be served.
    with dovecot.client(dovecot_user) as client:
        client.select_folder("INBOX")
        client.add_flags(client.search(["HEADER", "Message-ID", "<s1@x>"]), [b"\\Seen"])
    assert rows(make_source().list_recent_threads(LIST, SINCE))[0] == ("<s1@x>", "SQL injection", 1, False)
    # A cache that claims a HIGHESTMODSEQ ahead of the server's is not trusted at all.
    real = _read(path)
    _forge(path, highestmodseq=real.highestmodseq + 1000, rows=_ghost_rows(path))
    listed = make_source().list_recent_threads(LIST, SINCE)
    assert "<ghost@x>" not in [t.root_message_id for t in listed]
    assert any("HIGHESTMODSEQ went back" in n for n in notes(trace)), notes(trace)


@pytest.mark.parametrize("damage", ["truncated", "flipped", "other-version", "garbage", "wrong-shape"])
def test_a_damaged_cache_is_rebuilt_with_a_note(make_source, mail, cache, trace, damage):
    expected = rows(make_source().list_recent_threads(LIST, SINCE))
    (path,) = cache_files(cache)
    blob = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(blob[: len(blob) * 2 // 3])
    elif damage == "flipped":
        path.write_bytes(blob[:-5] + bytes([blob[-5] ^ 0x55]) + blob[-4:])
    elif damage == "other-version":
        cache_file.write(path, summary_cache.KIND, summary_cache.VERSION + 1, ("old", "format"))
    elif damage == "garbage":
        path.write_bytes(b"\x00\xff" * 300)
    else:
        cache_file.write(path, summary_cache.KIND, summary_cache.VERSION, ("not", "a", "cache"))
    trace.clear()
    assert rows(make_source().list_recent_threads(LIST, SINCE)) == expected
    assert notes(trace), "the rebuild is noted in the backend console"
    assert _read(path).rows  # rebuilt


def test_cache_files_are_private_and_hold_no_bodies(make_source, mail, cache):
    make_source().list_recent_threads(LIST, SINCE)
    (path,) = cache_files(cache)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((cache / "imap").stat().st_mode) == 0o700
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    blob = path.read_bytes()
    assert b"SQL injection" in blob  # summaries are there (so the check below can fail)
    assert b"BODY-SECRET" not in blob and b"Content-Type" not in blob


def test_deleting_the_cache_folder_is_always_safe(make_source, mail, seed, cache):
    src = make_source()
    src.list_recent_threads(LIST, SINCE)
    shutil.rmtree(cache)
    seed("INBOX", make_mail(7, subject="New one", message_id="<n@x>"), when=NOW - timedelta(minutes=5))
    assert rows(src.list_recent_threads(LIST, SINCE))[0][0] == "<n@x>"
    assert cache_files(cache)  # the reconciled cache, once its write has landed
    shutil.rmtree(cache)
    assert rows(make_source().list_recent_threads(LIST, SINCE))[0][0] == "<n@x>"
    assert cache_files(cache)


def test_cached_threads_paint_at_once_then_reconcile(make_source, mail, seed, cache, trace):
    assert make_source().cached_recent_threads(LIST, SINCE) is None  # nothing cached yet
    make_source().list_recent_threads(LIST, SINCE)
    seed("INBOX", make_mail(8, subject="Arrived meanwhile", message_id="<m@x>"), when=NOW - timedelta(minutes=1))
    src = make_source()
    trace.clear()
    stale = src.cached_recent_threads(LIST, SINCE, limit=10)
    assert trace == []  # not a byte to or from the server
    assert [t.root_message_id for t in stale] == ["<s1@x>", "<r1@x>"]
    fresh = src.list_recent_threads(LIST, SINCE, limit=10)
    assert [t.root_message_id for t in fresh] == ["<m@x>", "<s1@x>", "<r1@x>"]
    # The first walk reached the folder's first message: any window is answered from the cache.
    year = src.cached_recent_threads(LIST, NOW - timedelta(days=365))
    assert [t.root_message_id for t in year] == ["<m@x>", "<s1@x>", "<r1@x>", "<old@x>"]


def test_a_window_the_cache_does_not_reach_is_read_from_the_server(make_source, seed, cache, trace):
    for n in range(130):  # more than one walking window of a first page (100 messages)
        seed("INBOX", make_mail(n, subject=f"Report {n}", message_id=f"<w{n}@x>"), when=NOW - timedelta(hours=200 - n))
    src = make_source()
    page = src.list_recent_threads(LIST, SINCE, limit=3)
    assert [t.root_message_id for t in page] == ["<w129@x>", "<w128@x>", "<w127@x>"]
    assert src.cached_recent_threads(LIST, SINCE) is None  # the first page's walk stopped early
    assert [t.root_message_id for t in src.cached_recent_threads(LIST, SINCE, limit=3)] == \
        [t.root_message_id for t in page]
    trace.clear()
    whole = make_source().list_recent_threads(LIST, SINCE)
    assert len(whole) == 130
    assert [c for c in sent(trace) if "FETCH" in c]  # read from the server this time
    assert len(make_source().cached_recent_threads(LIST, SINCE)) == 130


def test_the_setting_keeps_summaries_off_disk(make_source, mail, cache, account, tmp_path, monkeypatch):
    assert rows(make_source(replace(account, cache_summaries=False)).list_recent_threads(LIST, SINCE))
    assert cache_files(cache) == []
    config = tmp_path / "config"
    config.mkdir()
    toml = (f'[settings]\ncache_summaries = false\n\n[accounts.work]\nkind = "imap"\nhost = "127.0.0.1"\n'
            f'port = {account.port}\nsecurity = "plain"\nusername = "{account.username}"\n')
    (config / "config.toml").write_text(toml, encoding="utf-8")
    assert load_account("work", load_settings(config / "config.toml")).cache_summaries is False
    (config / "config.toml").write_text(toml + "cache_summaries = true\n", encoding="utf-8")
    assert load_account("work", load_settings(config / "config.toml")).cache_summaries is True  # the account says
    (config / "config.toml").write_text(toml.replace("[settings]\ncache_summaries = false\n", ""), encoding="utf-8")
    assert load_account("work", load_settings(config / "config.toml")).cache_summaries is True  # the default


def test_a_server_without_condstore_gets_no_cache(dovecot_minimal, minimal_user, memory_keyring, seed, cache):
    acct = account_for(dovecot_minimal, minimal_user)
    set_secret(password_key(acct.id), minimal_user.password)
    dovecot_minimal.append(minimal_user, "INBOX", make_mail(1, subject="Plain", message_id="<p1@x>"),
                           when=NOW - timedelta(hours=1))
    src = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=acct)
    try:
        assert [t.root_message_id for t in src.list_recent_threads(LIST, SINCE)] == ["<p1@x>"]
    finally:
        src.close()
    assert cache_files(cache) == []


def test_the_whole_window_starts_where_esearch_says_and_falls_back_without_it(
        make_source, mail, cache, trace, dovecot_minimal, minimal_user, memory_keyring, account):
    """With ESEARCH and WITHIN one SEARCH says where the window starts; a younger message
    stored below an older one (arrival is not UID order) is still listed."""
    listed = rows(make_source(replace(account, cache_summaries=False)).list_recent_threads(LIST, SINCE))
    assert any("SEARCH RETURN (MIN COUNT) YOUNGER" in c for c in sent(trace)), sent(trace)
    acct = account_for(dovecot_minimal, minimal_user)
    set_secret(password_key(acct.id), minimal_user.password)
    for n, (mid, when) in enumerate([("<r1@x>", 6), ("<r2@x>", 5), ("<s1@x>", 4), ("<p@x>", 3)]):
        extra = {"references": "<r1@x>", "in_reply_to": "<r1@x>"} if mid == "<r2@x>" else {}
        to = "someone@else.org" if mid == "<p@x>" else "security@example.org"
        subject = {"<r1@x>": "XSS in login", "<r2@x>": "Re: XSS in login", "<s1@x>": "SQL injection"}.get(mid, "P")
        dovecot_minimal.append(minimal_user, "INBOX", make_mail(n, subject=subject, message_id=mid, to=to, **extra),
                               when=NOW - timedelta(hours=when))
    dovecot_minimal.append(minimal_user, "INBOX", make_mail(9, subject="Ancient", message_id="<old@x>"),
                           when=NOW - timedelta(days=90))
    trace.clear()
    src = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=acct)
    try:
        assert rows(src.list_recent_threads(LIST, SINCE)) == listed
    finally:
        src.close()
    assert not any("YOUNGER" in c for c in sent(trace))  # the minimal server walks in windows


def test_a_window_read_in_bulk_does_not_stop_at_an_older_message_on_the_way(
        make_source, seed, account, monkeypatch):
    """ESEARCH said where the window starts: an old message high in the folder (appended
    late with an old date) must not end the read before the window's start."""
    monkeypatch.setattr(recent, "BULK", 3)  # several FETCHes for this small window
    for n in range(8):
        seed("INBOX", make_mail(n, subject=f"R{n}", message_id=f"<b{n}@x>"), when=NOW - timedelta(hours=20 - n))
    seed("INBOX", make_mail(50, subject="Old", message_id="<old@x>"), when=NOW - timedelta(days=60))
    seed("INBOX", make_mail(51, subject="Newest", message_id="<new@x>"), when=NOW - timedelta(minutes=5))
    listed = make_source(replace(account, cache_summaries=False)).list_recent_threads(LIST, SINCE)
    assert [t.root_message_id for t in listed] == ["<new@x>", *[f"<b{n}@x>" for n in reversed(range(8))]]


def test_rows_in_many_sections_answer_as_the_server_does(make_source, seed, cache, account, monkeypatch):
    """The file keeps its rows in sections, newest first: whatever is read from them (a
    first page, the whole window, after a change) is what an uncached listing says."""
    monkeypatch.setattr(summary_cache, "FIRST_CHUNK", 4)
    monkeypatch.setattr(summary_cache, "CHUNK", 7)
    for n in range(30):
        refs = {"references": f"<g{n - 3}@x>", "in_reply_to": f"<g{n - 3}@x>"} if n % 4 == 3 else {}
        seed("INBOX", make_mail(n, subject=f"Report {n}", message_id=f"<g{n}@x>", **refs),
             when=NOW - timedelta(hours=40 - n))
    uncached = replace(account, cache_summaries=False)
    make_source().list_recent_threads(LIST, SINCE)  # fills the cache
    (path,) = cache_files(cache)
    sections, why = cache_file.read_sections(path, summary_cache.KIND, summary_cache.VERSION)
    assert why is None and len(sections) == 1 + 5  # the state, then 4 + 7 + 7 + 7 + 5 rows
    for limit in (3, 5, None):
        assert rows(make_source().list_recent_threads(LIST, SINCE, limit=limit)) == \
            rows(make_source(uncached).list_recent_threads(LIST, SINCE, limit=limit))
    seed("INBOX", make_mail(99, subject="Later", message_id="<later@x>"), when=NOW - timedelta(minutes=3))
    assert rows(make_source().list_recent_threads(LIST, SINCE, limit=2)) == \
        rows(make_source(uncached).list_recent_threads(LIST, SINCE, limit=2))
    assert rows(make_source().list_recent_threads(LIST, SINCE)) == \
        rows(make_source(uncached).list_recent_threads(LIST, SINCE))


def test_a_first_page_reads_only_the_newest_rows_and_a_damaged_section_is_rebuilt(
        make_source, seed, cache, trace, monkeypatch):
    monkeypatch.setattr(summary_cache, "FIRST_CHUNK", 100)  # a first page of 3 threads reads 100 rows
    monkeypatch.setattr(summary_cache, "CHUNK", 10)
    for n in range(125):
        seed("INBOX", make_mail(n, subject=f"Report {n}", message_id=f"<d{n}@x>"), when=NOW - timedelta(hours=150 - n))
    expected = rows(make_source().list_recent_threads(LIST, SINCE))
    (path,) = cache_files(cache)
    head, *chunks = _read(path).to_sections()
    assert [len(c) for c in chunks] == [100, 10, 10, 5]
    # The oldest section says it holds 5 rows but holds something else (its checksum is right).
    cache_file.write(path, summary_cache.KIND, summary_cache.VERSION, head, *chunks[:-1], (("not", "a", "row"),) * 5)
    trace.clear()
    page = make_source().list_recent_threads(LIST, SINCE, limit=3)  # the newest section is enough
    assert rows(page) == expected[:3]
    assert not [c for c in sent(trace) if "FETCH" in c] and not notes(trace)
    assert rows(make_source().list_recent_threads(LIST, SINCE)) == expected  # needs every row: rebuilt
    assert any("not what the header says" in n for n in notes(trace)), notes(trace)
    assert [c for c in sent(trace) if "FETCH" in c]  # read from the server again
    assert len(_read(path).rows) == 125  # and saved whole


def test_a_narrower_listing_never_replaces_a_cache_that_reaches_further_back(make_source, seed, cache):
    """The app lists the whole window while its new-report poller, with a source of its own,
    lists a short look-back: the poller's narrower walk must not replace the app's cache on
    disk (the next start would find no cached first page, and walk the window again)."""
    for n in range(130):
        seed("INBOX", make_mail(n, subject=f"Report {n}", message_id=f"<w{n}@x>"), when=NOW - timedelta(hours=200 - n))
    poller = make_source()
    poller.list_recent_threads(LIST, SINCE, limit=3)  # a first page: a partial walk, in this source and on disk
    assert len(make_source().list_recent_threads(LIST, SINCE)) == 130  # the app: the whole window, on disk
    assert len(poller.list_recent_threads(LIST, NOW - timedelta(hours=73))) == 3  # the poll's short look-back
    again = make_source().cached_recent_threads(LIST, SINCE)
    assert again is not None and len(again) == 130


def fetched(trace) -> int:
    """How many FETCH responses the server sent (the trace shows three, then counts the rest)."""
    shown = [t for d, t in trace if d == "<" and re.match(r"\* \d+ FETCH \(", t)]
    counted = [int(m.group(1).replace(",", "")) for d, t in trace if d == "<"
               for m in [re.match(r"\[([\d,]+) more FETCH responses", t)] if m]
    return len(shown) + sum(counted)


def _many(seed, count: int) -> None:
    for n in range(count):
        refs = {"references": f"<w{n - 2}@x>", "in_reply_to": f"<w{n - 2}@x>"} if n % 5 == 4 else {}
        seed("INBOX", make_mail(n, subject=f"Report {n}", message_id=f"<w{n}@x>", **refs),
             when=NOW - timedelta(hours=200 - n))
    seed("INBOX", make_mail(500, subject="Ancient", message_id="<old@x>"), when=NOW - timedelta(days=90))


def test_the_whole_window_after_a_first_page_reads_each_message_once(make_source, seed, cache, trace, account):
    """The app lists a first page, then the whole window (a cold cache): the second listing
    reads only the messages below what the first walked (one UID FETCH), selects the folder
    once (a NOOP with no news keeps the state), and lists what an uncached listing lists."""
    _many(seed, 130)
    expected = rows(make_source(replace(account, cache_summaries=False)).list_recent_threads(LIST, SINCE))
    assert len(expected) == 104
    src = make_source()
    trace.clear()
    page = src.list_recent_threads(LIST, SINCE, limit=3)  # walks the newest 100 messages
    assert fetched(trace) == 100
    whole = src.list_recent_threads(LIST, SINCE)
    assert rows(whole) == expected
    assert rows(page) == expected[:3]
    assert fetched(trace) == 131  # each message once (the ancient one, stored last, in the first page's walk)
    commands = sent(trace)
    assert len([c for c in commands if "SELECT" in c]) == 1, commands
    assert any(c.endswith(" NOOP") for c in commands), commands
    assert any(re.search(r"UID FETCH \d+:\d+ ", c) for c in commands), commands
    # The cache now reaches back to the window's start: the next start reads nothing.
    trace.clear()
    assert rows(make_source().list_recent_threads(LIST, SINCE)) == expected
    assert fetched(trace) == 0


def test_a_change_between_the_first_page_and_the_whole_window_is_listed(
        make_source, seed, cache, trace, account, dovecot, dovecot_user):
    """Mail that arrives, and flags set elsewhere, between the first page and the whole
    window: the NOOP brings the news, the folder is selected again, nothing is missed."""
    _many(seed, 130)
    src = make_source()
    src.list_recent_threads(LIST, SINCE, limit=3)
    with dovecot.client(dovecot_user) as client:
        client.select_folder("INBOX")
        client.add_flags(client.search(["HEADER", "Message-ID", "<w0@x>"]), [b"\\Seen"])
    seed("INBOX", make_mail(600, subject="Arrived meanwhile", message_id="<m@x>"), when=NOW - timedelta(minutes=1))
    trace.clear()
    whole = src.list_recent_threads(LIST, SINCE)
    assert rows(whole) == rows(make_source(replace(account, cache_summaries=False)).list_recent_threads(LIST, SINCE))
    assert whole[0].root_message_id == "<m@x>"
    assert [t.unread for t in whole if t.root_message_id == "<w0@x>"] == [False]
    assert any("SELECT" in c for c in sent(trace)), sent(trace)


def test_a_command_on_the_connection_between_two_listings_selects_again(make_source, seed, cache, trace, account):
    """A change made on the listing's own connection (its responses went to that command,
    a NOOP shows nothing): the next listing asks the server again and sees it."""
    _many(seed, 130)
    src = make_source()
    src.list_recent_threads(LIST, SINCE, limit=3)
    src.mailbox.mark_folder_read("INBOX")
    trace.clear()
    whole = src.list_recent_threads(LIST, SINCE)
    assert len(whole) == 104 and not any(t.unread for t in whole)
    # (asked anew: with the cache in step, what changed since by modseq rather than a SELECT)
    assert any("SELECT" in c or " SEARCH MODSEQ " in c for c in sent(trace)), sent(trace)


def test_the_whole_window_after_a_first_page_without_esearch(
        dovecot_minimal, minimal_user, memory_keyring, cache, trace):
    """A server that cannot say where the window starts: the whole window is walked, and
    listed as a fresh listing lists it."""
    acct = account_for(dovecot_minimal, minimal_user)
    set_secret(password_key(acct.id), minimal_user.password)
    for n in range(130):
        dovecot_minimal.append(minimal_user, "INBOX", make_mail(n, subject=f"Report {n}", message_id=f"<w{n}@x>"),
                               when=NOW - timedelta(hours=200 - n))
    made = [ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=acct) for _ in range(2)]
    try:
        made[0].list_recent_threads(LIST, SINCE, limit=3)
        whole = made[0].list_recent_threads(LIST, SINCE)
        assert rows(whole) == rows(made[1].list_recent_threads(LIST, SINCE))
        assert len(whole) == 130
    finally:
        for src in made:
            src.close()


WINDOW_IDS = {"<r1@x>", "<r2@x>", "<s1@x>", "<p@x>"}  # the `mail` fixture's messages since SINCE


def _ids(path: Path) -> set[str]:
    return {row[summary_cache.MESSAGE_ID] for row in _read(path).rows.values()}


def _on_disk(cache: Path) -> list[Path]:
    """The cache files as they are on disk now (no pending write forced)."""
    folder = cache / "imap"
    return sorted(folder.glob("*.cache")) if folder.exists() else []


def test_a_listing_is_answered_before_its_cache_is_written(make_source, mail, cache, monkeypatch):
    """The app paints the listing first; the file is written a moment later (it cost a dense
    window 50-80 ms on its way to the screen)."""
    monkeypatch.setattr(summary_cache, "SAVE_AFTER", 0.3)
    listed = make_source().list_recent_threads(LIST, SINCE)
    assert _on_disk(cache) == []
    deadline = time.monotonic() + 10
    while not _on_disk(cache) and time.monotonic() < deadline:
        time.sleep(0.05)
    (path,) = _on_disk(cache)
    assert WINDOW_IDS <= _ids(path)  # every message of the window, the private one too
    assert rows(listed)[0][0] == "<s1@x>"


def test_a_cache_not_written_yet_is_read_as_written_in_the_same_process(make_source, mail, cache, trace):
    first = make_source().list_recent_threads(LIST, SINCE)
    assert _on_disk(cache) == []
    trace.clear()
    again = make_source().list_recent_threads(LIST, SINCE)  # another source of this process
    assert rows(again) == rows(first)
    assert not [c for c in sent(trace) if "FETCH" in c], sent(trace)  # served from the cache


def test_closing_the_source_writes_its_cache(make_source, mail, cache):
    src = make_source()
    src.list_recent_threads(LIST, SINCE)
    assert _on_disk(cache) == []
    src.close()
    assert len(_on_disk(cache)) == 1


def test_a_process_that_ends_without_closing_writes_its_cache(account, dovecot_user, mail, cache):
    """The command line lists and ends; the write waiting on its timer is done at the end."""
    script = textwrap.dedent('''
        import json, sys
        from datetime import datetime
        import keyring
        from tests.servers.fixtures import MemoryKeyring
        keyring.set_keyring(MemoryKeyring())
        from mailtriage.backends.imap.account import ImapAccount, password_key
        from mailtriage.backends.imap.source import ImapSource
        from mailtriage.core.secrets import set_secret
        account = ImapAccount(**json.loads(sys.argv[1]))
        set_secret(password_key(account.id), sys.argv[2])
        source = ImapSource("imap", {"folder": "INBOX", "list": sys.argv[3]}, account=account)
        print(len(source.list_recent_threads(sys.argv[3], datetime.fromisoformat(sys.argv[4]))))
    ''')
    done = subprocess.run([sys.executable, "-c", script, json.dumps(asdict(account)), dovecot_user.password, LIST,
                           SINCE.isoformat()], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"
    (path,) = _on_disk(cache)
    assert WINDOW_IDS <= _ids(path)


def _seed_at(seed, start: int, times: list[datetime]) -> None:
    for n, when in enumerate(times, start):
        seed("INBOX", make_mail(n, subject=f"Report {n}", message_id=f"<g{n}@x>"), when=when)


def _uncached(make_source, account) -> list[tuple]:
    return rows(make_source(replace(account, cache_summaries=False)).list_recent_threads(LIST, SINCE))


def test_the_window_search_is_sent_behind_the_fetch_below_the_first_page(make_source, seed, cache, trace, account):
    """The whole window after a first page: the FETCH of the messages below it goes first and
    the SEARCH for the window's start right behind it, before any answer is read, so the
    server searches while the rows are parsed."""
    _many(seed, 130)
    expected = _uncached(make_source, account)
    src = make_source()
    src.list_recent_threads(LIST, SINCE, limit=3)
    trace.clear()
    assert rows(src.list_recent_threads(LIST, SINCE)) == expected
    order = [(d, t) for d, t in trace if d in "<>"]
    fetch = next(i for i, (d, t) in enumerate(order) if d == ">" and re.search(r"UID FETCH 1:\d+ ", t))
    assert order[fetch + 1][0] == ">" and "UID SEARCH RETURN (MIN COUNT) YOUNGER" in order[fetch + 1][1], order
    assert fetched(trace) == 31  # the messages below the first page, each once


def test_a_guess_reaching_below_the_window_keeps_only_the_window(make_source, seed, cache, trace, account):
    """A first page that arrived in a burst suggests far more messages below it than the window
    holds: what was read below the window's start is dropped, and the cache starts there."""
    _seed_at(seed, 1, [NOW - timedelta(days=60, hours=n) for n in range(40)])  # older than the window
    _seed_at(seed, 41, [SINCE + timedelta(days=1 + n) for n in range(20)])  # a quiet month
    _seed_at(seed, 61, [NOW - timedelta(minutes=100 - n) for n in range(100)])  # a burst: the first page
    expected = _uncached(make_source, account)
    src = make_source()
    src.list_recent_threads(LIST, SINCE, limit=3)
    trace.clear()
    assert rows(src.list_recent_threads(LIST, SINCE)) == expected
    assert fetched(trace) == 60  # everything below the first page, read once with the search behind it
    (path,) = cache_files(cache)
    assert min(_read(path).rows) == 41  # nothing older than the window was kept
    trace.clear()
    assert rows(make_source().list_recent_threads(LIST, SINCE)) == expected
    assert fetched(trace) == 0


def test_a_guess_short_of_the_window_reads_the_rest_after_the_search(make_source, seed, cache, trace, account):
    """A first page spread over weeks suggests few messages below it, but the window's first
    days were busy: the rest is read once the server has said where the window starts."""
    _seed_at(seed, 1, [SINCE - timedelta(days=2, minutes=n) for n in range(10)])  # older than the window
    _seed_at(seed, 11, [SINCE + timedelta(hours=1, seconds=30 * n) for n in range(150)])  # a busy first day
    _seed_at(seed, 161, [SINCE + timedelta(days=5, hours=6 * n) for n in range(100)])  # then quieter
    expected = _uncached(make_source, account)
    src = make_source()
    src.list_recent_threads(LIST, SINCE, limit=3)
    trace.clear()
    assert rows(src.list_recent_threads(LIST, SINCE)) == expected
    below = [t for t in sent(trace) if re.search(r"UID FETCH \d+:\d+ ", t)]
    assert len(below) == 2, below  # the guessed part with the search behind it, then the rest
    assert fetched(trace) == 150


def test_a_listing_meanwhile_reads_the_cache_being_written_not_the_one_it_replaces(
        make_source, seed, cache, trace, account, monkeypatch):
    """The app's whole window is being written (its timer fired) when the new-report poller
    lists its short look-back: the poller waits for that write and reads it, rather than the
    first page's file it replaces (which made it read 4,300 messages again on the dense folder)."""
    _many(seed, 130)
    look_back = NOW - timedelta(hours=73)
    expected = rows(make_source(replace(account, cache_summaries=False)).list_recent_threads(LIST, look_back))
    app = make_source()
    app.list_recent_threads(LIST, SINCE, limit=3)
    app.list_recent_threads(LIST, SINCE)  # written soon; the first page's file is on disk now
    real_write, started = summary_cache.write_file, threading.Event()

    def slow_write(path, folder_cache):
        started.set()
        time.sleep(0.5)
        return real_write(path, folder_cache)

    monkeypatch.setattr(summary_cache, "write_file", slow_write)
    writer = threading.Thread(target=app._store.flush)  # as the timer does
    writer.start()
    assert started.wait(5)
    trace.clear()
    poller = make_source()
    assert rows(poller.list_recent_threads(LIST, look_back)) == expected
    writer.join()
    assert not [c for c in sent(trace) if "FETCH" in c or "SEARCH" in c], sent(trace)  # the whole window's cache


def test_a_connection_lost_while_the_window_search_is_unanswered_recovers(
        dovecot, dovecot_user, make_source, seed, cache, account, trace):
    """The read-ahead FETCH and the window's SEARCH behind it are both on the wire when the
    connection drops: the listing fails as a lost connection, and the next one lists right."""
    _many(seed, 130)
    expected = _uncached(make_source, account)
    proxy = FaultProxy(dovecot.port)
    acct = account_for(dovecot, dovecot_user, port=proxy.port)
    set_secret(password_key(acct.id), dovecot_user.password)
    src = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=acct)
    try:
        src.list_recent_threads(LIST, SINCE, limit=3)
        proxy.cut_when_server_sends(b"* ESEARCH")
        with pytest.raises(ConnectionLost):
            src.list_recent_threads(LIST, SINCE)
        assert proxy.cuts == 1
        assert rows(src.list_recent_threads(LIST, SINCE)) == expected
        src.close()  # its cache written
        again = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=acct)
        trace.clear()
        assert rows(again.list_recent_threads(LIST, SINCE)) == expected  # from the cache, sound
        assert fetched(trace) == 0
        again.close()
    finally:
        src.close()
        proxy.close()


def test_a_first_page_then_the_whole_window_write_the_cache_once(make_source, seed, cache, monkeypatch):
    """The first page's write, still to come when the whole window is listed, is called off:
    one write of the whole window (written before it, it took the listing's time on the way)."""
    _many(seed, 130)
    real_write, written = summary_cache.write_file, []

    def counting_write(path, folder_cache):
        written.append(len(folder_cache.rows))
        return real_write(path, folder_cache)

    monkeypatch.setattr(summary_cache, "write_file", counting_write)
    src = make_source()
    src.list_recent_threads(LIST, SINCE, limit=3)
    src.list_recent_threads(LIST, SINCE)
    summary_cache.flush_all()
    assert written == [131]


def test_a_listing_that_fails_still_writes_the_cache_it_called_off(
        dovecot, dovecot_user, make_source, seed, cache, account, trace):
    _many(seed, 130)
    proxy = FaultProxy(dovecot.port)
    acct = account_for(dovecot, dovecot_user, port=proxy.port)
    set_secret(password_key(acct.id), dovecot_user.password)
    src = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=acct)
    try:
        page = rows(src.list_recent_threads(LIST, SINCE, limit=3))
        proxy.cut_when_server_sends(b"* ESEARCH")
        with pytest.raises(ConnectionLost):
            src.list_recent_threads(LIST, SINCE)
        (path,) = cache_files(cache)  # the first page's, written after all
        assert len(_read(path).rows) == 100
        trace.clear()
        again = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=acct)
        assert rows(again.list_recent_threads(LIST, SINCE, limit=3)) == page
        assert fetched(trace) == 0
        again.close()
    finally:
        src.close()
        proxy.close()


def test_a_listing_that_reconciled_and_wrote_does_not_write_again(make_source, mail, seed, cache, monkeypatch):
    """From a review: the write a listing called off was done again a second later even when the
    listing had written the reconciled cache itself."""
    src = make_source()
    src.list_recent_threads(LIST, SINCE)  # its write waits
    seed("INBOX", make_mail(8, subject="Arrived since", message_id="<a@x>"), when=NOW - timedelta(minutes=2))
    real_write, written = summary_cache.write_file, []

    def counting_write(path, folder_cache):
        written.append(path)
        return real_write(path, folder_cache)

    monkeypatch.setattr(summary_cache, "write_file", counting_write)
    assert rows(src.list_recent_threads(LIST, SINCE))[0][0] == "<a@x>"  # reconciled, written, answered
    summary_cache.flush_all()
    assert len(written) == 1


def test_a_poll_that_reconciled_changes_is_answered_before_its_cache_is_written(make_source, mail, seed, cache):
    """Issue 39: each poll of a storm that brought mail wrote the reconciled cache (fsync, some
    50 ms at 6,000 messages) before it answered; a walk's cache was already written a moment
    later. Now the reconciled one is too (the next listing takes it back or waits for it)."""
    src = make_source()
    try:
        src.list_recent_threads(LIST, SINCE)
        (path,) = cache_files(cache)  # the first listing's, written
        seed("INBOX", make_mail(8, subject="Arrived since", message_id="<a@x>"), when=NOW - timedelta(minutes=2))
        assert rows(src.list_recent_threads(LIST, SINCE))[0][0] == "<a@x>"  # reconciled and answered
        on_disk, why = summary_cache.read_file(path)  # as it is now, no pending write forced
        assert why is None and on_disk is not None
        assert "<a@x>" not in {row[summary_cache.MESSAGE_ID] for row in on_disk.rows.values()}
        assert "<a@x>" in _ids(path)  # once the write has landed
    finally:
        src.close()


def test_off_the_rows_kept_in_memory_are_dropped_when_uidvalidity_changes(make_source, seed, dovecot, dovecot_user,
                                                                          cache, account, trace):
    # cache_summaries = false keeps the last listing's rows in memory only (issue 39: a watch's
    # next poll reads what changed); a folder deleted and re-created lists again, whole.
    seed("Reports", make_mail(1, subject="Before the reset", message_id="<a@x>"), when=NOW - timedelta(hours=2))
    src = make_source(replace(account, cache_summaries=False), folder="Reports")
    assert rows(src.list_recent_threads(LIST, SINCE)) == [("<a@x>", "Before the reset", 1, True)]
    with dovecot.client(dovecot_user) as other:
        other.delete_folder("Reports")
        other.create_folder("Reports")
    seed("Reports", make_mail(2, subject="After the reset", message_id="<b@x>"), when=NOW - timedelta(hours=1))
    trace.clear()
    assert rows(src.list_recent_threads(LIST, SINCE)) == [("<b@x>", "After the reset", 1, True)]
    assert any("UIDVALIDITY changed" in text for direction, text in trace if direction == "!"), trace
    assert cache_files(cache) == []  # nothing on disk, either time


def test_a_pollers_source_holds_its_window_not_the_whole_cache(make_source, seed, cache):
    """Issue 39: the poller beside the front end loaded the whole on-disk cache (twenty days)
    to answer its three-day window, a second copy of the front end's rows."""
    for day in reversed(range(20)):  # in the order they arrived
        seed("INBOX", make_mail(day, subject=f"Report {day}", message_id=f"<d{day}@x>"),
             when=NOW - timedelta(days=day, hours=1))
    front = make_source()
    assert len(front.list_recent_threads(LIST, SINCE)) == 20
    (path,) = cache_files(cache)
    written = path.read_bytes()
    poller = make_source()
    poller.hold_window_only()
    window = NOW - timedelta(days=3)
    assert len(poller.list_recent_threads(LIST, window)) == 3
    assert poller.rows_held == 3
    seed("INBOX", make_mail(99, subject="Arrived since", message_id="<new@x>"), when=NOW)
    assert [t.root_message_id for t in poller.list_recent_threads(LIST, window)][0] == "<new@x>"
    assert poller.rows_held == 4  # what came, reconciled into the window's rows
    assert cache_files(cache) == [path] and path.read_bytes() == written  # the front end's file, untouched


def test_trimming_to_a_window_keeps_every_row_it_answers_even_out_of_uid_order():
    def row(uid, arrived):
        return (f"<{uid}@x>", (), None, False, uid, "s", "n", "e@x", arrived, False, (), None)

    start = NOW - timedelta(days=3)
    t = start.timestamp()
    # UID 3 arrived late (a message moved in): the rows from it on stay, whatever their arrival.
    cache = summary_cache.FolderCache(1, 1, 7, 6, 1, recent_rows.NO_TIME, {
        1: row(1, t - 900), 2: row(2, t - 800), 3: row(3, t + 5), 4: row(4, t - 700), 5: row(5, None), 6: row(6, t + 9)})
    before = recent.answer_from_cache(cache, start, None, None)
    recent.trim_to_window(cache, start)
    assert sorted(cache.rows) == [3, 4, 5, 6] and cache.floor_uid == 3
    assert sorted(recent.answer_from_cache(cache, start, None, None)) == sorted(before)
    later = start + timedelta(days=1)  # only the undated row is answered (as every listing answers it)
    recent.trim_to_window(cache, later)
    assert sorted(cache.rows) == [5, 6] and cache.floor_uid == 5
    assert [r[summary_cache.UID] for r in recent.answer_from_cache(cache, later, None, None)] == [5]
    del cache.rows[5]
    recent.trim_to_window(cache, later)  # nothing arrived since: nothing held
    assert cache.rows == {} and cache.floor_uid == 7


def _synthetic_cache(count: int) -> summary_cache.FolderCache:
    base = 1.7e9
    rows = {uid: (f"<s{uid}@x>", (), None, False, uid, f"Report {uid}", f"Sender {uid % 50}",
                  f"s{uid % 50}@example.org", base + uid * 600.0, uid % 3 == 0, (), None)
            for uid in range(1, count + 1)}
    return summary_cache.FolderCache(7, 100, count + 1, count, 1, base, rows)


def test_a_first_page_reads_only_the_head_of_the_file_and_the_rest_from_the_same_file(tmp_path):
    """Issue 33: the head start of a 100k folder read (and checked) the whole 12 MB file to show
    its newest 200 threads. Now the state and the newest section only; the rest when a listing
    needs every row, from the file as it was read (a file written over it meanwhile is another)."""
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    path = folder / "x.cache"
    size = summary_cache.write_file(path, _synthetic_cache(20_000))
    cache, why = summary_cache.read_file(path)
    assert why is None and cache.file.size == size
    page = recent.answer_from_cache(cache, datetime.fromtimestamp(1.7e9, timezone.utc), None, 200)
    assert [row[summary_cache.UID] for row in page[:3]] == [20_000, 19_999, 19_998]
    assert cache.file.bytes_read < size // 8, (cache.file.bytes_read, size)  # the newest rows only
    summary_cache.write_file(path, _synthetic_cache(10))  # another listing writes over it
    assert sorted(cache.rows) == list(range(1, 20_001))  # every row, of the file that was read
    assert cache.file.bytes_read == size
