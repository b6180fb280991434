"""Snapshots of the triage queue (issue 37) on the demo, whose "now" is pinned (2026-11-28
09:00 UTC), so the ages and deadlines shown never change: 80x24 and 140x40, a filter
applied, and the claim's proposal dialog."""

from __future__ import annotations

import pytest

from mailtriage.application import project_dir
from tests.tui.helpers import make_app, settle


@pytest.fixture
def demo(tmp_path, monkeypatch, demo_dir):
    """The demo app on a session copied from the worker's template (tests/tui/conftest.py)."""
    monkeypatch.chdir(tmp_path)
    return make_app(project_dir(demo_session=True), demo=True)


def shot(*keys: str):
    """Q opens the queue, then ``keys``, each settled; toasts cleared before the shot."""

    async def run_before(pilot):
        await settle(pilot)
        for key in ("Q", *keys):
            pilot.app.clear_notifications()
            await pilot.press(key)
            await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


def test_queue_80x24(snap_compare, demo):
    assert snap_compare(demo, terminal_size=(80, 24), run_before=shot())


def test_queue_wide(snap_compare, demo):
    assert snap_compare(demo, terminal_size=(140, 40), run_before=shot())


def test_queue_filtered_by_state_imported(snap_compare, demo):
    # all -> new -> acknowledged -> imported
    assert snap_compare(demo, terminal_size=(100, 30), run_before=shot("s", "s", "s"))


def test_queue_claim_dialog_80x24(snap_compare, demo):
    # imported -> the open redirect (SEC-0006, nobody's): c proposes the claim
    assert snap_compare(demo, terminal_size=(80, 24), run_before=shot("s", "s", "s", "c"))
