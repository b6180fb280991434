"""The clock that drives per-handoff deadlines and outbox retries.

Production uses :class:`SystemClock`. Tests inject a :class:`ManualClock` and move it
forward; nothing in the modes package reads the wall clock directly.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:  # always timezone-aware UTC
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(timezone.utc)


class ManualClock:
    """A clock that only moves when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = (start or datetime(2025, 1, 1, tzinfo=timezone.utc)).astimezone(timezone.utc)

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> datetime:
        if seconds < 0:
            raise ValueError("a clock does not go backwards")
        self._now += timedelta(seconds=seconds)
        return self._now


def stamp(when: datetime) -> str:
    """A sortable text form for SQLite (UTC, fixed width)."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
