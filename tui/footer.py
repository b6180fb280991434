"""The key footer of the main screen: Textual's Footer, recomposed once for a burst of changes.

Textual's Footer recomposes after every change of the screen's bindings (focus moves, a
screen resumes, an app refreshes its bindings), one recompose each; every recompose mounts
its keys anew and restyles each key twice (its ``compact`` reactive, then the data bind).
Start-up changes the bindings five times in a row before the first key can act (issue 33:
launch -> the first key that acts), so five recomposes ran where the last alone is seen.
Here a change asks for a recompose only when none is due yet; the one that runs reads the
bindings as they are by then, so the keys shown are the same.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer

__all__ = ["KeyFooter"]


class KeyFooter(Footer):
    _recompose_due = False

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._recompose_due:
            self._recompose_due = True
            self.call_after_refresh(self._recompose_now)

    async def _recompose_now(self) -> None:
        self._recompose_due = False  # a change from now on asks for another
        await self.recompose()
