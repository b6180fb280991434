"""The main screen's first show restyles nothing (issue 33: the UI thread's work before the first
key acts): every widget was styled as it mounted, and Textual's restyle of the whole screen at its
first ScreenResume styled them all again (~10 ms of the UI thread at 160x50, the demo).

Pilot tests on a real mbox project (tests/tui/helpers.py)."""

from __future__ import annotations

from mailtriage.tui.screens.main import MainScreen
from tests.tui.helpers import make_app, mbox_project, settle


def _styles(screen) -> dict:
    """Each widget's rules and its component classes' rules, by widget."""
    return {node: (node.styles.css, {name: node.get_component_styles(name).css
                                     for name in sorted(node.COMPONENT_CLASSES)})
            for node in screen.walk_children(with_self=True)}


async def test_the_first_show_styles_each_widget_once_as_a_whole_restyle_would(tmp_path, monkeypatch):
    restyles: list[object] = []
    update_node_styles = MainScreen.update_node_styles

    def recording(self, animate: bool = True) -> None:  # Textual's own, counted
        restyles.append(self)
        update_node_styles(self, animate)

    monkeypatch.setattr(MainScreen, "update_node_styles", recording)
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        assert restyles == []  # no restyle of the whole screen came with its first show
        shown = _styles(screen)
        screen.update_node_styles(animate=False)  # what that restyle did (Textual's): nothing changes
        assert _styles(screen) == shown
        assert restyles == [screen]  # (the recording sees a restyle)
