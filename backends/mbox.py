"""Offline archive backend: an mbox file, a Maildir or a folder of ``.eml`` files.

Read-only, always: the archive is opened for reading only, nothing is renamed,
flagged or rewritten, and no index is stored beside it. An mbox file's index is
kept in the private cache folder instead (a base and a delta of appended mail, see
:mod:`backends.mbox_index_store`; ``persist_index: false`` or the user's
``cache_summaries = false`` keep it in memory only).

Capabilities: ``list_recent_threads``, ``read_thread``, ``thread_url``. Every
other op is declined by the base class with ``NotSupported``.

Settings (``mail_sources.<name>`` in project.md)::

    path: archives/security.mbox     # relative to the project folder; required
    list: security@example.org       # optional: the list this archive is a snapshot of
    max_message_bytes: 26214400      # optional size cap for reading one message (0 = none)
    parallel: true                   # optional: scan big mbox files on two cores
    persist_index: true              # optional: keep an mbox file's index in the cache folder

Listing an mbox never builds ``email`` objects. The fast path reads the file in
16 MB chunks (a copy from the page cache; no memory map, so the resident set
stays small), finds each message's header block with one regular expression,
pulls the six fields that threading and the list need with a second one over
all header blocks of the chunk, and keeps the raw bytes: subjects and senders
are decoded only for the threads it returns. Files over 64 MB are split at a
message boundary near the middle and the first half is scanned in a forked
child. The fields come through the same rules as ``mime_headers.header_fields`` /
``mime_dates.parse_date`` so the fast path and a full parse agree (a test checks that
on a generated mbox).

Why not scan backwards from the end and stop early? A thread's summary needs
every message of the thread (its count, its root's subject and sender) and the
root of a reply that only has In-Reply-To is found through its parent's headers,
which can be anywhere in the archive. No stopping rule is safe without reading
all Message-ID / References / In-Reply-To fields, so the whole file is indexed
once and the index is reused while the file's size and mtime stay the same.

The parts live beside this module, one per section it had (issue 36):
:mod:`backends.mbox_index` (the index, one row per message), :mod:`backends.mbox_scan` (the
fast mbox scan and its forked child), :mod:`backends.mbox_files` (Maildir and ``.eml``
folders), :mod:`backends.mbox_archive` (sniffing an archive and indexing it) and
:mod:`backends.mbox_persist` (the index as the cache folder keeps it, and the delta of mail
appended since).
"""

from __future__ import annotations

import contextlib
import os
import threading
from bisect import bisect_left
from dataclasses import field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence
from urllib.parse import quote

from mailtriage.backends import mbox_index_store as index_store
from mailtriage.backends.contract import (
    MESSAGE_ID_KIND,
    AttachmentInfo,
    MailSource,
    Message,
    Op,
    SourceFeatures,
    SourceOrigin,
    Thread,
    ThreadId,
    ThreadSummary,
)
from mailtriage.backends.errors import BackendFailure, ThreadNotFound, Unavailable
from mailtriage.backends.mbox_archive import index_archive, sniff_archive
from mailtriage.backends.mbox_files import DEFAULT_MAX_MESSAGE_BYTES, _mtime, _read_header
from mailtriage.backends.mbox_index import _UNDATED_NOTE, NO_DATE, ArchiveIndex, _envelope_epoch, _sender, mbox_unquote
from mailtriage.backends.mbox_persist import _appended_since, _extend_groups, _index_fields, _index_from_fields
from mailtriage.backends.mbox_scan import _CHUNK, _HEADER_READ, drop_separator_line, scan_mbox_range
from mailtriage.backends.mime import AttachmentNotFound, _body_charset, attachment_bytes, parse_message
from mailtriage.backends.mime_dates import PLAUSIBLE_AHEAD_SECONDS, PLAUSIBLE_SINCE, implausible_date
from mailtriage.backends.mime_header_text import decode_header_text, header_needs_charset
from mailtriage.backends.mime_headers import header_fields, normalize_line_ends, split_header_block
from mailtriage.backends.thread_reconstruction import Links, ThreadGroup, synthetic_kind
from mailtriage.core.collector import collector_paused
from mailtriage.core.errors import ConfigError
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.paths import user_allows_caches

if TYPE_CHECKING:
    from mailtriage.backends.search import SearchPage, SearchRequest

__all__ = ["MboxSource", "ArchivedMessage"]


# ---------------------------------------------------------------------------
# The backend
# ---------------------------------------------------------------------------

def _id_text(raw: bytes) -> str:
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace")


def _normalize_list(name: str) -> str:
    return name.strip().strip("<>").strip().lower()


def _cut_mark(info: AttachmentInfo, cap: int, size: int, name: str) -> AttachmentInfo:
    """``info`` marked "truncated at N bytes" (the form application/flows/attachments.py reads): its
    message was read only up to the size cap, so its bytes may end early and are not saved."""
    mark = (f"truncated at {cap:,} bytes: the message is {size:,} bytes, over "
            f"mail_sources.{name}.max_message_bytes (raise it to save this part whole)")
    return replace(info, note=f"{mark}; {info.note}" if info.note else mark)


@frozen_dataclass
class ArchivedMessage:
    """One message of an archive as :meth:`MboxSource.received_since` found it."""

    row: int
    received: datetime | None
    index: ArchiveIndex = field(repr=False, compare=False)


def _user_allows_caches(source: MailSource) -> bool:
    """False when the user settings say ``[settings] cache_summaries = false`` (no mail
    metadata on disk). A user settings file that cannot be read allows nothing."""
    # The user settings the application opened, when it handed them over; else the user's own file.
    user = source.origin.user_settings
    # Loaded here, not at import: core.settings brings yaml in, which listing an archive does not need.
    from mailtriage.core.settings import load_settings  # noqa: PLC0415

    try:
        user = user or load_settings()
    except ConfigError:
        return False
    return user.readable and user_allows_caches(user.data)


class MboxSource(MailSource):
    """A read-only archive snapshot: an mbox file, a Maildir or a folder of ``.eml`` files.

    Raises (every operation):
        Unavailable: the path is missing, unreadable or not an archive, or the
            settings are wrong (the reason names the file and key).
        BackendFailure: a ``list`` argument names another list than the one this
            archive is a snapshot of; a thread ID of another kind; an unknown thread.
        NotSupported: list_drafts, list_sent_since, create_draft.
    """

    signs_in_without_tokens = True  # a local file: no sign-in

    kind = "mbox"
    features = SourceFeatures(local_archive=True, attachment_bytes=True, server_search=True)
    thread_id_kind = MESSAGE_ID_KIND  # root Message-IDs; old "mbox:" tags read back as this shape
    resolves_message_ids = True
    capabilities = frozenset({Op.LIST_RECENT_THREADS, Op.READ_THREAD, Op.THREAD_URL})

    def __init__(self, name: str, settings: Mapping[str, object] | None = None, *,
                 origin: SourceOrigin | None = None) -> None:
        super().__init__(name, settings, origin=origin)
        self._problem: str | None = None
        self._config_file = self.origin.project_file
        raw_path = self.settings.get("path")
        self.path: Path | None = None
        if raw_path is None or not str(raw_path).strip():
            self._problem = self._setting_problem("path", "is not set",
                                                  "a path to an mbox file, a Maildir or a folder of .eml files")
        else:
            path = Path(str(raw_path)).expanduser()
            self.path = self.origin.resolve(path).resolve()
        archive_list = self.settings.get("list")
        if archive_list is not None and not isinstance(archive_list, str):
            self._problem = self._setting_problem("list", f"must be a list address, not {archive_list!r}",
                                                  "e.g. security@example.org")
        self.archive_list = archive_list.strip() if isinstance(archive_list, str) and archive_list.strip() else None
        cap = self.settings.get("max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES)
        if cap is None:
            cap = 0
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            self._problem = self._setting_problem("max_message_bytes", f"must be a whole number of bytes, not {cap!r}",
                                                  "0 (no cap) or a positive integer such as 26214400")
            cap = DEFAULT_MAX_MESSAGE_BYTES
        self.max_message_bytes: int = cap
        parallel = self.settings.get("parallel", True)
        if not isinstance(parallel, bool):
            self._problem = self._setting_problem("parallel", f"must be true or false, not {parallel!r}", "true, false")
            parallel = True
        self.parallel = parallel
        persist = self.settings.get("persist_index", True)
        if not isinstance(persist, bool):
            self._problem = self._setting_problem("persist_index", f"must be true or false, not {persist!r}",
                                                  "true, false")
            persist = True
        self._persist_setting = persist
        self._persist: bool | None = None
        self._synthetic_kind = synthetic_kind(self.thread_id_kind)
        self._index: ArchiveIndex | None = None
        self._index_key: tuple | None = None
        self._lock = threading.RLock()
        self._groups: list[ThreadGroup] | None = None
        # (index, groups, (len(index), len(groups)), {(synthetic, root id text): position}): _find_group's lookup
        self._by_root: tuple[Any, Any, tuple[int, int], dict[tuple[bool, str], int]] | None = None

    def _setting_problem(self, key: str, problem: str, valid: str) -> str:
        return f"{self._config_file}: mail_sources.{self.name}.{key}: {problem} (valid: {valid})"

    # -- availability -------------------------------------------------
    def check_available(self) -> None:
        """Raise Unavailable when the archive cannot be read (cheap: stat and 5 bytes)."""
        if self._problem:
            raise Unavailable(self.name, self._problem)
        assert self.path is not None
        try:
            sniff_archive(self.path)
        except ValueError as exc:
            raise Unavailable(self.name, str(exc)) from exc

    # -- index --------------------------------------------------------
    def _archive_key(self) -> tuple:
        assert self.path is not None
        stat = self.path.stat()
        key: tuple = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if self.path.is_dir():
            for sub in ("cur", "new"):
                folder = self.path / sub
                if folder.is_dir():
                    sub_stat = folder.stat()
                    key += (sub_stat.st_mtime_ns,)
        return key

    def load_index(self) -> ArchiveIndex:
        """The archive's index, rebuilt only when the archive changed on disk.

        Raises:
            Unavailable: the archive cannot be read.
        """
        self.check_available()
        assert self.path is not None
        with self._lock:  # two workers asking at once scan the archive once
            return self._load_index_locked()

    def _load_index_locked(self) -> ArchiveIndex:
        assert self.path is not None
        try:
            key = self._archive_key()
            if self._index is None or key != self._index_key:
                self._index, self._groups = self._open_index()
                self._index_key = key
        except ValueError as exc:
            raise Unavailable(self.name, str(exc)) from exc
        except OSError as exc:
            raise Unavailable(self.name, f"cannot read {self.path}: {exc.strerror or exc}") from exc
        return self._index

    @property
    def persist_index(self) -> bool:
        """Whether the index is persisted in the cache folder (``persist_index`` and the
        user's ``[settings] cache_summaries``, both true by default)."""
        if self._persist is None:
            self._persist = self._persist_setting and _user_allows_caches(self)
        return self._persist

    def _open_index(self) -> tuple[ArchiveIndex, list[ThreadGroup] | None]:
        """The index (and, when known, its thread groups): from the persisted index when it
        still describes the archive, extended by the appended tail when the archive grew,
        else scanned (and persisted). See :mod:`backends.mbox_index_store`."""
        assert self.path is not None
        if not self.persist_index or sniff_archive(self.path) != "mbox":
            return index_archive(self.path, parallel=self.parallel), None
        path = self.path
        fd = os.open(path, os.O_RDONLY)
        try:
            stamp = index_store.stamp_of(fd)
            stored = index_store.load(path)
            if stored is not None:
                old = stored.stamp
                if old == stamp:
                    index = _index_from_fields(stored.fields, Links())
                    index.links_loader = stored.links  # decoded only if the groups must be redone
                    return index, stored.groups
                if _appended_since(fd, old, stamp, stored.fields):
                    extended = self._extend_stored(fd, stored, stamp)
                    if extended is not None:
                        return extended
                else:
                    index_store.note(f"{path.name} changed on disk (not by an append); its index is rebuilt")
        finally:
            os.close(fd)
        index = index_archive(path, parallel=self.parallel)
        with collector_paused():
            groups = index.threads()
        fd = os.open(path, os.O_RDONLY)
        try:
            after = index_store.stamp_of(fd)
        finally:
            os.close(fd)
        # Saved only when the file did not move under the scan (else the next open rebuilds).
        scanned = index.ends[-1] if index.ends else after.size
        if scanned == after.size and (after.inode, after.size) == (stamp.inode, stamp.size):
            index_store.save(path, after, _index_fields(index), index.links, groups)
        return index, groups

    def _extend_stored(self, fd: int, stored: index_store.Stored,
                       stamp: index_store.ArchiveStamp) -> tuple[ArchiveIndex, Sequence[ThreadGroup]] | None:
        """The persisted index extended by the messages appended since it was made (only the
        new tail is scanned), persisted as a delta (or, when the new mail re-links older mail
        or the delta grew past its share, as a whole new index); None when the persisted
        links cannot be read (the caller rescans)."""
        assert self.path is not None
        path, old = self.path, stored.stamp
        old_links = stored.links()
        earlier = stored.delta_links()
        if old_links is None or earlier is None:
            return None
        index = _index_from_fields(stored.fields, old_links)
        groups: Any = stored.groups
        with collector_paused():
            # A buffer the size of the tail: a zeroed 16 MB one costs 15-35 ms in a fresh process.
            columns, links = scan_mbox_range(fd, old.size, stamp.size,
                                             min(_CHUNK, max(_HEADER_READ, stamp.size - old.size)))
            before = len(index)
            index.extend(columns)
            ends = index.ends
            if columns[0]:
                if before:
                    ends[before - 1] = columns[0][0]
                ends.extend(columns[0][1:])
            ends.append(stamp.size)
            grown = _extend_groups(groups, old_links, links, index.message_ids[before:], index.synthetic[before:],
                                   before, index.dates)
            index.links = index_store.chain_links(old_links, links)
            how = "threads extended"
            if grown is None:
                grown, how = index.threads(), "threads regrouped (the new mail links older mail)"
        if grown is groups and not index_store.wants_compaction(stored, len(index)):
            written = index_store.save_delta(path, stored, stamp, _index_fields(index),
                                             index_store.chain_links(earlier, links), groups)
            saved = f"saved as a delta of {written:,} bytes" if written is not None else "not saved"
        else:
            index_store.save(path, stamp, _index_fields(index), index.links, grown)
            saved = "the whole index saved again" + ("" if grown is not groups else " (delta compacted)")
        index_store.note(f"{path.name}: {len(index) - before} appended message(s) indexed "
                         f"(bytes {old.size}-{stamp.size}; {how}); the rest from the persisted index; {saved}")
        return index, grown

    def _threads(self) -> tuple[ArchiveIndex, list[ThreadGroup]]:
        with self._lock:
            index = self.load_index()
            if self._groups is None:
                with collector_paused():
                    self._groups = index.threads()
            return index, self._groups

    def _check_list(self, list_name: str | None) -> None:
        if list_name is None or self.archive_list is None:
            return
        if _normalize_list(list_name) != _normalize_list(self.archive_list):
            raise BackendFailure(self.name, f"this archive is a snapshot of {self.archive_list}, "
                                            f"not {list_name} (mail_sources.{self.name}.list)")

    def _accepts(self, thread_id: ThreadId) -> ThreadId:
        """This archive's reference for ``thread_id``: its own shape, or another backend's
        reference by its root Message-ID. BackendFailure for anything else."""
        if thread_id.kind not in (self.thread_id_kind, synthetic_kind(self.thread_id_kind)) and not thread_id.root:
            raise BackendFailure(
                self.name,
                f"thread id of kind {thread_id.kind!r} given to backend {self.name!r}, which emits "
                f"{self.thread_id_kind!r} and {synthetic_kind(self.thread_id_kind)!r} ids")
        return self.own_thread_id(thread_id)

    def thread_for_message_id(self, message_id: str) -> ThreadId | None:
        """The thread holding the message ``message_id`` (its root or any reply)."""
        index, groups = self._threads()
        mids = index.message_ids
        for group in groups:
            if group.synthetic:
                continue
            if _id_text(group.root_id) == message_id or any(_id_text(mids[m]) == message_id for m in group.members):
                return ThreadId(self.thread_id_kind, _id_text(group.root_id))
        return None

    # -- operations ---------------------------------------------------
    def list_recent_threads(self, list_name: str | None, since: datetime) -> list[ThreadSummary]:
        """Threads with a message dated at or after ``since``, newest activity first.

        Raises:
            Unavailable: the archive cannot be read.
            BackendFailure: ``list_name`` is not the list this archive holds.
        """
        self._check_list(list_name)
        if since.tzinfo is None:
            since = since.replace(tzinfo=timezone.utc)
        since_epoch = since.timestamp()
        index, groups = self._threads()
        rows = []
        if isinstance(groups, index_store.PackedGroups):
            # A persisted index knows each thread's latest date: only the window's groups are made.
            roots = groups.roots
            for position, latest in enumerate(groups.latest):
                if latest >= since_epoch:
                    rows.append((-latest, roots[position], position, groups[position]))
        else:
            date_of = index.comparable_dates().__getitem__
            for position, group in enumerate(groups):
                members = group.members
                latest = date_of(members[0]) if len(members) == 1 else max(map(date_of, members))
                if latest >= since_epoch:
                    rows.append((-latest, group.root_id, position, group))
        rows.sort()  # newest first; ties by root ID, then archive order
        summarize = self._summarizer(index, since_epoch)
        with collector_paused():
            return [summarize(group, -negative) for negative, _, _, group in rows]

    def _summarizer(self, index: ArchiveIndex, since_epoch: float | None = None):
        """A function building one ThreadSummary; the index's columns bound once (it runs per row)."""
        emails = index.sender_emails()
        stamps = index.comparable_dates()
        mids = index.message_ids
        subjects = index.subjects
        senders = index.senders
        row_notes = index.notes
        real_kind, synthetic_kind_ = self.thread_id_kind, self._synthetic_kind
        utc = timezone.utc

        archive_notes = index.archive_notes
        # Many rows' values in one call (a persisted index's columns make a value per read).
        emails_of = emails.values_at if isinstance(emails, index_store.BlobColumn) else \
            (lambda rows: list(map(emails.__getitem__, rows)))
        mids_of = mids.values_at if isinstance(mids, index_store.BlobColumn) else \
            (lambda rows: list(map(mids.__getitem__, rows)))
        now = datetime.now(utc).timestamp()
        plausible_since, plausible_until = PLAUSIBLE_SINCE, now + PLAUSIBLE_AHEAD_SECONDS

        def summarize(group: ThreadGroup, latest: float) -> ThreadSummary:
            members = group.members
            head = members[0] if mids[members[0]] == group.root_id else self._head_member(index, group)
            raw_subject, raw_sender = subjects[head], senders[head]
            charset = None
            # A raw 8-bit header (or a UTF-7 subject) reads in the body's charset first. Only the
            # subject is checked for UTF-7: plus-addressing (a+tag-x@) in senders is common.
            if header_needs_charset(raw_subject) or not (raw_sender or b"").isascii():
                charset = self._row_charset(index, head)
            subject, subject_notes = decode_header_text(raw_subject, charset)
            count = len(members)
            if count == 1:
                email = emails[head]
                participants: tuple[str, ...] = (email,) if email else ()
            elif count == 2:
                first, second = members
                if stamps[second] < stamps[first]:
                    first, second = second, first
                participants = tuple(filter(None, dict.fromkeys((emails[first], emails[second]))))
            else:
                # In date order (undated first), ties in archive order; archives are
                # mostly in order already, so check before sorting.
                order_stamps = list(map(stamps.__getitem__, members))
                order = members if order_stamps == sorted(order_stamps) else \
                    [m for _, m in sorted(zip(order_stamps, members))]
                participants = tuple(filter(None, dict.fromkeys(emails_of(order))))
            notes = [f"subject: {n}" for n in subject_notes] if subject_notes else []
            if count > 1 and len(set(mids_of(members))) != count:
                counts: dict[bytes, int] = {}
                for member in members:
                    counts[mids[member]] = counts.get(mids[member], 0) + 1
                notes += [f"{n} messages share Message-ID {_id_text(mid)}; all are kept"
                          for mid, n in counts.items() if n > 1]
            marker = ""
            if (latest < plausible_since or latest > plausible_until) and implausible_date(latest, now):
                odd = implausible_date(latest, now)
                marker = "implausible"
                notes.append(f"the latest date ({datetime.fromtimestamp(latest, tz=utc).isoformat()}) "
                             f"is {odd}; it may be wrong")
            if row_notes and not row_notes.keys().isdisjoint(members):
                for member in members:
                    member_notes = row_notes.get(member, ())
                    if not marker and stamps[member] == latest and _UNDATED_NOTE in member_notes:
                        marker = "undated"
                    for note in member_notes:
                        if note not in notes:
                            notes.append(note)
            if archive_notes:
                notes += [n for n in archive_notes if n not in notes]
            root = _id_text(group.root_id)
            # A thread whose first message is older than `since` is a reply to an older thread.
            continued = since_epoch is not None and count > 1 and min(map(stamps.__getitem__, members)) < since_epoch
            return ThreadSummary(
                thread_id=ThreadId(synthetic_kind_ if group.synthetic else real_kind, root),
                subject=subject,
                root_message_id=root,
                sender=_sender(raw_sender, charset),
                last_activity=datetime.fromtimestamp(latest, tz=utc),
                message_count=count,
                participants=participants,
                notes=tuple(notes),
                date_marker=marker,
                continued=continued,
            )

        return summarize

    def _row_charset(self, index: ArchiveIndex, row: int) -> str | None:
        """The charset the message's Content-Type declares (read from the archive; None on failure)."""
        try:
            if index.format == "mbox":
                assert self.path is not None
                with open(self.path, "rb") as handle:
                    handle.seek(index.locations[row])
                    head = handle.read(min(_HEADER_READ, index.ends[row] - index.locations[row]))
                if index.line_ends == "cr":
                    head = head.replace(b"\r", b"\n")
                head = head.split(b"\n", 1)[1] if head.startswith(b"From ") and b"\n" in head else head
            else:
                head = _read_header(Path(index.locations[row]))
        except OSError:
            return None
        header, _ = split_header_block(normalize_line_ends(head)[0])
        return _body_charset(header_fields(header, {b"content-type"}).get(b"content-type"))

    @staticmethod
    def _head_member(index: ArchiveIndex, group: ThreadGroup) -> int:
        """The root message when present, else the earliest (by date, then archive order)."""
        mids = index.message_ids
        for member in group.members:
            if mids[member] == group.root_id:
                return member
        dates = index.dates
        return min(group.members, key=lambda m: (dates[m] == NO_DATE, dates[m], m))

    def _roots(self, index: ArchiveIndex, groups: list[ThreadGroup]) -> dict[tuple[bool, str], int]:
        """Each thread's position by (synthetic, root ID text), the first one when two share a
        root (as a scan in order finds it); made once per index and grouping, so reading every
        thread of a large archive is no longer a scan of all threads per read."""
        kept = self._by_root
        sizes = (len(index), len(groups))  # mail appended in place grows the index, new threads the grouping
        if kept is None or kept[0] is not index or kept[1] is not groups or kept[2] != sizes:
            table: dict[tuple[bool, str], int] = {}
            for at, group in enumerate(groups):
                table.setdefault((group.synthetic, _id_text(group.root_id)), at)
            kept = self._by_root = (index, groups, sizes, table)
        return kept[3]

    def _find_group(self, thread_id: ThreadId) -> tuple[ArchiveIndex, ThreadGroup]:
        thread_id = self._accepts(thread_id)
        index, groups = self._threads()
        want_synthetic = thread_id.kind == synthetic_kind(self.thread_id_kind)
        by_root = self._roots(index, groups)
        at = by_root.get((want_synthetic, thread_id.value))
        if at is not None:
            return index, groups[at]
        if not want_synthetic:
            # A reply's own Message-ID names the thread that holds it.
            holder = self.thread_for_message_id(thread_id.value)
            if holder is not None:
                at = by_root.get((False, holder.value))
                if at is not None:
                    return index, groups[at]
        raise ThreadNotFound(self.name, f"no thread {thread_id} in {self.path}")

    def read_thread(self, thread_id: ThreadId) -> Thread:
        """Every message of the thread, oldest first, fully decoded.

        Raises:
            Unavailable: the archive cannot be read.
            BackendFailure: a thread ID of another kind, or no such thread.
        """
        index, group = self._find_group(thread_id)
        messages = []
        for member in group.members:
            messages.append((index.dates[member], member, self._read_message(index, member)))
        messages.sort(key=lambda item: (item[0], item[1]))  # oldest first; undated ones before all
        head = self._head_member(index, group)
        raw_subject = index.subjects[head]
        charset = self._row_charset(index, head) if header_needs_charset(raw_subject) else None
        subject, _ = decode_header_text(raw_subject, charset)
        notes = list(index.archive_notes)
        if not any(index.message_ids[m] == group.root_id for m in group.members):
            notes.append(f"the thread's first message {_id_text(group.root_id)} is not in this archive")
        own_kind = synthetic_kind(self.thread_id_kind) if group.synthetic else self.thread_id_kind
        return Thread(thread_id=ThreadId(own_kind, _id_text(group.root_id)), subject=subject,
                      messages=tuple(m for _, _, m in messages), notes=tuple(notes))

    def _read_raw(self, index: ArchiveIndex, row: int) -> tuple[bytes, int]:
        """Raw message bytes (capped) and the message's full size."""
        cap = self.max_message_bytes or None
        if index.format == "mbox":
            assert self.path is not None
            start, end = index.locations[row], index.ends[row]
            size = end - start
            with open(self.path, "rb") as handle:
                handle.seek(start)
                data = handle.read(min(size, cap + _HEADER_READ) if cap else size)
            if index.line_ends == "cr":
                data = data.replace(b"\r", b"\n")
            if len(data) == size:
                data = drop_separator_line(data)
            newline = data.find(b"\n")
            data = data[newline + 1 :] if data.startswith(b"From ") and newline >= 0 else data
            return mbox_unquote(data), size - (newline + 1 if newline >= 0 else 0)
        path = Path(index.locations[row])
        size = path.stat().st_size
        with open(path, "rb") as handle:
            data = handle.read(min(size, cap + _HEADER_READ) if cap else size)
        return data, size

    # -- reading every message (the feedback sweep) ------------------------------
    def archive_format(self) -> str:
        """``mbox``, ``maildir`` or ``eml``. Raises Unavailable when the path is no archive."""
        self.check_available()
        assert self.path is not None
        return sniff_archive(self.path)

    def received_since(self, since: datetime) -> list[ArchivedMessage]:
        """Every message received at or after ``since``, in archive order; a message with
        no time at all is kept too (``received`` None).

        Received is the archive's delivery time, else the Date header: the mbox From_ line;
        for a file (Maildir, .eml) its mtime, where Dovecot keeps a Maildir message's
        received date (INTERNALDATE) and the standard library's Maildir writes it. (Listing
        falls back to the Maildir file name's time instead, for undated mail only.)
        Raises Unavailable.
        """
        index = self.load_index()
        assert self.path is not None
        floor = since.timestamp()
        found = []
        with contextlib.ExitStack() as stack:
            handle = stack.enter_context(open(self.path, "rb")) if index.format == "mbox" else None
            for row in range(len(index)):
                epoch = self._delivery_epoch(index, row, handle)
                if epoch is None and index.dates[row] != NO_DATE:
                    epoch = index.dates[row]
                if epoch is not None and epoch < floor:
                    continue
                received = datetime.fromtimestamp(epoch, timezone.utc) if epoch is not None else None
                found.append(ArchivedMessage(row, received, index))
        return found

    def _delivery_epoch(self, index: ArchiveIndex, row: int, handle) -> float | None:
        if index.format == "mbox":
            handle.seek(index.locations[row])
            line = handle.readline(_HEADER_READ)
            return _envelope_epoch(line.split(b"\r", 1)[0] if index.line_ends == "cr" else line)
        return _mtime(Path(index.locations[row]))

    def archived_bytes(self, message: ArchivedMessage) -> bytes:
        """The message's bytes as sent (mbox quoting undone), capped at ``max_message_bytes``."""
        return self._read_raw(message.index, message.row)[0]

    def _message_ref(self, index: ArchiveIndex, row: int) -> str:
        if index.format == "mbox":
            return f"{self.name}:{index.locations[row]}"
        assert self.path is not None
        return f"{self.name}:{Path(index.locations[row]).relative_to(self.path).as_posix()}"

    def _read_message(self, index: ArchiveIndex, row: int) -> Message:
        ref = self._message_ref(index, row)
        try:
            raw, size = self._read_raw(index, row)
        except OSError as exc:
            mid = _id_text(index.message_ids[row])
            subject, _ = decode_header_text(index.subjects[row])
            return Message(message_id=mid, subject=subject, sender=_sender(index.senders[row]),
                           notes=(f"could not read this message: {exc.strerror or exc}",),
                           synthetic_id=index.synthetic[row], backend_ref=ref)
        cap = self.max_message_bytes
        message = parse_message(raw, backend_ref=ref, max_bytes=cap or None, hash_body=True)
        if cap and size > cap:
            note = (f"message is {size:,} bytes, over the size cap of {cap:,} "
                    f"(mail_sources.{self.name}.max_message_bytes); body truncated")
            message = replace(message, notes=tuple(n for n in message.notes if "size cap" not in n) + (note,),
                              attachments=tuple(_cut_mark(a, cap, size, self.name) for a in message.attachments))
        extra = tuple(n for n in index.notes.get(row, ()) if n not in message.notes)
        if extra:
            message = replace(message, notes=message.notes + extra)
        if row in index.not_mail and not message.subject:
            message = replace(message, subject=decode_header_text(index.subjects[row])[0])
        return message

    def search(self, request: SearchRequest) -> SearchPage:
        """A scan of the archive index (subjects, senders) and, for body text, of the
        newest candidate messages (bounded); see :mod:`mailtriage.backends.mbox_search`."""
        # lazy: the search code loads with the first search, not with every open of an
        # archive (about 15 ms of a listing's start, python -X importtime)
        from mailtriage.backends.mbox_search import search_archive

        return search_archive(self, request, sender_of=_sender, id_text=_id_text)

    def thread_url(self, thread_id: ThreadId) -> str:
        """``file://<absolute archive path>#<url-quoted root Message-ID>`` (no archive read).

        Raises:
            Unavailable: the settings are wrong.
            BackendFailure: a thread ID of another kind.
        """
        thread_id = self._accepts(thread_id)
        if self._problem:
            raise Unavailable(self.name, self._problem)
        assert self.path is not None
        return f"{self.path.as_uri()}#{quote(thread_id.value, safe='')}"

    # -- beyond the contract -------------------------------------------
    def attachment(self, message_ref: str, index: int) -> bytes:
        """Bytes of attachment ``index`` of the message ``message_ref`` (a Message.backend_ref).

        Raises:
            Unavailable: the archive cannot be read.
            BackendFailure: the reference or the attachment index is unknown.
        """
        archive = self.load_index()
        prefix = f"{self.name}:"
        if not message_ref.startswith(prefix):
            raise BackendFailure(self.name, f"message reference {message_ref!r} is not from this backend")
        wanted = message_ref[len(prefix):]
        row = self._row_of(archive, wanted)
        if row is None:
            raise BackendFailure(self.name, f"no message {message_ref!r} in {self.path}")
        raw, _ = self._read_raw(archive, row)
        try:
            return attachment_bytes(raw, index)
        except AttachmentNotFound as exc:
            raise BackendFailure(self.name, str(exc)) from exc

    def raw_message(self, message_ref: str) -> bytes:
        """The message ``message_ref`` (a Message.backend_ref) as the archive holds it.

        Raises:
            Unavailable: the archive cannot be read.
            BackendFailure: the reference is unknown.
        """
        archive = self.load_index()
        prefix = f"{self.name}:"
        if not message_ref.startswith(prefix):
            raise BackendFailure(self.name, f"message reference {message_ref!r} is not from this backend")
        row = self._row_of(archive, message_ref[len(prefix):])
        if row is None:
            raise BackendFailure(self.name, f"no message {message_ref!r} in {self.path}")
        raw, _ = self._read_raw(archive, row)
        return bytes(raw)

    def _row_of(self, archive: ArchiveIndex, wanted: str) -> int | None:
        if archive.format == "mbox":
            try:
                offset = int(wanted)
            except ValueError:
                return None
            row = bisect_left(archive.locations, offset)
            return row if row < len(archive.locations) and archive.locations[row] == offset else None
        assert self.path is not None
        target = str(self.path / wanted)
        for row, location in enumerate(archive.locations):
            if location == target:
                return row
        return None
