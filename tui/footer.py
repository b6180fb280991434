"""The key footer: the focused pane's keys drawn as one line, in a compact form where the keys
do not fit.

Issue 35: Textual's Footer is a container of one widget per key, composed anew on every
change of the screen's bindings (a focus move): ~20 widgets removed, ~20 mounted, styled and
laid out, and the frame after the body's (Enter) held them, with the r typed at once waiting
behind it. Here the keys are one widget, :class:`KeyLine`, that draws them from the screen's
bindings as they are when it renders: a change of the bindings is a repaint of that one line
in the next frame, no widget mounted, restyled or laid out. Only the key docked at the right
edge is a widget of its own (``^p`` palette in the long form, ``?`` Help in the compact one):
it and the form change with the width, and only then is the footer composed again.

The keys look as Footer draws them (the same component classes, paddings and margins), and
answer the mouse as its keys do: a click presses the key (a disabled key rings the bell), the
key under the pointer is highlighted and its tooltip shown.

Issue 35: at 80 columns the reader's keys ran past the edge and ``?`` Help was never seen.
Where the keys in their long form do not fit the width, the footer turns compact (less
padding) and shows each key's short word (:data:`SHORT`, by action; the help screen and the
palette keep the long ones); ``?`` Help is pinned to the right edge in the palette key's
place, so it shows whatever else is cut.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.color import Color
from textual.geometry import Region
from textual.screen import Screen
from textual.widgets import Footer

from mailtriage.tui.textual_private import FooterKey, bindings_ready, mark_bindings_ready

__all__ = ["KeyFooter", "KeyLine", "Shown", "SHORT"]

#: action → its word in the compact footer (an action not listed keeps its description).
SHORT: dict[str, str] = {
    "back": "Back", "next_message": "Next", "previous_message": "Prev", "import_thread": "Import",
    "thread_url": "URL", "attachments": "Attach", "import_key": "Key", "select": "Open",
    "clear_search": "Clear", "next_match": "Next", "previous_match": "Prev",
    # the backend console's
    "show_tab('operations')": "Ops", "show_tab('run')": "Run op", "clear_logs": "Clear", "run_op": "Run",
}

#: The action of the key pinned to the right (``?``).
PINNED = "help"


class Shown(NamedTuple):
    """A key as the footer shows it."""
    key: str
    key_display: str
    description: str
    action: str
    disabled: bool
    tooltip: str


def _wide(key: Shown) -> int:
    """Columns a key takes in the long form (Textual's padding: one before and after the key,
    one after the description)."""
    return len(key.key_display) + len(key.description) + 3


class KeyLine(FooterKey):
    """Every key of the footer but the one docked right, drawn as one line (a FooterKey, so
    Footer's and FooterKey's rules style it as they style a key)."""

    DEFAULT_CSS = """
    KeyLine {
        width: 1fr;
        &:hover {
            color: $footer-foreground;
            background: $footer-item-background;
        }
    }
    """

    def __init__(self) -> None:
        super().__init__("", "", "", "")
        self.drawn: list[Shown] = []  # the keys of the last render, in their order
        self._spans: list[tuple[int, int, Shown]] = []  # cells [start, end) of each
        self._hover: str | None = None  # the action of the key under the pointer

    def render(self) -> Text:
        footer = self.parent
        keys = footer.line_keys() if isinstance(footer, KeyFooter) else []
        key_style = self.get_component_rich_style("footer-key--key")
        description_style = self.get_component_rich_style("footer-key--description")
        key_padding = self.get_component_styles("footer-key--key").padding
        description_padding = self.get_component_styles("footer-key--description").padding
        compact = self.has_class("-compact")
        base = self.rich_style
        gap = footer.rich_style if isinstance(footer, KeyFooter) else base
        text = Text(no_wrap=True, overflow="crop", end="")
        spans: list[tuple[int, int, Shown]] = []
        for key in keys:
            if key.description:
                piece = Text.assemble(
                    (" " * key_padding.left + key.key_display + " " * key_padding.right, key_style),
                    (" " * description_padding.left + key.description + " " * description_padding.right,
                     description_style))
            else:
                piece = Text.assemble((key.key_display, key_style))
            style = base + Style(dim=True) if key.disabled else base
            if key.action == self._hover:
                style = style + self._hover_style()
            piece.stylize_before(style)
            start = text.cell_len
            text.append_text(piece)
            spans.append((start, text.cell_len, key))
            if compact and key is not keys[-1]:  # Footer's margin between keys in its compact form
                text.append(" ", gap)
        self.drawn, self._spans = [key for _, _, key in spans], spans
        return text

    def _hover_style(self) -> Style:
        """What FooterKey:hover paints a key with."""
        variables = self.app.theme_variables
        background = self.background_colors[1] + Color.parse(variables["block-hover-background"])
        return Style(color=Color.parse(variables["footer-key-foreground"]).rich_color,
                     bgcolor=background.rich_color)

    def key_regions(self) -> list[tuple[Shown, Region]]:
        """Each key of the last render and where it is on the screen (cut at the line's edge)."""
        region = self.content_region
        return [(key, Region(region.x + start, region.y, max(0, min(end, region.width) - start), 1))
                for start, end, key in self._spans if start < region.width]

    def key_at(self, x: int) -> Shown | None:
        for start, end, key in self._spans:
            if start <= x < end:
                return key
        return None

    def on_mouse_down(self) -> None:  # FooterKey's signature: the pointer is where the app saw it last
        key = self.key_at(self.app.mouse_position.x - self.content_region.x)
        if key is None:
            return
        if key.disabled:
            self.app.bell()
        else:
            self.app.simulate_key(key.key)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        key = self.key_at(event.x)
        action = key.action if key is not None else None
        if action != self._hover:
            self._hover = action
            self.tooltip = (key.tooltip or None) if key is not None else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.tooltip = None
            self.refresh()


class KeyFooter(Footer):
    DEFAULT_CSS = """
    KeyFooter FooterKey.-pinned {
        dock: right;
    }
    KeyFooter.-compact KeyLine {
        margin-right: 0;
    }
    """

    _recompose_due = False
    _shape: tuple | None = None  # what the footer was composed for (see _current_shape)
    #: The form for the bindings as the last change left them (_form): read once per change
    #: (Screen.active_bindings walks the focus chain and asks each check_action), not per render.
    _form_now: tuple[list[Shown], Shown | None, bool] | None = None

    def bindings_changed(self, screen: Screen) -> None:
        mark_bindings_ready(self)
        if not self.is_attached or screen is not self.screen:
            return
        self._follow()

    def on_resize(self, event: events.Resize) -> None:
        if bindings_ready(self):
            self._follow()

    def _follow(self) -> None:
        """The keys follow the bindings: the line repainted in the next frame where the form
        and the docked key stay (a focus move), composed again (once for a burst) where not."""
        self._form_now = self._form()
        if self._shape is not None and self._shape == self._current_shape():
            self._repaint_line()
            return
        if not self.app.app_focus:
            return  # as Footer: composed when the app has the focus again
        if not self._recompose_due:
            self._recompose_due = True
            self.call_after_refresh(self._recompose_now)

    async def _recompose_now(self) -> None:
        self._recompose_due = False  # a change from now on asks for another
        if not self.is_attached:
            return  # its screen was popped between the ask and this refresh
        self._form_now = self._form()
        if self._shape is not None and self._shape == self._current_shape():
            self._repaint_line()
            return
        await self.recompose()

    def _repaint_line(self) -> None:
        """The line drawn again where its keys changed (a focus move publishes the bindings
        twice, the second time after the frame: the same keys then, no repaint)."""
        keys = self.line_keys()
        for line in self.query_children(KeyLine):
            if line.drawn != keys:
                line.refresh()

    def _keys(self) -> tuple[list[Shown], Shown | None]:
        """The keys Footer would show for the screen's bindings as they are (one per action,
        in their order; groups are not used here), and the command palette's key."""
        active = self.screen.active_bindings
        app = self.app
        keys: dict[str, Shown] = {}
        for _, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in keys:
                keys[binding.action] = Shown(binding.key, app.get_key_display(binding), binding.description,
                                             binding.action, not enabled, tooltip)
        palette = None
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE and app.COMMAND_PALETTE_BINDING in active:
            _, binding, enabled, tooltip = active[app.COMMAND_PALETTE_BINDING]
            palette = Shown(binding.key, app.get_key_display(binding), binding.description, binding.action,
                            not enabled, binding.tooltip or binding.description)
        return list(keys.values()), palette

    def _form(self) -> tuple[list[Shown], Shown | None, bool]:
        """The keys of the line, the key docked right, and whether the form is the compact one."""
        keys, palette = self._keys()
        width = self.size.width or self.app.size.width
        compact = sum(map(_wide, keys + ([palette] if palette else []))) > width
        if not compact:
            return keys, palette, False
        keys = [key._replace(description=SHORT.get(key.action, key.description)) for key in keys]
        # Compact: ? Help takes the palette key's place at the right edge (two keys docked right
        # would overlap); Ctrl+p still opens the palette, and the help screen lists it.
        pinned = next((key for key in keys if key.action == PINNED), None)
        return [key for key in keys if key is not pinned], pinned, True

    def _current_shape(self) -> tuple:
        _, docked, compact = self._form_now or self._form()
        return (self.size.width or self.app.size.width, compact, docked)

    def line_keys(self) -> list[Shown]:
        return (self._form_now or self._form())[0]

    def shown(self) -> list[Shown]:
        """The keys as the last frame drew them: the line's, then the one docked right."""
        lines = list(self.query_children(KeyLine))
        docked = [Shown(key.key, key.key_display, key.description, key.action, key.has_class("-disabled"),
                        str(key.tooltip or "")) for key in self.query_children(FooterKey) if not isinstance(key, KeyLine)]
        return (lines[0].drawn if lines else []) + docked

    def compose(self) -> ComposeResult:
        # before the bindings are ready Footer composes no key: nothing to compare a later ask with
        if not bindings_ready(self):
            self._shape = None
            return
        self._form_now = self._form()
        self._shape = self._current_shape()
        _, compact, docked = self._shape
        self.compact = compact
        line = KeyLine()
        line.set_reactive(FooterKey.compact, compact)
        line.set_class(compact, "-compact", update=False)
        yield line
        if docked is None:
            return
        key = FooterKey(docked.key, docked.key_display, docked.description, docked.action,
                        disabled=docked.disabled, tooltip=docked.tooltip,
                        classes="-pinned" if compact else "-command-palette")
        # Styled once, as it is made: FooterKey's own ``compact`` starts True (the palette key
        # keeps it; Footer binds nothing to it), the pinned key takes the footer's form.
        key.set_reactive(FooterKey.compact, True)
        key.set_class(True, "-compact", update=False)
        yield key
