"""The suite's key presses (tests/pilot_keys.py) wait until the app has handled each key."""

from __future__ import annotations

import inspect

import textual.app
from textual.app import App, ComposeResult
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from tests import pilot_keys


def test_textual_still_waits_through_the_name_we_replace():
    # A Textual upgrade that stops calling ``wait_for_idle`` from ``App._press_keys`` (or renames
    # either) would silently bring back the idle guess: fail here instead.
    assert "wait_for_idle(" in inspect.getsource(App._press_keys)
    assert textual.app.wait_for_idle is pilot_keys.until_handled


class _Dialog(ModalScreen):
    def compose(self) -> ComposeResult:
        yield Input(id="answer")

    def on_mount(self) -> None:
        self.query_one(Input).focus()


class _Chain(App):
    """``d`` opens a dialog whose input takes the focus; every key typed there is echoed by a
    message that bubbles back to the app: three hops per key."""

    BINDINGS = [("d", "dialog")]

    def __init__(self) -> None:
        super().__init__()
        self.echoed = ""

    def compose(self) -> ComposeResult:
        yield Label("main")

    def action_dialog(self) -> None:
        self.push_screen(_Dialog())

    def on_input_changed(self, event: Input.Changed) -> None:
        self.echoed = event.value


async def test_a_key_is_handled_with_everything_it_set_off_when_press_returns():
    app = _Chain()
    async with app.run_test() as pilot:
        await pilot.press("d")
        assert isinstance(app.screen, _Dialog)
        assert isinstance(app.focused, Input)
        await pilot.press(*"frob")
        assert app.echoed == "frob"
