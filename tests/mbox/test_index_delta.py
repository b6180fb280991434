"""The persisted mbox index as a base and a delta (backends/mbox_index_store.py): an append
writes only what was appended, bound to the base it extends; a regroup or a delta past its
share rewrites the whole index; a delta that is damaged or names another base is dropped;
and base + delta always lists what a full scan lists."""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mailtriage.backends import mbox_index_store
from mailtriage.core import cache_file
from mailtriage.backends.mbox import MboxSource
from tests.mbox.mboxes import damage_cache_file, mbox_bytes, write_mbox

SINCE = datetime(2000, 1, 1, tzinfo=timezone.utc)


def message(n: int, *, reply_to: int | None = None, mid: int | None = None, refs: tuple[int, ...] = (),
            body: str = "", subject: str | None = None, dated: bool = True) -> bytes:
    """Message ``n`` (its ID is ``<m{mid or n}@example.net>``), a reply to ``reply_to`` when given."""
    headers = [f"From: Reporter {n} <r{n}@example.net>", "To: security@example.org",
               f"Subject: {subject or (f'Re: Report {reply_to}' if reply_to is not None else f'Report {n}')}"]
    if dated:
        headers.append(f"Date: Mon, {1 + n % 28:02d} Jan 2024 {n % 24:02d}:00:00 +0000")
    headers.append(f"Message-ID: <m{n if mid is None else mid}@example.net>")
    chain = [*refs, *([] if reply_to is None else [reply_to])]
    if chain:
        headers.append("References: " + " ".join(f"<m{r}@example.net>" for r in chain))
    if reply_to is not None:
        headers.append(f"In-Reply-To: <m{reply_to}@example.net>")
    return ("\n".join(headers) + f"\n\n{body or f'Body {n}.'}\n").encode()


def listing(path: Path, **settings) -> list[tuple]:
    source = MboxSource("mbox", {"path": str(path), **settings})
    return [(t.root_message_id, t.subject, t.message_count, t.sender.email, t.participants, t.last_activity, t.notes)
            for t in source.list_recent_threads(None, SINCE)]


def full_scan(path: Path) -> list[tuple]:
    return listing(path, persist_index=False)


def append(path: Path, *messages: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(mbox_bytes(list(messages)))


def base_file(cache: Path) -> Path:
    (path,) = sorted((cache / "mbox").glob("*.idx"))
    return path


def delta_file(cache: Path) -> Path:
    return mbox_index_store.delta_path(base_file(cache))


def fingerprint(path: Path) -> tuple[bytes, int, int]:
    info = path.stat()
    return path.read_bytes(), info.st_mtime_ns, info.st_ino


def counts(rows: list[tuple]) -> dict[str, int]:
    return {row[0]: row[2] for row in rows}


def test_an_append_writes_a_delta_and_leaves_the_base_as_it_was(tmp_path, cache, notes):
    archive = write_mbox(tmp_path / "a.mbox", [message(n) for n in range(40)])
    listing(archive)
    base = fingerprint(base_file(cache))
    append(archive, message(40, reply_to=3), message(41))
    rows = listing(archive)
    assert fingerprint(base_file(cache)) == base  # the base file was not rewritten
    delta = delta_file(cache)
    assert delta.exists() and 0 < delta.stat().st_size < len(base[0]) // 4
    assert (delta.stat().st_mode & 0o777) == 0o600
    assert b"Report 41" in delta.read_bytes() and b"Body 41" not in delta.read_bytes()  # headers, never a body
    assert counts(rows)["<m41@example.net>"] == 1 and counts(rows)["<m3@example.net>"] == 2
    assert any("2 appended message(s) indexed" in n and "delta" in n for n in notes), notes
    assert rows == full_scan(archive)
    # The next open reads base + delta as they are: nothing is written.
    delta_before = fingerprint(delta)
    assert listing(archive) == rows
    assert fingerprint(delta) == delta_before and fingerprint(base_file(cache)) == base


def test_two_appends_in_a_row_keep_the_base_and_grow_one_delta(tmp_path, cache):
    archive = write_mbox(tmp_path / "a.mbox", [message(n, reply_to=n - 1 if n % 5 else None) for n in range(30)])
    listing(archive)
    base = fingerprint(base_file(cache))
    append(archive, message(30, reply_to=7))
    first = listing(archive)
    first_delta = delta_file(cache).read_bytes()
    append(archive, message(31, reply_to=30), message(32), message(33, reply_to=32))
    second = listing(archive)
    assert fingerprint(base_file(cache)) == base
    assert delta_file(cache).read_bytes() != first_delta  # the delta holds both appends now
    assert second == full_scan(archive) and second != first
    assert counts(second)["<m32@example.net>"] == 2 and counts(second)["<m5@example.net>"] == 7
    # A fresh process (a new source) reads the same from base + delta.
    assert listing(archive) == second


def test_an_append_that_regroups_rewrites_the_whole_index(tmp_path, cache, notes):
    archive = write_mbox(tmp_path / "a.mbox", [message(0), message(1, reply_to=0), message(2), message(3)])
    listing(archive)
    append(archive, message(4))
    listing(archive)
    assert delta_file(cache).exists()
    base = fingerprint(base_file(cache))
    # Message 2 turns out to answer message 3: the group of <m2> moves into <m3>'s thread.
    append(archive, message(5, refs=(3, 2)))
    rows = listing(archive)
    assert any("threads regrouped" in n and "whole index saved again" in n for n in notes), notes
    assert fingerprint(base_file(cache))[0] != base[0]
    assert not delta_file(cache).exists()
    assert rows == full_scan(archive)
    assert counts(rows)["<m3@example.net>"] == 3 and "<m2@example.net>" not in counts(rows)


def test_a_delta_of_a_replaced_base_is_never_applied(tmp_path, cache, notes):
    """A delta names the base it extends: laid over a base rebuilt since (same row count,
    the archive's stamp as the delta knew it), it would put the reply in the wrong thread."""
    pad = "x" * 5000  # bodies past the 4 KiB tail digest: the two archives share their tail
    first, second, third = (message(n, body=f"Body {n} {pad}") for n in range(3))
    archive = write_mbox(tmp_path / "a.mbox", [first, second, third])
    listing(archive)
    reply = message(9, reply_to=1)
    append(archive, reply)
    listing(archive)
    stale_delta = delta_file(cache).read_bytes()
    stale_mtime = archive.stat().st_mtime_ns
    # The archive is rewritten in place with its first two messages swapped (same sizes), so
    # the index is rebuilt (a new base, of the same number of rows); then the reply again.
    archive.write_bytes(mbox_bytes([second, first, third]))
    listing(archive)
    assert not delta_file(cache).exists()
    append(archive, reply)
    os.utime(archive, ns=(stale_mtime, stale_mtime))
    delta_file(cache).write_bytes(stale_delta)
    notes.clear()
    rows = listing(archive)
    assert counts(rows)["<m1@example.net>"] == 2 and counts(rows)["<m0@example.net>"] == 1
    assert rows == full_scan(archive)
    assert any("belongs to an earlier index; dropped" in n for n in notes), notes


@pytest.mark.parametrize("damage", ["truncated", "flipped", "other-version", "garbage", "empty", "bad-shape"])
def test_a_damaged_delta_is_dropped_with_a_note_and_the_listing_is_right(tmp_path, cache, notes, damage):
    archive = write_mbox(tmp_path / "a.mbox", [message(n) for n in range(6)])
    listing(archive)
    append(archive, message(6, reply_to=2), message(7))
    listing(archive)
    path = delta_file(cache)
    if damage != "bad-shape":
        damage_cache_file(path, damage, mbox_index_store.DELTA_KIND, mbox_index_store.DELTA_VERSION)
    else:  # whole and checksummed, bound to the right base, but naming a group that does not exist
        sections, _ = cache_file.read_sections(path, mbox_index_store.DELTA_KIND, mbox_index_store.DELTA_VERSION)
        main, links = (cache_file.decode(section, path)[0] for section in sections)
        cache_file.write(path, mbox_index_store.DELTA_KIND, mbox_index_store.DELTA_VERSION,
                         (*main[:5], ({10**6: [6]}, [], b"")), links)
    notes.clear()
    rows = listing(archive)
    assert any("appended-mail index" in n and ("rebuilt" in n or "dropped" in n) for n in notes), notes
    assert rows == full_scan(archive)
    assert counts(rows)["<m2@example.net>"] == 2
    # The base was extended again from the archive and a good delta saved.
    assert cache_file.read(path, mbox_index_store.DELTA_KIND, mbox_index_store.DELTA_VERSION)[0] is not None
    assert listing(archive) == rows


def test_the_delta_is_compacted_into_the_base_past_its_share(tmp_path, cache, notes, monkeypatch):
    monkeypatch.setattr(mbox_index_store, "COMPACT_MIN_ROWS", 1)
    monkeypatch.setattr(mbox_index_store, "COMPACT_SHARE", 2)  # past half of the base's rows
    archive = write_mbox(tmp_path / "a.mbox", [message(n) for n in range(4)])
    listing(archive)
    base = fingerprint(base_file(cache))
    append(archive, message(4, reply_to=0))
    append(archive, message(5))
    assert listing(archive) == full_scan(archive)  # 2 rows over 4: a delta
    assert fingerprint(base_file(cache)) == base and delta_file(cache).exists()
    append(archive, message(6, reply_to=5))
    rows = listing(archive)  # 3 rows over 4: past half, compacted
    assert any("delta compacted" in n for n in notes), notes
    assert fingerprint(base_file(cache))[0] != base[0] and not delta_file(cache).exists()
    assert rows == full_scan(archive) and counts(rows)["<m5@example.net>"] == 2
    # The compacted base takes deltas again.
    compacted = fingerprint(base_file(cache))
    append(archive, message(7, reply_to=6))
    assert listing(archive) == full_scan(archive)
    assert fingerprint(base_file(cache)) == compacted and delta_file(cache).exists()


# -- base + delta equals a full scan, whatever is appended ---------------------------------

# One appended message: (kind, a, b) picks what it is; IDs are drawn from the messages so far.
APPENDED = st.tuples(st.sampled_from(["new", "reply", "reply-to-missing", "duplicate-id", "relink", "no-id",
                                      "undated", "chain"]),
                     st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=10**6))


def _appended_message(n: int, kind: str, a: int, b: int, known: int) -> bytes:
    old, other = a % known, b % known
    if kind == "reply":
        return message(n, reply_to=old)
    if kind == "reply-to-missing":
        return message(n, reply_to=10_000 + a % 7)
    if kind == "duplicate-id":
        return message(n, mid=old, reply_to=other if b % 2 else None)
    if kind == "relink":  # an older message named as a reply to another one
        return message(n, refs=(other, old))
    if kind == "no-id":
        return (f"From: Anon {n} <a{n}@example.net>\nSubject: No ID {n}\nDate: Mon, 01 Jan 2024 10:00:00 +0000\n"
                + (f"In-Reply-To: <m{old}@example.net>\n" if b % 2 else "") + f"\nBody {n}\n").encode()
    if kind == "undated":
        return message(n, dated=False, reply_to=old if b % 2 else None)
    if kind == "chain":
        return message(n, refs=(other,), reply_to=old)
    return message(n)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(start=st.integers(min_value=1, max_value=12), rounds=st.lists(st.lists(APPENDED, min_size=1, max_size=4),
                                                                      min_size=1, max_size=5),
       compact_share=st.sampled_from([1, 2, 16]), few_lookups=st.sampled_from([0, 64]))
def test_base_and_delta_list_what_a_full_scan_lists(tmp_path_factory, start, rounds, compact_share, few_lookups):
    folder = tmp_path_factory.mktemp("delta")
    cache_dir = os.environ.get("MAILTRIAGE_CACHE_DIR")
    os.environ["MAILTRIAGE_CACHE_DIR"] = str(folder / "cache")
    saved = mbox_index_store.COMPACT_MIN_ROWS, mbox_index_store.COMPACT_SHARE, mbox_index_store._FEW_LOOKUPS
    # Compaction after every append, past the whole base, past 1/16; the roots searched for
    # each appended message, or indexed all at once.
    mbox_index_store.COMPACT_MIN_ROWS, mbox_index_store.COMPACT_SHARE = 0, compact_share
    mbox_index_store._FEW_LOOKUPS = few_lookups
    try:
        archive = write_mbox(folder / "a.mbox", [message(n, reply_to=n - 1 if n % 3 == 2 else None)
                                                 for n in range(start)])
        assert listing(archive) == full_scan(archive)
        n = start
        for appended in rounds:
            batch = []
            for kind, a, b in appended:
                batch.append(_appended_message(n, kind, a, b, n))
                n += 1
            append(archive, *batch)
            assert listing(archive) == full_scan(archive)
            assert listing(archive) == full_scan(archive)  # read back from what was persisted
    finally:
        mbox_index_store.COMPACT_MIN_ROWS, mbox_index_store.COMPACT_SHARE, mbox_index_store._FEW_LOOKUPS = saved
        if cache_dir is None:
            os.environ.pop("MAILTRIAGE_CACHE_DIR", None)
        else:
            os.environ["MAILTRIAGE_CACHE_DIR"] = cache_dir


def _keep_listing(path: str, rounds: int, failures) -> None:
    try:
        for _ in range(rounds):
            listing(Path(path))
    except BaseException as exc:  # reported to the parent, which fails the test
        failures.put(repr(exc))
        raise


def test_processes_appending_and_listing_at_once_never_corrupt_the_index(tmp_path, cache, monkeypatch):
    """Two processes list a growing archive at once (each extends, writes deltas, compacts,
    reads the other's files) while a third appends: every listing works, and the index left
    behind lists what a full scan lists."""
    import multiprocessing  # here: only this test forks

    monkeypatch.setattr(mbox_index_store, "COMPACT_MIN_ROWS", 4)
    archive = write_mbox(tmp_path / "a.mbox", [message(n, reply_to=n - 1 if n % 4 else None) for n in range(20)])
    listing(archive)
    ctx = multiprocessing.get_context("fork")
    failures = ctx.Queue()
    readers = [ctx.Process(target=_keep_listing, args=(str(archive), 25, failures)) for _ in range(2)]
    for reader in readers:
        reader.start()
    n = 20
    while any(reader.is_alive() for reader in readers) and n < 400:
        append(archive, message(n, reply_to=(n * 7) % 20 if n % 3 else None))
        n += 1
        time.sleep(0.005)  # appends spread over the readers' opens
    for reader in readers:
        reader.join()
    assert failures.empty() and all(reader.exitcode == 0 for reader in readers)
    assert listing(archive) == full_scan(archive)
    assert listing(archive) == full_scan(archive)
    assert not [p.name for p in (cache / "mbox").iterdir() if p.name.endswith(".tmp")]  # no temporary file left
