"""The key footer of the main screen: Textual's Footer, recomposed once for a burst of changes,
in a compact form where the keys do not fit.

Textual's Footer recomposes after every change of the screen's bindings (focus moves, a
screen resumes, an app refreshes its bindings), one recompose each; every recompose mounts
its keys anew and restyles each key twice (its ``compact`` reactive, then the data bind).
Start-up changes the bindings five times in a row before the first key can act (issue 33:
launch -> the first key that acts), so five recomposes ran where the last alone is seen.
Here a change asks for a recompose only when none is due yet; the one that runs reads the
bindings as they are by then, so the keys shown are the same.

Issue 35: at 80 columns the reader's keys ran past the edge and ``?`` Help was never seen.
Where the keys in their long form do not fit the width, the footer turns compact (less
padding) and shows each key's short word (:data:`SHORT`, by action; the help screen and the
palette keep the long ones); ``?`` Help is pinned to the right edge in the palette key's
place, so it shows whatever else is cut.
"""

from __future__ import annotations

from typing import NamedTuple

from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

from mailtriage.tui.textual_private import (FooterKey, being_removed, bindings_ready, mark_bindings_ready,
                                            set_key_disabled)

__all__ = ["KeyFooter", "SHORT"]

#: action → its word in the compact footer (an action not listed keeps its description).
SHORT: dict[str, str] = {
    "back": "Back", "next_message": "Next", "previous_message": "Prev", "import_thread": "Import",
    "thread_url": "URL", "attachments": "Attach", "import_key": "Key", "select": "Open",
    "clear_search": "Clear", "next_match": "Next", "previous_match": "Prev",
}

class _Spec(NamedTuple):
    """A footer key as data: what a FooterKey is made with, its classes and ``compact``."""

    key: str
    key_display: str
    description: str
    action: str
    disabled: bool
    tooltip: str
    classes: frozenset[str] = frozenset()
    compact: bool = False


#: The action of the key pinned to the right (``?``).
PINNED = "help"


def _wide(key: FooterKey) -> int:
    """Columns a key takes in the long form (Textual's padding: one before and after the key,
    one after the description)."""
    return len(key.key_display) + len(key.description) + 3


class KeyFooter(Footer):
    DEFAULT_CSS = """
    KeyFooter FooterKey.-pinned {
        dock: right;
    }
    """

    _recompose_due = False
    _compact_form = False
    _composed: tuple | None = None  # what the keys on show were composed from (see _shown)

    def bindings_changed(self, screen: Screen) -> None:
        mark_bindings_ready(self)
        if not screen.app.app_focus:
            return
        if not (self.is_attached and screen is self.screen) or self._recompose_due:
            return
        self._recompose_due = True
        self.call_after_refresh(self._recompose_now)

    async def _recompose_now(self) -> None:
        if not self.is_attached:
            self._recompose_due = False
            return  # its screen was popped between the ask and this refresh
        if self._composed is not None and self._composed == self._shown():
            self._recompose_due = False
            return  # the same keys: not mounted again (issue 39: news in a storm asked it each poll)
        # On the footer's own queue: awaited here, in the screen's after-refresh callbacks, the
        # screen handled nothing else until ~20 keys were mounted and styled (issue 35: the r
        # typed right after Enter waited for the footer's recompose and its paint, ~80 ms loaded).
        self.call_next(self._recompose_keys)

    async def _recompose_keys(self) -> None:
        self._recompose_due = False  # a change from now on asks for another
        if self.is_attached and not self._keys_in_place():
            await self.recompose()

    def _keys_in_place(self) -> bool:
        """The keys on show become the new bindings' keys, changed in place; False (nothing
        done) where there are none yet or Textual groups keys in containers: a recompose then.

        A recompose removed ~20 keys and mounted ~20 new ones, each composed and styled, on every
        focus move: ~12-15 ms of the UI thread after Enter had shown the body, before the next
        key (issue 35), and a second frame for the layout. Here the mounted keys take the text,
        action and classes the keys of a recompose would have (:meth:`_specs`, no widget made):
        only a key whose classes change is restyled (alone), only a changed text is laid out
        again, and only the keys beyond those on show are made and mounted (or the surplus
        removed; a key removed but not yet pruned is not counted as shown).

        Still run after the frame of the change, not as the bindings change: run within Enter's
        focus move (footer7, tried), the keys' layout and mounts went into the body's frame,
        Enter -> body 30 -> 44 ms of UI CPU (bench_open_headless) and 0.09 -> 0.15 s on the
        screen, for an r typed at once 0.19 -> 0.12 s: the frame after the body (Textual's Focus
        event: the view's repaint, the resized keys' layout) still came before r."""
        staying = [child for child in self.children if not being_removed(child)]
        shown = [key for key in staying if isinstance(key, FooterKey)]
        if not shown or len(shown) != len(staying):
            return False
        active = self.screen.active_bindings
        composed = self._shown(active)
        if composed == self._composed:
            return True  # the same keys (issue 39: a list's news refreshes the bindings each poll)
        wanted = self._specs(active)
        if wanted is None:
            return False  # Footer.compose puts grouped keys in a KeyGroup (a ``with`` block)
        specs, compact_form, columns = wanted
        if compact_form != self.compact:
            # The other form: every key is restyled (the footer's -compact rules); a recompose
            # styles each new key once, where the keys kept would follow the footer's bind.
            return False
        self._composed = composed
        if self.styles.grid_size_columns != columns:
            self.styles.grid_size_columns = columns  # as Footer.compose sets it
        restyle: list[FooterKey] = []
        for key, spec in zip(shown, specs):
            text = (spec.key, spec.key_display, spec.description, spec.action)
            if (key.key, key.key_display, key.description, key.action) != text:
                key.key, key.key_display, key.description, key.action = text
                key.refresh(layout=True)
            set_key_disabled(key, spec.disabled)
            if key.tooltip != (spec.tooltip or None):
                key.tooltip = spec.tooltip or None
            key.set_reactive(FooterKey.compact, spec.compact)
            if key.classes != spec.classes:
                key.remove_class(*(key.classes - spec.classes), update=False)
                key.add_class(*(spec.classes - key.classes), update=False)
                restyle.append(key)
        if restyle:
            self.app.stylesheet.update_nodes(restyle, animate=False)
            for key in restyle:
                key.refresh(layout=True)  # a -compact or -pinned key takes other room
        if len(specs) > len(shown):
            self.mount_all([self._made(spec) for spec in specs[len(shown):]])
        for key in shown[len(specs):]:
            key.remove()
        return True

    def _specs(self, active: dict) -> tuple[list[_Spec], bool, int] | None:
        """The keys :meth:`compose` would show for the bindings as they are, as data (no widget
        made: a FooterKey's construction is most of what a comparison cost), in their order;
        whether that is the compact form; the grid's columns Footer.compose sets. None where
        a binding has a group (Footer.compose makes a KeyGroup container of them). ``active``:
        the screen's active bindings (read once: each read asks every action's check)."""
        app = self.app
        first: dict[str, tuple] = {}  # action -> its first shown binding (Footer.compose's grouping)
        for _node, binding, enabled, tooltip in active.values():
            if binding.group is not None:
                return None
            if binding.show:
                first.setdefault(binding.action, (binding, enabled, tooltip))
        specs = [_Spec(b.key, app.get_key_display(b), b.description, b.action, not enabled, tooltip)
                 for b, enabled, tooltip in first.values()]
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            found = active.get(app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _node, b, enabled, _tooltip = found
                specs.append(_Spec(b.key, app.get_key_display(b), b.description, b.action, not enabled,
                                   b.tooltip or b.description, frozenset({"-command-palette"})))
        width = self.size.width or app.size.width
        compact_form = sum(len(s.key_display) + len(s.description) + 3 for s in specs) > width
        out = []
        for spec in specs:
            palette = "-command-palette" in spec.classes
            compact = True if palette else compact_form
            classes = spec.classes | {"-compact"} if compact else spec.classes
            if spec.disabled:
                classes |= {"-disabled"}
            description = SHORT.get(spec.action, spec.description) if compact_form else spec.description
            if compact_form and spec.action == PINNED:
                classes |= {"-pinned"}
            out.append(spec._replace(description=description, classes=classes, compact=compact))
        if compact_form:  # ? Help pinned last, the palette's key dropped (see _made_keys)
            out = [s for s in out if "-pinned" not in s.classes and "-command-palette" not in s.classes] + \
                  [s for s in out if "-pinned" in s.classes]
        return out, compact_form, len(first)

    @staticmethod
    def _made(spec: _Spec) -> FooterKey:
        """A key made from its spec, in its form (styled once, on its mount)."""
        key = FooterKey(spec.key, spec.key_display, spec.description, spec.action, disabled=spec.disabled,
                        tooltip=spec.tooltip, classes=" ".join(sorted(spec.classes - {"-disabled"})))
        key.set_reactive(FooterKey.compact, spec.compact)
        return key

    def _shown(self, active: dict | None = None) -> tuple:
        """What the keys are composed from: the width and the screen's active bindings (key,
        binding, enabled, tooltip). A list's news refreshes the bindings each poll and most
        leave them as they were: then the keys stay, rather than ~20 widgets mounted and
        styled again on the UI thread."""
        if active is None:
            active = self.screen.active_bindings
        width = self.size.width or self.app.size.width
        return (width, tuple((key, b.binding, b.enabled, b.tooltip) for key, b in active.items()))

    def compose(self) -> ComposeResult:
        # before the bindings are ready Footer composes no key: nothing to compare a later ask with
        self._composed = self._shown() if bindings_ready(self) else None
        widgets, self._compact_form = self._made_keys()
        self.compact = self._compact_form
        yield from widgets

    def _made_keys(self) -> tuple[list[Widget], bool]:
        """The widgets Footer composes for the bindings as they are, made (not mounted) in the
        form that fits the width, in their order; and whether that form is the compact one."""
        widgets = list(super().compose())
        keys = [w for w in widgets if isinstance(w, FooterKey)]
        width = self.size.width or self.app.size.width
        compact_form = sum(map(_wide, keys)) > width
        for key in keys:
            # Each key's ``compact`` is styled once, as it is made: left to FooterKey, it started
            # True (its class -compact added and styled on mount) and the data bind from the
            # footer set it False again (styled again): ~6 ms per key on every recompose, one
            # recompose per focus move (issue 35: Enter and r waited for ~20 of them). Footer
            # binds nothing to the palette's key: it keeps FooterKey's own True.
            compact = True if key.has_class("-command-palette") else compact_form
            key.set_reactive(FooterKey.compact, compact)
            key.set_class(compact, "-compact", update=False)
        if not compact_form:
            return widgets, False
        for key in keys:
            key.description = SHORT.get(key.action, key.description)
        # Compact: ? Help takes the palette key's place at the right edge (two keys docked
        # right would overlap); Ctrl+p still opens the palette, and the help screen lists it.
        pinned = [k for k in keys if k.action == PINNED]
        for key in pinned:
            key.add_class("-pinned")
        return [w for w in widgets if w not in pinned and not w.has_class("-command-palette")] + pinned, True

    def on_resize(self, event: events.Resize) -> None:
        if bindings_ready(self) and not self._recompose_due:
            self._recompose_due = True
            self.call_after_refresh(self._recompose_now)
