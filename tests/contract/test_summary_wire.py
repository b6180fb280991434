"""The flat form a listing travels in between the app's processes (backends/summary_wire.py)
gives back, through pickle, summaries equal to the packed ones in every field, the instance
dictionaries and the datetimes' time zones included; a field added to the contract's types
without being added to the flat form fails here."""

from __future__ import annotations

import pickle
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from mailtriage.backends.contract import Address, ThreadId, ThreadSummary
from mailtriage.backends.summary_wire import PackedSummaries, pack_summaries

zones = st.sampled_from([timezone.utc, timezone(timedelta(hours=-5)), timezone(timedelta(hours=5, minutes=30)),
                         timezone(timedelta(hours=1), "UTC+01:00"), timezone(timedelta(0), "GMT"),
                         timezone(timedelta(hours=-23, minutes=-59, seconds=-59, microseconds=-1))])
times = st.none() | st.datetimes(timezones=zones) | st.datetimes()  # aware or naive, year 1 to 9999
texts = st.text(max_size=10)

summaries = st.builds(
    ThreadSummary,
    thread_id=st.builds(ThreadId, st.sampled_from(["msgid", "msgid-synthetic", "gmail", "ponymail"]), texts,
                        st.none() | texts),
    subject=texts, root_message_id=st.sampled_from(["", "<a@example.org>", "<x@mailtriage.invalid>"]) | texts,
    sender=st.builds(Address, texts, texts), last_activity=times, message_count=st.integers(0, 10**6),
    participants=st.lists(texts, max_size=3).map(tuple), unread=st.booleans(),
    notes=st.lists(texts, max_size=2).map(tuple), date_marker=st.sampled_from(["", "undated", "implausible"]),
    continued=st.booleans(), sent=times)

EDGES = [datetime(1, 1, 1, tzinfo=timezone.utc), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc),
         datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=timezone.utc), datetime(2026, 12, 1, 9, 30, 0, 123457,
                                                                                 tzinfo=timezone.utc)]


def through_the_pipe(listing: list[ThreadSummary]) -> list[ThreadSummary]:
    return list(PackedSummaries(pickle.loads(pickle.dumps(pack_summaries(listing), protocol=pickle.HIGHEST_PROTOCOL))))


def same(a, b) -> None:
    assert a == b and repr(a) == repr(b)
    assert vars(a) == vars(b) and list(vars(a)) == list(vars(b))
    for name in ("thread_id", "sender"):
        assert vars(getattr(a, name)) == vars(getattr(b, name))
    for name in ("last_activity", "sent"):
        if getattr(a, name) is not None:
            assert getattr(a, name).utcoffset() == getattr(b, name).utcoffset()
            assert getattr(a, name).tzinfo == getattr(b, name).tzinfo


@given(st.lists(summaries, max_size=5))
@example([ThreadSummary(ThreadId("msgid", "<a@example.org>"), "Report", "<a@example.org>", Address("Ann", "a@x"),
                        moment, 2, ("a@x",), sent=moment) for moment in EDGES])
def test_summaries_come_back_equal_field_for_field(listing):
    back = through_the_pipe(listing)
    assert len(back) == len(listing)
    for original, rebuilt in zip(listing, back):
        same(rebuilt, original)
        assert hash(rebuilt.thread_id) == hash(original.thread_id)


def test_a_listing_of_fixed_offsets_travels_without_datetime_objects():
    """The point of the flat form: what is pickled is strings, numbers and tuples (a sender's
    Date keeps its own offset, as the listing reads it with fromisoformat)."""
    moment = datetime(2026, 12, 1, 9, 30, tzinfo=timezone.utc)
    sent = datetime.fromisoformat("2026-12-01T10:30:00+01:00")
    packed = pack_summaries([ThreadSummary(ThreadId("msgid", "<a@x>"), "S", "<a@x>", Address("", "a@x"), moment, 1,
                                           sent=sent)])
    back = PackedSummaries(packed)[0].sent
    assert back.tzinfo == sent.tzinfo and repr(back) == repr(sent)

    def flat(value) -> bool:
        if isinstance(value, tuple):
            return all(flat(item) for item in value)
        return value is None or isinstance(value, (str, int, bool))

    assert all(flat(row) for row in packed)


def test_anything_but_summaries_is_refused():
    with pytest.raises(TypeError):
        pack_summaries([{"subject": "not a summary"}])


def test_packed_summaries_build_each_summary_when_first_read_and_keep_it():
    from mailtriage.backends.summary_wire import PackedSummaries

    moment = datetime(2026, 12, 1, 9, 30, tzinfo=timezone.utc)
    listing = [ThreadSummary(ThreadId("msgid", f"<{n}@x>"), f"S{n}", f"<{n}@x>", Address("", "a@x"), moment, n)
               for n in range(1, 6)]
    lazy = PackedSummaries(pack_summaries(listing))
    assert len(lazy) == 5 and lazy._summaries == [None] * 5  # nothing built yet
    assert lazy[1] == listing[1] and lazy[-1] == listing[-1]
    assert [i for i, built in enumerate(lazy._summaries) if built is not None] == [1, 4]
    assert lazy[1] is lazy[1]  # kept: the same row is the same object
    assert lazy[1:3] == listing[1:3] and list(lazy) == listing and lazy == listing and lazy == tuple(listing)
    assert lazy != listing[:4]
    with pytest.raises(IndexError):
        lazy[5]
