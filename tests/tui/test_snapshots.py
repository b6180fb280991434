"""Snapshots of every screen and dialog, in each theme, narrow (80x24) and wide.

Deterministic by construction: fixed dates in the data (shown as written, no clock),
no cursor blink, notifications cleared before the shot, and paths relative to a
per-test working folder so no temp path reaches the screen. Update with
``pytest tests/tui/test_snapshots.py --snapshot-update`` and look at the SVGs.
"""

from pathlib import Path

import pytest

from mailtriage.core.trace import OPLOG
from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.helpers import make_app, mbox_project, reader_text, screen_text, settle
from tests.tui.test_imap_drafts import imap_project  # noqa: F401 (fixture)

NARROW = (80, 24)
WIDE = (140, 40)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # The settings path is shown on the first-run screen: relative, so the same on every run.
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", "config")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text('name = "Test Triager"\n', encoding="utf-8")
    return tmp_path


def project(workdir: Path, **kwargs) -> Path:
    mbox_project(workdir / "p", **kwargs)
    return Path("p")


def shot(*keys: str, theme: str | None = None, check=None, first=None):
    """A run_before that settles, presses ``keys`` (settling after each) and clears toasts.

    ``first`` (the app, settled, before the keys) and ``check`` (after them, before the shot) assert
    what the screen says beside the picture: a Pilot test that only looked at the same app on the
    same keys shares this one start (issue 36 §7). A failed check fails the test (the app exits
    with the error, and no screenshot is taken)."""

    async def run_before(pilot):
        if theme:
            pilot.app.theme = theme
        await settle(pilot)
        if first is not None:
            first(pilot.app)
        for key in keys:
            pilot.app.clear_notifications()
            await pilot.press(key)
            await settle(pilot)
        if check is not None:
            check(pilot.app)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


def unsubscribe_shown_not_fetched(app) -> None:
    # (was tests/tui/test_flows.py's test_list_unsubscribe_targets_are_shown_not_fetched: the same app)
    shown = reader_text(app)
    assert "List-Unsubscribe: mailto:leave@frob.example  (shown, never fetched)" in shown
    assert "https://frob.example/unsubscribe?id=42  (shown, never fetched)" in shown


def test_main_wide_dark(snap_compare, workdir):
    app = make_app(project(workdir))
    assert snap_compare(app, terminal_size=WIDE, run_before=shot("enter", check=unsubscribe_shown_not_fetched))


def test_main_narrow_hostile_thread_dark(snap_compare, workdir):
    app = make_app(project(workdir))
    assert snap_compare(app, terminal_size=NARROW, run_before=shot("j", "enter"))


def thread_read(app) -> None:
    # (was tests/tui/test_flows.py's test_open_a_thread_and_read_it; its q back to the list is
    # tests/tui/test_habits.py's test_q_in_the_reading_pane_goes_back_to_the_list_and_quits_at_the_top)
    reader = app.screen.query_one("#reader-pane")
    assert reader.thread is not None and len(reader.thread.messages) == 2
    assert "2 messages · via read_thread → mbox (primary)" in screen_text(app)
    assert "A crafted .frob file overflows" in reader_text(app) and "Thanks Ana" in reader_text(app)


def test_main_light(snap_compare, workdir):
    app = make_app(project(workdir))
    assert snap_compare(app, terminal_size=(120, 36),
                        run_before=shot("G", "enter", theme="mailtriage-light", check=thread_read))


def test_main_high_contrast_search(snap_compare, workdir):
    app = make_app(project(workdir))
    assert snap_compare(app, terminal_size=(100, 30),
                        run_before=shot("slash", *"frob", "enter", theme="mailtriage-high-contrast"))


def test_main_mandatory_backend_down(snap_compare, workdir):
    folder = workdir / "p"
    mbox_project(folder)
    text = (folder / "project.md").read_text()
    text = text.replace("| `mbox` | primary | no |", "| `mbox` | primary | yes |")
    text = text.replace("path: list.mbox", "path: /nonexistent/list.mbox")
    (folder / "project.md").write_text(text)

    def run_stopped(app) -> None:
        # (was tests/tui/test_flows.py's test_mandatory_backend_unavailable_stops_the_run)
        shown = screen_text(app)
        assert "⛔ mandatory backend mbox unavailable:" in shown and "run aborted" in shown
        assert "✗ mbox" in shown
        assert [r.op for r in OPLOG.items()] == []  # nothing was asked of any backend

    app = make_app(Path("p"))
    assert snap_compare(app, terminal_size=(120, 30), run_before=shot(check=run_stopped))


def test_proposal_with_cc_fallback_warning_light(snap_compare, workdir):
    app = make_app(project(workdir, security_list=None))
    assert snap_compare(app, terminal_size=(120, 44),
                        run_before=shot("2", "enter", "enter", "r", "ctrl+s", theme="mailtriage-light"))


def test_proposal_narrow_dark(snap_compare, workdir):
    app = make_app(project(workdir))
    assert snap_compare(app, terminal_size=NARROW, run_before=shot("r", "ctrl+s"))


def listed_with_the_resolution(app) -> None:
    # (was tests/tui/test_flows.py's test_threads_listed_newest_first_with_the_resolution_shown)
    tl = app.screen.query_one(ThreadList)
    rows = [tl.render_line(y).text for y in range(min(len(tl.rows), tl.scrollable_content_region.height))]
    assert len(rows) == 3
    assert "Question about 3.4 fixes" in rows[0] and "Heap overflow" in rows[2]
    status = str(app.screen.query_one("#threads-status").content)  # whole: 120 columns cut it on screen
    assert "3 threads · via list_recent_threads → mbox (primary); skipped old (not tried" in status
    # The sources pane names each backend with availability.
    shown = screen_text(app)
    assert "✓ mbox" in shown and "✗ old" in shown


def test_console_backends_high_contrast(snap_compare, workdir):
    app = make_app(project(workdir, old_archive=True))
    assert snap_compare(app, terminal_size=(120, 36),
                        run_before=shot("b", theme="mailtriage-high-contrast", first=listed_with_the_resolution))


def test_console_run_tab_narrow(snap_compare, workdir):
    app = make_app(project(workdir))
    assert snap_compare(app, terminal_size=NARROW, run_before=shot("b", "f5"))


def test_help_narrow(snap_compare, workdir):
    app = make_app(project(workdir))
    assert snap_compare(app, terminal_size=NARROW, run_before=shot("question_mark"))


def fallback_before_the_address(app) -> None:
    # The sources status line says FALLBACK before it cuts the address (the CC falls back to the
    # foundation's): was tests/tui/test_words.py's
    # test_the_sources_status_line_shows_fallback_before_it_cuts_the_address, the same app and size.
    status = app.screen.query_one("#sources-status")
    shown = status.render_line(0).text
    assert status.size.width < 40 and "FALLBACK" in shown, shown


def test_error_dialog_light(snap_compare, workdir):
    # No security list: the start-up list read is skipped with a warning; ! shows it in full.
    app = make_app(project(workdir, security_list=None))
    assert snap_compare(app, terminal_size=(100, 30), run_before=shot("exclamation_mark", theme="mailtriage-light",
                                                                      first=fallback_before_the_address))


def first_run_says_what_is_missing(app) -> None:
    # (was tests/tui/test_app_start.py's test_first_run_screen_when_no_project)
    from textual.widgets import Static

    from mailtriage.core.settings import load_settings
    from mailtriage.tui.screens.first_run import FirstRunScreen

    assert isinstance(app.screen, FirstRunScreen)
    head = str(app.screen.query_one("#first-run-head", Static).render())
    assert "No project was found" in head and "mailtriage-project" in head
    settings = str(app.screen.query_one("#first-run-settings", Static).render())
    assert str(load_settings().path) in settings


def test_first_run_narrow(snap_compare, workdir):
    app = make_app(Path("/nonexistent/mailtriage-project"))
    assert snap_compare(app, terminal_size=NARROW, run_before=shot(check=first_run_says_what_is_missing))


def test_first_run_broken_config_wide(snap_compare, workdir):
    from tests.core.helpers import write_project

    write_project(workdir / "p", [("mbox", "sometimes", "no")])
    app = make_app(Path("p"))
    assert snap_compare(app, terminal_size=WIDE, run_before=shot(theme="mailtriage-high-contrast"))


def test_confirmable_draft_proposal_on_imap(snap_compare, imap_project):
    # The draft-capable case (a real Dovecot account): the write, its backend, the marked CC.
    from tests.tui.test_imap_drafts import open_proposal

    async def run_before(pilot):
        await open_proposal(pilot.app, pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(imap_project), terminal_size=(120, 40), run_before=run_before)


def test_tracker_pane_wide_dark(snap_compare, workdir):
    from tests.tui.test_tracker_pane import issue_shown, tracker_not_opened_until_asked, tracker_project

    tracker_project(workdir / "p")
    app = make_app(Path("p"))
    assert snap_compare(app, terminal_size=(150, 40),
                        run_before=shot("t", "j", "enter", first=tracker_not_opened_until_asked, check=issue_shown))


def drafting_project(workdir: Path) -> Path:
    """The snapshot project with a local Maildir that writes drafts (as the demo has)."""
    mbox_project(workdir / "p", extra_rows=[("drafts", "preferred for create_draft, list_drafts", "no")],
                 extra_config={"mail_sources": {
                     "mbox": {"path": "list.mbox", "list": "security@frob.example", "parallel": False},
                     "drafts": {"kind": "maildir", "path": "Mail", "address": "triager@frob.example"}}})
    (workdir / "p" / "Mail").mkdir()
    return Path("p")


def test_compose_receipt_narrow_dark(snap_compare, workdir):
    app = make_app(drafting_project(workdir))
    assert snap_compare(app, terminal_size=NARROW, run_before=shot("r"))


def test_compose_quoted_reply_all_large_light(snap_compare, workdir):
    app = make_app(drafting_project(workdir))
    assert snap_compare(app, terminal_size=(160, 45), run_before=shot("G", "enter", "A", theme="mailtriage-light"))


def test_compose_forward_proposal_narrow(snap_compare, workdir):
    app = make_app(drafting_project(workdir))
    assert snap_compare(app, terminal_size=NARROW, run_before=shot("F", "ctrl+s"))


def test_compose_proposal_large(snap_compare, workdir):
    app = make_app(drafting_project(workdir))
    assert snap_compare(app, terminal_size=(160, 45), run_before=shot("r", "ctrl+s"))
