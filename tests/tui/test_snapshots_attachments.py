"""Snapshots of the attachments dialog (issue 14 §1), narrow (80x24) and wide (160x45):
the list with hostile real names shown inert, the text view, the hex view and the save
proposal. Update with ``--snapshot-update`` and look at the SVGs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.attachment_data import attachments_project
from tests.tui.helpers import make_app, settle

NARROW = (80, 24)
WIDE = (160, 45)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", "config")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text('name = "Test Triager"\nattachment_folder = "saved"\n',
                                                     encoding="utf-8")
    (tmp_path / "saved").mkdir()
    attachments_project(tmp_path / "p")
    return tmp_path


def shot(*keys: str):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("4")  # the reading pane
        for key in ("e", *keys):
            pilot.app.clear_notifications()
            await pilot.press(key)
            await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x45"])
def test_attachments_dialog_text_view(snap_compare, workdir, size):
    assert snap_compare(make_app(Path("p")), terminal_size=size, run_before=shot("enter"))


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x45"])
def test_attachments_dialog_hex_view(snap_compare, workdir, size):
    assert snap_compare(make_app(Path("p")), terminal_size=size, run_before=shot("j", "enter"))


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x45"])
def test_attachments_save_proposal(snap_compare, workdir, size):
    assert snap_compare(make_app(Path("p")), terminal_size=size, run_before=shot("A", "enter"))
