"""The persisted IMAP summary cache: per account and folder, headers and summaries only.

``ImapSource.list_recent_threads`` keeps, for the list folder, one row per message it has
seen: UID, Message-ID, References, In-Reply-To, subject, sender, arrival time, the
``\\Seen`` flag and the lower-cased To/Cc/List-Id/List-Post fields (to tell list mail
apart). Never a body, never a whole header block. The file lives in the platformdirs cache
folder (``<cache>/imap/``, the folder ``0700``, the file ``0600``; see
:mod:`core.cache_file` for the framing, the checksum and the atomic write).

What makes a cached row trustworthy (:class:`FolderCache`):

* ``uidvalidity``: a cache of another UIDVALIDITY is dropped, never served;
* ``highestmodseq``, ``uidnext`` and ``exists`` of the SELECT it was last reconciled
  with: when the server's are the same nothing changed; else only what changed is read
  (the messages from ``uidnext`` on; ``UID FETCH … (FLAGS) (CHANGEDSINCE modseq)`` for
  flag changes; one ``UID SEARCH`` of the cached UID range, ``RETURN (ALL COUNT)`` with
  ESEARCH, for expunged messages). Recording the modseq of the SELECT *before* those
  reads means a change made meanwhile is read again next time, never missed;
* ``floor_uid``: every message with a UID at or above it is in ``rows``;
* ``complete_since``: the rows hold every message that arrived at or after this instant
  (a walk of the folder ended there), or None when no walk ended by date.

A server without CONDSTORE (no HIGHESTMODSEQ) gets no cache: the listing cannot know what
changed. ``cache_summaries = false`` (per account, or in ``[settings]``) turns it off.
"""

from __future__ import annotations

import atexit
import hashlib
import threading
import weakref
from pathlib import Path
from typing import Any, Iterator

from mailtriage.backends.errors import MailError
from mailtriage.core import cache_file
from mailtriage.core.errors import ConfigError
from mailtriage.core.paths import cache_dir, private_cache_dir
from mailtriage.core.trace import TRACE

KIND = "imap-summaries"
# 2: the sender's Date: (SENT) is kept beside the arrival time.
# 3: rows laid out as threading records (Message-ID, References, In-Reply-To, synthetic
#    first), repeated strings stored once, rows in sections newest first (a first page
#    decodes the newest only). An older file is rebuilt.
# 4: In-Reply-To keyed as the MIME parser keys it (no "<yes>"), synthetic IDs hash the
#    body too (issue 33): rows of an older file would thread otherwise.
# 5: raw 8-bit and UTF-7 subjects and sender names read in the body's charset, as the read
#    path reads them (issue 33): an older file's rows would show them otherwise.
VERSION = 5

# One row (a plain tuple: a compact file, a fast load, and the very object the listing
# threads and summarises, never copied into another shape). Its first four fields are a
# threading record (backends.thread_reconstruction). ARRIVED is the INTERNALDATE in
# seconds since the epoch (None when the server gave none); SENT the sender's Date: as
# ISO 8601 text with the sender's offset (None when there is no usable date).
(MESSAGE_ID, REFERENCES, IN_REPLY_TO, SYNTHETIC, UID, SUBJECT, SENDER_NAME, SENDER_EMAIL, ARRIVED, SEEN, LIST_FIELDS,
 SENT) = range(12)
ROW_FIELDS = 12


#: How long after a listing its cache is written. The listing returns first, so the app paints
#: it meanwhile (written on the way, a dense window's 44k rows took 50-80 ms before its paint).
#: Written sooner when this process reads the file, when the source closes or lists again, and
#: when the process ends.
SAVE_AFTER = 1.0

FIRST_CHUNK = 2000  # rows in the file's first section of rows: the newest, more than a first page reads
CHUNK = 16384  # rows in each further section


class Damaged(MailError, ValueError):
    """A section of rows, decoded only when needed, is not what the file's header says."""


class FolderCache:
    """One folder's cached rows (keyed by UID) and the server state they were reconciled with.

    A cache read from a file keeps its rows as the file's sections, newest first, and
    decodes them only as they are needed: a first page reads the newest section only,
    anything that needs every row (:attr:`rows`) decodes the rest."""

    def __init__(self, uidvalidity: int, highestmodseq: int, uidnext: int, exists: int, floor_uid: int,
                 complete_since: float | None, rows: dict[int, tuple] | None = None, *,
                 sections: list[tuple[Any, int]] | None = None) -> None:
        self.uidvalidity = uidvalidity
        self.highestmodseq = highestmodseq
        self.uidnext = uidnext
        self.exists = exists
        self.floor_uid = floor_uid
        self.complete_since = complete_since
        self._pending = list(sections or ())  # (encoded section, its row count), newest first
        self._decoded: list[tuple] = []  # the sections decoded so far, newest first
        self._rows = rows if rows is not None else ({} if not self._pending else None)
        self.file: cache_file.LazyFile | None = None  #: the file it was read from (how much of it was read)

    @property
    def rows(self) -> dict[int, tuple]:
        """Every row by UID (decodes the sections not read yet; raises :class:`Damaged`)."""
        if self._rows is None:
            while self._pending:
                self._decode_next()
            self._rows = {row[UID]: row for chunk in self._decoded for row in chunk}
            self._decoded = []
        return self._rows

    @rows.setter
    def rows(self, rows: dict[int, tuple]) -> None:
        self._rows, self._pending, self._decoded = rows, [], []

    @property
    def size(self) -> int:
        """How many rows it holds (decoded or not), without decoding any."""
        if self._rows is not None:
            return len(self._rows)
        return sum(count for _data, count in self._pending) + sum(len(chunk) for chunk in self._decoded)

    def newest_first(self) -> Iterator[tuple]:
        """The rows, highest UID first, decoded section by section as far as they are read."""
        if self._rows is not None:
            rows = self._rows
            return (rows[uid] for uid in sorted(rows, reverse=True))
        return self._newest_first_lazily()

    def _newest_first_lazily(self) -> Iterator[tuple]:
        done = 0
        below: int | None = None  # the lowest UID yielded so far
        while True:
            if self._rows is not None:  # every row was decoded meanwhile: go on from the dict
                rows = self._rows
                yield from (rows[uid] for uid in sorted(rows, reverse=True) if below is None or uid < below)
                return
            if done < len(self._decoded):
                chunk = self._decoded[done]
                done += 1
                yield from chunk
                if chunk:
                    below = chunk[-1][UID]
            elif self._pending:
                self._decode_next()
            else:
                return

    def _decode_next(self) -> None:
        data, count = self._pending.pop(0)
        if isinstance(data, cache_file.Later):  # not read from the file yet (see read_file)
            data, why = data.read()
            if data is None:
                self._pending = []
                raise Damaged(why)
        chunk, why = cache_file.decode(data, Path("cache"))
        if why or type(chunk) is not tuple or len(chunk) != count or not all(
                type(row) is tuple and len(row) == ROW_FIELDS for row in chunk):
            self._pending = []
            raise Damaged("a section of rows is not what the header says")
        self._decoded.append(chunk)

    def to_sections(self) -> list:
        """The file's sections: the state and the row counts, then the rows newest first."""
        rows = self.rows
        uids = sorted(rows, reverse=True)
        bounds = [0, *range(min(FIRST_CHUNK, len(uids)), len(uids), CHUNK), len(uids)] if uids else [0]
        chunks = [tuple([rows[u] for u in uids[a:b]]) for a, b in zip(bounds, bounds[1:])]
        head = (self.uidvalidity, self.highestmodseq, self.uidnext, self.exists, self.floor_uid, self.complete_since,
                tuple(len(c) for c in chunks))
        return [head, *chunks]

    @classmethod
    def from_sections(cls, head: Any, sections: list) -> "FolderCache":
        """A cache from a file's decoded first section and its other (still encoded) sections."""
        uidvalidity, highestmodseq, uidnext, exists, floor_uid, complete_since, counts = head
        if not all(isinstance(v, int) for v in (uidvalidity, highestmodseq, uidnext, exists, floor_uid)):
            raise TypeError("state fields are not numbers")
        if complete_since is not None and not isinstance(complete_since, float):
            raise TypeError("complete_since of the wrong type")
        if not isinstance(counts, tuple) or len(counts) != len(sections) or not all(
                isinstance(c, int) for c in counts):
            raise TypeError("the row sections are not those the header counts")
        return cls(uidvalidity, highestmodseq, uidnext, exists, floor_uid, complete_since,
                   sections=list(zip(sections, counts)))


#: The file's sections read at once: the state and the newest rows (a first page). The others
#: are read from the file, kept open, when a listing needs them (issue 33: the head start of
#: a 100k folder read 12 MB and checked it all to show 200 threads).
SECTIONS_READ_FIRST = 2


def read_file(path: Path) -> tuple[FolderCache | None, str | None]:
    """The cache in ``path`` (its rows read and decoded only when needed), or ``(None, why)``;
    ``why`` is None when there is no file. The cache's :attr:`FolderCache.file` says how much
    of the file was read."""
    sections, why, file = cache_file.read_sections_lazily(path, KIND, VERSION, SECTIONS_READ_FIRST)
    if sections is None:
        return None, why
    first = sections[0]
    if isinstance(first, cache_file.Later):  # read first (SECTIONS_READ_FIRST >= 1): not expected
        data, why = first.read()
        if data is None:
            return None, why
        first = memoryview(data)
    head, why = cache_file.decode(first, path)
    if why:
        return None, why
    try:
        cache = FolderCache.from_sections(head, sections[1:])
    except (TypeError, ValueError) as exc:
        return None, f"unexpected contents ({exc}); rebuilt"
    cache.file = file
    return cache, None


def write_file(path: Path, cache: FolderCache) -> int:
    """Write ``cache`` to ``path`` (atomically, 0600); the bytes written."""
    return cache_file.write(path, KIND, VERSION, *cache.to_sections())


class SummaryStore:
    """Where one account folder's cache is read and written (nothing is read until asked).

    A listing's cache is written :data:`SAVE_AFTER` seconds later (:meth:`save_soon`), on a
    timer thread; until then this process reads it as if it were written (:meth:`load`
    writes it first). :attr:`lock` is held while a cache is written, so the source holding that
    cache takes it (:meth:`flush`) before changing the cache again."""

    def __init__(self, account: Any, folder: str, channel: str) -> None:
        key = "\0".join((account.id, account.host, str(account.port), account.username, folder))
        self.name = hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest() + ".cache"
        self.folder = folder
        self.channel = channel
        self.lock = threading.RLock()
        self.writes = 0  # files written by this store (a listing tells whether it wrote meanwhile)
        self._unsaved: FolderCache | None = None
        self._timer: threading.Timer | None = None

    def note(self, text: str) -> None:
        TRACE.log(self.channel, "!", f"summary cache of {self.folder}: {text}")

    def path(self) -> Path:
        return private_cache_dir("imap") / self.name

    def load(self) -> FolderCache | None:
        _flush_unsaved(self.name)  # a listing of this process not written yet is read as written
        try:
            path = self.path()
        except (OSError, ConfigError) as exc:
            self.note(f"no cache folder ({exc}); listing without a cache")
            return None
        cache, why = read_file(path)
        if why:
            self.note(why)
            cache_file.remove(path)
        return cache

    def save(self, cache: FolderCache) -> None:
        with self.lock:
            if self._unsaved is cache:
                self._unsaved = None  # written now
            self.writes += 1
            try:
                write_file(self.path(), cache)
            except (OSError, ValueError, ConfigError) as exc:
                self.note(f"not saved: {exc}")
                if not isinstance(exc, ValueError):
                    cache_file.cannot_write(cache_dir() / "imap", exc)

    def save_unless_narrower(self, cache: FolderCache) -> bool:
        """Save ``cache`` (a walk's) soon (:meth:`save_soon`), unless the file holds one of the
        same UIDVALIDITY that reaches further back: another listing of a wider window wrote it
        meanwhile (the new-report poller's short look-back beside the app's window, another app
        instance). That one stays, and is reconciled when next read. True when it will be saved."""
        with self.lock:
            self._unsaved = None  # this store's cache not written yet is replaced by ``cache``
        # Not under the lock: reading flushes the other stores of this file (their locks).
        on_disk = self.load()
        if on_disk is not None and on_disk.uidvalidity == cache.uidvalidity and _reaches_further(on_disk, cache):
            self.note("kept: the cache on disk reaches further back than this listing")
            return False
        self.save_soon(cache)
        return True

    def save_soon(self, cache: FolderCache) -> None:
        """Write ``cache`` :data:`SAVE_AFTER` seconds from now, or at the next :meth:`flush`
        (the source lists again or closes, this process reads the file, the process ends)."""
        with self.lock:
            self._unsaved = cache
            if self._timer is None:
                self._timer = threading.Timer(SAVE_AFTER, self.flush)
                self._timer.daemon = True  # the process's end writes it (see flush_all)
                self._timer.name = "summary-cache-write"
                with _STORES_LOCK:
                    _STORES.add(self)
                self._timer.start()

    def take_back(self, cache: FolderCache | None) -> bool:
        """Cancel the write of ``cache`` still to come: its holder changes it now and saves it
        again (a first page's, extended to the whole window: written once, whole). True when
        a write was cancelled (the holder then owes one); False when none was waiting (or it
        was under way: this waits for it)."""
        with self.lock:
            if cache is None or self._unsaved is not cache:
                return False
            self._unsaved = None
            timer, self._timer = self._timer, None
            if timer is not None:
                timer.cancel()
            with _STORES_LOCK:
                _STORES.discard(self)
            return True

    def waiting(self) -> bool:
        """Whether a cache waits to be written."""
        return self._unsaved is not None

    def flush(self) -> None:
        """Write the cache waiting to be written, if any, now (and wait for a write under way)."""
        with self.lock:
            cache, self._unsaved = self._unsaved, None
            timer, self._timer = self._timer, None
            if timer is not None and timer is not threading.current_thread():
                timer.cancel()
            if cache is not None:
                self.save(cache)
            # Only once written: a reader that finds this store meanwhile waits for the lock,
            # then reads the new file (not the one this write replaces).
            with _STORES_LOCK:
                _STORES.discard(self)

    def drop(self, why: str) -> None:
        with self.lock:
            self._unsaved = None
            self.note(why)
            try:
                cache_file.remove(self.path())
            except (OSError, ConfigError):
                pass


#: The stores with a cache waiting to be written (weakly: a source dropped unclosed takes its
#: store along; its timer still holds it until it has written).
_STORES: "weakref.WeakSet[SummaryStore]" = weakref.WeakSet()
_STORES_LOCK = threading.Lock()  # listings and timers on several threads add and remove stores


def _flush_unsaved(name: str | None = None) -> None:
    """Write now what any store of this process waits to write (of the file ``name`` only)."""
    with _STORES_LOCK:
        waiting = list(_STORES)
    for store in waiting:
        if name is None or store.name == name:
            store.flush()


def flush_all() -> None:
    """Write every cache this process still waits to write (its end does; tests look at the files)."""
    _flush_unsaved()


atexit.register(flush_all)


def _reaches_further(kept: FolderCache, new: FolderCache) -> bool:
    """Whether ``kept`` is complete back to an older time than ``new`` (None: not complete)."""
    return kept.complete_since is not None and (new.complete_since is None or kept.complete_since < new.complete_since)
