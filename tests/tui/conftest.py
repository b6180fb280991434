"""Fixtures for the TUI tests.

* Every test gets its own user settings folder (``MAILTRIAGE_CONFIG_DIR``) with a fixed
  sender name, so nothing reads or writes the real settings and output is stable.
* The op log and the protocol trace are process-wide feeds: cleared per test.
* ``async def`` tests run on asyncio through anyio's pytest plugin (installed with httpx; marked
  by tests/conftest.py).
* Apps are made with ``cursor_blink=False`` and data with fixed dates: snapshots never
  depend on a clock.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from mailtriage.core.trace import OPLOG, TRACE


@pytest.fixture
def anyio_backend():
    return "asyncio"


#: The collector's first threshold in the TUI tests (Python's default: 700).
YOUNG_THRESHOLD = 10_000


@pytest.fixture(autouse=True)
def _young_collections_rarer():
    """The collector is about a third of a Pilot test's CPU: over tests/tui/test_flows.py, ~2,000
    collections (3.2-3.6 s of 10-11.6 CPU-s), 14 of them full (2.5-2.8 s, each walking ~400,000
    objects). With the first threshold at 10,000, 106 collections (0.9-1.3 s), 1 full: the file
    cost 6.5-9.3 CPU-s instead of 10.0-11.6 (alternate runs, load 11-13). Only how often the
    collector runs changes (reference counting frees as before); a test of the collector sets
    what it needs (test_gc_pacing compares with the threshold it finds; test_alerts and
    test_textual_private collect explicitly). Restored after each test (issue 36 §7)."""
    before = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, *before[1:])
    yield
    gc.set_threshold(*before)


@pytest.fixture(autouse=True)
def user_config(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "user-config"
    folder.mkdir()
    (folder / "config.toml").write_text('name = "Test Triager"\n', encoding="utf-8")
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def clean_feeds():
    OPLOG.clear()
    TRACE.clear()
    enabled = TRACE.enabled
    yield
    OPLOG.clear()
    TRACE.clear()
    TRACE.enabled = enabled


@pytest.fixture(autouse=True)
def user_data(tmp_path, monkeypatch) -> Path:
    """Alert cursors and other data files go to the test's own folder."""
    folder = tmp_path / "user-data"
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(folder))
    return folder
