"""Issue 35 §2: 80x24 works — the main screen with a personal account, and every dialog.

The dialogs that need a state hard to reach on an mbox project (an error list, a reply that
cannot be encrypted, a key's passphrase, quitting with work pending) are pushed as the app
pushes them; the others are reached by their keys. Besides the snapshots, one cheap check
per dialog: every button lies inside the screen (the proposal's ``Cancel (esc)`` did not).

The other dialogs and screens are pinned at 80x24 beside their wide shot, each once:
full headers, change folder and pipe (test_snapshots_keys.py), the move picker
(test_snapshots_tags.py), attachments (test_snapshots_attachments.py), help and the
console's run tab (test_snapshots.py), its trace tab (test_snapshots_habits.py), the queue
(test_snapshots_queue.py). Here: those with no wide shot.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Button, Input

from mailtriage.tui.dialogs.clear_reply import ClearReplyDialog
from mailtriage.tui.dialogs.error import ErrorDialog
from mailtriage.tui.dialogs.passphrase import PassphraseDialog
from mailtriage.tui.dialogs.quit import QuitDialog
from mailtriage.tui.errors import ErrorRecord
from tests.tui.helpers import make_app, settle
from tests.tui.test_account_folders import open_inbox
from tests.tui.test_snapshots import drafting_project
from tests.tui.test_tags import tags_project  # noqa: F401 (fixture)

SIZE = (80, 24)

ERROR = ErrorRecord("Reading the thread failed", "connection refused", where="reader",
                    resolution="read_thread → mbox (primary)", details="the archive could not be opened",
                    technical="OSError: [Errno 111] Connection refused",
                    hints=["Press R to check the sources again."])

#: name → (keys pressed on the main screen, or a dialog to push)
DIALOGS = {
    "proposal": ("r", "ctrl+s"),
    "compose": ("r",),
    "error": lambda: ErrorDialog([ERROR]),
    "clear_reply": lambda: ClearReplyDialog("no OpenPGP key for ana@example.com"),
    "passphrase": lambda: PassphraseDialog(True, cursor_blink=False),
    "quit": lambda: QuitDialog(["a proposal is open (not written)", "a thread is loading"]),
    "raw_source": ("enter", "4", "h", "x"),
    "theme_picker": ("ctrl+t",),
}

#: Dialogs with no button to check (keys only).
BUTTONLESS = {"theme_picker"}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", "config")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text('name = "Test Triager"\n', encoding="utf-8")
    drafting_project(tmp_path)  # drafts are written: the proposal offers $EDITOR (its widest row of buttons)
    return tmp_path


def open_dialog(name: str):
    async def run_before(pilot):
        await settle(pilot)
        how = DIALOGS[name]
        if callable(how):
            pilot.app.push_screen(how())
        else:
            for key in how:
                await pilot.press(key)
                await settle(pilot)
        await settle(pilot)
        if name == "theme_picker":  # Textual's palette: its field blinks whatever the app's setting
            pilot.app.screen.query_one(Input).cursor_blink = False
        buttons_on_screen(pilot.app, name)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


def buttons_on_screen(app, dialog: str) -> None:
    """Every button of the dialog lies inside it, its label whole (was a test of its own that
    started each dialog's app again: test_every_button_of_every_dialog_is_on_screen_at_80x24)."""
    buttons = list(app.screen.query(Button))
    if dialog in BUTTONLESS:
        return
    assert buttons, f"{dialog}: no dialog with buttons on screen"
    box = app.screen.query_one(".dialog").content_region  # what the dialog shows of its rows
    cut = [str(b.label) for b in buttons
           if not box.contains_region(b.region) or b.content_region.width < len(str(b.label))]
    assert cut == [], f"{dialog}: cut off at 80x24"


@pytest.mark.parametrize("dialog", DIALOGS)
def test_dialog_at_80x24(snap_compare, workdir, dialog):
    """The dialog's picture, and its buttons checked on screen (buttons_on_screen) before the shot."""
    assert snap_compare(make_app(Path("p")), terminal_size=SIZE, run_before=open_dialog(dialog))


def test_main_screen_with_an_account_reading_at_80x24(snap_compare, tags_project):  # noqa: F811
    async def run_before(pilot):
        await open_inbox(pilot.app, pilot)
        await pilot.press("enter")
        await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(tags_project), terminal_size=SIZE, run_before=run_before)
