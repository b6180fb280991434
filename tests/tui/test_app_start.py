"""Starting the app: first run, broken configuration, themes, key remapping.

The first-run screen's words when there is no project are checked in its snapshot's app
(tests/tui/test_snapshots.py's test_first_run_narrow)."""

import tomllib

from textual.widgets import Static

import mailtriage.application as application
from mailtriage.tui.screens.first_run import FirstRunScreen
from mailtriage.tui.screens.help import HelpScreen
from tests.core.helpers import write_project
from tests.tui.helpers import make_app, screen_text, settle


async def test_broken_configuration_names_file_and_key(tmp_path):
    project = write_project(tmp_path / "p", [("mbox", "sometimes", "no")])
    app = make_app(project)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, FirstRunScreen)
        head = str(app.screen.query_one("#first-run-head", Static).render())
        assert "project.md" in head and "Role" in head and "unknown role" in head
        # Fixing the file and pressing R opens the project.
        write_project(tmp_path / "p", [("mbox", "primary", "no")], {"security_list": "sec@example.org"})
        await pilot.press("R")
        await settle(pilot)
        assert not isinstance(app.screen, FirstRunScreen)


async def test_theme_switch_from_the_palette_is_saved_and_d_on_the_first_run_opens_the_demo(tmp_path, user_config,
                                                                                           monkeypatch):
    """Two tests on the first-run screen (no project), one app each, on one app (issue 36 §7):
    the theme switched from the palette (the screen stays), then d opens the demo."""
    monkeypatch.setenv("MAILTRIAGE_DEMO_DIR", str(tmp_path / "demo-workspace"))
    app = make_app(tmp_path / "nowhere")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.theme == "mailtriage-dark"
        await pilot.press("ctrl+p")
        await pilot.press(*"theme: high")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert app.theme == "mailtriage-high-contrast"
        assert app.has_class("-theme-mailtriage-high-contrast")
        await first_run_d_opens_the_demo_workspace(app, pilot, tmp_path)
    saved = tomllib.loads((user_config / "config.toml").read_text())
    assert saved == {"name": "Test Triager", "theme": "mailtriage-high-contrast"}
    # The next start uses it: a start with a theme in the settings is
    # test_keys_are_remapped_from_settings_and_bad_entries_reported (this test started a second app for it).


async def test_keys_are_remapped_from_settings_and_bad_entries_reported(tmp_path, user_config):
    (user_config / "config.toml").write_text(
        'theme = "light"\n[keys]\n"app.help" = "h"\n"no.such.binding" = "x"\n', encoding="utf-8")
    app = make_app(tmp_path / "nowhere")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.theme == "mailtriage-light"
        assert any("no.such.binding" in n.message for n in app._notifications)
        await pilot.press("h")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        shown = screen_text(app)
        assert "Help" in shown and "app.help" in shown
        line = next(line for line in shown.splitlines() if "app.help" in line)
        assert line.split()[0] == "h"  # the remapped key, not "?"


async def first_run_d_opens_the_demo_workspace(app, pilot, tmp_path) -> None:
    """``MAILTRIAGE_DEMO_DIR`` is ``tmp_path / "demo-workspace"``."""
    from mailtriage.tui.panes.thread_list import ThreadList

    assert isinstance(app.screen, FirstRunScreen)
    await pilot.press("d")
    await settle(pilot)
    assert not isinstance(app.screen, FirstRunScreen)
    assert len(app.screen.query_one(ThreadList).rows) == 42
    # A fresh workspace of this run, beside the command line's one.
    assert app.session.project_dir.parent == tmp_path / "demo-workspace-sessions"
    assert app.session.project_dir.name.startswith("session-")


async def test_unreadable_settings_keep_mail_metadata_off_disk(tmp_path, user_config, cache, monkeypatch):
    """A settings file that cannot be read may be the one that says ``cache_summaries = false``:
    the app then keeps no archive index on disk (it used to get empty settings and persist it)."""
    broken = '[settings]\ncache_summaries = false\ntheme = "light\n'
    (user_config / "config.toml").write_text(broken, encoding="utf-8")
    app = make_app(application.project_dir(demo=True), demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert any("not valid TOML" in n.message for n in app._notifications)
        assert "threads" in screen_text(app)  # the demo archive was listed
        # Reported, and never overwritten: a theme chosen now is not saved over the file (was
        # test_unreadable_settings_are_reported_and_never_overwritten, an app of its own).
        app.theme = "mailtriage-light"
        await settle(pilot)
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert any("not rewritten" in n.message for n in app._notifications)
    assert not list(cache.rglob("*.idx")), list(cache.rglob("*"))
    assert (user_config / "config.toml").read_text(encoding="utf-8") == broken


async def test_readable_settings_let_the_archive_index_be_kept(tmp_path, user_config, cache, monkeypatch):
    """The check above can fail: with the same settings readable and caches allowed, it is kept."""
    app = make_app(application.project_dir(demo=True), demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "threads" in screen_text(app)
    assert list(cache.rglob("*.idx"))
