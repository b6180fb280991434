"""merged_rows (a poll's news folded into the list on screen, at the cost of the news) gives
what merge_news (one pass over every row) gives, over many polls in a row (issue 39)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from mailtriage.backends.contract import Address, ThreadId, ThreadSummary
from mailtriage.tui.rows import ListRows, _order, merge_news, merged_rows

BASE = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)


def _row(thread: int, minute: int, count: int = 1, root: int | None = None) -> ThreadSummary:
    return ThreadSummary(ThreadId("msgid", f"<t{thread}@x>"), f"Report {thread}",
                         f"<r{thread if root is None else root}@x>", Address("Rita", "r@example.org"),
                         BASE + timedelta(minutes=minute), count)


polls = st.lists(st.lists(st.tuples(st.integers(0, 40), st.integers(-5, 60), st.integers(1, 4)), max_size=8),
                 min_size=1, max_size=6)


@settings(max_examples=150, deadline=None)
@given(start=st.lists(st.tuples(st.integers(0, 40), st.integers(-30, 30)), max_size=30,
                      unique_by=lambda t: t[0]),
       news=polls)
def test_merged_rows_give_what_merge_news_gives_poll_after_poll(start, news):
    # Minutes repeat (ties on time, broken by root), threads repeat within and across polls.
    rows = sorted((_row(t, m) for t, m in start), key=_order, reverse=True)
    expected, listed = rows, ListRows(rows)
    for poll in news:
        batch = [_row(t, m, c) for t, m, c in poll]
        expected = merge_news(expected, batch)
        listed = merged_rows(listed, batch)
        assert list(listed.items) == expected


def test_rows_that_share_a_key_take_the_whole_merge():
    twice = [_row(1, 10), _row(1, 5), _row(2, 0)]
    assert list(merged_rows(ListRows(twice), [_row(1, 12, 2)]).items) == merge_news(twice, [_row(1, 12, 2)])
