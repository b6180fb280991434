"""Keys typed right after a key that opens a dialog: held until the dialog has the focus, then
typed into it, in order (issue 35: ``|grep -c :`` in one burst went to the reading pane behind
the pipe dialog: g went to the top, r started a reply, e said "no attachments").

Why they went astray: Textual hands each key to the focused widget's queue as it reads it, and a
pane's binding acts when the key has bubbled back up to the app; the pane's request then goes
through two more queues before the dialog is pushed and focused. By then the rest of the burst
has been handed to the pane. A key that opens a dialog (its pane posts the request with
:func:`post_opening`) makes the app keep every key after it, those still to be read and those already handed to the pane (held
as they bubble back, before any binding acts on them), until a widget other than the pane takes
the focus (the dialog's field), or the request ended with no dialog to come (the main screen
calls :func:`request_handled`, and :func:`worker_ended` for the workers it started), or
:data:`HOLD_AT_MOST` seconds passed. Part of :class:`mailtriage.tui.app.MailTriageApp`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual import events

if TYPE_CHECKING:
    from textual.app import App
    from textual.message import Message
    from textual.message_pump import MessagePump
    from textual.worker import Worker
    from textual.timer import Timer
    from textual.widget import Widget

__all__ = ["TypeAhead", "post_opening", "waits_on", "request_handled", "worker_ended"]

#: Seconds the keys wait at most for the dialog (a request that built nothing and said nothing).
HOLD_AT_MOST = 1.0
#: Seconds between two looks at whether the dialog has the focus (a dialog made ahead is pushed
#: with its focus set already: no focus event says so).
LOOK_EVERY = 0.01


class TypeAhead:
    #: Keys that act at once, even while held (quit now).
    TYPEAHEAD_NOT_HELD = frozenset({"ctrl+q"})
    _typeahead: list[events.Key] | None = None
    _typeahead_from: tuple[object, Widget | None] = (None, None)  # the screen and focus at the key
    _typeahead_for: Message | None = None  # the request that opens the dialog
    _typeahead_workers: set[Worker] = set()  # what builds the dialog (a reply built after r)
    _typeahead_timers: tuple[Timer, ...] = ()

    def hold_typeahead(self, request: Message) -> None:
        """The keys from now on wait for the dialog ``request`` opens."""
        app = cast("App", self)
        self._typeahead_for = request
        if self._typeahead is None:
            self._typeahead = []
            self._typeahead_from = (app.screen, app.focused)
            self._typeahead_workers = set()
            self._typeahead_timers = (app.set_timer(HOLD_AT_MOST, self.release_typeahead),
                                      app.set_interval(LOOK_EVERY, self._typeahead_check))

    def _typeahead_check(self) -> None:
        """The dialog has the focus (a field of another screen, or another widget of this one)."""
        app, (screen, focused) = cast("App", self), self._typeahead_from
        if app.screen is not screen and app.screen.focused is not None or (
                app.screen is screen and app.focused is not focused):
            self.release_typeahead()

    def release_typeahead(self) -> None:
        """The keys held act now, in the order typed, on what has the focus."""
        held, self._typeahead = self._typeahead, None
        self._typeahead_from, self._typeahead_for, self._typeahead_workers = (None, None), None, set()
        for timer in self._typeahead_timers:
            timer.stop()
        self._typeahead_timers = ()
        app = cast("App", self)
        for key in sorted(held or (), key=lambda key: key.time):  # read, or bubbled back: as typed
            again = events.Key(key.key, key.character)
            again.set_sender(app)  # as the driver sends a key
            app.post_message(again)

    async def on_event(self, event: events.Event) -> None:
        if self._typeahead is not None:
            if isinstance(event, events.Key) and event.key not in self.TYPEAHEAD_NOT_HELD:
                self._typeahead.append(event)
                event.stop()
                event.prevent_default()
                return
            if isinstance(event, events.DescendantFocus):
                await super().on_event(event)  # type: ignore[misc]  # (the App's, after this mixin)
                self._typeahead_check()  # the dialog's field has the focus: they type into it
                return
        await super().on_event(event)  # type: ignore[misc]


def post_opening(widget: Widget, request: Message, to: MessagePump | None = None) -> None:
    """``request`` (a key of ``widget`` that opens a dialog) posted to ``widget`` (or ``to``), and
    the keys typed after it held for that dialog (not in an app that is not mailtriage's: a test's host)."""
    app = widget.app
    if isinstance(app, TypeAhead):
        app.hold_typeahead(request)
    (to or widget).post_message(request)


def waits_on(app: App, request: Message) -> bool:
    """Keys are held for the dialog ``request`` opens."""
    return isinstance(app, TypeAhead) and app._typeahead is not None and app._typeahead_for is request


def request_handled(app: App, *, pushed: bool, workers: set[Worker]) -> None:
    """The request the keys wait on is handled: it pushed its dialog (its focus releases them),
    or started ``workers`` that build it (their end, with no dialog, releases them), or neither:
    the keys held act now, on the pane."""
    if not isinstance(app, TypeAhead) or app._typeahead is None:
        return
    if pushed:
        app._typeahead_check()
    elif workers:
        app._typeahead_workers = set(workers)
    else:
        app.release_typeahead()


def worker_ended(app: App, worker: Worker) -> None:
    """A worker ended: the last of those building the dialog keys wait for, and no dialog came
    (it said why instead: a refusal, a failure), the keys held act now, on the pane."""
    if isinstance(app, TypeAhead) and worker in app._typeahead_workers:
        app._typeahead_workers.discard(worker)
        if not app._typeahead_workers:
            app._typeahead_check()
            if app._typeahead is not None and app.screen is app._typeahead_from[0]:
                app.release_typeahead()
