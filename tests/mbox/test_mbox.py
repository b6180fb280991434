"""backends/mbox.py: the offline archive backend (mbox file, Maildir, .eml folder)."""

from __future__ import annotations

import functools
import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from benchmarks import mboxgen
from mailtriage.backends.contract import SourceOrigin
from mailtriage.backends.contract import Op, ThreadId, ThreadSummary
from mailtriage.backends.errors import BackendFailure, NotSupported, Unavailable
from mailtriage.backends.mbox import MboxSource
from mailtriage.backends.mbox_index import mbox_unquote
from mailtriage.backends.mbox_scan import index_mbox
from mailtriage.backends.mime import parse_message_headers
from mailtriage.backends.thread_reconstruction import ThreadRecord, thread_records
from tests.mbox import awkward
from tests.mbox.mboxes import from_line, snapshot, write_eml_folder, write_maildir, write_mbox

EPOCH = datetime(1970, 1, 2, tzinfo=timezone.utc)

ROOT = b"""\
From: Reporter <reporter@example.net>
To: security@example.org
Subject: Heap overflow in the frobnicator
Date: Mon, 01 Jan 2024 10:00:00 +0000
Message-ID: <root@example.net>

The report.
"""

REPLY = b"""\
From: Triager <triager@example.org>
To: reporter@example.net
Subject: Re: Heap overflow in the frobnicator
Date: Tue, 02 Jan 2024 10:00:00 +0000
Message-ID: <reply@example.org>
In-Reply-To: <root@example.net>
References: <root@example.net>

Thanks, we are looking.
"""

# Its parent <missing@example.net> is not in the archive; References start at the root.
ORPHAN_REPLY = b"""\
From: Reporter <reporter@example.net>
To: security@example.org
Subject: Re: Heap overflow in the frobnicator
Date: Wed, 03 Jan 2024 09:00:00 +0000
Message-ID: <orphan@example.net>
In-Reply-To: <missing@example.net>
References: <root@example.net>
 <missing@example.net>

Any news?
"""

# Dated before its parent (a wrong clock): read_thread must still sort by date.
EARLY_CLOCK = b"""\
From: Clockless <clock@example.com>
To: security@example.org
Subject: Re: Heap overflow in the frobnicator
Date: Sun, 31 Dec 2023 23:00:00 +0000
Message-ID: <early@example.com>
In-Reply-To: <reply@example.org>
References: <root@example.net> <reply@example.org>

Me too.
"""

NO_DATE = b"""\
From: Someone <someone@example.org>
Subject: Undated message
Message-ID: <undated@example.org>

No Date header.
"""


def corpus() -> list[bytes]:
    return [ROOT, REPLY, ORPHAN_REPLY, EARLY_CLOCK, NO_DATE, *awkward.ALL.values()]


@pytest.fixture
def archive(tmp_path) -> Path:
    lines = [from_line(when="Mon Jan  1 10:00:00 2024")] * len(corpus())
    lines[4] = from_line(when="Fri Jan  5 12:30:00 2024")  # NO_DATE: delivery time stands in
    return write_mbox(tmp_path / "security.mbox", corpus(), lines)


def source_for(path: Path, **settings) -> MboxSource:
    return MboxSource("archive", {"path": str(path), **settings}, origin=SourceOrigin(project_dir=path.parent))


# --- the reference: stdlib mailbox + full header parse ------------------------


_FIELD_START = re.compile(rb"[!-9;-~]+[ \t]*:")
_NAME_ONLY = re.compile(rb"[!-9;-~]+[ \t]*")
_CONTINUED_COLON = re.compile(rb"[ \t]+:")


def _starts_message(lines: list[bytes], at: int) -> bool:
    """The documented rule: a "From " line starts a message when a header field follows
    it (a name folded away from its colon counts) or when it ends in a clock and a year."""
    following = lines[at + 1] if at + 1 < len(lines) else b""
    if _FIELD_START.match(following):
        return True
    if _NAME_ONLY.fullmatch(following) and at + 2 < len(lines) and _CONTINUED_COLON.match(lines[at + 2]):
        return True
    return re.search(rb":\d\d \d{4}\r?$", lines[at]) is not None


def reference_messages(data: bytes) -> list[tuple[bytes, bytes]]:
    """(From_ line, message bytes) of an mbox, split line by line the slow, obvious way.

    Like ``mailbox.mbox``, but a "From " line that is body text (no header block after
    it) stays in its message, and ``>From `` quoting is undone in the body.
    """
    lines = data.split(b"\n")
    messages: list[tuple[bytes, list[bytes]]] = []
    for at, line in enumerate(lines):
        if line.startswith(b"From ") and (not messages or _starts_message(lines, at)):
            messages.append((line, []))
        elif messages:
            messages[-1][1].append(line)
    result = []
    for count, (from_line_, body_lines) in enumerate(messages):
        raw = b"\n".join(body_lines)
        if count + 1 < len(messages):
            raw += b"\n"  # the newline before the next From_ line ends the last line
            if raw.endswith(b"\n\n"):
                raw = raw[:-1]  # the blank separator line
        result.append((from_line_, mbox_unquote(raw)))
    return result


def slow_summaries(path: Path, since: datetime) -> list[ThreadSummary]:
    """What list_recent_threads must return, computed the slow, obvious way."""
    return [summary for latest, summary in _slow_threads(path.read_bytes()) if latest >= since]


@functools.lru_cache(maxsize=2)
def _slow_threads(data: bytes) -> list[tuple[datetime, ThreadSummary]]:
    """Every thread of the archive ``data`` with a known date, newest first, beside that date:
    parsed once for the four windows of the same archive (about 1 CPU-s each)."""
    messages, dates, records = [], [], []
    for envelope_line, raw in reference_messages(data):
        message = parse_message_headers(raw, hash_body=True)
        when = message.date
        if when is None:
            envelope = envelope_line.decode("latin-1").split()
            try:
                when = datetime.strptime(" ".join(envelope[-5:]), "%a %b %d %H:%M:%S %Y").replace(tzinfo=timezone.utc)
            except ValueError:
                when = None
        messages.append(message)
        dates.append(when)
        records.append(ThreadRecord.from_message(message))
    summaries = []
    for group in thread_records(records):
        members = group.members
        known = [dates[m] for m in members if dates[m] is not None]
        if not known:
            continue
        roots = [m for m in members if messages[m].message_id == group.root_id]
        head = roots[0] if roots else min(members, key=lambda m: (dates[m] is None, dates[m] or EPOCH, m))
        by_date = sorted(members, key=lambda m: (dates[m].timestamp() if dates[m] else float("-inf"), m))
        participants = list(dict.fromkeys(messages[m].sender.email.lower() for m in by_date
                                          if messages[m].sender.email))
        summaries.append((max(known), ThreadSummary(
            thread_id=ThreadId("mbox-synthetic" if group.synthetic else "mbox", group.root_id),
            subject=messages[head].subject, root_message_id=group.root_id, sender=messages[head].sender,
            last_activity=max(known), message_count=len(members), participants=tuple(participants))))
    summaries.sort(key=lambda s: (-s[1].last_activity.timestamp(), s[1].root_message_id))
    return summaries


def key_fields(rows):
    return [(r.thread_id, r.subject, r.root_message_id, r.sender, r.last_activity, r.message_count, r.participants)
            for r in rows]


# --- fast path == slow path --------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, mboxgen.GeneratedArchive]:
    """A small realistic archive from the benchmark's generator, plus the awkward mails."""
    folder = tmp_path_factory.mktemp("generated")
    info = mboxgen.generate(folder / "gen.mbox", 1500, seed=5, attachment_rate=0.05)
    extra = [ROOT, REPLY, ORPHAN_REPLY, EARLY_CLOCK, NO_DATE, *awkward.ALL.values(),
             # CRLF mail inside an LF mbox, and a Message-ID without brackets.
             REPLY.replace(b"<reply@example.org>", b"<crlf@example.org>").replace(b"\n", b"\r\n"),
             ROOT.replace(b"Message-ID: <root@example.net>", b"Message-ID: bare@example.net")]
    with open(info.path, "ab") as handle:
        for raw in extra:
            handle.write(from_line(when="Sat Jun  1 00:00:00 2025") + raw + b"\n")
    return info.path, info


@pytest.mark.parametrize("days", [3, 30, 365, 5000])
def test_fast_listing_gives_the_same_threads_as_a_full_parse(generated, days):
    path, info = generated
    since = info.last_date - timedelta(days=days)
    fast = source_for(path).list_recent_threads(None, since)
    slow = slow_summaries(path, since)
    assert len(fast) > 0
    assert key_fields(fast) == key_fields(slow)


def test_two_process_scan_and_small_chunks_index_exactly_like_one_pass(generated):
    path, _ = generated
    one = index_mbox(path, parallel=False)
    # Tiny chunks: many seams and messages larger than a chunk (attachments).
    split_small = index_mbox(path, parallel=True, parallel_min_bytes=0, chunk=8192)
    assert len(one) > 1500
    for column in ("locations", "message_ids", "synthetic", "dates", "subjects", "senders", "emails", "ends"):
        assert getattr(split_small, column) == getattr(one, column), column
    assert split_small.notes == one.notes
    # The child's threading links, merged with the parent's, are those of one pass.
    assert split_small.links == one.links
    assert [(g.root_id, g.synthetic, g.members) for g in split_small.threads()] == \
           [(g.root_id, g.synthetic, g.members) for g in one.threads()]


def test_read_thread_matches_the_listing(generated):
    path, _ = generated
    source = source_for(path)
    rows = source.list_recent_threads(None, EPOCH)
    all_ids = [parse_message_headers(raw, hash_body=True).message_id for _, raw in reference_messages(path.read_bytes())]
    listed = 0
    for row in rows[:: max(1, len(rows) // 40)]:
        thread = source.read_thread(row.thread_id)
        assert len(thread.messages) == row.message_count
        dates = [m.date for m in thread.messages if m.date is not None]
        assert dates == sorted(dates)
        listed += len(thread.messages)
        assert all(m.message_id in all_ids for m in thread.messages)
    assert listed > 40


# --- the corpus archive -------------------------------------------------------


def test_capabilities_are_exactly_the_three_read_ops(archive):
    source = source_for(archive)
    assert source.capabilities == frozenset({Op.LIST_RECENT_THREADS, Op.READ_THREAD, Op.THREAD_URL})
    assert isinstance(source.capabilities, frozenset)
    thread = ThreadId("mbox", "<root@example.net>")
    with pytest.raises(NotSupported):
        source.list_drafts(thread)
    with pytest.raises(NotSupported):
        source.list_sent_since(thread, EPOCH)
    with pytest.raises(NotSupported):
        source.create_draft(None)  # type: ignore[arg-type]


def test_listing_groups_replies_and_orphans_under_the_root(archive):
    rows = source_for(archive).list_recent_threads(None, EPOCH)
    by_root = {r.root_message_id: r for r in rows}
    heap = by_root["<root@example.net>"]
    assert heap.thread_id == ThreadId("mbox", "<root@example.net>")
    assert heap.message_count == 4  # root, reply, orphan reply, early-clock reply
    assert heap.subject == "Heap overflow in the frobnicator"
    assert heap.sender.email == "reporter@example.net"
    # In date order: the early clock comes first.
    assert heap.participants == ("clock@example.com", "reporter@example.net", "triager@example.org")
    assert heap.last_activity == datetime(2024, 1, 3, 9, tzinfo=timezone.utc)
    # Newest activity first.
    stamps = [r.last_activity for r in rows]
    assert stamps == sorted(stamps, reverse=True)


def test_message_without_id_is_its_own_synthetic_thread(archive):
    rows = source_for(archive).list_recent_threads(None, EPOCH)
    synthetic = [r for r in rows if r.thread_id.kind == "msgid-synthetic"]
    assert [r.subject for r in synthetic] == ["A report without a Message-ID"]
    assert synthetic[0].root_message_id.endswith("@mailtriage.invalid>")
    thread = source_for(archive).read_thread(synthetic[0].thread_id)
    assert thread.messages[0].synthetic_id
    assert thread.messages[0].message_id == synthetic[0].root_message_id


def test_shared_message_id_keeps_both_messages_with_a_note(archive):
    source = source_for(archive)
    row = next(r for r in source.list_recent_threads(None, EPOCH) if r.root_message_id == "<same-id@example.org>")
    assert row.message_count == 2
    assert any("2 messages share Message-ID <same-id@example.org>" in n for n in row.notes)
    thread = source.read_thread(row.thread_id)
    assert [m.subject for m in thread.messages] == ["Same ID, first message", "Same ID, second message"]


def test_missing_date_falls_back_to_the_delivery_time_with_a_note(archive):
    source = source_for(archive)
    row = next(r for r in source.list_recent_threads(None, EPOCH) if r.root_message_id == "<undated@example.org>")
    assert row.last_activity == datetime(2024, 1, 5, 12, 30, tzinfo=timezone.utc)
    assert any("delivery time" in n for n in row.notes)
    message = source.read_thread(row.thread_id).messages[0]
    assert message.date is None and any("delivery time" in n for n in message.notes)


def test_since_is_inclusive_and_filters_by_latest_activity(archive):
    source = source_for(archive)
    at = datetime(2024, 1, 3, 9, tzinfo=timezone.utc)
    roots = [r.root_message_id for r in source.list_recent_threads(None, at)]
    assert "<root@example.net>" in roots  # its last message is exactly at `since`
    later = [r.root_message_id for r in source.list_recent_threads(None, at + timedelta(seconds=1))]
    assert "<root@example.net>" not in later
    # A naive `since` is read as UTC.
    naive = source.list_recent_threads(None, at.replace(tzinfo=None))
    assert [r.root_message_id for r in naive] == roots


def test_read_thread_is_chronological_and_fully_decoded(archive):
    thread = source_for(archive).read_thread(ThreadId("mbox", "<root@example.net>"))
    assert [m.message_id for m in thread.messages] == [
        "<early@example.com>", "<root@example.net>", "<reply@example.org>", "<orphan@example.net>"]
    assert thread.messages[1].body_text == "The report.\n"
    assert thread.subject == "Heap overflow in the frobnicator"
    assert all(m.backend_ref and m.backend_ref.startswith("archive:") for m in thread.messages)


def test_awkward_mail_reads_through_the_backend(archive):
    source = source_for(archive)
    read = lambda mid: source.read_thread(ThreadId("mbox", mid)).messages[0]  # noqa: E731
    assert read("<sjis@example.jp>").subject == "脆弱性の報告"
    assert read("<cr-only@example.org>").body_text == "First line.\nSecond line.\n"
    assert read("<html-only@example.net>").text_parts[0].from_html
    assert "broken base64" in read("<broken-b64@example.org>").text_parts[0].note
    assert read("<20240102100005.DSN1@mx.example.org>").header("Auto-Submitted") == "auto-replied"


def test_unknown_thread_and_foreign_kind_are_refused(archive):
    source = source_for(archive)
    with pytest.raises(BackendFailure, match="no thread"):
        source.read_thread(ThreadId("mbox", "<nope@example.org>"))
    with pytest.raises(BackendFailure, match="kind 'gmail'"):  # another shape, no root to resolve it by
        source.read_thread(ThreadId("gmail", "18c2f3a"))
    with pytest.raises(BackendFailure, match="kind 'hyperkitty'"):
        source.thread_url(ThreadId("hyperkitty", "JJIGKPKB6CVDX6B2CUG4IHAJRIQIOUTP"))
    # A real root asked for under the synthetic kind is not that thread.
    with pytest.raises(BackendFailure):
        source.read_thread(ThreadId("mbox-synthetic", "<root@example.net>"))


def test_thread_url_is_a_file_url_with_the_quoted_root(archive):
    url = source_for(archive).thread_url(ThreadId("mbox", "<root@example.net>"))
    assert url == archive.resolve().as_uri() + "#%3Croot%40example.net%3E"


def test_list_argument_must_name_the_archived_list(archive):
    source = source_for(archive, list="security@example.org")
    assert source.list_recent_threads("Security@Example.org", EPOCH)
    assert source.list_recent_threads("<security@example.org>", EPOCH)
    assert source.list_recent_threads(None, EPOCH)
    with pytest.raises(BackendFailure, match="snapshot of security@example.org, not dev@example.org"):
        source.list_recent_threads("dev@example.org", EPOCH)
    # Without a configured list any list name is taken at its word.
    assert source_for(archive).list_recent_threads("dev@example.org", EPOCH)


def test_reads_leave_the_archive_unchanged(archive, tmp_path):
    maildir = write_maildir(tmp_path / "Maildir", corpus())
    emls = write_eml_folder(tmp_path / "emls", corpus())
    for path in (archive, maildir, emls):
        before = snapshot(path)
        names_before = sorted(p.name for p in path.rglob("*")) if path.is_dir() else None
        source = source_for(path)
        source.check_available()
        for row in source.list_recent_threads(None, EPOCH):
            thread = source.read_thread(row.thread_id)
            source.thread_url(row.thread_id)
            for message in thread.messages:
                for index in range(len(message.attachments)):
                    source.attachment(message.backend_ref, index)
        assert snapshot(path) == before, path
        if names_before is not None:
            assert sorted(p.name for p in path.rglob("*")) == names_before


@pytest.mark.parametrize("layout", ["maildir", "eml"])
def test_maildir_and_eml_folder_give_the_same_threads_as_mbox(archive, tmp_path, layout):
    folder = (write_maildir if layout == "maildir" else write_eml_folder)(tmp_path / layout, corpus())
    from_mbox = source_for(archive).list_recent_threads(None, EPOCH)
    from_folder = source_for(folder).list_recent_threads(None, EPOCH)
    # Same threads, same members; only the undated message's fallback time differs
    # (a Maildir file name or file mtime instead of the mbox From_ line).
    def shape(rows):
        return sorted((r.thread_id, r.subject, r.message_count, r.participants) for r in rows)
    assert shape(from_folder) == shape(from_mbox)
    thread = source_for(folder).read_thread(ThreadId("mbox", "<root@example.net>"))
    assert [m.message_id for m in thread.messages][1] == "<root@example.net>"
    assert thread.messages[0].backend_ref.startswith("archive:")
    assert source_for(folder).thread_url(ThreadId("mbox", "<root@example.net>")).startswith(folder.resolve().as_uri())


def test_size_cap_still_lists_and_truncates_the_body_with_a_note(tmp_path):
    big = ROOT.replace(b"The report.\n", b"A" * 300_000 + b"\nThe end.\n")
    path = write_mbox(tmp_path / "big.mbox", [big, REPLY])
    source = source_for(path, max_message_bytes=10_000)
    (row,) = source.list_recent_threads(None, EPOCH)
    assert row.message_count == 2
    first = source.read_thread(row.thread_id).messages[0]
    assert len(first.body_text) < 10_000 and "The end." not in first.body_text
    assert any("over the size cap of 10,000" in n and "max_message_bytes" in n for n in first.notes)
    uncapped = source_for(path, max_message_bytes=0).read_thread(row.thread_id).messages[0]
    assert "The end." in uncapped.body_text and not any("size cap" in n for n in uncapped.notes)


def test_index_is_rebuilt_when_the_archive_grows(tmp_path):
    path = write_mbox(tmp_path / "grow.mbox", [ROOT])
    source = source_for(path)
    assert [r.message_count for r in source.list_recent_threads(None, EPOCH)] == [1]
    with open(path, "ab") as handle:
        handle.write(from_line() + REPLY + b"\n")
    assert [r.message_count for r in source.list_recent_threads(None, EPOCH)] == [2]


def test_a_thread_appended_after_a_read_is_read_by_the_same_source(tmp_path):
    """read_thread finds a thread by its root through a lookup made once per index: mail
    appended since (a reply, a new thread) is found by the same source object."""
    path = write_mbox(tmp_path / "grow.mbox", [ROOT])
    source = source_for(path)
    assert len(source.read_thread(ThreadId("mbox", "<root@example.net>")).messages) == 1
    other = ROOT.replace(b"<root@example.net>", b"<second@example.net>").replace(b"Heap", b"Stack")
    with open(path, "ab") as handle:
        handle.write(from_line() + REPLY + b"\n" + from_line() + other + b"\n")
    assert len(source.read_thread(ThreadId("mbox", "<root@example.net>")).messages) == 2
    assert source.read_thread(ThreadId("mbox", "<second@example.net>")).subject == "Stack overflow in the frobnicator"


def test_attachment_bytes_by_reference(archive):
    source = source_for(archive)
    message = source.read_thread(ThreadId("mbox", "<attachments@example.net>")).messages[0]
    assert source.attachment(message.backend_ref, 0) == b'print("hello")\n'
    with pytest.raises(BackendFailure, match="no attachment 5"):
        source.attachment(message.backend_ref, 5)
    with pytest.raises(BackendFailure):
        source.attachment("other:0", 0)


# --- availability and settings ----------------------------------------------


def test_missing_archive_is_unavailable_with_the_reason(tmp_path):
    source = source_for(tmp_path / "gone.mbox")
    with pytest.raises(Unavailable, match="does not exist"):
        source.check_available()
    with pytest.raises(Unavailable, match="does not exist"):
        source.list_recent_threads(None, EPOCH)


def test_not_an_archive_is_unavailable(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(Unavailable, match="not an mbox file"):
        source_for(tmp_path / "notes.txt").check_available()
    (tmp_path / "empty-folder").mkdir()
    with pytest.raises(Unavailable, match="neither a Maildir"):
        source_for(tmp_path / "empty-folder").check_available()


def test_unreadable_archive_is_unavailable(tmp_path):
    path = write_mbox(tmp_path / "locked.mbox", [ROOT])
    if os.geteuid() == 0:
        # root reads anything; a folder given where a file was expected is just as unreadable here.
        target = tmp_path / "dir.mbox"
        target.mkdir()
        with pytest.raises(Unavailable, match="neither a Maildir"):
            source_for(target).check_available()
        return
    path.chmod(0)
    try:
        with pytest.raises(Unavailable, match="cannot read"):
            source_for(path).check_available()
    finally:
        path.chmod(0o644)


def test_empty_mbox_lists_nothing(tmp_path):
    path = tmp_path / "empty.mbox"
    path.write_bytes(b"")
    source = source_for(path)
    source.check_available()
    assert source.list_recent_threads(None, EPOCH) == []


def test_relative_path_is_read_from_the_project_folder(archive):
    source = MboxSource("archive", {"path": archive.name}, origin=SourceOrigin(project_dir=Path(archive.parent)))
    assert source.path == archive.resolve()
    assert source.list_recent_threads(None, EPOCH)


@pytest.mark.parametrize("settings, key", [
    ({}, "path"),
    ({"path": "x.mbox", "max_message_bytes": "big"}, "max_message_bytes"),
    ({"path": "x.mbox", "max_message_bytes": -1}, "max_message_bytes"),
    ({"path": "x.mbox", "list": ["a", "b"]}, "list"),
    ({"path": "x.mbox", "parallel": "yes"}, "parallel"),
])
def test_bad_settings_make_the_backend_unavailable_naming_file_and_key(tmp_path, settings, key):
    source = MboxSource("arch", {**settings}, origin=SourceOrigin(project_dir=tmp_path))
    with pytest.raises(Unavailable) as caught:
        source.check_available()
    reason = caught.value.reason
    assert str(tmp_path / "project.md") in reason and f"mail_sources.arch.{key}" in reason and "valid:" in reason


def test_registry_builds_the_mbox_backend_from_project_md(tmp_path, archive):
    from mailtriage.backends.registry import SourceSet
    from mailtriage.core.projectconfig import load_project

    (tmp_path / "project.md").write_text(
        "# P\n\n## Mail sources\n\n| Backend | Role | Mandatory | Notes |\n|---|---|---|---|\n"
        "| `mbox` | primary | yes | |\n\n## Configuration\n\n```yaml\nmail_sources:\n"
        f"  mbox:\n    path: {archive.name}\n    list: security@example.org\n```\n")
    archive_copy = tmp_path / archive.name
    if archive_copy != archive:
        archive_copy.write_bytes(archive.read_bytes())
    sources = SourceSet(load_project(tmp_path))
    sources.preflight()
    result = sources.dispatch(Op.LIST_RECENT_THREADS, lambda s: s.list_recent_threads("security@example.org", EPOCH))
    assert result.resolution.chosen == "mbox"
    assert any(r.root_message_id == "<root@example.net>" for r in result.value)


@pytest.mark.parametrize("seed", range(6))
def test_mangled_archives_list_the_same_threads_fast_and_slow(tmp_path, seed):
    """Byte flips, stray From_ lines, CRs, NULs, cut messages: the fast path still agrees."""
    import random

    rng = random.Random(seed)
    pieces = (b"=?<>@\"\\()[];:,\r\n\t \x00\xff\xc3\nFrom x\nMessage-ID: <dup@x>\nReferences: <root@example.net> "
              b"<a@b>\nIn-Reply-To: <reply@example.org>\nDate: Tue, 02 Jan 2024 10:00:00 +0000\n\r\n\r\n")
    for trial in range(8):
        parts = []
        for raw in rng.sample(corpus(), k=len(corpus())):
            data = bytearray(raw)
            for _ in range(rng.randrange(0, 6)):
                at = rng.randrange(len(data) or 1)
                roll = rng.random()
                if roll < 0.3 and data:
                    data[at] = rng.randrange(256)
                elif roll < 0.7:
                    data[at:at] = pieces[rng.randrange(len(pieces)):][:rng.randrange(1, 40)]
                else:
                    del data[at: at + rng.randrange(1, 40)]
            parts.append(from_line() + bytes(data) + (b"\n" if rng.random() < 0.8 else b""))
        path = tmp_path / f"mangled-{trial}.mbox"
        path.write_bytes(b"".join(parts))
        fast = source_for(path).list_recent_threads(None, EPOCH)
        assert key_fields(fast) == key_fields(slow_summaries(path, EPOCH)), (seed, trial)
        small_chunks = index_mbox(path, parallel=True, parallel_min_bytes=0, chunk=512)
        assert small_chunks.message_ids == index_mbox(path, parallel=False).message_ids


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.mbox"
    os.mkfifo(fifo)
    with pytest.raises(Unavailable, match="neither a regular file nor a folder"):
        source_for(fifo).check_available()
