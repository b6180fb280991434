"""Toasts at 80x24 (issue 35): never over a dialog's buttons, never the same words stacked.

A toast raised before a dialog opens (the `!` "no errors" note, a flag's receipt) stays on
screen for seconds, and a dialog raises its own (a draft pending, no raw source): at 80x24 a
dialog fills the screen, and a toast at the bottom right lay over its Confirm/Cancel row. One
app visits every dialog of tests/tui/test_snapshots_80x24.py with two toasts up.
"""

from __future__ import annotations

from pathlib import Path

from textual.screen import ModalScreen
from textual.widgets import Button

from tests.tui.helpers import make_app, mbox_project, settle
from tests.tui.test_snapshots_80x24 import DIALOGS, SIZE, workdir  # noqa: F401 (fixture)

LONG = "A toast of three lines at 80 columns, as a flag's receipt or a refusal that says why at length."


def covered(app) -> list[str]:
    """The buttons of the dialog on screen that a toast lies over, by label (what shows of a
    toast: the rack scrolls, and an older toast may be partly out of it)."""
    screen = app.screen
    toasts = [screen.find_widget(toast).visible_region for toast in screen.query("Toast")]
    assert any(toasts), "no toast on screen: the check would pass for nothing"
    return [str(button.label) for button in screen.query(Button)
            if any(screen.find_widget(button).visible_region.overlaps(toast) for toast in toasts)]


async def test_no_toast_covers_a_dialogs_buttons_at_80x24(workdir):  # noqa: F811
    app = make_app(Path("p"))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        for name, how in DIALOGS.items():
            app.notify(LONG, title="Before the dialog")
            if callable(how):
                app.push_screen(how())
            else:
                for key in how:
                    await pilot.press(key)
                    await settle(pilot)
            await settle(pilot)
            assert isinstance(app.screen, ModalScreen), name
            app.notify(LONG, title="From the dialog")
            await settle(pilot)
            assert covered(app) == [], f"{name}: a toast covers its buttons at 80x24"
            while isinstance(app.screen, ModalScreen):
                app.pop_screen()
                await settle(pilot)
            app.clear_notifications()


async def test_the_same_words_again_replace_their_toast_rather_than_stack(tmp_path):
    """Space held at the end of the list raised "End of the last message of the list." once a
    key: at 80x24 four of them covered the reader, as neither mutt nor aerc would."""
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("G", "enter")
        await settle(pilot)
        for _ in range(6):  # the thread fits a page or two: the end is reached, then pressed on
            await pilot.press("space")
            await settle(pilot)
        ends = [n for n in app._notifications if n.message == "End of the last message of the list."]
        assert len(ends) == 1, len(ends)
