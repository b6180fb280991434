"""Helpers for the TUI tests: apps made deterministic, projects written to temp dirs."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.worker import WorkerState

from mailtriage.tui.app import MailTriageApp


def make_app(project_dir: Path, **kwargs) -> MailTriageApp:
    return MailTriageApp(Path(project_dir), cursor_blink=False, **kwargs)


async def settle(pilot: Pilot) -> None:
    """Wait until no worker runs and every message they posted is handled."""
    app = pilot.app
    for _ in range(50):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in app.workers):
            await pilot.pause()
            return
    raise AssertionError("workers did not settle")


def screen_text(app) -> str:
    """What the terminal shows right now, as plain text lines (what a person reads)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text.rstrip() for strip in strips)
