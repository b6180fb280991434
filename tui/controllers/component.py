"""A component of the main screen: a hidden widget that owns one part of the screen's work
(issue 36 §2), as Textual's ``DirectoryTree`` owns its loading.

Its workers run on it, so the messages they post come to it first and it handles them itself
(Textual delivers a message to the node it was posted to, then bubbles it to the ancestors).
What crosses areas is a :class:`~mailtriage.tui.messages.Request`: a pane's request, or a
component's news posted to the screen. A pane's messages bubble to its ancestors only, never
to a component (a hidden sibling), so the screen hands each on: the component that lists the
class in ``TAKES`` maps it to its handler, a method named as Textual names it
(``message.handler_name``), and :func:`takers` makes the screen's table of them once. The
work groups stay the screen's: Esc cancels "threads", "reader" and "reply" on every
component, and an exclusive worker supersedes its group's others on any component (a
batch's "reply" work supersedes a compose's, as when all of them ran on the screen).
``Worker.StateChanged`` does not bubble: a component hands it to the screen, which reports a
worker that raised and lets the alerts' poll start after a thread read.
"""

from __future__ import annotations

from functools import partial
from types import MethodType
from typing import TYPE_CHECKING, Callable, ClassVar, Iterable, Mapping

from textual.widget import Widget
from textual.worker import Worker

from mailtriage.tui.messages import Request

if TYPE_CHECKING:
    from textual.app import App

    from mailtriage.tui.controllers.base import ControllerBase
    from mailtriage.tui.controllers.publish_mark import PublishMark

#: What a component takes: each Request class and the function that handles it.
Takes = Mapping[type[Request], Callable[..., None]]
#: The handler of each Request class, bound to the one component that takes it.
Takers = dict[type[Request], Callable[[Request], None]]


class Component(Widget):
    """A hidden widget of the main screen that runs a part of its work and takes the answers."""

    DEFAULT_CSS = "Component { display: none; }"
    #: The requests this component takes, each with its method named ``handler_name`` (declared
    #: right after those methods: the mapping names them).
    TAKES: ClassVar[Takes] = {}

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


def takers(components: Iterable[Component | PublishMark]) -> Takers:
    """Each Request class the ``components`` take, with its handler bound to the one that
    takes it. A class two of them take raises: the screen cannot be made (every start)."""
    table: Takers = {}
    for component in components:
        for request, handler in component.TAKES.items():
            if request in table:
                raise TypeError(f"{request.__qualname__} is taken by two components")
            table[request] = MethodType(handler, component)
    return table
