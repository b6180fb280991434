"""The tracker pane on a real local-files tracker in a git repository."""

from pathlib import Path

from mailtriage.core.projectconfig import load_project
from mailtriage.demo.tracker import make_demo_tracker
from mailtriage.tui.panes.tracker import TrackerList, TrackerPane
from mailtriage.application.service import Service
from tests.tui.helpers import make_app, mbox_project, screen_text, settle

TRACKER = {"platform": "local-files", "prefix": "SEC", "local": {"path": "repo/security-tracker"},
           "labels": ["needs triage", "valid", "invalid", "cve allocated", "fix released", "embargoed",
                      "important", "critical"]}


def tracker_project(folder: Path) -> Path:
    project = mbox_project(folder, extra_config={"tracker": TRACKER})
    make_demo_tracker(load_project(project), project / "repo")
    return project


def pane_text(app) -> str:
    from textual.widgets import Static

    pane = app.screen.query_one(TrackerPane)
    options = pane.query_one(TrackerList)
    prompts = [getattr(options.get_option_at_index(i).prompt, "plain", "") for i in range(options.option_count)]
    return "\n".join(prompts + [getattr(w.content, "plain", str(w.content)) for w in pane.query(Static)])


def tracker_not_opened_until_asked(app) -> None:
    assert not app.screen.query_one(TrackerPane).display  # hidden, and not opened, until asked
    assert app.session.tracker is None


def issue_shown(app) -> None:
    """After t, j, Enter: the list of the three issues, and SEC-0002 (the open one) in full.

    Checked in tests/tui/test_snapshots.py's test_tracker_pane_wide_dark, the app of the same
    project and keys (was test_tracker_pane_lists_issues_and_shows_fields_and_rollup, an app of its
    own; the focus on t and the closing t are tests/tui/test_habits.py's
    test_tracker_pane_at_80_columns_folds_instead_of_squeezing_the_subjects)."""
    assert app.screen.query_one(TrackerList).option_count == 3
    detail = pane_text(app)
    assert "3 issues · local-files" in detail
    assert "SEC-0002 · open" in detail
    assert "CVE: CVE-2026-41355" in detail and "Severity: critical" in detail
    assert "2026-09-23 · @dwhitfield · Validated" in detail
    assert "Confirmed with an LDAP realm" in detail


async def test_without_a_tracker_configuration_the_pane_says_why(tmp_path):
    app = make_app(mbox_project(tmp_path / "p"))  # tracker.platform defaults to github, with no repo
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        text = pane_text(app)
        assert "no tracker:" in text and "tracker.github" in text
        assert app.errors == []  # not an error of the app: the project has no tracker yet
        assert "tracker: not available" in screen_text(app)


def test_demo_tracker_lives_in_the_demo_workspace_git_repository(user_config, tmp_path, monkeypatch):
    from mailtriage.core.settings import load_settings
    from mailtriage.demo.workspace import ensure_demo_workspace

    monkeypatch.setenv("MAILTRIAGE_DEMO_DIR", str(tmp_path / "demo"))
    workspace = ensure_demo_workspace()
    session = Service(workspace, demo=True, settings=load_settings())
    session.open()
    issues, problems = session.tracker_issues()
    # three filed reports, and three more for the triage queue (issue 37)
    assert [i["id"] for i in issues] == [f"SEC-000{n}" for n in range(6, 0, -1)] and problems == []
    root = Path(session.tracker.root)
    assert root == workspace / "tracker"
    assert (workspace / ".git").is_dir() and (root / "tracker-format.yaml").is_file()
    assert session.tracker.pending()["needs_publish"] is False
    session.close()
    assert root.exists()  # kept between runs, so CLI commands and the app see the same tracker


async def test_a_tracker_that_fails_is_said_in_the_pane_and_reported_once(tmp_path):
    """The pane shows its own failure; the screen reports it (the error list) once."""
    project = mbox_project(tmp_path / "p", extra_config={"tracker": {
        "platform": "github", "github": {"repo": "acme/security", "api_url": "http://127.0.0.1:9"}}})
    app = make_app(project)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        assert "⚠" in pane_text(app)
        assert [(e.title, e.where) for e in app.errors] == [("Listing the tracker failed", "tracker")]
