"""Thread summaries in a flat form, for handing a listing from one process of the app to another.

Start-up's helper process lists a cold first list and hands the listing to the app
(tui/head_start.py). Pickling 17,000 :class:`ThreadSummary` objects of a dense IMAP window
as they are took 0.15 s to dump and 0.1-0.2 s to load, most of it the generic reduction of
each small object and of two datetimes each. As tuples of strings, numbers and tuples, with
UTC datetimes as microseconds, the same listing dumps in 25 ms and loads in 12 ms, and is
built back in 50-70 ms (measured on the 100k bench folder).

:func:`unpack_summaries` gives back summaries equal to the packed ones, field for field
(tests/contract/test_summary_wire.py, which fails when a field is added to the contract's
types and not here). Only the app's own processes exchange this form.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Sequence

from mailtriage.backends.contract import Address, ThreadId, ThreadSummary

#: The fields of a ThreadSummary, in the order a packed summary holds them (after the
#: thread reference's and the sender's parts).
FIELDS = ("thread_id", "subject", "root_message_id", "sender", "last_activity", "message_count", "participants",
          "unread", "notes", "date_marker", "continued", "sent")
THREAD_ID_FIELDS = ("kind", "value", "root")
ADDRESS_FIELDS = ("name", "email")

_UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1, tzinfo=_UTC)
_MICROSECOND = timedelta(microseconds=1)


def _moment(value: datetime | None) -> datetime | int | None:
    """A UTC datetime as whole microseconds since the epoch (exact for every date, where a
    float timestamp is not near year 9999); any other value as it is (pickled as such)."""
    if value is not None and value.tzinfo is _UTC and not value.fold:  # fold: kept as it is
        return (value - _EPOCH) // _MICROSECOND
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


def unpack_summaries(packed: Sequence[tuple]) -> list[ThreadSummary]:
    """The summaries :func:`pack_summaries` packed, equal field for field. Built without the
    generated constructors, as ``ThreadSummary._of_message_id_root`` does and for the same
    reason: each field is set to what the packed summary's constructor had set."""
    new, set_field, epoch, microsecond = object.__new__, object.__setattr__, _EPOCH, _MICROSECOND
    summaries = []
    for (kind, value, root, subject, root_message_id, name, email, last_activity, count, participants, unread,
         notes, date_marker, continued, sent) in packed:
        thread_id = new(ThreadId)
        set_field(thread_id, "kind", kind)
        set_field(thread_id, "value", value)
        set_field(thread_id, "root", root)
        sender = new(Address)
        set_field(sender, "name", name)
        set_field(sender, "email", email)
        summary = new(ThreadSummary)
        fields = summary.__dict__
        fields["thread_id"] = thread_id
        fields["subject"] = subject
        fields["root_message_id"] = root_message_id
        fields["sender"] = sender
        fields["last_activity"] = epoch + microsecond * last_activity if type(last_activity) is int else last_activity
        fields["message_count"] = count
        fields["participants"] = participants
        fields["unread"] = unread
        fields["notes"] = notes
        fields["date_marker"] = date_marker
        fields["continued"] = continued
        fields["sent"] = epoch + microsecond * sent if type(sent) is int else sent
        summaries.append(summary)
    return summaries
