"""The app's toasts: the same words once, the new-report notice one at a time.

Part of :class:`mailtriage.tui.app.MailTriageApp`, before ``App`` in its bases, so its
``notify`` runs for every toast (a screen's or a widget's ``notify`` calls the app's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.notifications import Notification, Notify, SeverityLevel

from mailtriage.tui import textual_private

if TYPE_CHECKING:
    from textual.app import App

    _AppBase = App[int]
else:
    _AppBase = object


class Toasts(_AppBase):
    #: The new-report notice on screen (replaced by the next).
    _alert_notice: Notification | None = None

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """A toast; the same words still on screen are taken off first (issue 35: Space held at
        the end of the list raised one a key, and four covered the reader at 80x24)."""
        for shown in textual_private.notifications(self):
            if (shown.message, shown.title, shown.severity) == (message, title, severity):
                textual_private.withdraw(self, shown)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def show_alert_notice(self, text: str, title: str) -> None:
        """The new-report notification: one on screen at a time, the new one replaces the last."""
        if self._alert_notice is not None:
            textual_private.withdraw(self, self._alert_notice)
        self._alert_notice = Notification(text, title, "information", 15, markup=False)
        self.post_message(Notify(self._alert_notice))
