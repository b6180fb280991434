"""What a screen area that owns its work shares (issue 36 §3).

An *area* is a pane widget that holds its own state and runs its own workers
(``@work`` methods on the widget, so they end with it), as Textual's ``DirectoryTree``
does. It reaches the application service through :func:`service`, numbers its requests
with :class:`Requests` (a newer request of a kind supersedes an older one), and shows its
own failures: the failure message then bubbles to the screen, which reports it (the
error list, a recheck of the sources), unless :func:`drop_stale` stopped it. Areas never
import each other: what one asks of another goes as a typed message (a ``Request``,
tui/messages.py) to the screen, which hands it to the component that takes it.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, cast

from textual.widget import Widget

from mailtriage.core.secrets import scrub
from mailtriage.tui.messages import AreaFailed

if TYPE_CHECKING:
    from mailtriage.application import Service
    from mailtriage.tui.app import MailTriageApp


def shell(widget: Widget) -> MailTriageApp:
    """The app ``widget`` runs in."""
    return cast("MailTriageApp", widget.app)


def service(widget: Widget) -> Service:
    """The application service of the app ``widget`` runs in."""
    return shell(widget).session


class Requests:
    """Request numbers of one area, by kind: only the newest of a kind is current."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        self._current: dict[str, int] = {}

    def new(self, kind: str) -> int:
        request = next(self._numbers)
        self._current[kind] = request
        return request

    def is_current(self, kind: str, request: int) -> bool:
        return self._current.get(kind) == request


def drop_stale(requests: Requests, message: AreaFailed) -> bool:
    """True (and the failure stops here, unreported) when it answers a superseded request."""
    if message.request and not requests.is_current(message.area, message.request):
        message.stop()
        return True
    return False


def failure_text(message: AreaFailed) -> str:
    """What the pane says of a failure (secrets scrubbed)."""
    return scrub(message.details or str(message.error))
