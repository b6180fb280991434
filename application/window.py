"""The listing window: where "since" starts, read one way for the CLI, the TUI and the flows.

A window is written as ``Nd`` (the last N days) or as an ISO date or instant; a date or an
instant without a zone is UTC. With nothing written, project.md decides: ``import.since``
(a date, or ``Nd``), else ``import.since_days`` (default 30).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from typing import Any

from mailtriage.application.errors import UsageError

DEFAULT_DAYS = 30


def parse_since(text: str | None, config: Any = None, *, label: str = "since") -> datetime:
    """The start of the window ``text`` names, or the project's configured one when ``text`` is empty.

    ``label`` names the input in the error (``--since`` on the command line).

    Raises:
        UsageError: ``text`` (or ``import.since``) is neither ``Nd`` nor an ISO date/instant.
    """
    if isinstance(text, str):
        text = text.strip()
    if not text:
        return configured_since(config, label=label)
    return _parse(text, label)


def configured_since(config: Any, *, label: str = "since") -> datetime:
    """``import.since`` or ``import.since_days`` of ``config`` (30 days without a config)."""
    configured = config.get("import.since") if config is not None else None
    if isinstance(configured, datetime):
        return configured if configured.tzinfo else configured.replace(tzinfo=timezone.utc)
    if isinstance(configured, date):
        return datetime(configured.year, configured.month, configured.day, tzinfo=timezone.utc)
    if isinstance(configured, str) and configured.strip():
        return _parse(configured.strip(), label)
    days = int(config.get("import.since_days", DEFAULT_DAYS)) if config is not None else DEFAULT_DAYS
    return datetime.now(timezone.utc) - timedelta(days=days)


def _parse(text: str, label: str) -> datetime:
    if text.endswith("d") and text[:-1].isdigit():
        return datetime.now(timezone.utc) - timedelta(days=int(text[:-1]))
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        raise UsageError(f"{label} {text!r} is neither an ISO date/instant nor Nd (e.g. 30d)") from exc
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
