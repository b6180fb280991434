"""Search of a local archive (mbox, Maildir, .eml folder): a scan of its index.

Subjects and senders are in the index (kept undecoded; decoded here per row), so FROM
and SUBJECT cost a pass over the index and read no message. BODY reads the candidate
messages themselves, newest first, at most :data:`BODY_SCAN_LIMIT` of them (a page says
so when it stopped there: narrow the search with ``since``). TEXT is both: a subject or
sender match, else a body match among the bounded candidates. Words match
case-insensitively, every word somewhere, as IMAP servers match.

Each result is one message, shown as the row of the thread that holds it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

from mailtriage.backends.contract import ThreadId, ThreadSummary
from mailtriage.backends.mime_header_text import decode_header_text, header_needs_charset
from mailtriage.backends.search import SearchField, SearchPage, SearchRequest, matches_words
from mailtriage.backends.thread_reconstruction import synthetic_kind

#: At most this many messages are read for a body search (newest first).
BODY_SCAN_LIMIT = 2000


NO_DATE = float("-inf")  # the index's date of a message without any usable date


def search_archive(source, request: SearchRequest, *, sender_of: Callable, id_text: Callable,
                   body_limit: int = BODY_SCAN_LIMIT) -> SearchPage:
    """One page of ``request`` over ``source`` (an ``MboxSource``), newest first.

    ``sender_of`` and ``id_text`` are the archive module's decoders of a raw sender and a
    raw Message-ID (passed in: that module imports this one)."""
    _sender, _id_text = sender_of, id_text
    source._check_list(request.list_name)
    index, groups = source._threads()
    group_of = {}
    for group in groups:
        for member in group.members:
            group_of[member] = group
    floor = request.since.timestamp() if request.since is not None else None
    dates = index.dates
    rows = [r for r in range(len(index))
            if r not in index.not_mail and (floor is None or (dates[r] != NO_DATE and dates[r] >= floor))]
    rows.sort(key=lambda r: (-dates[r], r))  # newest first; undated last
    words = request.words
    field = request.field
    found: set[int] = set()
    if field in (SearchField.SUBJECT, SearchField.FROM, SearchField.TEXT):
        for row in rows:
            if _header_match(source, index, row, field, words, _sender):
                found.add(row)
    notes: list[str] = []
    if field in (SearchField.BODY, SearchField.TEXT):
        candidates = [r for r in rows if r not in found]
        if len(candidates) > body_limit:
            notes.append(f"the body search read the newest {body_limit:,} of {len(candidates):,} messages; "
                         "narrow it with a since date to reach older ones")
            candidates = candidates[:body_limit]
        for row in candidates:
            message = source._read_message(index, row)
            if matches_words(message.body_text, words):
                found.add(row)
    matched = [r for r in rows if r in found]
    start = request.offset
    window = matched[start:start + request.page_size]
    items = tuple(_summary(source, index, group_of[r], r, _id_text, _sender) for r in window)
    method = {SearchField.SUBJECT: "a scan of the archive index (subjects)",
              SearchField.FROM: "a scan of the archive index (senders)",
              SearchField.BODY: "a read of the candidate messages' bodies",
              SearchField.TEXT: "a scan of the archive index and the candidate messages' bodies"}[field]
    return SearchPage(source.name, request, items, len(matched), start + request.page_size < len(matched),
                      method=method, searched=(str(source.path),), notes=tuple(notes))


def _charset(source, index, row: int) -> str | None:
    """The body's charset, which raw 8-bit (or UTF-7) subject and sender text is read in, as the
    listing and the read do; None (no file read) when the row's headers do not need it."""
    raw_sender = index.senders[row]
    if header_needs_charset(index.subjects[row]) or not (raw_sender or b"").isascii():
        return source._row_charset(index, row)
    return None


def _header_match(source, index, row: int, field: SearchField, words: list[str], sender_of) -> bool:
    charset = _charset(source, index, row)
    if field in (SearchField.SUBJECT, SearchField.TEXT):
        subject, _ = decode_header_text(index.subjects[row], charset)
        if matches_words(subject, words):
            return True
    if field in (SearchField.FROM, SearchField.TEXT):
        sender = sender_of(index.senders[row], charset)
        if matches_words(f"{sender.name} {sender.email}", words):
            return True
    return False


def _summary(source, index, group, row: int, id_text, sender_of) -> ThreadSummary:
    kind = synthetic_kind(source.thread_id_kind) if group.synthetic else source.thread_id_kind
    root = id_text(group.root_id)
    charset = _charset(source, index, row)
    subject, _ = decode_header_text(index.subjects[row], charset)
    sender = sender_of(index.senders[row], charset)
    date = index.dates[row]
    when = datetime.fromtimestamp(date, tz=timezone.utc) if date != NO_DATE else None
    return ThreadSummary(thread_id=ThreadId(kind, root), subject=subject, root_message_id=root, sender=sender,
                         last_activity=when, message_count=1,
                         participants=(sender.email,) if sender.email else (),
                         notes=tuple(index.notes.get(row, ())))
