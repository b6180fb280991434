"""The unpublished-changes mark in the title: whether the tracker keeps local changes to
publish (P reviews them). A hidden widget of the main screen that runs its check on itself
and holds the answer (issue 36 §2: no longer a stub of the screen the proposals reached);
the screen asks it after a tracker listing, the proposals after a write, a quit what it holds."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.widget import Widget

from mailtriage.tui.messages import PublishPendingChecked, TrackerLoaded

if TYPE_CHECKING:
    from mailtriage.tui.app import MailTriageApp
    from mailtriage.tui.controllers.component import Takes

PUBLISH_MARK = "✎ tracker changes to publish (P)"


class PublishMark(Widget):
    DEFAULT_CSS = "PublishMark { display: none; }"

    def __init__(self) -> None:
        super().__init__(id="publish-mark")
        #: The last answer: the tracker keeps changes to publish.
        self.pending = False

    @property
    def shell(self) -> MailTriageApp:
        return self.app  # type: ignore[return-value]

    def check(self) -> None:
        """Ask (in a worker) whether the tracker keeps changes to publish; only once it is open."""
        session = self.shell.session
        if session.is_open and session.tracker is not None:
            self._check_publish()

    def on_tracker_loaded(self, _message: TrackerLoaded) -> None:
        self.check()

    #: A tracker listing (the tracker pane's, bubbled to the screen): asked again.
    TAKES: ClassVar[Takes] = {TrackerLoaded: on_tracker_loaded}

    @work(thread=True, exclusive=True, group="publish-check", exit_on_error=False)
    def _check_publish(self) -> None:
        try:
            pending = self.shell.session.needs_publish()
        except Exception:  # the publish review says why when asked; the mark stays as it was
            return
        self.post_message(PublishPendingChecked(pending))

    def on_publish_pending_checked(self, message: PublishPendingChecked) -> None:
        message.stop()
        self.pending = message.pending
        parts = ["demo"] if self.shell.session.demo else []
        if message.pending:
            parts.append(PUBLISH_MARK)
        self.shell.sub_title = " · ".join(parts)
