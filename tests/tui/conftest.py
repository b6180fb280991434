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

import shutil
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


@pytest.fixture(autouse=True)
def _dialogs_made_on_the_key(request):
    """The apps of the TUI tests do not make the dialogs ready ahead (issue 35's
    ``DIALOGS_AHEAD_AFTER``, once a list is first painted: the dialogs' stylesheet parsed and
    every widget restyled, their widgets' default CSS, an empty compose dialog mounted hidden),
    unless the test asks for it with the ``dialogs_ahead`` fixture. It was ~0.12 of the ~0.29
    CPU-s of an app started, settled and left idle for 0.6 s (load 6), paid by every test that
    lived past its first list, most of which open no dialog; and whether a test's r found the
    dialog made ahead or made it on the key depended on how fast the machine reached the key.
    Now a dialog is made on its key in every other test, as it is when the key comes before
    they are ready; the dialogs made ahead are tested in test_dialogs_ahead.py (that they show
    as the one made on the key) and test_open_restyle.py (issue 36 §7)."""
    if "dialogs_ahead" not in request.fixturenames:
        request.getfixturevalue("dialogs_made_on_the_key")  # tests/conftest.py


@pytest.fixture
def dialogs_ahead():
    """The app makes the dialogs ready once its first list is painted, as ``mailtriage`` does."""


@pytest.fixture(scope="session")
def _demo_template_built(tmp_path_factory) -> Path:
    """The demo's pristine template (what each app's demo session is copied from), built once a
    worker: the build runs git eight times and files the demo's issues (0.13-0.3 CPU-s of the
    worker's and 0.08 of git's, 1.1-1.7 s wall at load 9); a copy costs 0.02-0.09, 0.05-0.2 s."""
    from mailtriage.demo.workspace import demo_template_dir, new_demo_session

    folder = tmp_path_factory.mktemp("demo-built")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MAILTRIAGE_DEMO_DIR", str(folder / "demo"))
        new_demo_session()  # builds the template, then copies it once
        return demo_template_dir()


@pytest.fixture
def demo_dir(tmp_path, monkeypatch, _demo_template_built) -> Path:
    """``MAILTRIAGE_DEMO_DIR`` for this test alone (``tmp_path / "demo"``), with the template
    built already beside it, so ``project_dir(demo_session=True)`` copies it as the app's second
    run does (the first run's build is tests/demo/test_demo_workspace.py's)."""
    from mailtriage.demo.workspace import demo_template_dir

    demo = tmp_path / "demo"
    monkeypatch.setenv("MAILTRIAGE_DEMO_DIR", str(demo))
    shutil.copytree(_demo_template_built, demo_template_dir(), symlinks=True)
    return demo
