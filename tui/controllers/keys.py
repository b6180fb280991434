"""The reader's keys that open something beside the thread read: the keys mutt and aerc users
miss (issue 35 §4), full headers and raw source (``h``) and pipe to a command (``|``) (change
folder, ``c``, is the lists pane's: :meth:`FoldersPane.choose_by_name`); the attachments (``e``)
and the thread's archive URL (``u``, read on this component's worker: its answer comes here).

Each opens a dialog of its own module; none writes anything, and the pipe runs its
command only once the user confirmed it in the dialog. A component of the main screen
(issue 36 §2), a hidden widget: it takes these reader requests (the screen hands them on); the raw
source is read by the dialogs' own workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mailtriage.tui.controllers.component import Component
from mailtriage.tui.messages import ThreadUrlReady, UrlFailed
from mailtriage.tui.panes.reader import ThreadView
from mailtriage.tui.sanitize import inert

if TYPE_CHECKING:
    from mailtriage.tui.controllers.base import ControllerBase


class ReaderKeys(Component):
    """``h``, ``|``, ``e`` and ``u`` on the thread in the reading pane (hidden)."""

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

    # -- e: attachments -----------------------------------------------------------------
    def on_thread_view_attachments_requested(self, _message: ThreadView.AttachmentsRequested) -> None:
        """e: the attachments dialog for the open thread (or personal account's message)."""
        screen = self._screen
        reader = screen.reader
        thread = reader.thread
        if thread is None:
            return
        if not any(m.attachments for m in thread.messages):
            screen.notify("This thread has no attachments.", markup=False)
            return
        backend = reader.resolution.chosen if reader.resolution is not None else None
        try:
            attachments = screen.session.attachments(thread, backend=backend, account_id=reader.account_id)
        except Exception as exc:  # a backend that cannot read parts (declared), or none read it
            screen.shell.report_error("No attachments from this backend", exc, where="attachments")
            return
        command, folder = screen.session.attachment_settings()
        # lazy: dialogs are not on the first screen (tests/tui/test_startup_imports.py)
        from mailtriage.tui.dialogs.attachments import AttachmentsDialog

        screen.app.push_screen(AttachmentsDialog(
            attachments, screen.session, title=thread.subject or "(no subject)",
            report=lambda title, exc: screen.shell.report_error(title, exc, where="attachments"),
            command=command, folder=folder, cursor_blink=screen.shell.cursor_blink))

    # -- u: the thread URL ---------------------------------------------------------------
    def on_thread_view_url_requested(self, _message: ThreadView.UrlRequested) -> None:
        reader = self._screen.reader
        thread = reader.thread
        if thread is None:
            return
        if reader.account_id is not None:  # its ID names the account's folder, not an archive
            self._screen.notify("u gives a project thread's archive URL; a personal account's message has none.",
                                markup=False)
            return
        self._start(self._thread_url, thread.thread_id, group="url")

    def _thread_url(self, thread_id) -> None:
        screen = self._screen
        try:
            result = screen.session.thread_url(thread_id)
        except Exception as exc:
            self.post_message(UrlFailed(0, "No thread URL", exc, screen.resolve("thread_url")))
            return
        self.post_message(ThreadUrlReady(str(result.value), result.resolution))

    def on_thread_url_ready(self, message: ThreadUrlReady) -> None:
        message.stop()
        screen = self._screen
        text = inert(message.url)
        screen.reader.show_status(f"URL: {text} · via {message.resolution.summary()}")
        screen.app.copy_to_clipboard(message.url)
        screen.notify(f"{text}\n(copied to the clipboard; not opened)", title="Thread URL", markup=False)

    def on_url_failed(self, message: UrlFailed) -> None:
        message.stop()
        if self._screen.accept_failure(self.on_url_failed, message):
            self._screen.report_failure(message)

    #: The requests this component takes, each with its handler (the screen hands them on).
    TAKES = {
        ThreadView.HeadersRequested: on_thread_view_headers_requested,
        ThreadView.PipeRequested: on_thread_view_pipe_requested,
        ThreadView.AttachmentsRequested: on_thread_view_attachments_requested,
        ThreadView.UrlRequested: on_thread_view_url_requested,
    }
