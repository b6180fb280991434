"""Issue 33: an IMAP thread reads back with exactly the messages its listing row counts.

Keyed the way the offline backends key them (backends/thread_reconstruction.py): two
messages that share a Message-ID are two messages of one thread; a reference that is
not a Message-ID (no ``@``, git-send-email's ``<yes>``) links nothing; a message
without a Message-ID is named by the hash of its headers and body.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.imap.source import ImapSource
from tests.imap.conftest import make_mail

LIST = "security@example.org"
NOW = datetime.now(timezone.utc).replace(microsecond=0)


@pytest.fixture
def source(account):
    src = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=account)
    try:
        yield src
    finally:
        src.close()


def with_attachment(n: int, *, sender: str, message_id: str | None, name: str, extra: str = "") -> bytes:
    """A multipart report carrying one text attachment named ``name``."""
    head = [f"From: {sender}", f"To: {LIST}", f"Subject: Invoice {n}",
            f"Date: {(NOW - timedelta(hours=10 - n)).strftime('%a, %d %b %Y %H:%M:%S +0000')}"]
    if message_id:
        head.append(f"Message-ID: {message_id}")
    if extra:
        head.append(extra)
    head += ["MIME-Version: 1.0", 'Content-Type: multipart/mixed; boundary="b"', ""]
    body = ["--b", "Content-Type: text/plain", "", f"see attached, {n}", "--b",
            f'Content-Type: text/plain; name="{name}"', f'Content-Disposition: attachment; filename="{name}"', "",
            f"payload {n}", "--b--", ""]
    return "\r\n".join(head + body).encode()


def test_messages_that_share_a_message_id_all_read_back(source, seed):
    # A phishing run: one Message-ID on every copy, each from another sender with its own file.
    senders = [f"Billing {n} <billing{n}@evil{n}.example>" for n in range(3)]
    for n, sender in enumerate(senders):
        seed("INBOX", with_attachment(n, sender=sender, message_id="<invoice@evil.example>", name=f"inv{n}.txt"),
             when=NOW - timedelta(hours=10 - n))
    seed("INBOX", make_mail(7, subject="Re: Invoice", message_id="<triage@example.org>",
                            references="<invoice@evil.example>", in_reply_to="<invoice@evil.example>"),
         when=NOW - timedelta(hours=1))
    (row,) = source.list_recent_threads(LIST, NOW - timedelta(days=1))
    assert row.message_count == 4

    thread = source.read_thread(row.thread_id)
    assert len(thread.messages) == row.message_count
    assert sorted(m.sender.email for m in thread.messages) == sorted(
        ["billing0@evil0.example", "billing1@evil1.example", "billing2@evil2.example", "reporter@example.net"])
    files = {a.filename: source.attachment(m.backend_ref, i)
             for m in thread.messages for i, a in enumerate(m.attachments)}
    assert files == {f"inv{n}.txt": f"payload {n}".encode() for n in range(3)}


def test_a_reply_is_not_threaded_on_a_reference_without_at(source, seed):
    # git-send-email's leftover "In-Reply-To: <yes>" on unrelated patches.
    for n in range(3):
        seed("INBOX", make_mail(n, subject=f"[PATCH] fix {n}", message_id=f"<patch{n}@dev.example>",
                                in_reply_to="<yes>", references="<yes>"), when=NOW - timedelta(hours=5 - n))
    rows = source.list_recent_threads(LIST, NOW - timedelta(days=1))
    assert sorted(r.root_message_id for r in rows) == [f"<patch{n}@dev.example>" for n in range(3)]
    for row in rows:
        assert row.message_count == 1
        assert [m.message_id for m in source.read_thread(row.thread_id).messages] == [row.root_message_id]


def test_alerts_without_message_id_and_equal_headers_are_two_threads(source, seed):
    # Equal headers, different bodies: the offline backends hash the body too (two threads).
    for n, host in enumerate(("db1", "web3")):
        seed("INBOX", make_mail(1, message_id=None, subject="ALERT: disk full", body=f"host {host}\r\n"),
             when=NOW - timedelta(hours=2 - n))
    rows = source.list_recent_threads(LIST, NOW - timedelta(days=1))
    assert len(rows) == 2 and len({r.thread_id for r in rows}) == 2
    bodies = sorted(m.body_text.strip() for r in rows for m in source.read_thread(r.thread_id).messages)
    assert bodies == ["host db1", "host web3"]
    for row in rows:
        assert [m.message_id for m in source.read_thread(row.thread_id).messages] == [row.root_message_id]


@pytest.mark.parametrize("written", ["bare.1234@client.example", "<form-77@site.example"])
def test_a_message_id_without_brackets_or_unterminated_is_read_by_id(account, seed, written):
    # Listed as <...> (the MIME rule); a server HEADER search for "<...>" does not match it.
    seed("INBOX", make_mail(1, subject="Odd ID", message_id=written), when=NOW - timedelta(hours=1))
    reader = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=replace(account, cache_summaries=False))
    try:
        thread = reader.read_thread(ThreadId("msgid", "<" + written.strip("<>") + ">"))
        assert [m.subject for m in thread.messages] == ["Odd ID"]
    finally:
        reader.close()
