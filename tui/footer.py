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

from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

from mailtriage.tui.textual_private import (FooterKey, bindings_ready, key_disabled, mark_bindings_ready,
                                            set_key_disabled)

__all__ = ["KeyFooter", "SHORT"]

#: action → its word in the compact footer (an action not listed keeps its description).
SHORT: dict[str, str] = {
    "back": "Back", "next_message": "Next", "previous_message": "Prev", "import_thread": "Import",
    "thread_url": "URL", "attachments": "Attach", "import_key": "Key", "select": "Open",
    "clear_search": "Clear", "next_match": "Next", "previous_match": "Prev",
}

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
        if self.is_attached and screen is self.screen and not self._recompose_due:
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
        key (issue 35), and a second frame for the layout. Here the keys a recompose would mount
        are made (not mounted), and the mounted ones take their text, action and classes: only a
        key whose classes change is restyled (alone), only a changed text is laid out again, and
        only the keys beyond those on show are mounted (or the surplus removed)."""
        shown = [key for key in self.children if isinstance(key, FooterKey)]
        if not shown or len(shown) != len(self.children):
            return False
        if any(active.binding.group is not None for active in self.screen.active_bindings.values()):
            return False  # Footer.compose puts grouped keys in a KeyGroup (a ``with`` block)
        made, compact_form = self._made_keys()
        fresh = [key for key in made if isinstance(key, FooterKey)]
        if compact_form != self.compact or len(fresh) != len(made):
            # The other form: every key is restyled (the footer's -compact rules); a recompose
            # styles each new key once, where the keys kept would follow the footer's bind.
            return False
        self._composed = self._shown()
        restyle: list[FooterKey] = []
        for key, new in zip(shown, fresh):
            text = (new.key, new.key_display, new.description, new.action)
            if (key.key, key.key_display, key.description, key.action) != text:
                key.key, key.key_display, key.description, key.action = text
                key.refresh(layout=True)
            set_key_disabled(key, key_disabled(new))
            if key.tooltip != new.tooltip:
                key.tooltip = new.tooltip
            key.set_reactive(FooterKey.compact, new.compact)
            if key.classes != new.classes:
                key.remove_class(*(key.classes - new.classes), update=False)
                key.add_class(*(new.classes - key.classes), update=False)
                restyle.append(key)
        if restyle:
            self.app.stylesheet.update_nodes(restyle, animate=False)
            for key in restyle:
                key.refresh(layout=True)  # a -compact or -pinned key takes other room
        if len(fresh) > len(shown):
            self.mount_all(fresh[len(shown):])
        for key in shown[len(fresh):]:
            key.remove()
        return True

    def _shown(self) -> tuple:
        """What the keys are composed from: the width and the screen's active bindings (key,
        binding, enabled, tooltip). A list's news refreshes the bindings each poll and most
        leave them as they were: then the keys stay, rather than ~20 widgets mounted and
        styled again on the UI thread."""
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
