"""Every theme reads at 4.5:1 or better (WCAG AA), for text and for the cursor row, in
truecolour and in 256 colours (issue 35 item 7).

The app is rendered in each theme of ``mailtriage.themes`` and every text cell on the screen
is measured: its colours as Textual composes them (alpha, ``auto`` text and ``dim`` already
blended), and the same colours downgraded to the 256-colour palette the way Rich does it for a
terminal without ``COLORTERM`` (tmux): ``rich.color.Color.downgrade(ColorSystem.EIGHT_BIT)``.
Contrast is the WCAG ratio of relative luminances. Borders and scrollbars are lines, not text.
"""

from __future__ import annotations

import pytest
from rich.color import Color, ColorSystem
from textual.command import CommandList, CommandPalette

from mailtriage.themes import THEMES
from tests.tui.helpers import make_app, mbox_project, settle

AA = 4.5
SIZE = (120, 36)


def luminance(color: Color) -> float:
    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    t = color.get_truecolor()
    return 0.2126 * channel(t.red) + 0.7152 * channel(t.green) + 0.0722 * channel(t.blue)


def ratio(fg: Color, bg: Color) -> float:
    high, low = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def is_text(text: str) -> bool:
    # Box drawing and block elements (borders, scrollbars, the tree's guides) are not text.
    return any(not ch.isspace() and not 0x2500 <= ord(ch) <= 0x259F for ch in text)


def low_contrast(app, state: str, within=None) -> list[str]:
    """Every text segment on screen (or ``within`` a region: a dialog, not the screen it dims)
    under 4.5:1, in truecolour or in 256 colours."""
    update = app.screen._compositor.render_update(full=True)
    found: dict[tuple, str] = {}
    measured_cells = 0
    for y, line in enumerate(update.strips):
        x = 0
        for strip in line:
            for segment in strip:
                style, at = segment.style, x
                x += segment.cell_length
                if within is not None and not within.contains(at, y):
                    continue
                if style is None or style.color is None or style.bgcolor is None or not is_text(segment.text):
                    continue
                measured_cells += segment.cell_length
                for mode, (fg, bg) in (("truecolour", (style.color, style.bgcolor)),
                                       ("256 colours", (style.color.downgrade(ColorSystem.EIGHT_BIT),
                                                        style.bgcolor.downgrade(ColorSystem.EIGHT_BIT)))):
                    measured = ratio(fg, bg)
                    if measured < AA:
                        found.setdefault((mode, str(style)), f"{state}, {mode}: {measured:.2f}:1 on line {y} "
                                                             f"{segment.text.strip()[:30]!r} ({style})")
    # A render whose colours all came back unset would pass with nothing measured.
    assert measured_cells > 200, f"{state}: only {measured_cells} text cells carried both colours"
    return list(found.values())


async def low_contrast_in(theme_name: str, tmp_path) -> list[str]:
    mbox_project(tmp_path / "p")
    app = make_app(tmp_path / "p")
    problems: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        app.theme = theme_name
        await settle(pilot)
        # The list focused (its cursor row), the sources pane's blurred cursor, the status lines.
        problems += low_contrast(app, "list")
        await pilot.press("enter")  # the reader: headers on the panel colour, the list's blurred cursor
        await settle(pilot)
        problems += low_contrast(app, "reader")
        await pilot.press("r")  # the reply dialog over the dimmed screen
        await settle(pilot)
        dialog = app.screen.query_one(".dialog").region
        problems += low_contrast(app, "reply dialog", dialog)
    return problems


async def offered(app, pilot, open_picker) -> set[str]:
    """The theme names the picker ``open_picker`` shows lists (closed again with Esc)."""
    await open_picker()
    await settle(pilot)
    assert isinstance(app.screen, CommandPalette)
    listed = app.screen.query_one(CommandList)
    names = {str(listed.get_option_at_index(i).prompt).split("\n")[0].strip() for i in range(listed.option_count)}
    await pilot.press("escape")
    await settle(pilot)
    return names


async def test_every_theme_a_picker_offers_is_measured(tmp_path):
    """Ctrl+t and Textual's own "Theme" command offer only the themes measured below (Textual's
    built-ins read as low as 2.62:1 here: solarized-light's titles)."""
    mbox_project(tmp_path / "p")
    app = make_app(tmp_path / "p")
    measured = {t.name for t in THEMES}
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)

        async def textual_picker():  # what the palette's "Theme" command (Ctrl+p) opens
            app.action_change_theme()

        assert await offered(app, pilot, lambda: pilot.press("ctrl+t")) == measured
        assert await offered(app, pilot, textual_picker) == measured


@pytest.mark.parametrize("theme", [t.name for t in THEMES])
async def test_theme_reaches_4_5_to_1(tmp_path, theme):
    assert await low_contrast_in(theme, tmp_path) == []


def test_a_textual_theme_in_the_settings_is_not_used_and_the_start_says_so(tmp_path):
    """Not offered, not taken from the settings file either: it was never measured."""
    from mailtriage.core.settings import UserSettings

    settings = UserSettings(tmp_path / "config.toml", {"theme": "solarized-light"})
    app = make_app(tmp_path, settings=settings)
    assert app.theme == "mailtriage-dark"
    assert any(problem.startswith("theme 'solarized-light' is unknown; using mailtriage-dark")
               for problem in app.startup_problems)
