"""The dialogs ahead (issue 35): what the first dialog of a process costs, paid while the
person reads the list instead of on the key that opens it.

The first compose or proposal dialog of a fresh process paid, on the ``r`` or ``f`` that
opened it, for importing the dialog modules (~50 ms on the loaded machine), for its
stylesheet (a screen that brings a CSS file of its own makes Textual parse every stylesheet
of the app again and restyle every widget: ~80 ms, more under load) and for the default CSS
of the widgets the main screen has none of (``ModalScreen``, ``TextArea``, ``Input``, ``Button``). Each is
done here once, exactly as Textual does it on the push (``App._load_screen_css``,
``Widget._post_register``), so the push finds it done; the steps run one at a time, each
in its own turn of the event loop, so a key typed meanwhile waits for one step at most.
Last, what they made (modules, classes, parsed rules) is frozen out of the collector's way
(``gc.freeze``, once per process, as the app does after start-up when ``freeze_gc_after_start``):
a full collection while r builds and mounts the dialog no longer walks them.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

from mailtriage.tui import textual_private
from mailtriage.tui.dialogs import DIALOG_CSS

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import App
    from textual.widget import Widget

    from mailtriage.tui.app import MailTriageApp


def import_dialogs() -> None:
    """Import the compose and proposal dialogs and what they import (a worker thread may)."""
    import mailtriage.tui.dialogs.compose  # noqa: F401  # why: the point is to load it ahead
    import mailtriage.tui.dialogs.proposal  # noqa: F401  # why: as above
    # r's reply is built as the row under the cursor is read ahead (reply13): the compose flows
    # (and the outgoing rule they import) loaded then, ~20 ms of CPU holding the GIL, met an Enter
    from mailtriage.application import ComposeForm  # noqa: F401  # why: loads application.flows.compose


def dialog_css_loaded(app: App) -> bool:
    return app.stylesheet.has_source(str(DIALOG_CSS), "")


def load_dialog_css(app: App) -> None:
    """The dialogs' stylesheet in the app's, as the push of the first dialog reads it (UI thread)."""
    sheet = app.stylesheet
    if dialog_css_loaded(app):
        return
    sheet.read(DIALOG_CSS)
    sheet.reparse()
    sheet.update(app)


def ready_in_turns(app: MailTriageApp, hold: Callable[[Callable[[], object]], None],
                   after_refresh: Callable[..., object], last: Callable[[], object]) -> None:
    """UI thread, once ``import_dialogs`` ran: the dialogs' stylesheet, then their widgets' CSS,
    then ``last``, each in its own turn of the event loop and each through ``hold`` (the reading
    controller's ``after_open``: it waits for a thread Enter is opening)."""
    def css() -> None:
        load_dialog_css(app)
        after_refresh(hold, widgets)

    def widgets() -> None:
        register_dialog_widgets(app)
        after_refresh(hold, last)

    hold(css)


def register_dialog_widgets(app: MailTriageApp) -> None:
    """The default CSS of the dialogs' widgets, parsed (UI thread)."""
    from textual.screen import ModalScreen  # why: loaded by import_dialogs already
    from textual.widgets import Button, Input, Label, TextArea  # why: as above

    widgets: tuple[Widget, ...] = (ModalScreen(), TextArea(), Input(), Button(), Label())
    for widget in widgets:
        textual_private.register_default_css(app, widget)
    app.stylesheet.rules  # noqa: B018 - the property parses what was added (cached per source)
    if app.freeze_gc_after_start:  # once: this runs once per process
        gc.freeze()
