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

from pathlib import Path

import pytest

from mailtriage.core.trace import OPLOG, TRACE


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(autouse=True)
def _young_collections_rarer(young_collections_rarer):
    """Every TUI test runs with the collector's first threshold raised (tests/conftest.py says why
    and by how much): the snapshot tests run their apps in plain functions too."""


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
