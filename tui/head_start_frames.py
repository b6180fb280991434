"""The frames start-up's child sends its parent over the pipe (tui/head_start.py): the head
start, each part of a cold start's listing, and the first row's thread read ahead, each with the
operations and protocol lines the child recorded (taken there, adopted here). Nothing here imports
Textual: the child loads it, and pickles these."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class HeadStart:
    """The open project's facts for the first frame and, when they could be read without a
    server, the first list's newest threads (``stale``: from the summary cache)."""

    title: str
    lists: list[Any]  # ListEntry
    since: datetime
    cc: Any  # CcResolution
    list_name: str | None
    listing: Any = None  # the registry's Dispatch, or None
    stale: bool = False
    #: The child goes on to list ``list_name`` from the server (a cold start; see the module).
    listing_follows: bool = False
    read_follows: Any = None  #: the ThreadId the child reads ahead next, in a frame of its own (warm)
    #: What the child recorded meanwhile (core.trace OpRecords and TraceLines: a damaged cache
    #: noted and rebuilt, the cache read), for the console; empty when read in this process.
    operations: list = field(default_factory=list)
    trace: list = field(default_factory=list)


@dataclass(frozen=True)
class ListingPart:
    """One answer of the child's listing: the first page, or the whole window (``whole``),
    with the operations and protocol lines the child recorded since its last part. The
    summaries travel flat (``packed``: backends/summary_wire.py, several times faster to
    pickle than the objects); ``value`` holds a listing that is not a list of summaries."""

    resolution: Any  # the registry's Resolution
    whole: bool
    packed: list | None = None
    value: Any = None
    operations: list = field(default_factory=list)  # core.trace OpRecords
    trace: list = field(default_factory=list)  # core.trace TraceLines
    #: The first page's first thread, whose read ahead follows in a frame of its own (a cold start).
    read_follows: Any = None

    @classmethod
    def of(cls, listing: Any, whole: bool, operations: list, trace: list) -> ListingPart:
        """The part for ``listing`` (the registry's Dispatch)."""
        from mailtriage.application import pack_summaries  # the child's only: the parent unpacks

        try:
            return cls(listing.resolution, whole, packed=pack_summaries(listing.value), operations=operations,
                       trace=trace)
        except TypeError:  # not a list of summaries (a lazy listing): pickled as it is
            return cls(listing.resolution, whole, value=listing.value, operations=operations, trace=trace)

    def listing(self) -> Any:
        """The summaries, each built back when first read (backends/summary_wire.py), or the value as it came."""
        if self.packed is None:
            return self.value
        from mailtriage.application import PackedSummaries  # loaded by the listing by now

        return PackedSummaries(self.packed)


@dataclass(frozen=True)
class ThreadRead:
    """The first row's thread read ahead (see the module): ``read_thread``'s Dispatch (None: the
    read failed, the parent reads it itself), and what was recorded. ``last_activity``: the row's
    the child read it for; ``message_count``: the messages read."""

    thread_id: Any  # ThreadId
    dispatch: Any  # the registry's Dispatch, or None
    operations: list = field(default_factory=list)
    trace: list = field(default_factory=list)
    message_count: int | None = None
    last_activity: Any = None  # datetime | None

    def fits(self, row: Any) -> bool:
        """Whether this read shows what ``row`` (the ThreadSummary on screen) lists: as many
        messages, and the same last activity where the row has one. A row listed since (a reply
        came) does not fit: the caller reads the thread itself."""
        if self.dispatch is None or row.message_count != self.message_count:
            return False
        return row.last_activity is None or row.last_activity == self.last_activity


def taken_records() -> tuple[list, list]:
    """In the child: the operations and protocol lines recorded since the last part, taken."""
    from mailtriage.core.trace import OPLOG, TRACE  # loaded by the child's start by now (tui/head_start.py _child)

    operations, trace = OPLOG.items(), TRACE.items()
    OPLOG.clear()
    TRACE.clear()
    return operations, trace


def adopt_records(operations: list, trace: list) -> None:
    """What the child recorded, published here (the console, ``--trace``) as if recorded here."""
    if operations or trace:
        # Not at import: the command loads the trace module only with --trace (cli/main.py).
        from mailtriage.core.trace import OPLOG, TRACE

        OPLOG.adopt(operations)
        TRACE.adopt(trace)
