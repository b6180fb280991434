"""What a listing knows about its threads, so that opening one needs no search (issue 33).

A listing threads the rows of the list folder (:mod:`backends.imap.recent`); each row
carries its UID, and the folder its UIDVALIDITY. :class:`ListedThreads` keeps those rows
and answers, for a listed thread, the UIDs of its members. Opening the thread then
fetches exactly those, plus whatever arrived after the listing and joins the thread
(read by UID, threaded with the members by the shared JWZ rule), instead of three
header SEARCHes over the whole folder. The grouping is worked out at the first read, so
a listing that is never opened costs nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Callable

from mailtriage.backends.contract import SYNTHETIC_MESSAGE_ID_KIND, ThreadId
from mailtriage.backends.imap import summary_cache as sc
from mailtriage.backends.thread_reconstruction import _Synthetic  # the key shape of synthetic roots
from mailtriage.backends.thread_reconstruction import link_records, root_members

Row = tuple
_BY_UID = itemgetter(sc.UID)


@dataclass
class ListedThreads:
    """The rows of one listing of ``folder`` (UIDs valid for ``uidvalidity``).

    ``uidnext``: every message with a lower UID was seen by the listing (the rows hold
    those it kept); ``wanted``: the list address the listing kept rows for.

    ``given`` is the rows, or a function that makes them at the first read (a poll's listing
    need not copy the window's rows, issue 39): it answers None when what it would have copied
    changed since (then nothing is listed here: a thread is read by searching, as unlisted).
    """

    folder: str
    uidvalidity: int
    uidnext: int
    given: list[Row] | Callable[[], list[Row] | None]
    wanted: str | None
    _rows: list[Row] | None = field(default=None, repr=False)
    _groups: dict[Any, list[int]] | None = field(default=None, repr=False)

    _roots: dict[int, Any] | None = field(default=None, repr=False)

    @property
    def rows(self) -> list[Row]:
        if self._rows is None:
            given = self.given
            rows = given() if callable(given) else given
            self._rows = rows if rows is not None else []
            self.given = self._rows  # (made once; a function holds on to nothing after)
        return self._rows

    def _grouped(self) -> dict[Any, list[int]]:
        if self._groups is None:
            self._rows = rows = sorted(self.rows, key=_BY_UID)  # as recent_threads.summaries threads them
            self._groups = root_members([r[sc.MESSAGE_ID] for r in rows], [r[sc.SYNTHETIC] for r in rows],
                                        link_records(rows))
        return self._groups

    def members(self, thread_id: ThreadId) -> list[Row] | None:
        """The listed rows of ``thread_id`` (oldest UID first), or None when it is not listed."""
        synthetic = thread_id.kind == SYNTHETIC_MESSAGE_ID_KIND
        indices = self._grouped().get(_key(thread_id.value, synthetic))
        return [self.rows[i] for i in indices] if indices else None

    def thread_of(self, uidvalidity: int, uid: int) -> tuple[str, bool] | None:
        """The listed thread holding the message ``uid`` of this folder: its root and whether
        that root is synthetic; None when the listing does not hold the message (another
        UIDVALIDITY, outside the window, not on the list). A search hit is named by it, so it
        names the thread the listing names (a reply loop's or a lost root's thread too)."""
        if uidvalidity != self.uidvalidity:
            return None
        if self._roots is None:
            groups = self._grouped()
            self._roots = {self.rows[i][sc.UID]: key for key, indices in groups.items() for i in indices}
        key = self._roots.get(uid)
        if key is None:
            return None
        return (key[0], True) if isinstance(key, _Synthetic) else (key, False)


def _key(value: str, synthetic: bool) -> Any:
    """The key :func:`root_members` gives a root (a synthetic one is wrapped apart)."""
    return _Synthetic((value,)) if synthetic else value


def thread_rows(members: list[Row], fresh: list[Row], root: str, synthetic: bool) -> list[Row]:
    """``members`` and the ``fresh`` rows that join their thread (threaded together)."""
    rows = sorted([*members, *fresh], key=_BY_UID)
    groups = root_members([r[sc.MESSAGE_ID] for r in rows], [r[sc.SYNTHETIC] for r in rows], link_records(rows))
    indices = groups.get(_key(root, synthetic))
    if indices is None:  # the fresh rows moved the root (a parent that arrived late): keep the listed ones
        return members
    return [rows[i] for i in indices]


@dataclass
class SentRows:
    """The header rows of the Sent folder, kept between reads: a thread's replies in Sent
    are found among them, so Sent is selected only to fetch a thread's own replies (a
    SELECT of Sent unselects the list folder, whose SELECT costs 0.06 s at 20k messages).
    Valid while STATUS gives the same UIDVALIDITY, UIDNEXT and MESSAGES."""

    uidvalidity: int
    uidnext: int
    rows: dict[int, Row]

    def current(self, uidvalidity: int, uidnext: int, messages: int) -> bool:
        return (self.uidvalidity, self.uidnext, len(self.rows)) == (uidvalidity, uidnext, messages)


def joining(members: list[Row], others: list[Row], root: str, synthetic: bool) -> list[Row]:
    """The rows of ``others`` (another folder's) that thread with ``members`` under ``root``."""
    rows = [*members, *sorted(others, key=_BY_UID)]
    groups = root_members([r[sc.MESSAGE_ID] for r in rows], [r[sc.SYNTHETIC] for r in rows], link_records(rows))
    start = len(members)
    return [rows[i] for i in groups.get(_key(root, synthetic), ()) if i >= start]
