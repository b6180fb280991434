"""Keys mutt and aerc users miss (issue 35 §4): full headers and raw source (``h``) and pipe
to a command (``|``) on the message read (change folder, ``c``, is the lists pane's:
:meth:`FoldersPane.choose_by_name`).

Each opens a dialog of its own module; none writes anything, and the pipe runs its
command only once the user confirmed it in the dialog. A component of the main screen
(issue 36 §2), a hidden widget: it takes the reader's two requests (the screen hands them on); the raw
source is read by the dialogs' own workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mailtriage.tui.controllers.component import Component
from mailtriage.tui.panes.reader import ThreadView

if TYPE_CHECKING:
    from mailtriage.tui.controllers.base import ControllerBase


class ReaderKeys(Component):
    """``h`` and ``|`` on the thread in the reading pane (hidden)."""

    def __init__(self, screen: ControllerBase) -> None:
        super().__init__(screen, id="reader-keys")  # the screen: its reading pane, the service, the dialogs

    def on_thread_view_headers_requested(self, _message: ThreadView.HeadersRequested) -> None:
        """h: the full headers and raw source of the open thread's messages."""
        screen = self._screen
        thread = screen.reader.thread
        if thread is None:
            screen.notify("Open a thread first (Enter), then h shows its full headers.", severity="warning",
                          markup=False)
            return
        # lazy: dialogs are not on the first screen (tests/tui/test_startup_imports.py)
        from mailtriage.tui.dialogs.headers import HeadersDialog

        screen.app.push_screen(HeadersDialog(thread, self._raw_reader()))

    def _raw_reader(self):
        """message -> its raw bytes, through what read the open thread (called in a worker)."""
        reader = self._screen.reader
        backend = reader.resolution.chosen if reader.resolution is not None else None
        account_id, session = reader.account_id, self._screen.session
        return lambda message: session.raw_message(message, backend=backend, account_id=account_id)

    def on_thread_view_pipe_requested(self, _message: ThreadView.PipeRequested) -> None:
        """|: the message at the top of the reading pane, to a command the user types and confirms."""
        screen = self._screen
        thread = screen.reader.thread
        if thread is None or not thread.messages:
            screen.notify("Open a thread first (Enter), then | pipes its message.", severity="warning", markup=False)
            return
        index = min(screen.reader.view.message_in_view(), len(thread.messages) - 1)
        chosen = thread.messages[index]
        read_raw = self._raw_reader()

        def run(command: str) -> tuple[int, bytes, bool]:
            # lazy: the pipe runner loads on first use, not at start-up
            from mailtriage.application import run_pipe

            result = run_pipe(command, read_raw(chosen))
            return result.returncode, result.output, result.cut

        # lazy: dialogs are not on the first screen (tests/tui/test_startup_imports.py)
        from mailtriage.tui.dialogs.pipe import PipeDialog

        what = f"message {index + 1} of {len(thread.messages)}: {chosen.subject or '(no subject)'}"
        screen.app.push_screen(PipeDialog(what, run, cursor_blink=screen.shell.cursor_blink))

    #: The requests this component takes, each with its handler (the screen hands them on).
    TAKES = {
        ThreadView.HeadersRequested: on_thread_view_headers_requested,
        ThreadView.PipeRequested: on_thread_view_pipe_requested,
    }
