"""The listing's fast reading of FETCH responses (backends/imap/recent_rows.py, wire.stream_fetch)
against a real Dovecot: it gives exactly the rows the general path (imapclient's parser and the
MIME helpers) gives, for hostile headers too; the trace shows a bulk read's first responses and
then their count; a failure while a FETCH streams leaves the connection usable; the cache of the
previous format is rebuilt with a note."""

from __future__ import annotations

import imaplib
import re
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mailtriage.backends import mime_dates, mime_header_text, mime_headers, mime_ids
from mailtriage.backends.imap import protocol, recent, recent_rows, recent_threads, summary_cache, wire
from mailtriage.backends.imap.headers import mime_synthetic_id
from mailtriage.backends.imap.source import ImapSource
from mailtriage.core import cache_file
from mailtriage.core.trace import TRACE
from tests.imap.conftest import make_mail

LIST = "security@example.org"
NOW = datetime.now(timezone.utc).replace(microsecond=0)
SINCE = NOW - timedelta(days=30)
NEVER = re.compile(rb"(?!)", re.MULTILINE)


@pytest.fixture
def source(account, cache):
    src = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=account)
    yield src
    src.close()


def raw(*headers: str, body: str = "Body\r\n") -> bytes:
    return ("\r\n".join(headers) + "\r\n\r\n" + body).encode("utf-8", "surrogateescape")


def hostile_mail(seed) -> None:
    """Headers of every awkward shape the listing reads, arriving over the last days."""
    mails = [
        raw("From: Plain <plain@example.net>", f"To: {LIST}", "Subject: Plain report",
            "Date: Tue, 01 Dec 2026 10:00:00 +0000", "Message-ID: <plain@x>"),
        raw("From: Folded <folded@example.net>", f"To: {LIST}", "Subject: A long\r\n subject, folded",
            "Date: Tue, 1 Dec 2026 10:00:00 +0530", "Message-ID: <folded@x>", "References: <plain@x>",
            "In-Reply-To: <plain@x>"),
        raw("From: =?utf-8?q?Caf=C3=A9?= <cafe@example.net>", f"Cc: {LIST}", "To: someone@example.org",
            "Subject: =?utf-8?b?w6l0w6k=?= report", "Date: Tue, 01 Dec 2026 10:00:00 -0000 (UTC)",
            "Message-ID: <encoded@x>"),
        raw("From: No Id <noid@example.net>", f"To: {LIST}", "Subject: Without an ID",
            "Date: 31 Feb 2026 10:00:00 +0000", "References: <plain@x>"),
        raw("from: lower <lower@example.net>", f"to: {LIST}", "subject: lower-case names",
            "date: Tue, 01 Dec 26 10:00:00 +0000", "message-id: <lower@x>", "Subject: second subject"),
        raw("From: Spaced <spaced@example.net>", f"To: {LIST}", "Subject : spaced name",
            "Date: Tue, 01 Dec 2026 25:00:00 +0000", "Message-ID: <spaced@x>"),
        raw("From: List-Id only <lid@example.net>", "To: other@example.org", "List-Id: <security.example.org>",
            "Subject: Archived copy", "Message-ID: <listid@x>", "In-Reply-To: <folded@x>"),
        raw("From: Off list <off@example.net>", "To: other@example.org", "Subject: Private",
            "Date: Tue, 01 Dec 2026 10:00:00 +2399", "Message-ID: <private@x>"),
    ]
    zones = [timezone.utc, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))]
    for n, mail in enumerate(mails):
        seed("INBOX", mail, flags=(b"\\Seen",) if n % 2 else (),
             when=(NOW - timedelta(days=3, hours=n)).astimezone(zones[n % 3]))
    latin = ("From: Latin <latin@example.net>\r\nTo: security@example.org\r\nSubject: caf\xe9 cr\xe8me\r\n"
             "Message-ID: <latin@x>\r\n\r\nBody\r\n").encode("latin-1")
    seed("INBOX", latin, when=NOW - timedelta(days=2))


def walked_rows(source) -> list[tuple]:
    conn = source.mailbox.conn
    state = conn.reselect("INBOX")
    return recent.walk(conn, state, SINCE, None, None).rows


def test_the_fast_reading_gives_the_rows_the_general_parsers_give(source, seed, monkeypatch):
    hostile_mail(seed)
    for n in range(30):  # plain ones too: most of a real folder
        seed("INBOX", make_mail(100 + n, subject=f"Report {n}", message_id=f"<p{n}@x>"),
             when=NOW - timedelta(hours=30 - n))
    fast = walked_rows(source)
    by_id = {r[summary_cache.MESSAGE_ID]: r for r in fast}
    # The shapes were read as the MIME helpers read them.
    assert by_id["<folded@x>"][summary_cache.SUBJECT] == "A long subject, folded"
    assert by_id["<folded@x>"][summary_cache.SENT] == "2026-12-01T10:00:00+05:30"
    assert by_id["<encoded@x>"][summary_cache.SENDER_NAME] == "Café"
    assert by_id["<lower@x>"][summary_cache.SUBJECT] == "lower-case names"
    assert any(r[summary_cache.SYNTHETIC] and r[summary_cache.MESSAGE_ID].startswith("<synthetic-") for r in fast)
    # The general path: imapclient's parser for every response, mime_headers.header_fields for every
    # block, imapclient's date parser for every INTERNALDATE.
    for name in ("_FETCH_COMMON", "_FETCH_HEAD", "_FIELD_NAME", "_INTERNALDATE", "_USUAL_INTERNALDATE",
                 "_USUAL_DATE", "_BRACKETED_ID"):
        monkeypatch.setattr(recent_rows, name, NEVER)
    general = walked_rows(source)
    assert len(fast) == 39
    assert fast == general
    assert recent_threads.summaries(fast, "imap") == recent_threads.summaries(general, "imap")


def general_row(uid: int, seen: bool, arrived: float | None, block: bytes) -> tuple:
    """A row as the MIME helpers alone make it (no fast path, nothing remembered)."""
    fields = mime_headers.header_fields(block)
    get = fields.get
    message_id = mime_ids.extract_msgid(get(b"message-id"))
    synthetic = message_id is None
    if synthetic:
        message_id = mime_synthetic_id(block)
    sender = mime_header_text.parse_address(get(b"from"))
    sent = mime_dates.parse_date(get(b"date"))
    listed = b" ".join([v for k, v in fields.items() if k in (b"to", b"cc", b"list-id", b"list-post")]).lower()
    in_reply_to = mime_ids.extract_msgid(get(b"in-reply-to"), reference=True)  # "<yes>" is no ID
    return (message_id, mime_ids.extract_msgids(get(b"references")), in_reply_to, synthetic,
            uid, mime_header_text.decode_header_text(get(b"subject"))[0], sender.name, sender.email, arrived, seen, listed,
            sent.isoformat() if sent is not None else None)


_NAMES = st.sampled_from(["From", "from", "FROM", "To", "Cc", "cc", "Subject", "subject", "Date", "Message-ID",
                          "message-id", "References", "In-Reply-To", "List-Id", "List-Post", "X-Other", "Subject ",
                          " Subject", "", "Fr\xf6m", "Re:ply"])
_VALUE_PARTS = st.sampled_from([
    "", " ", "\t", "<a@x>", "<b@x>", "<a@x> <b@x>", "<yes>", "bare@x.example", "<a@x>,<c@y>", "Name <n@x.example>",
    "=?utf-8?q?Caf=C3=A9?=", "caf\xe9", "\u20ac", "Tue, 01 Dec 2026 10:00:00 +0000", "1 Dec 2026 23:59:59 -0000",
    "Mon, 31 Feb 2026 10:00:00 +0530", "Tue, 01 Dec 2026 24:00:00 +0000", "Tue, 01 Dec 2026 10:00:00 +2399",
    "security@example.org", "<security.example.org>", "Re: report", "\r\n folded", "\n\tfolded", "\r", "\n", ":",
])
_LINES = st.lists(st.tuples(_NAMES, st.lists(_VALUE_PARTS, max_size=3).map("".join)), max_size=9)


def _block(lines: list[tuple[str, str]], end: str) -> bytes:
    return ("".join(f"{name}:{value}\r\n" for name, value in lines) + end).encode("utf-8", "surrogateescape")


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(_LINES, st.sampled_from(["\r\n", "", "\n", "\r\n\r\n"])), min_size=1, max_size=4))
@example([([("From", " Plain <plain@example.net>"), ("Subject", " Report"), ("To", " security@example.org"),
            ("Date", " Tue, 01 Dec 2026 10:00:00 +0000"), ("Message-ID", " <p@x>"), ("References", " <a@x> <a@x>"),
            ("In-Reply-To", " <a@x>"), ("List-Id", " <security.example.org>"), ("To", " second@example.org")],
           "\r\n")])
@example([([("Message-ID", " <a@x>")], "\r\n"), ([("References", "\t<a@x> <b@x>"), ("In-Reply-To", "<a@x>"),
                                                   ("Cc", " \t Security@Example.org ")], "\r\n")])
def test_a_row_is_what_the_mime_helpers_make_of_its_header_block(blocks):
    maker = recent_rows.RowMaker()  # one maker for every block: what it remembers must not change a row
    for n, (lines, end) in enumerate(blocks):
        block = _block(lines, end)
        assert maker.row(n, n % 2 == 0, 1.5 * n, block) == general_row(n, n % 2 == 0, 1.5 * n, block)


_DATES = st.builds(
    lambda day_name, day, month, year, clock, zone, tail: f"{day_name}{day} {month} {year} {clock}{zone}{tail}".encode(),
    st.sampled_from(["", "Tue, ", "tue,", "Mon ", "  "]),
    st.sampled_from(["1", "01", "31", "29", "0", "32", "7"]),
    st.sampled_from(["Jan", "feb", "FEB", "Febr", "Xyz", "Dec"]),
    st.sampled_from(["2026", "0000", "1999", "26", "9999"]),
    st.sampled_from(["10:00:00", "9:05", "23:59:59", "24:00:00", "10:60:00", "10:00:60", "1:2:3"]),
    st.sampled_from([" +0000", " -0000", " +0530", " -0800", " +2359", " +2399", " -2400", "", " GMT", " +01"]),
    st.sampled_from(["", " (PST)", "  ", "\r\n", " junk"]),
)


@settings(max_examples=400, deadline=None)
@given(_DATES)
@example(b"Tue, 01 Dec 2026 10:00:00 +0000")
@example(b"29 Feb 2024 23:59:59 -0000")
@example(b"29 Feb 2023 23:59:59 +0100")
def test_sent_dates_are_what_parse_date_gives(value):
    expected = mime_dates.parse_date(value)
    assert recent_rows.RowMaker().sent(value) == (expected.isoformat() if expected else None)


_ARRIVALS = st.builds(
    lambda day, month, year, clock, zone: f"{day}-{month}-{year} {clock} {zone}".encode(),
    st.sampled_from(["01", " 1", "31", "30", "00", "29"]),
    st.sampled_from(["Jan", "Feb", "feb", "Xyz"]),
    st.sampled_from(["2026", "2024", "0099", "1969"]),
    st.sampled_from(["10:00:00", "23:59:59", "24:00:00", "10:61:00", "00:00:60"]),
    st.sampled_from(["+0000", "-0000", "+0530", "-0800", "+2359", "+0099", "-2500"]),
)


@settings(max_examples=300, deadline=None)
@given(_ARRIVALS)
@example(b"01-Dec-2026 10:00:00 +0000")
def test_arrival_times_are_what_imapclient_gives(value):
    assert recent_rows.RowMaker().arrival(value) == recent_rows._slow_arrival(value)


def test_a_bulk_listing_traces_its_first_fetch_responses_then_their_count(account, cache, seed):
    for n in range(12):
        seed("INBOX", make_mail(n, subject=f"Report {n}", message_id=f"<t{n}@x>"), when=NOW - timedelta(hours=20 - n))
    lines: list[tuple[str, str]] = []
    stop = TRACE.subscribe(lambda line: lines.append((line.direction, line.text)))
    src = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=account)
    try:
        assert len(src.list_recent_threads(LIST, SINCE)) == 12
    finally:
        stop()
        src.close()
    fetched = [text for direction, text in lines if direction == "<" and re.match(r"\* \d+ FETCH ", text)]
    assert len(fetched) == 3, fetched  # the first three, one by one
    assert any("9 more FETCH responses, not shown one by one (12 in all" in text for _, text in lines), lines
    sent = [text for direction, text in lines if direction == ">"]
    fetch_tag = next(text.split()[0] for text in sent if "FETCH" in text and "HEADER.FIELDS" in text)
    assert any(text.startswith(f"{fetch_tag} OK") for direction, text in lines if direction == "<")  # completion shown


def test_a_failure_while_a_fetch_streams_leaves_the_connection_usable(source, seed):
    for n in range(6):
        seed("INBOX", make_mail(n, subject=f"Report {n}", message_id=f"<s{n}@x>"), when=NOW - timedelta(hours=9 - n))
    conn = source.mailbox.conn
    conn.reselect("INBOX")
    batches: list[int] = []

    def consume(data: list) -> None:
        batches.append(len(data))
        raise ValueError("a parser bug")

    with pytest.raises(ValueError, match="a parser bug"):
        conn.call("FETCH", lambda c: protocol.fetch_stream(c, "1:*", recent_rows.RECENT_ITEMS, consume, uid=False,
                                                           batch=4))
    assert batches == [4]  # handed over once, then the rest was read and dropped
    # The session is in step: the next commands get their own answers.
    assert conn.call("NOOP", lambda c: c.noop())
    got: list = []
    conn.call("FETCH", lambda c: protocol.fetch_stream(c, "1:*", recent_rows.RECENT_ITEMS, got.extend, uid=False,
                                                       batch=4))
    rows = recent_rows.parse_rows(got, recent_rows.RowMaker(), uid=False)
    assert sorted(r[summary_cache.MESSAGE_ID] for r in rows.values()) == [f"<s{n}@x>" for n in range(6)]


def test_a_cache_of_the_previous_format_is_rebuilt_with_a_note(source, account, seed, cache):
    seed("INBOX", make_mail(1, subject="Current", message_id="<c1@x>"), when=NOW - timedelta(hours=2))
    expected = [(t.root_message_id, t.subject) for t in source.list_recent_threads(LIST, SINCE)]
    summary_cache.flush_all()  # written a moment after the listing
    (path,) = sorted((cache / "imap").glob("*.cache"))
    state, _ = summary_cache.read_file(path)
    # What version 2 wrote: rows keyed by UID, the UID first, a ghost a version-3 reader must never show.
    ghost = (max(state.rows), "<ghost@x>", (), None, False, "GHOST of version 2", "G", "g@x", NOW.timestamp(), False,
             LIST.encode(), None)
    cache_file.write(path, summary_cache.KIND, 2, (state.uidvalidity, state.highestmodseq, state.uidnext, state.exists,
                                                    state.floor_uid, state.complete_since, {ghost[0]: ghost}))
    notes: list[str] = []
    stop = TRACE.subscribe(lambda line: notes.append(line.text) if line.direction == "!" else None)
    src = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=account)
    try:
        assert [(t.root_message_id, t.subject) for t in src.list_recent_threads(LIST, SINCE)] == expected
    finally:
        stop()
        src.close()
    assert any("written by another version" in n and "v2" in n for n in notes), notes
    rebuilt, why = summary_cache.read_file(path)
    assert why is None and summary_cache.VERSION == 5
    assert [r[summary_cache.MESSAGE_ID] for r in rebuilt.rows.values()] == ["<c1@x>"]


def test_streamed_fetch_responses_are_what_imaplib_reads(source, seed):
    # Responses with one literal, with two, and literals whose text ends like a literal's announcement.
    seed("INBOX", make_mail(1, subject="ends like a literal {12}", message_id="<l1@x>"), when=NOW - timedelta(hours=3))
    seed("INBOX", make_mail(2, subject="}", message_id="<l2@x>", extra="X-Note: {3}"), when=NOW - timedelta(hours=2))
    seed("INBOX", make_mail(3, subject="plain", message_id="<l3@x>"), when=NOW - timedelta(hours=1))
    conn = source.mailbox.conn
    conn.reselect("INBOX")
    two = ["UID", "BODY.PEEK[HEADER.FIELDS (SUBJECT)]", "FLAGS", "BODY.PEEK[HEADER.FIELDS (X-NOTE)]"]
    for items, literals in ((recent_rows.RECENT_ITEMS, 3), (two, 6), (["UID", "FLAGS"], 0)):
        streamed: list = []
        conn.call("FETCH", lambda c: protocol.fetch_stream(c, "1:*", items, streamed.extend, uid=False, batch=2))
        typ, expected = conn.call("FETCH", lambda c: c._imap.fetch("1:*", "(" + " ".join(items) + ")"))
        assert typ == "OK"
        assert streamed == expected
        assert len([e for e in streamed if type(e) is tuple]) == literals
    assert any(b"{12}" in e[1] for e in streamed_with(conn, recent_rows.RECENT_ITEMS) if type(e) is tuple)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([b"{", b"}", b"0", b"12", b" ", b"a", b"\xd9\xa1", b"\r", b"-", b"+"]),
                max_size=8).map(b"".join))
@example(b"5 123}")
@example(b"12}")
@example(b"BODY[HEADER.FIELDS (SUBJECT)] {12{34}")
def test_a_literal_announcement_is_read_as_imaplib_reads_it(line):
    found = imaplib.Literal.match(line)
    assert wire._literal_size(line) == (int(found.group("size")) if found else None)


def streamed_with(conn, items) -> list:
    got: list = []
    conn.call("FETCH", lambda c: protocol.fetch_stream(c, "1:*", items, got.extend, uid=False))
    return got


def test_rows_of_separate_reads_share_their_texts():
    """Issue 39: a poll reads its new rows with a RowMaker of its own, so in a storm every poll's
    rows held their own copies of the senders, subjects and the Message-IDs their References
    name (a reply's reference is the root's ID again): rows grew faster than a fresh start's."""
    root = b"Message-ID: <root-1@example.org>\r\nSubject: Report\r\nFrom: Ann <ann@example.org>\r\n\r\n"
    reply = (b"Message-ID: <reply-1@example.org>\r\nReferences: <root-1@example.org>\r\n"
             b"In-Reply-To: <root-1@example.org>\r\nSubject: Report\r\nFrom: Ann <ann@example.org>\r\n\r\n")
    sc = summary_cache
    first = recent_rows.RowMaker().row(1, True, 1.0, root)  # the walk of the window
    later = recent_rows.RowMaker().row(2, True, 2.0, reply)  # a poll's read, later
    assert later[sc.REFERENCES][0] is first[sc.MESSAGE_ID]
    assert later[sc.IN_REPLY_TO] is first[sc.MESSAGE_ID]
    assert later[sc.SENDER_EMAIL] is first[sc.SENDER_EMAIL] and later[sc.SENDER_NAME] is first[sc.SENDER_NAME]
    assert later[sc.SUBJECT] is first[sc.SUBJECT]
