"""The command palette: every action of the current screen, plus themes.

Commands are generated from :data:`bindings.CONTEXTS`, so anything bound to a key is
also reachable by name, and the palette shows the (remapped) key beside it.
"""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from mailtriage.tui import bindings

# Palette-only duplicates would be noise: moving a cursor by one row is not a command.
SKIP_ACTIONS = {"cursor_down", "cursor_up", "scroll_down", "scroll_up", "command_palette", "help_quit",
                "app.focus_next", "app.focus_previous"}


class MailtriageCommands(Provider):
    def _commands(self) -> list[tuple[str, str, object]]:
        screen = self.screen
        app = self.app
        keymap = bindings.keymap_of(app)
        out: list[tuple[str, str, object]] = []
        seen: set[str] = set()
        for context in bindings.CONTEXTS:
            if context.screen is not None and (not isinstance(screen, bindings.KeyContext)
                                               or screen.key_context != context.screen):
                continue
            if context.target == "app":
                node = app
            elif context.target == "screen":
                node = screen
            else:
                node = screen.query(context.target).first() if screen.query(context.target) else None
            if node is None:
                continue
            for binding in context.bindings:
                if binding.action in SKIP_ACTIONS or binding.id in seen:
                    continue
                seen.add(binding.id or binding.action)
                keys = ", ".join(app.get_key_display(type(binding)(k, "")) for k in
                                 bindings.effective_keys(binding, keymap))
                title = f"{context.title}: {binding.description}"
                out.append((title, f"{keys}  ·  {binding.id}", partial(self._run, node, binding.action)))
        for theme in bindings.themes_of(app):
            out.append((f"Theme: {theme}", "switch theme (saved to your settings)", partial(self._set_theme, theme)))
        return out

    def _run(self, node, action: str) -> None:
        self.app.call_next(self.app.run_action, action, node)

    def _set_theme(self, name: str) -> None:
        self.app.theme = name

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)


class ThemeCommands(Provider):
    """Ctrl+t: the themes only (the app registers only its own, each measured at 4.5:1)."""

    def _themes(self) -> list[str]:
        return list(self.app.available_themes)

    def _set(self, name: str) -> None:
        self.app.theme = name

    async def discover(self) -> Hits:
        for name in self._themes():
            yield DiscoveryHit(name, partial(self._set, name), help="saved to your settings")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name in self._themes():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), partial(self._set, name), help="saved to your settings")
