"""Property tests (hypothesis) of the mbox splitter and the MIME decoder (issue 12).

Nothing raises, and no text disappears without a note: every byte of an mbox
belongs to a listed message, an mboxrd round trip gives back each message's text,
and every ASCII word of a text part survives decoding in any charset unless a
note says why.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pathlib import Path

from mailtriage.backends.contract import SourceOrigin
from mailtriage.backends.mbox import MboxSource
from mailtriage.backends.mbox_scan import index_mbox
from mailtriage.backends.mime import parse_message
from tests.mbox.test_realworld import write_mboxrd

LONG_AGO = datetime(1900, 1, 1, tzinfo=timezone.utc)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# Lines an mbox body really holds, the tricky ones often.
LINE = st.one_of(
    st.sampled_from([b"From the start", b">From quoted", b">>From twice", b"From: a@b.example", b"From x Mon Jan  1 00:00:00 2024",
                     b"Subject: looks like a header", b"", b"\r", b" continued", b"--boundary", b"=?utf-8?q?x?="]),
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
    st.text(max_size=40).map(lambda t: t.replace("\n", "").encode("utf-8")),
)
HEADERS = st.lists(st.sampled_from([
    b"From: Reporter <reporter@example.org>", b"Subject: fuzz", b"Date: Tue, 02 Jan 2024 10:00:00 +0000",
    b"Message-ID: <fuzz@example.org>", b"In-Reply-To: <yes>", b"References: <root@example.org> <no-at>",
    b"Content-Type: text/plain; charset=utf-8", b"Content-Type: text/plain; charset=gb2312",
    b"Content-Transfer-Encoding: base64", b"Content-Length: 12", b"From\n : <folded@example.org>",
    b"junk line", b"Subject: =?utf-8?B?w6k=?= =?utf-8?B?w6k=?="]), max_size=6)


@st.composite
def messages(draw):
    head = b"\n".join(draw(HEADERS))
    body = b"\n".join(draw(st.lists(LINE, max_size=8)))
    return head + b"\n\n" + body + b"\n"


@FUZZ
@given(st.lists(messages(), min_size=1, max_size=6), st.binary(max_size=300))
# Found by fuzzing: a Content-Length that ends mid-line, in a "From " line that the
# 256-byte chunk cuts. The length does not end at a message boundary, so it is not
# trusted and the From_ line after it starts a message, whatever the chunk size.
@example(mails=[b"From: Reporter <reporter@example.org>\n" * 5 + b"Content-Length: 12\n\nFrom x Mon Jan  1 00:00:00 2024\n"],
         noise=b"")
# Found by fuzzing: a header block longer than the 256-byte chunk, its Message-ID cut by
# the chunk's end ("<fuzz@example.or"); the block is read whole from the file.
@example(mails=[b"From: Reporter <reporter@example.org>\n" * 4 + b"Content-Type: text/plain; charset=gb2312\n"
                b"Message-ID: <fuzz@example.org>\n\n\n"], noise=b"")
def test_every_byte_of_an_mbox_belongs_to_a_listed_message(tmp_path_factory, mails, noise):
    path = tmp_path_factory.mktemp("fuzz") / "f.mbox"
    # Any bytes after a first From_ line: the splitter must keep all of them somewhere.
    data = b"From fuzz Mon Jan  1 00:00:00 2024\n" + b"\n".join(mails) + noise
    path.write_bytes(data)
    index = index_mbox(path, parallel=False)
    assert index.locations and index.locations[0] == 0
    assert index.ends == index.locations[1:] + [len(data)]
    assert all(a < b for a, b in zip(index.locations, index.locations[1:]))
    small = index_mbox(path, parallel=True, parallel_min_bytes=0, chunk=256)
    assert small.locations == index.locations and small.message_ids == index.message_ids
    source = MboxSource("f", {"path": str(path)}, origin=SourceOrigin(project_dir=Path(path.parent)))
    rows = source.list_recent_threads(None, LONG_AGO)
    listed = sum(r.message_count for r in rows)
    undated = sum(1 for d in index.dates if d == float("-inf"))
    assert listed + undated == len(index)
    for row in rows:
        thread = source.read_thread(row.thread_id)
        assert len(thread.messages) == row.message_count


@FUZZ
@given(st.lists(messages(), min_size=1, max_size=5))
def test_mboxrd_round_trip_keeps_every_message_and_its_text(tmp_path_factory, mails):
    path = write_mboxrd(tmp_path_factory.mktemp("rd") / "rd.mbox", mails)
    index = index_mbox(path, parallel=False)
    assert len(index) == len(mails)
    source = MboxSource("rd", {"path": str(path)}, origin=SourceOrigin(project_dir=Path(path.parent)))
    for row, raw in enumerate(mails):
        got = source._read_message(index, row)
        want = parse_message(raw, hash_body=True)
        assert got.message_id == want.message_id
        assert got.body_text.rstrip("\n") == want.body_text.rstrip("\n")


ASCII_WORD = re.compile(rb"[A-Za-z0-9]{4,}")
CHARSETS = st.sampled_from(["utf-8", "us-ascii", "iso-8859-1", "windows-1252", "koi8-r", "shift_jis", "gb2312",
                            "big5", "euc-kr", "utf-7", "x-unknown", "bogus-charset", ""])


@FUZZ
@given(CHARSETS, st.sampled_from(["7bit", "8bit", "quoted-printable", "base64", "x-weird"]),
       st.lists(st.one_of(st.binary(max_size=30), st.from_regex(rb"[A-Za-z0-9]{4,12}", fullmatch=True)), max_size=10),
       st.sampled_from(["text/plain", "text/html"]))
def test_mime_decoder_never_raises_and_loses_no_word_silently(charset, cte, chunks, content_type):
    body = b" ".join(chunks)
    if cte == "base64":
        import base64

        payload = base64.encodebytes(body)
    elif cte == "quoted-printable":
        import quopri

        payload = quopri.encodestring(body)
    else:
        payload = body
    raw = (b"From: fuzz@example.org\nSubject: fuzz\nMessage-ID: <m@example.org>\n"
           b"Content-Type: " + content_type.encode() + b"; charset=" + charset.encode() + b"\n"
           b"Content-Transfer-Encoding: " + cte.encode() + b"\n\n" + payload)
    message = parse_message(raw)
    text = " ".join(message.body_text.split())
    noted = bool(message.notes) or any(p.note for p in message.text_parts)
    if content_type == "text/plain" and cte != "x-weird" and charset not in ("utf-7",):
        for word in ASCII_WORD.findall(body):
            assert word.decode() in text or noted, (word, charset, cte)


@FUZZ
@given(st.binary(max_size=2000))
def test_mime_decoder_never_raises_on_any_bytes(raw):
    message = parse_message(raw)
    assert message.message_id.startswith("<")
    parse_message(raw.replace(b"\n", b"\r\n"))
    parse_message(raw.replace(b"\n", b"\r"))
