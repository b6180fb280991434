"""Snapshots of the dialogs issue 35 §4 adds: full headers (``h``) with a hostile header, and
change folder (``c``), at 80x24 (everything must fit) and 160x45. Each app also checks, before
its shot, what Pilot tests of tests/tui/test_missing_keys.py checked in apps of their own: the
headers inert, and that the change-folder and pipe fields follow the app's cursor blink."""

from pathlib import Path

import pytest

from tests.tui.helpers import make_app, mbox_project, standard_messages
from tests.tui.test_missing_keys import (change_folder_does_not_blink, every_header_inert, pipe_command_does_not_blink,
                                          spoofed_report)
from tests.tui.test_snapshots import shot
from tests.tui.test_snapshots_habits import LARGE, NARROW, workdir  # noqa: F401 (fixture)


def spoofed_project(workdir: Path) -> Path:
    mbox_project(workdir / "p", messages=[*standard_messages(), spoofed_report()])
    return Path("p")


@pytest.mark.parametrize("size", [NARROW, LARGE], ids=["80x24", "160x45"])
def test_full_headers_dialog(snap_compare, workdir, size):
    assert snap_compare(make_app(spoofed_project(workdir)), terminal_size=size,
                        run_before=shot("enter", "4", "h", check=every_header_inert))


@pytest.mark.parametrize("size", [NARROW, LARGE], ids=["80x24", "160x45"])
def test_change_folder_dialog(snap_compare, workdir, size):
    assert snap_compare(make_app(spoofed_project(workdir)), terminal_size=size,
                        run_before=shot("c", check=change_folder_does_not_blink))


@pytest.mark.parametrize("size", [NARROW, LARGE], ids=["80x24", "160x45"])
def test_pipe_dialog_with_its_plan(snap_compare, workdir, size):
    keys = ["enter", "4", "vertical_line", *"grep -i received", "enter"]
    assert snap_compare(make_app(spoofed_project(workdir)), terminal_size=size,
                        run_before=shot(*keys, check=pipe_command_does_not_blink))
