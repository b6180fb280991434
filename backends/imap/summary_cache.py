"""The persisted IMAP summary cache: per account and folder, headers and summaries only.

``ImapSource.list_recent_threads`` keeps, for the list folder, one row per message it has
seen: UID, Message-ID, References, In-Reply-To, subject, sender, arrival time, the
``\\Seen`` flag and the lower-cased To/Cc/List-Id/List-Post fields (to tell list mail
apart). Never a body, never a whole header block. The file lives in the platformdirs cache
folder (``<cache>/imap/``, the folder ``0700``, the file ``0600``; see
:mod:`backends.cache_file` for the framing, the checksum and the atomic write).

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

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mailtriage.backends import cache_file
from mailtriage.core.errors import ConfigError
from mailtriage.core.paths import private_cache_dir
from mailtriage.core.trace import TRACE

KIND = "imap-summaries"
# 2: the sender's Date: (SENT) is kept beside the arrival time.
# 3: rows laid out as threading records (Message-ID, References, In-Reply-To, synthetic
#    first) and repeated strings stored once (an older file is rebuilt).
VERSION = 3

# One row (a plain tuple: a compact file, a fast load, and the very object the listing
# threads and summarises, never copied into another shape). Its first four fields are a
# threading record (backends.thread_reconstruction). ARRIVED is the INTERNALDATE in
# seconds since the epoch (None when the server gave none); SENT the sender's Date: as
# ISO 8601 text with the sender's offset (None when there is no usable date).
(MESSAGE_ID, REFERENCES, IN_REPLY_TO, SYNTHETIC, UID, SUBJECT, SENDER_NAME, SENDER_EMAIL, ARRIVED, SEEN, LIST_FIELDS,
 SENT) = range(12)
ROW_FIELDS = 12


@dataclass
class FolderCache:
    uidvalidity: int
    highestmodseq: int
    uidnext: int
    exists: int
    floor_uid: int
    complete_since: float | None
    rows: dict[int, tuple] = field(default_factory=dict)

    def to_plain(self) -> tuple:
        return (self.uidvalidity, self.highestmodseq, self.uidnext, self.exists, self.floor_uid,
                self.complete_since, self.rows)

    @classmethod
    def from_plain(cls, plain: Any) -> "FolderCache":
        uidvalidity, highestmodseq, uidnext, exists, floor_uid, complete_since, rows = plain
        if not all(isinstance(v, int) for v in (uidvalidity, highestmodseq, uidnext, exists, floor_uid)):
            raise TypeError("state fields are not numbers")
        if not isinstance(rows, dict) or (complete_since is not None and not isinstance(complete_since, float)):
            raise TypeError("rows or complete_since of the wrong type")
        return cls(uidvalidity, highestmodseq, uidnext, exists, floor_uid, complete_since, rows)


class SummaryStore:
    """Where one account folder's cache is read and written (nothing is read until asked)."""

    def __init__(self, account: Any, folder: str, channel: str) -> None:
        key = "\0".join((account.id, account.host, str(account.port), account.username, folder))
        self.name = hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest() + ".cache"
        self.folder = folder
        self.channel = channel

    def note(self, text: str) -> None:
        TRACE.log(self.channel, "!", f"summary cache of {self.folder}: {text}")

    def path(self) -> Path:
        return private_cache_dir("imap") / self.name

    def load(self) -> FolderCache | None:
        try:
            path = self.path()
        except (OSError, ConfigError) as exc:
            self.note(f"no cache folder ({exc}); listing without a cache")
            return None
        payload, why = cache_file.read(path, KIND, VERSION)
        if why:
            self.note(why)
            cache_file.remove(path)
        if payload is None:
            return None
        try:
            return FolderCache.from_plain(payload)
        except (TypeError, ValueError) as exc:
            self.note(f"unexpected contents ({exc}); rebuilt")
            cache_file.remove(path)
            return None

    def save(self, cache: FolderCache) -> None:
        try:
            cache_file.write(self.path(), KIND, VERSION, cache.to_plain())
        except (OSError, ValueError, ConfigError) as exc:
            self.note(f"not saved: {exc}")

    def drop(self, why: str) -> None:
        self.note(why)
        try:
            cache_file.remove(self.path())
        except (OSError, ConfigError):
            pass
