"""A component of the main screen: a hidden widget that owns one part of the screen's work
(issue 36 §2), as Textual's ``DirectoryTree`` owns its loading.

Its workers run on it, so the messages they post come to it first and it handles them itself
(Textual delivers a message to the node it was posted to, then bubbles it to the ancestors):
the screen routes only what crosses areas (a pane's request to a component, a component's news
to another). The work groups stay the screen's: Esc cancels "threads", "reader" and "reply"
on every component, and an exclusive worker supersedes its group's others on any component
(a batch's "reply" work supersedes a compose's, as when all of them ran on the screen).
``Worker.StateChanged`` does not bubble: a component hands it to the screen, which reports a
worker that raised and lets the alerts' poll start after a thread read.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Callable

from textual.widget import Widget
from textual.worker import Worker

if TYPE_CHECKING:
    from textual.app import App

    from mailtriage.tui.controllers.base import ControllerBase


class Component(Widget):
    """A hidden widget of the main screen that runs a part of its work and takes the answers."""

    DEFAULT_CSS = "Component { display: none; }"

    def __init__(self, screen: ControllerBase, *, id: str | None = None) -> None:
        #: The main screen: the service and app, the request numbers, the panes, the deferral
        #: of answers that come before the panes are mounted.
        self._screen = screen
        super().__init__(id=id)

    @property
    def app(self) -> App:  # type: ignore[override]
        """The screen's app, also before this widget is mounted: on a worker's thread Textual
        finds the app through the node's parents only, and start-up's first listing can post
        its answers (or start its worker) before the screen has mounted its components."""
        return self._screen.app

    def _start(self, work: Callable[..., None], *args, group: str, exclusive: bool = True, **kwargs) -> Worker:
        """``work(*args, **kwargs)`` in a thread, as this component's worker of the screen's
        ``group`` (exclusive: the group's workers on the whole screen are cancelled first),
        named as ``@work`` names a worker."""
        if exclusive:
            self._screen.cancel_group(group)
        return self.run_worker(partial(work, *args, **kwargs), name=work.__name__, group=group,
                               exit_on_error=False, thread=True)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self._screen.worker_changed(event.worker)
