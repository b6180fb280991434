"""Row sources of the thread list, and the binding registry."""

import threading
from datetime import datetime, timezone

from textual.binding import Binding

from mailtriage.backends.contract import Address, ThreadId, ThreadSummary
from mailtriage.tui import bindings
from mailtriage.tui.rows import FilteredRows, ListRows, PagedRows, rows_for


def summary(i: int) -> ThreadSummary:
    return ThreadSummary(ThreadId("test", f"<{i}@x>"), f"subject {i}" + (" needle" if i % 10 == 0 else ""),
                         f"<{i}@x>", Address(f"Person {i}", f"p{i}@example.org"),
                         datetime(2026, 1, 1, tzinfo=timezone.utc), 1)


def test_list_rows_search_reports_progress_and_honours_cancel():
    rows = ListRows([summary(i) for i in range(12000)])
    progress = []
    found = rows.matches("NEEDLE", lambda: False, lambda done, total: progress.append((done, total)))
    assert found == list(range(0, 12000, 10))
    assert progress[-1] == (12000, 12000) and len(progress) == 3
    assert rows.matches("needle", lambda: True, lambda d, t: None) is None


def test_paged_rows_fetch_only_what_is_asked():
    calls = []

    def loader(offset, limit):
        calls.append((offset, limit))
        return [summary(i) for i in range(offset, offset + limit)]

    rows = PagedRows(1000, loader, page_size=100)
    assert len(rows) == 1000 and rows.peek(250) is None
    pages = rows.missing_pages(240, 260)
    assert pages == [2]
    assert rows.missing_pages(240, 260) == []  # claimed: not asked twice
    rows.fetch_page(2)
    assert rows.peek(251).subject == "subject 251"
    assert calls == [(200, 100)]
    assert rows.missing_pages(950, 2000) == [9]
    rows.fetch_page(9)
    assert calls[-1] == (900, 100)


def test_paged_rows_failure_is_recorded_and_retried():
    fail = threading.Event()
    fail.set()

    def loader(offset, limit):
        if fail.is_set():
            raise OSError("connection reset")
        return [summary(i) for i in range(offset, offset + limit)]

    rows = PagedRows(10, loader, page_size=5)
    assert rows.missing_pages(0, 5) == [0]
    try:
        rows.fetch_page(0)
    except OSError:
        pass
    assert "connection reset" in rows.errors[0]
    fail.clear()
    assert rows.missing_pages(0, 5) == [0]  # the failed page is asked again
    rows.fetch_page(0)
    assert rows.peek(0) is not None and 0 not in rows.errors


def test_filtered_rows_and_rows_for():
    base = ListRows([summary(i) for i in range(30)])
    view = FilteredRows(base, [3, 20], "x")
    assert len(view) == 2 and view.peek(1).subject.startswith("subject 20") and view.peek(2) is None

    class Lazy:
        def __len__(self):
            return 7

        def fetch_page(self, offset, limit):
            return [summary(i) for i in range(offset, offset + limit)]

    assert isinstance(rows_for(Lazy()), PagedRows)
    assert isinstance(rows_for([summary(1)]), ListRows)


def test_every_binding_has_a_unique_id_and_a_description():
    ids = [b.id for b in bindings.all_bindings()]
    assert all(ids) and len(ids) == len(set(ids))
    assert all(isinstance(b, Binding) and b.description for b in bindings.all_bindings())


def test_classes_use_the_registry_lists():
    # The help screen lists CONTEXTS; every class must bind exactly what CONTEXTS shows.
    from mailtriage.tui.app import MailTriageApp
    from mailtriage.tui.dialogs.attachments import AttachmentsDialog
    from mailtriage.tui.dialogs.clear_reply import ClearReplyDialog
    from mailtriage.tui.dialogs.compose import ComposeDialog
    from mailtriage.tui.dialogs.error import ErrorDialog
    from mailtriage.tui.dialogs.folder_picker import FolderPicker
    from mailtriage.tui.dialogs.passphrase import PassphraseDialog
    from mailtriage.tui.dialogs.proposal import ProposalBody, ProposalDialog
    from mailtriage.tui.dialogs.quit import QuitDialog
    from mailtriage.tui.panes.folders import FolderList
    from mailtriage.tui.panes.reader import ThreadView
    from mailtriage.tui.panes.sources import SourceList
    from mailtriage.tui.panes.thread_list import ThreadList
    from mailtriage.tui.panes.threads import SearchBox
    from mailtriage.tui.panes.tracker import TrackerList
    from mailtriage.tui.screens.console import ConsoleScreen
    from mailtriage.tui.screens.first_run import FirstRunScreen
    from mailtriage.tui.screens.help import HelpScreen
    from mailtriage.tui.screens.main import MainScreen

    classes = {c.__name__: c for c in (MailTriageApp, MainScreen, ThreadList, SearchBox, ThreadView, SourceList,
                                       FolderList, TrackerList, ConsoleScreen, HelpScreen, ProposalDialog,
                                       ComposeDialog, ErrorDialog, FirstRunScreen, AttachmentsDialog, FolderPicker,
                                       ClearReplyDialog, PassphraseDialog)}
    classes |= {c.__name__: c for c in (ProposalBody, QuitDialog)}  # habits: proposal scrolling, quit
    from mailtriage.tui.dialogs.folder_jump import FolderJump
    from mailtriage.tui.dialogs.headers import HeadersDialog
    from mailtriage.tui.dialogs.pipe import PipeDialog

    classes |= {c.__name__: c for c in (FolderJump, HeadersDialog, PipeDialog)}  # issue 35: c, h and |
    from mailtriage.tui.screens.queue import QueueScreen

    classes[QueueScreen.__name__] = QueueScreen  # issue 37: Q
    from mailtriage.tui.panes.tracker import IssueView

    classes[IssueView.__name__] = IssueView  # habits9: the tracker's issue, scrolled from the keyboard
    for context in bindings.CONTEXTS:
        owner = context.target if context.target not in ("app", "screen") else (context.screen or "MailTriageApp")
        assert classes[owner].BINDINGS is context.bindings, context.title


def test_validate_keymap():
    good, problems = bindings.validate_keymap({"threads.down": "n,down", "no.such": "x", "threads.up": " "})
    assert good == {"threads.down": "n,down"}
    assert any("no.such" in p for p in problems) and any("threads.up" in p for p in problems)
    down = next(b for b in bindings.THREAD_LIST if b.id == "threads.down")
    assert bindings.effective_keys(down, good) == ["n", "down"]
    assert bindings.effective_keys(down, {}) == ["j", "down"]


def test_docs_list_every_binding():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "tui.md").read_text(encoding="utf-8")
    embedded = doc.split("<!-- keys:start -->\n", 1)[1].split("<!-- keys:end -->", 1)[0]
    assert embedded == bindings.markdown_table(), "regenerate with: python -m mailtriage.tui.bindings"
