"""IMAP thread rows carry the undated mark (issue 33), as mbox rows do: a thread whose latest
message has no usable Date header is dated by its arrival (INTERNALDATE) and shows ``?``."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mailtriage.backends.imap.source import ImapSource

LIST = "security@example.org"
NOW = datetime.now(timezone.utc).replace(microsecond=0)
SINCE = NOW - timedelta(days=30)


def raw(*headers: str) -> bytes:
    return ("\r\n".join(headers) + "\r\n\r\nBody\r\n").encode()


@pytest.fixture
def source(account, cache):
    src = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=account)
    yield src
    src.close()


def test_a_thread_whose_latest_message_has_no_date_is_marked_undated(source, seed):
    seed("INBOX", raw("From: Dated <d@example.net>", f"To: {LIST}", "Subject: Dated",
                      f"Date: {(NOW - timedelta(days=2)):%a, %d %b %Y %H:%M:%S +0000}", "Message-ID: <dated@x>"),
         when=NOW - timedelta(days=2))
    seed("INBOX", raw("From: No date <n@example.net>", f"To: {LIST}", "Subject: No date",
                      "Message-ID: <nodate@x>"), when=NOW - timedelta(days=1))
    seed("INBOX", raw("From: Bad date <b@example.net>", f"To: {LIST}", "Subject: Bad date",
                      "Date: someday soon", "Message-ID: <baddate@x>"), when=NOW - timedelta(hours=5))
    seed("INBOX", raw("From: Reply <r@example.net>", f"To: {LIST}", "Subject: Re: Dated",
                      "Message-ID: <reply@x>", "In-Reply-To: <dated@x>", "References: <dated@x>"),
         when=NOW - timedelta(hours=1))
    for attempt in ("first", "cached"):  # the listing's own read, then the summary cache's rows
        rows = {t.subject: t for t in source.list_recent_threads(LIST, SINCE)}
        assert {s: (t.date_marker, t.date_mark) for s, t in rows.items()} == {
            "Dated": ("undated", "?"),  # its latest message (the reply) has no Date
            "No date": ("undated", "?"),
            "Bad date": ("undated", "?"),
        }, attempt
        assert all(t.last_activity is not None for t in rows.values())


def test_dated_threads_carry_no_mark(source, seed):
    seed("INBOX", raw("From: Dated <d@example.net>", f"To: {LIST}", "Subject: Dated",
                      f"Date: {(NOW - timedelta(days=2)):%a, %d %b %Y %H:%M:%S +0000}", "Message-ID: <dated@x>"),
         when=NOW - timedelta(days=2))
    (row,) = source.list_recent_threads(LIST, SINCE)
    assert (row.date_marker, row.date_mark) == ("", " ")
