"""Issue 35: r -> the editable draft in one frame, drawn as soon as r is handled. What ran
between r and the draft, and is gone: the compose dialog's first update waited a whole period
of Textual's update timer (1/60 s, a timer's clock starts at its first resume), and the frame
after the body's laid the main screen out again for the reading pane's status line (the focus
move into the reader says its keys there), which an r typed at once waited behind."""

from __future__ import annotations

import asyncio

import pytest

from textual.widgets import Static

from mailtriage.tui.dialogs.compose import ComposeDialog
from tests.tui.helpers import make_app, settle
from tests.tui.test_compose import drafting_project
from tests.tui.test_imap_network import wait_until

# The dialog prepared ahead is what these tests time (tests/tui/conftest.py turns it off elsewhere).
pytestmark = pytest.mark.usefixtures("dialogs_ahead")


def timer_owner() -> object:
    """The widget whose timer the running task is (None: not a timer's task)."""
    frame = getattr(asyncio.current_task().get_coro(), "cr_frame", None)
    timer = frame.f_locals.get("self") if frame is not None else None
    target = getattr(timer, "_target", None)
    return target() if callable(target) else None


async def test_r_draws_the_dialog_made_ahead_without_waiting_a_period_of_the_update_timer(tmp_path, monkeypatch):
    import textual.timer

    app = make_app(drafting_project(tmp_path / "p"))
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: app.main.composing._blank is not None and app.main.composing._blank.prepared)
        blank = app.main.composing._blank
        status = app.main.reader.query_one("#reader-status", Static)
        asked: list[bool] = []
        real_refresh = Static.refresh

        def refresh(self, *regions, **kwargs):
            if self is status:
                asked.append(kwargs.get("layout", False))
            return real_refresh(self, *regions, **kwargs)
        monkeypatch.setattr(Static, "refresh", refresh)
        await pilot.press("enter")  # the thread, and the focus into the reader
        await settle(pilot)
        assert asked and not any(asked), asked  # its status line said its keys, with no layout
        seen: list[str] = []  # the dialog's update timer: its sleeps and the frames it draws
        real_sleep = textual.timer.sleep

        async def sleep(secs: float) -> None:
            if timer_owner() is blank:
                seen.append("sleep")
            await real_sleep(secs)
        monkeypatch.setattr(textual.timer, "sleep", sleep)
        real_draw = ComposeDialog._compositor_refresh

        def draw(self) -> None:
            if self is blank and timer_owner() is blank:  # a frame drawn by its update timer
                seen.append("draw")
            real_draw(self)
        monkeypatch.setattr(ComposeDialog, "_compositor_refresh", draw)
        real_push = app.push_screen

        def push(screen, *args, **kwargs):
            if screen is blank:
                seen.append("push")
            return real_push(screen, *args, **kwargs)
        monkeypatch.setattr(app, "push_screen", push)
        await pilot.press("r")
        await settle(pilot)
        assert app.screen is blank
        shown = seen[seen.index("push") + 1:]
        assert shown[:1] == ["draw"], seen  # the push's frame drawn as the timer was resumed
