"""Issue 33, the smaller parsing items, on files (mbox, Maildir, .eml): raw 8-bit CJK and UTF-7
subjects, message/external-body parts, odd From addresses and the mbox separator's blank line."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from mailtriage.backends.mbox import MboxSource
from mailtriage.backends.mime import parse_message
from mailtriage.backends.mime_header_text import decode_header_text
from tests.mbox.mboxes import write_eml_folder, write_maildir, write_mbox

SINCE = datetime(2000, 1, 1, tzinfo=timezone.utc)
WRITERS = {"mbox": lambda root, msgs: write_mbox(root / "a.mbox", msgs),
           "maildir": lambda root, msgs: write_maildir(root / "md", msgs),
           "eml": lambda root, msgs: write_eml_folder(root / "eml", msgs)}


def source_of(tmp_path: Path, kind: str, messages: list[bytes]) -> MboxSource:
    return MboxSource("archive", {"path": str(WRITERS[kind](tmp_path, messages))})


# -- raw 8-bit GB2312 and UTF-7 subjects ----------------------------------------------------------

GB_SUBJECT = "漏洞报告：远程代码执行"
MULTIPART_GB = (b"From: a@example.cn\nMessage-ID: <gb@example.cn>\nDate: Tue, 02 Jan 2024 10:00:00 +0800\n"
                b"Subject: " + GB_SUBJECT.encode("gb2312") + b"\nMIME-Version: 1.0\n"
                b"Content-Type: multipart/mixed; boundary=b\n\n--b\n"
                b"Content-Type: text/plain; charset=gb2312\n\n" + "正文".encode("gb2312") + b"\n--b--\n")
UNDECLARED_GB = (b"From: a@example.cn\nMessage-ID: <gb2@example.cn>\nDate: Tue, 02 Jan 2024 10:00:00 +0800\n"
                 b"Subject: " + GB_SUBJECT.encode("gb2312") + b"\n\nbody\n")


@pytest.mark.parametrize("raw", [MULTIPART_GB, UNDECLARED_GB], ids=["multipart", "no-charset"])
@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_a_raw_gb2312_subject_without_a_top_level_charset_reads_as_chinese(tmp_path, cache, kind, raw):
    source = source_of(tmp_path, kind, [raw])
    (thread,) = source.list_recent_threads(None, SINCE)
    assert thread.subject == GB_SUBJECT
    assert source.read_thread(thread.thread_id).messages[0].subject == GB_SUBJECT
    assert parse_message(raw).subject == GB_SUBJECT


def test_latin_1_text_is_not_taken_for_cjk():
    text, notes = decode_header_text("Résumé für Café".encode("latin-1"))
    assert text == "Résumé für Café"
    assert any("windows-1252" in n for n in notes), notes


UTF7 = (b"From: a@example.net\nMessage-ID: <u7@example.net>\nDate: Tue, 02 Jan 2024 10:00:00 +0000\n"
        b"Subject: x +AD4- y, Gr+APwA3w-e\nContent-Type: text/plain; charset=utf-7\n\n"
        + "Grüße".encode("utf-7") + b"\n")


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_a_utf7_subject_of_a_utf7_message_is_decoded(tmp_path, cache, kind):
    assert b"+AD4-" in UTF7
    source = source_of(tmp_path, kind, [UTF7])
    (thread,) = source.list_recent_threads(None, SINCE)
    assert thread.subject == "x > y, Grüße"
    assert source.read_thread(thread.thread_id).messages[0].subject == "x > y, Grüße"


def test_a_plus_in_an_ascii_subject_stays_when_the_body_is_not_utf7():
    assert decode_header_text(b"C++ +AD4- patch", "utf-8")[0] == "C++ +AD4- patch"
    assert decode_header_text(b"C++ patch", "utf-7")[0] == "C++ patch"


# -- message/external-body ------------------------------------------------------------------------

EXTERNAL = b"""From: a@example.net
To: security@example.org
Subject: PoC over FTP
Message-ID: <ext@example.net>
Date: Tue, 02 Jan 2024 10:00:00 +0000
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary=b

--b
Content-Type: text/plain

See the attached PoC.
--b
Content-Type: message/external-body; access-type=URL;
 URL="http://poc.example/\x1b[31mpoc.bin"
Content-Disposition: attachment; filename="poc.bin"

Content-Type: application/octet-stream
Content-Disposition: attachment; filename="poc.bin"
Content-ID: <id1@example.net>

--b
Content-Type: text/x-python; name="real.py"
Content-Disposition: attachment; filename="real.py"

print("a real attachment")
--b--
"""


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_an_external_body_is_an_inert_reference_not_an_empty_attachment(tmp_path, cache, kind):
    source = source_of(tmp_path, kind, [EXTERNAL])
    (thread,) = source.list_recent_threads(None, SINCE)
    (message,) = source.read_thread(thread.thread_id).messages
    # Only the real attachment is listed (and saved): no 0-byte poc.bin.
    assert [(a.filename, a.size) for a in message.attachments] == [("real.py", 26)]
    assert source.attachment(message.backend_ref, 0) == b'print("a real attachment")'
    (reference,) = [p for p in message.text_parts if p.content_type == "message/external-body"]
    assert "external reference" in reference.text and "not fetched" in reference.text
    assert "access-type: URL" in reference.text
    assert "http://poc.example/\x1b[31mpoc.bin" in reference.text  # the data as sent; sinks make it inert
    assert "filename: poc.bin" in reference.text


# -- an escaped "@" in a From address ---------------------------------------------------------------

@pytest.mark.parametrize("raw_from", [b"<Postmaster\\@example.com@xxx.com>", b"Postmaster\\@example.com@xxx.com",
                                      b"Mail Delivery <Postmaster\\@example.com@xxx.com>"])
def test_an_escaped_at_in_a_from_never_gives_a_wrong_domain(raw_from):
    from mailtriage.backends.mime_header_text import parse_address

    address = parse_address(raw_from)
    # policy.default finds no valid address here: the raw text is shown (as a name, through the
    # inert sinks), and no address is made up from a piece of it.
    assert address.email == ""
    assert "Postmaster\\@example.com@xxx.com" in address.name


def test_quoted_and_plain_addresses_still_read_as_policy_default_reads_them():
    from mailtriage.backends.mime_header_text import parse_address, parse_address_list

    assert parse_address(b'"Postmaster@example.com"@xxx.com').email == '"Postmaster@example.com"@xxx.com'
    assert parse_address(b'"Post\\"master" <p@example.com>').email == "p@example.com"
    assert [a.email for a in parse_address_list(b"a@example.com, <x\\@y@z.example>")][:1] == ["a@example.com"]
    assert all(a.email != "z.example" for a in parse_address_list(b"a@example.com, <x\\@y@z.example>"))


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_a_listed_sender_with_an_escaped_at_is_not_the_trailing_domain(tmp_path, cache, kind):
    raw = (b"From: <Postmaster\\@example.com@xxx.com>\nMessage-ID: <esc@example.net>\n"
           b"Date: Tue, 02 Jan 2024 10:00:00 +0000\nSubject: bounce\n\nbody\n")
    source = source_of(tmp_path, kind, [raw])
    (thread,) = source.list_recent_threads(None, SINCE)
    assert thread.sender.email == ""
    assert "Postmaster\\@example.com@xxx.com" in thread.sender.name
    (message,) = source.read_thread(thread.thread_id).messages
    assert message.sender == thread.sender


# -- the mbox separator's blank line ---------------------------------------------------------------

def _poc(n: int, body: bytes, message_id: bool = True) -> bytes:
    mid = b"Message-ID: <poc%d@example.net>\n" % n if message_id else b""
    return (b"From: a@example.net\n" + mid + b"Date: Tue, 0%d Jan 2024 10:00:00 +0000\nSubject: poc %d\n" % (n, n)
            + b"Content-Type: application/x-sh\nContent-Disposition: attachment; filename=poc.sh\n\n" + body)


@pytest.mark.parametrize("eol", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("message_id", [True, False], ids=["with-id", "synthetic-id"])
def test_the_blank_line_before_a_from_line_belongs_to_the_separator(tmp_path, cache, eol, message_id):
    bodies = [b"#!/bin/sh\necho one\n", b"ends with its own blank line\n\n", b"#!/bin/sh\necho last\n"]
    envelope = b"From a@example.net Tue Jan  2 10:00:00 2024\n"
    data = b"".join(envelope + _poc(n + 1, body, message_id) + b"\n" for n, body in enumerate(bodies))
    path = tmp_path / "a.mbox"
    path.write_bytes(data.replace(b"\n", eol))
    source = MboxSource("archive", {"path": str(path)})
    threads = source.list_recent_threads(None, SINCE)
    assert len(threads) == 3
    saved = {}
    for thread in threads:
        (message,) = source.read_thread(thread.thread_id).messages
        saved[message.subject] = source.attachment(message.backend_ref, 0)
    assert saved == {f"poc {n + 1}": body.replace(b"\n", eol) for n, body in enumerate(bodies)}


# -- search rows read raw 8-bit subjects as the listing and the read do ------------------------------

KOI8_SUBJECT = "Отчёт об уязвимости в ядре"
KOI8 = (b"From: " + "Иван Петров".encode("koi8-r") + b" <ivan@example.ru>\nMessage-ID: <koi8@example.ru>\n"
        b"Date: Tue, 02 Jan 2024 10:00:00 +0000\nSubject: " + KOI8_SUBJECT.encode("koi8-r")
        + b"\nMIME-Version: 1.0\nContent-Type: text/plain; charset=koi8-r\n\n" + "Тело".encode("koi8-r") + b"\n")


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_a_search_finds_and_shows_a_raw_8bit_subject_as_the_listing_does(tmp_path, cache, kind):
    from mailtriage.backends.search import SearchField, SearchRequest

    source = source_of(tmp_path, kind, [KOI8])
    (thread,) = source.list_recent_threads(None, SINCE)
    assert thread.subject == KOI8_SUBJECT
    (hit,) = source.search(SearchRequest("уязвимости", field=SearchField.SUBJECT)).items
    assert (hit.subject, hit.sender.name) == (KOI8_SUBJECT, "Иван Петров")
    (hit,) = source.search(SearchRequest("Петров", field=SearchField.FROM)).items
    assert hit.subject == KOI8_SUBJECT
