"""The banner above the main screen's panes: the security CC's warning, or the run stopped
because a mandatory backend is out of reach (issue 36 §2: a widget the listing asks, no
longer a method of the screen reached through a stub)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from mailtriage.tui.sanitize import inert

if TYPE_CHECKING:
    from mailtriage.application import CcResolution


class Banner(Static):
    def show(self, text: Text | None, *, error: bool = False) -> None:
        self.update(text or "")
        self.set_class(bool(text), "-visible")
        self.set_class(error, "-error")

    def show_cc(self, cc: CcResolution | None) -> None:
        """The security CC's warning, if it has one (a "run aborted" banner goes)."""
        if cc is not None and cc.warnings:
            self.show(Text.assemble(("⚠ ", "bold"), inert(" ".join(cc.warnings))), error=cc.blocked)
        else:
            self.show(None)
