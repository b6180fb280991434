"""The persisted mbox index (backends/mbox_index_store.py): reused, extended on append,
rebuilt when it cannot be trusted, private, and never holding a message body."""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import stat
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mailtriage.backends import mbox_index_store
from mailtriage.core import cache_file
from mailtriage.backends import mbox_persist, mbox_scan
from mailtriage.backends.errors import Unavailable
from mailtriage.backends.mbox import MboxSource
from mailtriage.backends.thread_reconstruction import group_ids, link_records
from tests.mbox.mboxes import damage_cache_file, mbox_bytes, write_mbox

SINCE = datetime(2000, 1, 1, tzinfo=timezone.utc)


def message(n: int, *, reply_to: int | None = None, body: str | None = None) -> bytes:
    refs = f"In-Reply-To: <m{reply_to}@example.net>\nReferences: <m{reply_to}@example.net>\n" if reply_to is not None else ""
    subject = f"Re: Report {reply_to}" if reply_to is not None else f"Report {n}"
    text = body or f"BODY-SECRET-{n} the exploit details\n"
    return (f"From: Reporter {n} <r{n}@example.net>\nTo: security@example.org\nSubject: {subject}\n"
            f"Date: Mon, 0{1 + n % 9} Jan 2024 10:00:00 +0000\nMessage-ID: <m{n}@example.net>\n{refs}\n"
            f"{text}").encode()


def source(path: Path, **settings) -> MboxSource:
    return MboxSource("mbox", {"path": str(path), **settings})


def listing(path: Path, **settings) -> list[tuple]:
    return [(t.root_message_id, t.subject, t.message_count, t.sender.email)
            for t in source(path, **settings).list_recent_threads(None, SINCE)]


def index_files(cache: Path) -> list[Path]:
    return sorted((cache / "mbox").glob("*.idx")) if (cache / "mbox").exists() else []


def test_a_second_open_uses_the_persisted_index_without_scanning(tmp_path, cache, monkeypatch):
    archive = write_mbox(tmp_path / "a.mbox", [message(0), message(1, reply_to=0), message(2)])
    first = listing(archive)
    assert len(index_files(cache)) == 1

    def no_scan(*args, **kwargs):
        raise AssertionError("the archive was scanned although the persisted index is current")

    monkeypatch.setattr("mailtriage.backends.mbox.index_archive", no_scan)
    monkeypatch.setattr("mailtriage.backends.mbox.scan_mbox_range", no_scan)
    assert listing(archive) == first
    # Reading a thread still works from the persisted offsets.
    thread = source(archive).read_thread(source(archive).list_recent_threads(None, SINCE)[-1].thread_id)
    assert thread.messages


def test_an_appended_message_is_indexed_incrementally(tmp_path, cache, monkeypatch, notes):
    archive = write_mbox(tmp_path / "a.mbox", [message(0), message(1)])
    listing(archive)
    size = archive.stat().st_size
    with open(archive, "ab") as handle:
        handle.write(mbox_bytes([message(2, reply_to=0), message(3)]))
    scanned: list[tuple[int, int]] = []
    real = mbox_scan.scan_mbox_range

    def spy(fd, start, end, *args, **kwargs):
        scanned.append((start, end))
        return real(fd, start, end, *args, **kwargs)

    monkeypatch.setattr("mailtriage.backends.mbox.scan_mbox_range", spy)
    monkeypatch.setattr("mailtriage.backends.mbox.index_archive",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("full rescan")))
    rows = listing(archive)
    assert scanned == [(size, archive.stat().st_size)]  # only the new tail
    counts = {root: count for root, _subject, count, _sender in rows}
    assert counts == {"<m0@example.net>": 2, "<m1@example.net>": 1, "<m3@example.net>": 1}
    assert any("2 appended message(s) indexed" in n and "threads extended" in n for n in notes), notes
    # The extended index is persisted: a third open scans nothing.
    scanned.clear()
    assert listing(archive) == rows and scanned == []
    # And it is the index a full scan makes.
    for path in index_files(cache):
        path.unlink()
    monkeypatch.undo()
    assert listing(archive) == rows


LINKS_OLD = b"""From: Late <late@example.net>
To: security@example.org
Subject: Re: Report 0
Date: Tue, 09 Jan 2024 10:00:00 +0000
Message-ID: <late@example.net>
References: <earlier@example.net> <m0@example.net>

The root <m0> turns out to answer <earlier>: every message of its thread moves.
"""

SAME_ID_AGAIN = b"""From: Dup <dup@example.net>
To: security@example.org
Subject: Duplicate of report 1
Date: Tue, 09 Jan 2024 11:00:00 +0000
Message-ID: <m1@example.net>
In-Reply-To: <m2@example.net>

A second message with an ID already indexed.
"""


@pytest.mark.parametrize("tail", [LINKS_OLD, SAME_ID_AGAIN], ids=["new-parent-for-old-root", "known-id-again"])
def test_an_append_that_relinks_older_mail_regroups_like_a_full_scan(tmp_path, cache, notes, tail):
    archive = write_mbox(tmp_path / "a.mbox", [message(0), message(3, reply_to=0), message(1), message(2)])
    listing(archive)
    with open(archive, "ab") as handle:
        handle.write(mbox_bytes([tail]))
    incremental = listing(archive)
    assert any("threads regrouped" in n for n in notes), notes
    for path in index_files(cache):
        path.unlink()
    assert listing(archive) == incremental  # what a full scan says


@pytest.mark.parametrize("change", ["rewritten", "truncated", "replaced", "grown-not-at-a-boundary"])
def test_a_changed_archive_is_rebuilt(tmp_path, cache, change, notes):
    archive = write_mbox(tmp_path / "a.mbox", [message(0), message(1), message(2)])
    listing(archive)
    if change == "rewritten":  # same size, another message in the middle
        data = archive.read_bytes().replace(b"Report 1", b"Repurt 1")
        archive.write_bytes(data)
        os.utime(archive, ns=(archive.stat().st_atime_ns, archive.stat().st_mtime_ns + 10**9))
    elif change == "truncated":
        write_mbox(archive, [message(0), message(1)])
    elif change == "replaced":  # another file (inode) with the same name, longer
        other = write_mbox(tmp_path / "b.mbox", [message(0), message(1), message(2), message(3)])
        os.replace(other, archive)
    else:  # bytes appended that do not start a message: the last message grew
        with open(archive, "ab") as handle:
            handle.write(b"more text of the last body\n")
    expected = listing(archive)
    for path in index_files(cache):
        path.unlink()
    assert listing(archive) == expected  # what a fresh scan says
    if change == "rewritten":
        assert any(subject == "Repurt 1" for _r, subject, _c, _s in expected)


@pytest.mark.parametrize("damage", ["truncated", "flipped", "other-version", "garbage", "empty"])
def test_a_damaged_index_file_is_rebuilt_with_a_note(tmp_path, cache, damage, notes):
    archive = write_mbox(tmp_path / "a.mbox", [message(0), message(1, reply_to=0)])
    expected = listing(archive)
    (path,) = index_files(cache)
    damage_cache_file(path, damage, mbox_index_store.KIND, mbox_index_store.VERSION)
    assert listing(archive) == expected
    assert any("rebuilt" in n for n in notes), notes
    # Rebuilt and saved again: usable on the next open.
    assert cache_file.read(path, mbox_index_store.KIND, mbox_index_store.VERSION)[0] is not None


def test_index_files_are_private_and_hold_no_bodies(tmp_path, cache):
    bodies = [message(n, body=f"BODY-SECRET-{n} line one\nFrom the exploit: BODY-SECRET-{n}\n") for n in range(20)]
    archive = write_mbox(tmp_path / "a.mbox", bodies)
    listing(archive)
    (path,) = index_files(cache)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((cache / "mbox").stat().st_mode) == 0o700
    blob = path.read_bytes()
    assert b"Report 3" in blob  # headers are there (the test can fail)
    assert b"BODY-SECRET" not in blob and b"exploit" not in blob


def test_deleting_the_cache_folder_is_safe(tmp_path, cache):
    archive = write_mbox(tmp_path / "a.mbox", [message(0), message(1)])
    src = source(archive)
    expected = [t.root_message_id for t in src.list_recent_threads(None, SINCE)]
    shutil.rmtree(cache)
    with open(archive, "ab") as handle:
        handle.write(mbox_bytes([message(2)]))
    assert [t.root_message_id for t in src.list_recent_threads(None, SINCE)] == ["<m2@example.net>", *expected]
    assert index_files(cache)  # made again


def test_the_setting_and_the_user_setting_keep_mail_metadata_off_disk(tmp_path, cache, monkeypatch):
    archive = write_mbox(tmp_path / "a.mbox", [message(0)])
    listing(archive, persist_index=False)
    assert index_files(cache) == []
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text("[settings]\ncache_summaries = false\n", encoding="utf-8")
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config))
    listing(archive)
    assert index_files(cache) == []
    with pytest.raises(Unavailable, match="persist_index"):
        listing(archive, persist_index="yes")


def _writer(path: str, seed: int, rounds: int) -> None:
    for n in range(rounds):
        cache_file.write(Path(path), "race", 1, {"writer": seed, "n": n, "rows": [seed] * (2000 + n)})


def test_two_instances_writing_one_cache_never_corrupt_it(tmp_path):
    target = tmp_path / "shared.idx"
    cache_file.write(target, "race", 1, {"writer": -1, "n": 0, "rows": []})
    ctx = multiprocessing.get_context("fork")
    writers = [ctx.Process(target=_writer, args=(str(target), seed, 60)) for seed in (1, 2)]
    for w in writers:
        w.start()
    reads = 0
    while any(w.is_alive() for w in writers):
        payload, why = cache_file.read(target, "race", 1)
        assert why is None and payload is not None, why
        assert payload["rows"] == [payload["writer"]] * len(payload["rows"])
        reads += 1
    for w in writers:
        w.join()
        assert w.exitcode == 0
    assert reads > 0
    assert [p.name for p in tmp_path.iterdir()] == ["shared.idx"]  # no temporary file left behind


@pytest.mark.parametrize("seed", range(40))
def test_extending_groups_equals_grouping_everything(seed):
    """Random archives (replies to earlier, later and missing messages, duplicate IDs,
    synthetic IDs, loops), split at a random point: extending the first part's groups with
    the tail gives group_ids over everything, or declines (None)."""
    rnd = random.Random(seed)
    count = rnd.randrange(2, 60)
    # Mostly fresh IDs (as in a real archive), some repeated; references to earlier messages,
    # later ones and missing ones.
    ids = [f"<{i if rnd.random() < 0.9 else rnd.randrange(count)}@x>".encode() for i in range(count)]

    def some_id() -> bytes:
        return f"<{rnd.randrange(count + 5)}@x>".encode()

    records = []
    for i, mid in enumerate(ids):
        roll = rnd.random()
        if roll < 0.6 and records:  # a reply as mail clients write it: the parent's chain
            parent = records[rnd.randrange(len(records))]
            refs, irt = [*parent[1], parent[0]][-rnd.choice((1, 3, 10)):], parent[0]
        elif roll < 0.75:  # noise: any IDs, earlier, later or missing
            refs = [some_id() for _ in range(rnd.choice((1, 2, 3)))]
            irt = some_id() if rnd.random() < 0.5 else None
        else:
            refs, irt = [], None
        records.append((mid, refs, irt, rnd.random() < 0.05))
    split = max(1, count - rnd.randrange(1, 4)) if seed % 2 else rnd.randrange(1, count)  # small tails, as appends are
    mids = [r[0] for r in records]
    synthetic = [r[3] for r in records]
    whole = [(g.root_id, g.synthetic, g.members) for g in group_ids(mids, synthetic, link_records(records))]
    old_links, new_links = link_records(records[:split]), link_records(records[split:])
    groups = group_ids(mids[:split], synthetic[:split], old_links)
    grown = mbox_persist._extend_groups(groups, old_links, new_links, mids[split:], synthetic[split:],
                                       split)
    if grown is not None:
        assert [(g.root_id, g.synthetic, g.members) for g in grown] == whole
    EXTENDED.append(grown is not None)


EXTENDED: list[bool] = []


def test_random_appends_were_mostly_extended_not_regrouped():
    """The property above must not pass by declining every time."""
    for seed in range(200):
        test_extending_groups_equals_grouping_everything(seed)
    assert sum(EXTENDED) >= 0.2 * len(EXTENDED), f"{sum(EXTENDED)} of {len(EXTENDED)}"


def test_a_blob_column_reads_back_and_grows_like_a_list():
    values = [b"<a@x>", None, b"", "caf\u00e9".encode(), b"<b@x>"]
    column = mbox_index_store.BlobColumn.unpack(mbox_index_store.BlobColumn.pack(values))
    assert list(column) == values and column[1] is None and column[-1] == b"<b@x>" and column[1:3] == [None, b""]
    column += [None, b"<c@x>"]
    assert list(column) == [*values, None, b"<c@x>"] and len(column) == 7
    texts = mbox_index_store.BlobColumn.unpack(mbox_index_store.BlobColumn.pack(["a@x", "", "\u00e9@x"]))
    texts += ["new@x"]
    assert list(texts) == ["a@x", "", "\u00e9@x", "new@x"]


@pytest.mark.parametrize("text", [False, True])
def test_a_blob_column_with_appended_values_packs_back_whole_and_from_any_row(text):
    def value(n):
        if n % 5 == 3:
            return None
        raw = f"<v{n}\u00e9@x>" if n % 2 else f"<{n}@x>"
        return raw if text else raw.encode()

    values = [value(n) for n in range(9)]
    for packed_rows in range(len(values) + 1):
        column = mbox_index_store.BlobColumn.unpack(mbox_index_store.BlobColumn.pack(values[:packed_rows]))
        column.text = column.text or text  # an empty packed part knows no type of its own
        grown = column
        for start in range(packed_rows, len(values), 2):
            grown += values[start:start + 2]
        assert list(grown) == values and len(grown) == len(values) and grown[-1] == values[-1]
        assert len(column) == packed_rows  # += made a new column
        for row in range(len(values) + 1):
            again = mbox_index_store.BlobColumn.unpack(grown.packed_from(row))
            assert list(again) == values[row:], (packed_rows, row)


def test_a_blob_column_reads_many_rows_at_once_like_one_by_one():
    for values in ([b"<a@x>", b"", b"<c@x>"], ["a@x", "\u00e9@x", ""], [b"<a@x>", None, b"<c@x>"]):
        column = mbox_index_store.BlobColumn.unpack(mbox_index_store.BlobColumn.pack(values))
        column += [values[0]]
        rows = [3, 0, 2, 2, 1]
        assert column.values_at(rows) == [column[row] for row in rows] == [[*values, values[0]][r] for r in rows]


def test_a_raw_cache_section_reads_back_in_place_and_is_checked(tmp_path):
    target = tmp_path / "raw.cache"
    cache_file.write(target, "raw", 1, {"columns": 2}, cache_file.Raw(b"subjects and senders"))
    sections, why = cache_file.read_sections(target, "raw", 1)
    assert why is None and cache_file.decode(sections[0], target)[0] == {"columns": 2}
    assert bytes(sections[1]) == b"subjects and senders"
    whole = sections[1].obj  # the file's bytes, not a copy of the section
    assert isinstance(whole, bytes) and whole.endswith(b"subjects and senders")
    blob = target.read_bytes()
    target.write_bytes(blob[:-3] + b"X" + blob[-2:])
    sections, why = cache_file.read_sections(target, "raw", 1)
    assert sections is None and "checksum" in why


def test_a_write_sweeps_the_temporary_files_of_writers_that_died(tmp_path):
    """A writer killed mid-write (the app ends a late head start child) leaves its temporary
    file; the next write of that cache removes it, and leaves a running writer's alone."""
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    target = tmp_path / "index.idx"
    died = tmp_path / f".index.idx.{int(dead.stdout)}.0a0b0c.tmp"
    running = tmp_path / f".index.idx.{os.getppid()}.0d0e0f.tmp"
    other = tmp_path / f".other.idx.{int(dead.stdout)}.0a0b0c.tmp"
    for leftover in (died, running, other):
        leftover.write_bytes(b"half a cache")
    cache_file.write(target, "sweep", 1, {"rows": [1, 2, 3]})
    assert not died.exists()
    assert running.exists() and other.exists()  # a live writer's; another cache's
    assert cache_file.read(target, "sweep", 1) == ({"rows": [1, 2, 3]}, None)


def _until_ctime_moves_past(path: Path, scratch: Path) -> None:
    """Wait (on a condition, bounded) until a fresh change time differs from ``path``'s, so a
    rewrite right after gets another ctime even on a coarse filesystem clock."""
    before = path.stat().st_ctime_ns
    for _ in range(100_000):
        scratch.write_bytes(b"x")
        if scratch.stat().st_ctime_ns != before:
            return
    raise AssertionError("the filesystem's change time never moved")


def test_a_rewrite_in_place_that_keeps_size_and_mtime_is_rebuilt(tmp_path, cache, notes):
    # Issue 33: a tool that rewrites a message in the middle (same length) and puts the mtime
    # back left the index trusted; the ctime (which no one can set back) now tells.
    archive = write_mbox(tmp_path / "a.mbox", [message(n) for n in range(200)])
    assert archive.stat().st_size > 4 * mbox_index_store.TAIL  # the change is outside the tail digest
    listing(archive)
    info = archive.stat()
    _until_ctime_moves_past(archive, tmp_path / "scratch")
    with open(archive, "r+b") as handle:
        data = handle.read()
        handle.seek(0)
        handle.write(data.replace(b"Subject: Report 1\n", b"Subject: Repurt 1\n"))
    os.utime(archive, ns=(info.st_atime_ns, info.st_mtime_ns))
    after = archive.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (info.st_ino, info.st_size, info.st_mtime_ns)
    subjects = {subject for _r, subject, _c, _s in listing(archive)}
    assert "Repurt 1" in subjects and "Report 1" not in subjects
    assert any("rebuilt" in n for n in notes), notes
