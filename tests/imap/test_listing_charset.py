"""Issue 33: the IMAP listing decodes a raw 8-bit (or UTF-7) Subject and sender name as the
read path does, in the charset the message's body declares, so a row and the message it
opens show one subject. Real messages on Dovecot, listed and then read."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mailtriage.backends.imap.source import ImapSource

LIST = "security@example.org"
NOW = datetime.now(timezone.utc).replace(microsecond=0)
SINCE = NOW - timedelta(days=1)

KOI8_SUBJECT = "Отчёт об уязвимости в ядре"
KOI8_NAME = "Иван Петров"


def _raw(message_id: str, subject: bytes, sender: bytes, content_type: bytes, body: bytes) -> bytes:
    return (b"From: " + sender + b"\r\nTo: " + LIST.encode() + b"\r\nSubject: " + subject
            + b"\r\nDate: " + NOW.strftime("%a, %d %b %Y %H:%M:%S +0000").encode()
            + b"\r\nMessage-ID: " + message_id.encode() + b"\r\nMIME-Version: 1.0\r\nContent-Type: "
            + content_type + b"\r\n\r\n" + body + b"\r\n")


CASES = {
    # Cyrillic in KOI8-R: not utf-8 and not EUC-shaped, so without the body's charset it reads
    # as windows-1252 mojibake.
    "koi8-r": (_raw("<koi8@example.ru>", KOI8_SUBJECT.encode("koi8-r"),
                    KOI8_NAME.encode("koi8-r") + b" <ivan@example.ru>", b"text/plain; charset=koi8-r",
                    "Тело".encode("koi8-r")),
               KOI8_SUBJECT, KOI8_NAME),
    # An ASCII subject written in UTF-7 by a client whose body is UTF-7: "+AD4-" is ">".
    "utf-7": (_raw("<u7@example.net>", b"x +AD4- y, Gr+APwA3w-e", b"Reporter <r@example.net>",
                   b"text/plain; charset=utf-7", "Grüße".encode("utf-7")),
              "x > y, Grüße", "Reporter"),
}


@pytest.fixture
def source(account):
    src = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=account)
    try:
        yield src
    finally:
        src.close()


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_listing_decodes_the_subject_and_sender_as_the_read_does(source, seed, case):
    raw, subject, name = CASES[case]
    seed("INBOX", raw, when=NOW - timedelta(hours=1))
    (row,) = source.list_recent_threads(LIST, SINCE)
    (message,) = source.read_thread(row.thread_id).messages
    assert message.subject == subject
    assert message.sender.name == name
    assert row.subject == subject
    assert row.sender.name == name
