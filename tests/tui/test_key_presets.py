"""``[keys] preset = "mutt" | "aerc"`` (issue 35 §3): their defaults on our actions, no new
collisions, the user's own keys win, an unknown preset is a clear settings problem."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from mailtriage.core.errors import ConfigError
from mailtriage.core.settings import UserSettings
from mailtriage.tui import bindings, keymaps
from mailtriage.tui.panes.reader import ThreadView
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.screens.main import MainScreen
from textual.command import CommandPalette
from mailtriage.tui.screens.help import HelpScreen
from tests.tui.helpers import mail, make_app, mbox_project, settle, standard_messages

PANES = (bindings.THREAD_LIST, bindings.READER, bindings.FOLDERS, bindings.SOURCES, bindings.TRACKER)


def _clashes(keys_of: dict[str, list[str]], contexts) -> set[str]:
    """Keys bound twice where the main screen's pane, the screen and the app all listen."""
    seen: Counter[str] = Counter()
    for binding in (b for ctx in contexts for b in ctx):
        for key in set(keys_of.get(binding.id, bindings.effective_keys(binding, {}))):
            seen[key] += 1
    return {key for key, n in seen.items() if n > 1}


@pytest.mark.parametrize("name", sorted(keymaps.PRESETS))
def test_a_preset_names_real_bindings_and_adds_no_clash(name):
    preset = keymaps.PRESETS[name]
    good, problems = bindings.validate_keymap(preset)
    assert problems == [] and good == preset
    with_preset = {b.id: bindings.effective_keys(b, preset) for b in bindings.all_bindings()}
    for pane in PANES:
        contexts = (bindings.APP, bindings.MAIN, pane)
        assert _clashes(with_preset, contexts) <= _clashes({}, contexts), (name, pane[0].id)


def test_the_users_own_keys_win_over_the_preset(tmp_path):
    settings = UserSettings(tmp_path / "config.toml", {"keys": {"preset": "mutt", "threads.tag": "x"}})
    keymap = keymaps.keymap(settings)
    assert keymap["threads.tag"] == "x" and keymap["threads.toggle_flag"] == "F" and "preset" not in keymap


def test_an_unknown_preset_is_a_settings_error_naming_the_valid_ones(tmp_path):
    settings = UserSettings(tmp_path / "config.toml", {"keys": {"preset": "vim"}})
    with pytest.raises(ConfigError) as caught:
        keymaps.keymap(settings)
    assert str(caught.value) == (f"{tmp_path / 'config.toml'}: keys.preset: unknown key preset 'vim' "
                                 '(valid: "mutt" or "aerc")')
    app = make_app(tmp_path, settings=settings)
    assert any("unknown key preset 'vim'" in p for p in app.startup_problems)
    assert app.user_keymap == {}


async def test_mutt_preset_t_tags_and_the_help_shows_the_mutt_keys(tmp_path):
    settings = UserSettings(tmp_path / "config.toml", {"keys": {"preset": "mutt"}})
    app = make_app(mbox_project(tmp_path / "p"), settings=settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        thread_list = app.screen.query_one(ThreadList)
        first = thread_list.current
        await pilot.press("t")  # mutt's tag-entry (ours: v); the tracker pane moved to Y
        await settle(pilot)
        assert list(thread_list.tags.rows()) == [first] and thread_list.cursor == 1
        assert not app.screen.has_class("-tracker")
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        rows = help_rows(app)
        assert "t  Tag / untag and move down  threads.tag" in rows
        assert "Y  Tracker pane  app.tracker" in rows
        await pilot.press("escape")
        await settle(pilot)
        # mutt's limit has no action here: said, with the key that does what it is for (issue 35).
        await pilot.press("l")
        await settle(pilot)
        assert notices(app)[-1] == "l (limit): / searches here; Esc shows every thread again"
        # mutt's pager i goes back to the index (it imported: issue 35); import moved to +.
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.focused, ThreadView)
        await pilot.press("i")
        await settle(pilot)
        assert isinstance(app.focused, ThreadList) and isinstance(app.screen, MainScreen)


def notices(app) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.mark.parametrize("name", sorted(keymaps.PRESETS))
def test_a_presets_habit_keys_are_free_where_they_are_said(name):
    """A habit key's toast runs before the bindings see the key: it must not hide one."""
    preset = keymaps.PRESETS[name]
    for pane, hints in keymaps.HABITS[name].items():
        taken = {key for group in keymaps.PANE_BINDINGS[pane] for b in group
                 for key in bindings.effective_keys(b, preset)}
        assert not set(hints) & taken, (name, pane)
        for hint in hints.values():  # every {binding id} names a binding
            assert not set(re.findall(r"\{([a-z_.]+)\}", hint)) - bindings.binding_ids(), hint


async def test_aerc_preset_colon_half_pages_and_j_k_in_the_reader(tmp_path):
    settings = UserSettings(tmp_path / "config.toml", {"keys": {"preset": "aerc"}})
    messages = [*standard_messages()[:2], *(mail(f"Report {n}", "Eve <eve@example.org>",
                                                 f"Tue, 0{n} Sep 2026 09:00:00 +0000", f"<r{n}@example.org>",
                                                 "text\n") for n in range(1, 10))]
    app = make_app(mbox_project(tmp_path / "p", messages=messages), settings=settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("colon")  # aerc's command line: the command palette
        await settle(pilot)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press("escape")
        await settle(pilot)
        thread_list = app.screen.query_one(ThreadList)
        half = thread_list.scrollable_content_region.height // 2
        await pilot.press("ctrl+d")
        assert thread_list.cursor == half > 0
        await pilot.press("ctrl+u")
        assert thread_list.cursor == 0
        # The two-message thread is the first row (newest first): J / K step between its messages.
        await pilot.press("enter")
        await settle(pilot)
        view = app.screen.query_one(ThreadView)
        assert isinstance(app.focused, ThreadView) and view.scroll_y == 0
        await pilot.press("J")
        await settle(pilot)
        moved = view.scroll_y
        assert moved > 0
        await pilot.press("K")  # back to the first message's header (as p: the line under its margin)
        await settle(pilot)
        assert view.scroll_y < moved
        await pilot.press("dollar_sign")
        await settle(pilot)
        assert notices(app)[-1] == "$ (terminal): no terminal here; | pipes the message to a command"


def help_rows(app) -> list[str]:
    """The help screen's rows as text, cells joined by two spaces."""
    out = []
    for static in app.screen.query(".help-table"):
        table = static.content
        for i in range(table.row_count):
            out.append("  ".join(str(column._cells[i]) for column in table.columns))
    return out


def test_a_habit_key_the_user_bound_is_not_said(tmp_path):
    """The user's own [keys] may take a habit key: the binding gets it, not the toast."""
    plain = make_app(tmp_path, settings=UserSettings(tmp_path / "c.toml", {"keys": {"preset": "mutt"}}))
    assert keymaps.habit_hint(plain, "threads", "l") == "l (limit): / searches here; Esc shows every thread again"
    assert keymaps.habit_hint(plain, "reader", "l") is None  # a habit of the list only
    own = make_app(tmp_path, settings=UserSettings(tmp_path / "c.toml", {"keys": {"preset": "mutt",
                                                                                  "threads.tag": "l"}}))
    assert keymaps.habit_hint(own, "threads", "l") is None
    ours = make_app(tmp_path, settings=UserSettings(tmp_path / "c.toml", {}))
    assert keymaps.habit_hint(ours, "threads", "l") is None  # no preset: no habits
