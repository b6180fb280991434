"""Date headers: the full parser and the fast byte-level paths of the mbox scan.

Moved out of :mod:`backends.mime` (issue 36).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from mailtriage.backends.mime_headers import _Later
from mailtriage.core.lazy_re import lazy

__all__ = ["parse_date", "parse_date_epoch", "parse_date_epochs"]


# ---------------------------------------------------------------------------
# Dates
# ---------------------------------------------------------------------------

_MONTHS = {m: i for i, m in enumerate(
    (b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov", b"dec"), 1)}
# The RFC 5322 shape almost every message uses: [Day, ]DD Mon YYYY HH:MM[:SS] +ZZZZ
_RFC5322_DATE = lazy(
    rb"\s*(?:[A-Za-z]{3},?\s*)?(\d{1,2})\s+([A-Za-z]{3})[a-z]*\s+(\d{4})\s+"
    rb"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([+-]\d{4})?\s*(?:\(.*)?$",
    re.DOTALL,
)


def parse_date(value: bytes | str | None) -> datetime | None:
    """Parse a Date header into an aware datetime (UTC when the zone is missing or -0000).

    A fast path reads the common RFC 5322 shape; anything else goes through
    ``email.utils.parsedate_to_datetime``. Returns None when the value is not a date.
    """
    if not value:
        return None
    raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
    match = _RFC5322_DATE.match(raw)
    if match is not None:
        day, mon, year, hour, minute, second, zone = match.groups()
        month = _MONTHS.get(mon.lower())
        if month is not None:
            try:
                if zone is None or zone == b"-0000":
                    tz = timezone.utc
                else:
                    offset = int(zone[1:3]) * 60 + int(zone[3:5])
                    tz = timezone(timedelta(minutes=-offset if zone[0] == 45 else offset))
                return datetime(int(year), month, int(day), int(hour), int(minute),
                                int(second) if second else 0, tzinfo=tz)
            except ValueError:
                pass  # e.g. 31 Feb or +9999: let the stdlib have a go
    try:
        text = raw.decode("ascii", "replace")
        from email.utils import parsedate_to_datetime  # rare dates only; email.utils costs ~3 ms at import

        parsed = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    if 100 <= parsed.year < 1000:  # RFC 5322 section 4.3: a three-digit year is 1900 + it
        try:
            parsed = parsed.replace(year=parsed.year + 1900)
        except ValueError:  # 29 Feb of a year that is no leap year once moved
            return None
    return parsed


# Dates outside this window are probably wrong (a clock at 1970, a typo, a spoof).
PLAUSIBLE_SINCE = datetime(1990, 1, 1, tzinfo=timezone.utc).timestamp()
PLAUSIBLE_AHEAD_SECONDS = 86400.0


def implausible_date(epoch: float | None, now: float | None = None) -> str | None:
    """Why a date is implausible (before 1990, more than a day ahead), or None."""
    if epoch is None or epoch == float("-inf"):
        return None
    if epoch < PLAUSIBLE_SINCE:
        return "before 1990"
    if now is None:
        now = datetime.now(timezone.utc).timestamp()
    if epoch > now + PLAUSIBLE_AHEAD_SECONDS:
        return "more than a day ahead of now"
    return None


_DAY_EPOCH: dict[tuple[bytes, bytes, bytes], int | None] = {}
_ZONE_SECONDS: dict[bytes, int | None] = {}


def _day_epoch(day: bytes, mon: bytes, year: bytes) -> int | None:
    key = (day, mon, year)
    if key in _DAY_EPOCH:
        return _DAY_EPOCH[key]
    month = _MONTHS.get(mon.lower())
    try:
        value = None if month is None else int(
            datetime(int(year), month, int(day), tzinfo=timezone.utc).timestamp())
    except (ValueError, OverflowError):
        value = None
    if len(_DAY_EPOCH) < 100_000:
        _DAY_EPOCH[key] = value
    return value


def _zone_seconds(zone: bytes) -> int | None:
    seconds = _ZONE_SECONDS.get(zone)
    if seconds is None and zone not in _ZONE_SECONDS:
        hours, minutes = int(zone[1:3]), int(zone[3:5])
        seconds = None if hours > 23 or minutes > 59 else (hours * 3600 + minutes * 60) * (-1 if zone[0] == 45 else 1)
        _ZONE_SECONDS[zone] = seconds
    return seconds


_DAY_NAME = lazy(rb"[A-Za-z]{3},?")
_DAY_NUMBER = lazy(rb"\d{1,2}")
_MONTH_TOKEN = lazy(rb"[A-Za-z]{3}[a-z]*")
_YEAR = lazy(rb"\d{4}")
_CLOCK = lazy(rb"(\d{1,2}):(\d{2})(?::(\d{2}))?")
_ZONE = lazy(rb"[+-]\d{4}")
_DATE_PART: dict[tuple[bytes, bytes, bytes], int | None] = {}
_CLOCK_SECONDS: dict[bytes, int | None] = {}
_ZONE_OFFSET: dict[bytes, int | None] = {}
_DAY_NAMES: dict[bytes, bool] = {}


def _date_part(day: bytes, mon: bytes, year: bytes) -> int | None:
    value = None
    if _DAY_NUMBER.fullmatch(day) and _MONTH_TOKEN.fullmatch(mon) and _YEAR.fullmatch(year):
        value = _day_epoch(day, mon[:3], year)
    if len(_DATE_PART) < 100_000:
        _DATE_PART[(day, mon, year)] = value
    return value


def _clock_seconds(clock: bytes) -> int | None:
    """Seconds into the day of ``H:MM[:SS]``; hours and minutes are cached (1,440 of them)."""
    minutes = _CLOCK_SECONDS.get(clock[:-3] if clock.count(b":") == 2 else clock, -1)
    if minutes == -1:
        match = _CLOCK.fullmatch(clock)
        if match is None:
            return None
        h, m = int(match.group(1)), int(match.group(2))
        minutes = h * 3600 + m * 60 if h < 24 and m < 60 else None
        if len(_CLOCK_SECONDS) < 10_000:
            _CLOCK_SECONDS[match.group(1) + b":" + match.group(2)] = minutes
    if minutes is None:
        return None
    if clock.count(b":") == 2:
        tail = clock[-3:]
        if tail[0] != 58 or not tail[1:].isdigit():  # ":SS"
            return None
        seconds = int(tail[1:])
        return minutes + seconds if seconds < 60 else None
    return minutes


def _zone_offset(zone: bytes) -> int | None:
    value = _zone_seconds(zone) if _ZONE.fullmatch(zone) else None
    if len(_ZONE_OFFSET) < 10_000:
        _ZONE_OFFSET[zone] = value
    return value


def parse_date_epoch(value: bytes | str | None) -> float | None:
    """Seconds since the epoch of a Date header: ``parse_date(value).timestamp()``, faster.

    Listing paths compare thousands of dates and never show most of them, so they
    skip building datetime objects. The common shapes (``Tue, 02 Jan 2024
    10:00:00 +0100`` with or without the day name) are read token by token through
    small caches that only ever hold values checked against the same rules as
    :func:`parse_date`; anything else goes through :func:`parse_date` itself, so the
    result is always exactly what :func:`parse_date` gives.
    """
    if not value:
        return None
    raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
    tokens = raw.split()
    count = len(tokens)
    if count == 6 or count == 5:
        if count == 6 or not tokens[0][:1].isdigit():
            name = tokens[0]
            known = _DAY_NAMES.get(name)
            if known is None:
                known = bool(_DAY_NAME.fullmatch(name))
                if len(_DAY_NAMES) < 1000:
                    _DAY_NAMES[name] = known
            if not known:
                return _slow_date_epoch(raw)
            tokens = tokens[1:]
        if len(tokens) == 5 or len(tokens) == 4:
            day = _DATE_PART.get((tokens[0], tokens[1], tokens[2]), -1)
            if day == -1:
                day = _date_part(tokens[0], tokens[1], tokens[2])
            clock = _clock_seconds(tokens[3])
            if day is not None and clock is not None:
                if len(tokens) == 4:
                    return float(day + clock)
                zone = tokens[4]
                if zone == b"-0000":
                    return float(day + clock)
                offset = _ZONE_OFFSET.get(zone, -1)
                if offset == -1:
                    offset = _zone_offset(zone)
                if offset is not None:
                    return float(day + clock - offset)
    return _slow_date_epoch(raw)


# One Date value per line, in the shape almost all mail uses (single spaces); every
# other line matches the empty second branch and goes through parse_date_epoch.
_DATE_LINE = _Later(
    rb"^(?:[A-Za-z]{3},? )?(\d{1,2} [A-Za-z]{3}[a-z]* \d{4}) (\d{1,2}:\d{2})(?::(\d{2}))?(?: ([+-]\d{4}))?$|^.*$",
    re.MULTILINE,
)
_DAY_KEY: dict[bytes, int | None] = {}


def parse_date_epochs(values: list[bytes | None]) -> list[float | None]:
    """:func:`parse_date_epoch` of many Date values at once (the mbox scan's hot path).

    One regular-expression pass reads every value of the common shape; the rest go
    through :func:`parse_date_epoch` one by one, so each result is exactly what
    :func:`parse_date` gives.
    """
    lines = [v or b"" for v in values]
    joined = b"\n".join(lines)
    parts = _DATE_LINE().findall(joined) if joined.count(b"\n") == len(lines) - 1 else None
    if parts is None or len(parts) != len(lines):
        return [parse_date_epoch(v) for v in values]
    day_key = _DAY_KEY
    minute_of_day = _CLOCK_SECONDS
    zone_offset = _ZONE_OFFSET
    result: list[float | None] = []
    append = result.append
    for (day_text, hour_minute, second, zone), value in zip(parts, lines):
        if day_text:
            day = day_key.get(day_text, -1)
            if day == -1:
                day_number, mon, year = day_text.split()
                day = _date_part(day_number, mon, year)
                if len(day_key) < 100_000:
                    day_key[day_text] = day
            seconds = minute_of_day.get(hour_minute, -1)
            if seconds == -1:
                seconds = _clock_seconds(hour_minute)
            if seconds is not None and second:
                seconds = seconds + int(second) if second < b"60" else None
            if day is not None and seconds is not None:
                if not zone or zone == b"-0000":
                    append(float(day + seconds))
                    continue
                offset = zone_offset.get(zone, -1)
                if offset == -1:
                    offset = _zone_offset(zone)
                if offset is not None:
                    append(float(day + seconds - offset))
                    continue
        append(parse_date_epoch(value) if value else None)
    return result


def _slow_date_epoch(raw: bytes) -> float | None:
    parsed = parse_date(raw)
    return parsed.timestamp() if parsed is not None else None
