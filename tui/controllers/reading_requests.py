"""Enter on a row, the reader's q, Space at the end, e and u, and r / A / F / C on a row or in
the reader: the pane requests that the Reading and Compose components act on (issue 36 §2).

Their handlers belong in those components, beside what they call; reading.py and compose.py
are at tui/'s 500-line limit this session (tests/tui/test_shape.py; another branch splits
them), so the handlers wait here, each one call into its component. Move each into its
component, with its entry of ``TAKES``, once there is room: the screen's table finds it there
as it finds it here (tests/tui/test_component_messages.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mailtriage.tui.controllers.component import Component
from mailtriage.tui.panes.reader import ThreadView
from mailtriage.tui.panes.thread_list import ThreadList

if TYPE_CHECKING:
    from mailtriage.tui.controllers.base import ControllerBase
    from mailtriage.tui.controllers.compose import Compose
    from mailtriage.tui.controllers.reading import Reading


class ReadingRequests(Component):
    """The requests Reading and Compose take (hidden)."""

    def __init__(self, screen: ControllerBase, reading: Reading, composing: Compose) -> None:
        super().__init__(screen, id="reading-requests")  # the screen: the listing component (Enter's retry)
        self._reading = reading
        self._composing = composing

    def on_thread_list_opened(self, message: ThreadList.Opened) -> None:
        """Enter on a row: the listing's retry first (an outage's answer is forgotten before the
        read asks for the backend), then the read (tests/tui/test_screen_routes.py holds the order)."""
        self._screen.listing.retry_on_enter()
        self._reading.open_row(message.summary)

    def on_thread_list_highlighted(self, _message: ThreadList.Highlighted) -> None:
        self._reading.highlighted()  # the read ahead (the thread pane's status took the message first)

    def on_thread_view_back_requested(self, _message: ThreadView.BackRequested) -> None:
        self._reading.back()

    def on_thread_view_next_row_requested(self, _message: ThreadView.NextRowRequested) -> None:
        self._reading.next_row()

    def on_thread_view_attachments_requested(self, _message: ThreadView.AttachmentsRequested) -> None:
        self._reading.show_attachments()

    def on_thread_view_url_requested(self, _message: ThreadView.UrlRequested) -> None:
        self._reading.show_thread_url()

    def on_thread_list_reply_requested(self, message: ThreadList.ReplyRequested) -> None:
        self._composing.compose_on(message.summary, message.kind)

    def on_thread_view_reply_requested(self, message: ThreadView.ReplyRequested) -> None:
        self._composing.compose_on(None, message.kind)

    #: The requests this component takes, each with its handler (the screen hands them on).
    TAKES = {
        ThreadList.Opened: on_thread_list_opened,
        ThreadList.Highlighted: on_thread_list_highlighted,
        ThreadView.BackRequested: on_thread_view_back_requested,
        ThreadView.NextRowRequested: on_thread_view_next_row_requested,
        ThreadView.AttachmentsRequested: on_thread_view_attachments_requested,
        ThreadView.UrlRequested: on_thread_view_url_requested,
        ThreadList.ReplyRequested: on_thread_list_reply_requested,
        ThreadView.ReplyRequested: on_thread_view_reply_requested,
    }
