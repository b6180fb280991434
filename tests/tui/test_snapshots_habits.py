"""Snapshots of the screens the habits and overview work changed (issue 14 §5, §6), 80x24 and 160x45.

Deterministic like tests/tui/test_snapshots.py: fixed dates, no cursor blink, relative paths.
"""

from pathlib import Path

import pytest

from mailtriage.core.projectconfig import load_project
from tests.tui.helpers import make_app, mail, mbox_project, settle
from tests.tui.test_habits import marks_ready
from tests.tui.test_snapshots import shot
from tests.tui.test_tracker_flows import FIELDS
from tests.tui.test_tracker_pane import TRACKER
from tests.tui.tracker_data import make_empty_tracker

NARROW = (80, 24)
LARGE = (160, 45)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", "config")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text('name = "Test Triager"\n', encoding="utf-8")
    return tmp_path


def tracker_project(workdir: Path) -> Path:
    project = mbox_project(workdir / "p", extra_config={"tracker": {**TRACKER, "fields": FIELDS}})
    make_empty_tracker(load_project(project), project / "repo")
    return Path("p")


def long_project(workdir: Path) -> Path:
    body = "\n".join(f"line {n} of a long report" for n in range(80))
    mbox_project(workdir / "p", messages=[mail("Long report", "Ana Reporter <ana@example.com>",
                                               "Thu, 01 Oct 2026 09:00:00 +0000", "<long-1@example.com>", body)])
    return Path("p")


@pytest.mark.parametrize("size", [NARROW, LARGE], ids=["80x24", "160x45"])
def test_tracker_pane_open(snap_compare, workdir, size):
    """80x24: the tracker takes the body instead of leaving the subjects two characters."""
    assert snap_compare(make_app(tracker_project(workdir)), terminal_size=size, run_before=shot("t"))


def test_tracker_folded_at_80x24_after_going_back_to_the_threads(snap_compare, workdir):
    assert snap_compare(make_app(tracker_project(workdir)), terminal_size=NARROW, run_before=shot("t", "3"))


def test_overview_marks_after_an_import(snap_compare, workdir):
    """The row of the imported thread says SEC-0001, the status line "filed as SEC-0001",
    the title that tracker changes wait to be published."""
    keys = shot("G", "i", "ctrl+s", "escape")

    async def run_before(pilot):
        await keys(pilot)
        await marks_ready(pilot)  # the marks wait for the cursor to rest (ROW_STATUS_DELAY)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(tracker_project(workdir)), terminal_size=LARGE, run_before=run_before)


@pytest.mark.parametrize("size", [NARROW, LARGE], ids=["80x24", "160x45"])
def test_proposal_scrolled_to_the_bottom_keeps_the_security_cc_pinned(snap_compare, workdir, size):
    assert snap_compare(make_app(long_project(workdir)), terminal_size=size, run_before=shot("r", "ctrl+s", "G"))


@pytest.mark.parametrize("size", [NARROW, LARGE], ids=["80x24", "160x45"])
def test_quit_with_a_proposal_open(snap_compare, workdir, size):
    assert snap_compare(make_app(mbox_project(workdir / "p") and Path("p")), terminal_size=size,
                        run_before=shot("r", "ctrl+s", "q"))


@pytest.mark.parametrize("size", [NARROW, LARGE], ids=["80x24", "160x45"])
def test_quitting_notice(snap_compare, workdir, size):
    """A quit that waits says what for (tests/tui/test_quit_notice.py drives it on a held send)."""
    from mailtriage.tui.dialogs.quitting import QuittingNotice

    keys = shot()

    async def run_before(pilot):
        await keys(pilot)
        pilot.app.push_screen(QuittingNotice(lambda: "waiting for the confirmed write to finish…"))
        await settle(pilot)

    assert snap_compare(make_app(mbox_project(workdir / "p") and Path("p")), terminal_size=size,
                        run_before=run_before)


@pytest.mark.parametrize("size", [NARROW, LARGE], ids=["80x24", "160x45"])
def test_console_trace_tab_with_its_filter(snap_compare, workdir, size):
    """The trace tab: kept from start-up, a filter above it (the mbox project speaks no protocol,
    so no time stamp reaches the shot; the op log's times would, so it is covered by pilots)."""
    assert snap_compare(make_app(mbox_project(workdir / "p") and Path("p")), terminal_size=size,
                        run_before=shot("b", "f4"))
