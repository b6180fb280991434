"""Search of a local archive (issue 14 §4): a scan of the mbox index for subjects and senders,
bodies read only for candidate messages and at most a bound of them, newest first, paged."""

from __future__ import annotations

from datetime import datetime, timezone

from mailtriage.backends.mbox import MboxSource, _id_text
from mailtriage.backends.mbox_index import _sender
from mailtriage.backends.mbox_search import search_archive
from mailtriage.backends.search import SearchField, SearchRequest
from tests.mbox.mboxes import write_maildir, write_mbox


def msg(n: int, subject: str, sender: str = "Ana <ana@example.com>", body: str = "hello",
        irt: str | None = None) -> bytes:
    head = (f"From: {sender}\nTo: security@example.org\nSubject: {subject}\n"
            f"Date: Thu, {n:02d} Oct 2026 09:00:00 +0000\nMessage-ID: <m{n}@example.com>\n")
    if irt:
        head += f"In-Reply-To: {irt}\nReferences: {irt}\n"
    return (head + f"\n{body}\n").encode("utf-8")


def source_for(path) -> MboxSource:
    return MboxSource("mbox", {"path": str(path), "parallel": False})


def corpus():
    return [msg(1, "Heap overflow in parser", body="crafted input"),
            msg(2, "Re: Heap overflow in parser", "Priya <priya@frob.example>", "we confirm it", irt="<m1@example.com>"),
            msg(3, "=?utf-8?q?Gr=C3=B6=C3=9Fen=C3=BCberlauf?=", "Bob <bob@example.net>", "Überlauf im Parser"),
            msg(4, "Question", "Overflow Finder <finder@example.net>", "no match here"),
            msg(5, "Unrelated", body="the overflow is only in this body")]


def subjects(page):
    return [s.subject for s in page.items]


def test_fields_newest_first_each_hit_names_its_thread(tmp_path):
    source = source_for(write_mbox(tmp_path / "list.mbox", corpus()))
    assert source.features.server_search
    assert subjects(source.search(SearchRequest("overflow", field=SearchField.SUBJECT))) == [
        "Re: Heap overflow in parser", "Heap overflow in parser"]
    assert subjects(source.search(SearchRequest("overflow", field=SearchField.FROM))) == ["Question"]
    assert subjects(source.search(SearchRequest("overflow", field=SearchField.BODY))) == ["Unrelated"]
    page = source.search(SearchRequest("overflow"))
    assert subjects(page) == ["Unrelated", "Question", "Re: Heap overflow in parser", "Heap overflow in parser"]
    reply = page.items[2]
    assert reply.thread_id.value == "<m1@example.com>" and reply.message_count == 1  # the thread, by its root
    assert subjects(source.search(SearchRequest("größenüberlauf", field=SearchField.SUBJECT))) == ["Größenüberlauf"]
    assert subjects(source.search(SearchRequest("überlauf", field=SearchField.BODY))) == ["Größenüberlauf"]


def test_since_paging_and_hostile_text(tmp_path):
    source = source_for(write_maildir(tmp_path / "md", corpus()))
    recent = source.search(SearchRequest("overflow", since=datetime(2026, 10, 3, tzinfo=timezone.utc)))
    assert subjects(recent) == ["Unrelated", "Question"]
    first = source.search(SearchRequest("overflow", page_size=3))
    second = source.search(SearchRequest("overflow", page_size=3, page=1))
    assert first.total == 4 and first.more and subjects(second) == ["Heap overflow in parser"] and not second.more
    assert source.search(SearchRequest('"*" {5}\r\n.*')).total == 0  # plain text, no pattern


def test_the_body_search_reads_a_bounded_number_of_messages(tmp_path):
    source = source_for(write_mbox(tmp_path / "list.mbox", corpus()))
    read = []
    original = source._read_message
    source._read_message = lambda index, row: read.append(row) or original(index, row)
    page = search_archive(source, SearchRequest("overflow", field=SearchField.BODY), sender_of=_sender, id_text=_id_text, body_limit=2)
    assert len(read) == 2 and page.notes and "newest 2 of 5" in page.notes[0]
    assert subjects(page) == ["Unrelated"]  # the newest two were read; the match was among them
    read.clear()
    source.search(SearchRequest("overflow", field=SearchField.SUBJECT))
    assert read == []  # subjects and senders come from the index: no message read
