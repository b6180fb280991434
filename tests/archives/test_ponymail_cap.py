"""Pony Mail's silent ``max_hits`` cap is detected for any listing window (issue 33): before,
only a calendar month lying wholly inside the window could give it away, so ``7d`` and
``30d`` listings stayed silent and complete while the server had dropped older mail.

The clock is pinned (the emulator's and the source's): the window's place in the month
decides which check runs, and on the first days of a month the tests used to fail (CI on a
3 December: the probe, capped like the listing, saw only the listing's own mail)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tests.archives.conftest import PM_LIST_RAW
from tests.archives.ponymail_server import PMEmail

# Mid-month, early on the 3rd (a window of two days and a bit), and late on the 2nd.
PINNED = [datetime(2026, 11, 18, 12, 0, tzinfo=timezone.utc), datetime(2026, 12, 3, 0, 20, tzinfo=timezone.utc),
          datetime(2026, 12, 2, 23, 50, tzinfo=timezone.utc)]


@pytest.fixture(params=PINNED, ids=lambda when: when.strftime("%m-%d-%H%M"))
def now(request) -> datetime:
    return request.param


@pytest.fixture
def pinned_source(pm_source, pm_archive, now):
    pm_archive.now = now.timestamp
    return lambda: pm_source(clock=lambda: now)


def _window_without_a_month_start(now: datetime, days: int) -> datetime:
    """``now - days``, moved up past any first of a month inside the window (what the old
    check could see), so the test needs the new one whatever today's date is."""
    since = now - timedelta(days=days)
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return max(since, month_start + timedelta(minutes=1)) if month_start >= since else since


@pytest.mark.parametrize("days", [7, 30])
def test_the_cap_is_detected_in_a_window_without_a_whole_month(pinned_source, pm_archive, now, days):
    since = _window_without_a_month_start(now, days)
    span = (now - since).total_seconds()
    for i in range(20):  # spread over the window: the cap keeps the newest 11, drops 9 inside it
        pm_archive.add(PMEmail(PM_LIST_RAW, f"<burst-{i}@example.org>", "Bot <bot@example.org>", f"Burst {i}",
                               int((now - timedelta(seconds=span * (i + 1) / 22)).timestamp()), "x\n"))
    source = pinned_source()
    assert source.list_recent_threads(None, since).complete  # under the cap: complete, no note
    pm_archive.max_hits = 10
    listing = source.list_recent_threads(None, since)
    assert listing.complete is False
    assert any("max_hits" in n for n in listing.notes), listing.notes


def test_a_window_with_no_mail_before_the_oldest_returned_stays_complete(pinned_source, pm_archive, now):
    # Exactly max_hits + 1 messages in the window and nothing older in it: nothing was dropped.
    since = _window_without_a_month_start(now, 7)
    for email in list(pm_archive.emails):
        if email.list_raw == PM_LIST_RAW and email.epoch >= since.timestamp():
            pm_archive.emails.remove(email)
    span = (now - since).total_seconds()
    for i in range(11):
        pm_archive.add(PMEmail(PM_LIST_RAW, f"<only-{i}@example.org>", "Bot <bot@example.org>", f"Only {i}",
                               int((now - timedelta(seconds=span * (i + 1) / 13)).timestamp()), "x\n"))
    pm_archive.max_hits = 10
    listing = pinned_source().list_recent_threads(None, since)
    assert listing.complete, listing.notes


@pytest.mark.parametrize("now", [datetime(2026, 12, 1, 6, 0, tzinfo=timezone.utc)], ids=["12-01-0600"])
def test_a_capped_window_inside_one_day_says_it_could_not_check(pinned_source, pm_archive, now):
    # Foal's dfr/dto are whole UTC days: when the window's day holds more than the cap, the probe
    # sees the listing's own mail again and cannot tell a cut from a full day, so it says so.
    since = _window_without_a_month_start(now, 7)
    span = (now - since).total_seconds()
    for i in range(20):
        pm_archive.add(PMEmail(PM_LIST_RAW, f"<day-{i}@example.org>", "Bot <bot@example.org>", f"Day {i}",
                               int((now - timedelta(seconds=span * (i + 1) / 22)).timestamp()), "x\n"))
    pm_archive.max_hits = 10
    listing = pinned_source().list_recent_threads(None, since)
    assert any("could not check" in n and "max_hits" in n for n in listing.notes), listing.notes
