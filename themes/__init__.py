"""mailtriage's Textual themes: dark, light and high contrast.

Each theme is a :class:`textual.theme.Theme` plus a ``.tcss`` file beside this module
whose rules are scoped to the class Textual puts on the App for the active theme
(``-theme-<name>``), so a theme can adjust more than colours (borders, text styles)
without touching the app's own stylesheet. The app offers only these (tui/app.py unregisters
Textual's built-ins): each is measured at 4.5:1 by tests/tui/test_theme_contrast.py.
"""

from __future__ import annotations

from pathlib import Path

from textual.theme import Theme

HERE = Path(__file__).parent

DARK = Theme(
    name="mailtriage-dark",
    primary="#5E9BD8",
    secondary="#3F6E9E",
    accent="#E5A54B",
    warning="#F0B429",
    error="#E5534B",
    success="#57AB5A",
    foreground="#D8DEE6",
    background="#15191F",
    surface="#1C222A",
    panel="#282D34",
    dark=True,
    variables={
        # Dialog titles ($text-primary on $primary-muted) stay 4.5:1 in 256 colours too.
        "text-primary": "#C4DAF0",
    },
)

LIGHT = Theme(
    name="mailtriage-light",
    primary="#1F5F9E",
    secondary="#4A7DB3",
    accent="#A35A00",
    warning="#9A6700",
    error="#B3261E",
    success="#1A7F37",
    foreground="#1F2328",
    background="#F6F8FA",
    surface="#FFFFFF",
    panel="#E6E8EB",
    dark=False,
    variables={
        "footer-key-foreground": "#1F5F9E",
        # White, not 87% white tinted by the button: 4.5:1 on the warning button in 256 colours.
        "button-color-foreground": "#FFFFFF",
    },
)

# Pure black and white with saturated signal colours: readable on any display,
# for low vision and for bright rooms. The .tcss adds bold borders and reverse cursors
# so state never depends on hue alone.
HIGH_CONTRAST = Theme(
    name="mailtriage-high-contrast",
    primary="#FFFF00",
    secondary="#00FFFF",
    accent="#FFFF00",
    warning="#FFB000",
    error="#FF4040",
    success="#00FF00",
    foreground="#FFFFFF",
    background="#000000",
    surface="#000000",
    panel="#000000",
    boost="#FFFFFF",
    dark=True,
    luminosity_spread=0.0,
    text_alpha=1.0,
    variables={
        "footer-key-foreground": "#FFFF00",
        "block-cursor-foreground": "#000000",
        "block-cursor-background": "#FFFF00",
        "block-cursor-text-style": "bold",
        "border": "#FFFFFF",
        "border-blurred": "#AAAAAA",
        "text-muted": "#DDDDDD",
    },
)

THEMES: tuple[Theme, ...] = (DARK, LIGHT, HIGH_CONTRAST)
DEFAULT_THEME = DARK.name

# Short names a user may write in the settings file or the palette.
ALIASES = {"dark": DARK.name, "light": LIGHT.name, "high-contrast": HIGH_CONTRAST.name,
           "high_contrast": HIGH_CONTRAST.name, "contrast": HIGH_CONTRAST.name}


def theme_css_paths() -> list[Path]:
    """The per-theme stylesheets, in a stable order."""
    return [HERE / "dark.tcss", HERE / "light.tcss", HERE / "high_contrast.tcss"]


def canonical_name(name: str | None) -> str | None:
    if not name:
        return None
    return ALIASES.get(name.strip().lower(), name.strip())
