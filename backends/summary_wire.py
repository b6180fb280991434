"""Thread summaries in a flat form, for handing a listing from one process of the app to another.

Start-up's helper process lists a cold first list and hands the listing to the app
(tui/head_start.py). Pickling 17,000 :class:`ThreadSummary` objects of a dense IMAP window
as they are took 0.15 s to dump and 0.1-0.2 s to load, most of it the generic reduction of
each small object and of two datetimes each. As tuples of strings, numbers and tuples, with
datetimes of fixed offsets as whole microseconds, the same listing packs and dumps in 60-90 ms and loads in
about 10 ms (measured on the 100k bench folder). :class:`PackedSummaries` then builds each
summary when it is first read, so the app builds the forty it paints, not all 17,000.

Summaries come back equal to the packed ones, field for field
(tests/contract/test_summary_wire.py, which fails when a field is added to the contract's
types and not here). Only the app's own processes exchange this form.
"""

from __future__ import annotations

from collections.abc import Sequence as SequenceABC
from datetime import datetime, timedelta, timezone
from typing import Iterator, Sequence

from mailtriage.backends.contract import Address, ThreadId, ThreadSummary

_UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1, tzinfo=_UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)
#: The fixed-offset zones of rebuilt datetimes, by offset in microseconds (one object each).
_ZONES: dict[int, timezone] = {}


def _moment(value: datetime | None) -> datetime | int | tuple[int, int] | None:
    """A UTC datetime as whole microseconds since the epoch (exact for every date, where a
    float timestamp is not near year 9999); one of another fixed offset (a sender's ``Date``)
    as its wall clock's microseconds and the offset's; any other value as it is (a named or
    a local zone, a fold: pickled as such)."""
    if value is None or value.fold:
        return value
    zone = value.tzinfo
    if zone is _UTC:
        return (value - _EPOCH) // _MICROSECOND
    if type(zone) is timezone:
        made_of = zone.__getinitargs__()  # (offset,) unnamed, as fromisoformat makes them; (offset, name)
        if len(made_of) == 1:
            return (value.replace(tzinfo=None) - _NAIVE_EPOCH) // _MICROSECOND, made_of[0] // _MICROSECOND
    return value


def _datetime(value):
    """What :func:`_moment` made of a datetime, made back into it."""
    kind = type(value)
    if kind is int:
        return _EPOCH + _MICROSECOND * value
    if kind is tuple:
        wall, offset = value
        zone = _ZONES.get(offset)
        if zone is None:
            zone = _ZONES.setdefault(offset, timezone(_MICROSECOND * offset))
        return (_NAIVE_EPOCH + _MICROSECOND * wall).replace(tzinfo=zone)
    return value


def pack_summaries(summaries: Sequence[ThreadSummary]) -> list[tuple]:
    """Each summary as a flat tuple (see the module). TypeError for anything but summaries."""
    packed = []
    for summary in summaries:
        if type(summary) is not ThreadSummary:
            raise TypeError(f"not a ThreadSummary: {type(summary).__name__}")
        thread_id, sender = summary.thread_id, summary.sender
        packed.append((thread_id.kind, thread_id.value, thread_id.root, summary.subject, summary.root_message_id,
                       sender.name, sender.email, _moment(summary.last_activity), summary.message_count,
                       summary.participants, summary.unread, summary.notes, summary.date_marker, summary.continued,
                       _moment(summary.sent)))
    return packed


class PackedSummaries(SequenceABC):
    """The summaries :func:`pack_summaries` packed, each built when first read (and kept).

    What the app shows of a listing is the rows on screen: building all 17,000 summaries of a
    dense window at once took the app 0.13-0.15 s on its way to the paint (its UI thread
    shares the interpreter), building the forty on screen takes well under a millisecond. A
    search or a sort reads them all, and builds them then."""

    __slots__ = ("_packed", "_summaries")

    def __init__(self, packed: list[tuple]) -> None:
        self._packed = packed
        self._summaries: list[ThreadSummary | None] = [None] * len(packed)

    def __len__(self) -> int:
        return len(self._packed)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._packed)))]
        summary = self._summaries[index]
        if summary is None:  # two threads may build one at once: equal summaries, either kept
            summary = self._summaries[index] = _built(self._packed[index])
        return summary

    def __iter__(self) -> Iterator[ThreadSummary]:
        for index in range(len(self._packed)):
            yield self[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (PackedSummaries, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a sequence, compared by content


def _built(row: tuple) -> ThreadSummary:
    """One packed summary built back without the generated constructors
    (``ThreadSummary._of_fields``, as the listing's fast path): each field is set to what the
    packed summary's constructor had set."""
    (kind, value, root, subject, root_message_id, name, email, last_activity, count, participants, unread, notes,
     date_marker, continued, sent) = row
    thread_id = _new(ThreadId)
    _set_field(thread_id, "kind", kind)
    _set_field(thread_id, "value", value)
    _set_field(thread_id, "root", root)
    sender = _new(Address)
    _set_field(sender, "name", name)
    _set_field(sender, "email", email)
    return _of_fields(thread_id, subject, root_message_id, sender,
                      _datetime(last_activity) if last_activity is not None else None, count, participants, unread,
                      notes, date_marker, continued, _datetime(sent) if sent is not None else None)


_new, _set_field, _of_fields = object.__new__, object.__setattr__, ThreadSummary._of_fields
