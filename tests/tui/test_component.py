"""A main-screen component (tui/controllers/component.py) takes the answers of its workers.

Start-up's first listing can answer before the main screen has mounted its components (the
project opens beside the first frame, tui/app.py): the worker's thread posts to a widget that
has no parent yet, and Textual finds the app of a node on another thread through its parents
only (a thread has no active app). The component's app is its screen's.
"""

from __future__ import annotations

import threading

from textual.app import App

from mailtriage.tui.controllers.component import Component
from mailtriage.tui.messages import SessionOpened


class Probe(Component):
    def __init__(self, screen) -> None:
        super().__init__(screen)
        self.seen: list[SessionOpened] = []

    def on_session_opened(self, message: SessionOpened) -> None:
        self.seen.append(message)


async def test_an_answer_posted_from_a_thread_before_the_component_is_mounted_reaches_it():
    app: App = App()
    async with app.run_test() as pilot:
        probe = Probe(app.screen)
        outcome: list[object] = []

        def worker() -> None:  # a plain thread, as a worker's: no active app in its context
            try:
                outcome.append(probe.post_message(SessionOpened()))
            except Exception as exc:  # noqa: BLE001 - what a worker would have raised
                outcome.append(exc)
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert outcome == [True]
        await app.screen.mount(probe)
        await pilot.pause()
        assert len(probe.seen) == 1
