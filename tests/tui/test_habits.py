"""Habits of mutt and aerc users (issue 14 §5) and the triage overview (§6), driven as a user would.

Real mbox archives written by the stdlib, a real local-files tracker in a git repository,
real Textual pilots: nothing of ours is mocked.
"""

from __future__ import annotations

from textual.widgets import Static

from mailtriage.application import MailFolder
from mailtriage.tui.dialogs.proposal import ProposalBody, ProposalDialog
from mailtriage.tui.dialogs.quit import QuitDialog
from mailtriage.tui.panes.folders import folder_paths
from mailtriage.tui.panes.reader import ThreadView
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.panes.tracker import TrackerList
from tests.tui.helpers import make_app, mbox_project, screen_text, settle, until
from tests.tui.test_tracker_flows import git, project_with_tracker


async def marks_ready(pilot) -> None:
    """Wait (the shared bound) until every row on screen has its overview mark."""
    from mailtriage.tui.mailbox_rows import MailboxRow

    main = pilot.app.main

    def marked() -> bool:
        rows = main.query_one(ThreadList).visible_rows()
        return bool(rows) and all(isinstance(r, MailboxRow) or r.thread_id in main.threads.marks.statuses
                                  for r in rows)

    await until(pilot, marked, "the overview marks")
    await settle(pilot)


def row_texts(app) -> list[str]:
    tl = app.screen.query_one(ThreadList)
    return [tl.render_line(y).text for y in range(min(len(tl.rows), tl.scrollable_content_region.height))]


# -- q ----------------------------------------------------------------------------------------

async def test_q_in_the_reading_pane_goes_back_to_the_list_and_quits_at_the_top(tmp_path):
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        # The reading pane by Enter (issue 35: the focus goes into the message), by its key and
        # by Tab from the list.
        for reach in ("enter", "4", "tab"):
            await pilot.press(reach)
            await settle(pilot)
            assert isinstance(app.focused, ThreadView)
            await pilot.press("q")
            await settle(pilot)
            assert isinstance(app.focused, ThreadList) and app.return_code is None
        # Esc goes back too (was tests/tui/test_reader_focus.py's
        # test_enter_moves_focus_into_the_reader_and_q_goes_back_without_quitting, an app of its own).
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.focused, ThreadList) and app.return_code is None
        await pilot.press("q")  # the top level, nothing pending: quits at once
        assert app.return_code == 0


async def test_q_with_a_proposal_open_asks_first_and_n_stays(tmp_path):
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("ctrl+s")  # the compose dialog: on to the proposal
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.screen, QuitDialog)
        assert "a proposal is open and not confirmed" in screen_text(app)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog) and app.return_code is None
        await pilot.press("q")
        await settle(pilot)
        await pilot.press("y")
        assert app.return_code == 0


async def test_ctrl_q_quits_without_asking(tmp_path):
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert app.return_code is None
        await pilot.press("ctrl+q")
        assert app.return_code == 0


# -- the proposal dialog ----------------------------------------------------------------------

LONG_BODY = "\n".join(f"line {n} of a long report" for n in range(200))


async def test_proposal_opens_on_its_content_scrolls_by_key_and_keeps_the_cc_pinned(tmp_path):
    from tests.tui.helpers import mail

    messages = [mail("Long report", "Ana Reporter <ana@example.com>", "Thu, 01 Oct 2026 09:00:00 +0000",
                     "<long-1@example.com>", LONG_BODY)]
    app = make_app(mbox_project(tmp_path / "p", messages=messages))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("ctrl+s")  # the compose dialog: on to the proposal
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ProposalDialog)
        body = dialog.query_one(ProposalBody)
        assert app.focused is body
        pinned = str(dialog.query_one("#proposal-summary", Static).render())
        assert "security@frob.example" in pinned and "security CC" in pinned
        assert body.scroll_y == 0
        await pilot.press("j", "j")
        await settle(pilot)
        assert body.scroll_y == 2
        await pilot.press("G")
        await settle(pilot)
        assert body.scroll_y == body.max_scroll_y > 2
        # Scrolled to the bottom, the security CC is still on screen, in the pin.
        assert "◀ security CC" in screen_text(app).split("Confirm and write")[0].split("\n", 3)[3][:2000]
        await pilot.press("g")
        await settle(pilot)
        assert body.scroll_y == 0
        await pilot.press("space")
        await settle(pilot)
        assert body.scroll_y > 2
        await pilot.press("pageup")
        await settle(pilot)
        assert body.scroll_y == 0


# -- 80 columns -----------------------------------------------------------------------------------

async def tracker_pane_at_80_columns_folds_instead_of_squeezing_the_subjects(app, pilot) -> None:
    subject = "Question about 3.4 fixes"
    assert subject in "\n".join(row_texts(app))
    await pilot.press("t")
    await settle(pilot)
    tracker_list = app.screen.query_one(TrackerList)
    assert app.focused is tracker_list and tracker_list.region.width > 60  # the pane has the body
    await pilot.press("3")  # back to the threads: the tracker folds away, still open
    await settle(pilot)
    assert isinstance(app.focused, ThreadList) and app.screen.has_class("-tracker")
    assert subject in screen_text(app) and tracker_list.region.width == 0
    await pilot.press("5")
    await settle(pilot)
    assert app.focused is tracker_list and tracker_list.region.width > 60
    await pilot.press("t")  # closed
    await settle(pilot)
    assert not app.screen.has_class("-tracker") and isinstance(app.focused, ThreadList)


async def q_in_a_side_pane_goes_back_to_the_list_and_the_footer_says_so(app, pilot) -> None:
    """Issue 35 (habits8 §2): q goes back from every pane but the list, as in the reader: from
    the tracker (the whole body at 80x24), the Sources and the Lists panes it returns the focus
    to the thread list (the tracker folds away); q in the list quits."""
    from mailtriage.tui.footer import KeyFooter
    from mailtriage.tui.panes.folders import FolderList
    from mailtriage.tui.panes.sources import SourceList

    for reach, pane in (("t", TrackerList), ("1", SourceList), ("2", FolderList), ("5", TrackerList)):
        await pilot.press(reach)
        await settle(pilot)
        assert isinstance(app.focused, pane)
        footer = [(k.key, k.description) for k in app.query_one(KeyFooter).shown()]
        assert footer[0] == ("q", "Back to list"), footer
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.focused, ThreadList) and app.return_code is None
        assert app.screen.query_one(TrackerList).region.width == 0  # folded (or closed)
    await pilot.press("q")
    assert app.return_code == 0


async def test_the_tracker_pane_at_80_columns_and_q_in_the_side_panes(tmp_path):
    """Two tests, one app each, on one app (issue 36 §7): the fold check ends with the tracker
    closed and the list focused (asserted), where the q check starts; the q check ends by quitting."""
    app = make_app(project_with_tracker(tmp_path / "p"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await tracker_pane_at_80_columns_folds_instead_of_squeezing_the_subjects(app, pilot)
        await q_in_a_side_pane_goes_back_to_the_list_and_the_footer_says_so(app, pilot)


async def test_tracker_pane_at_100_columns_folds_the_sidebar_before_squeezing_the_subjects(tmp_path):
    # Wide but not wide enough for sidebar (34) + tracker (46) + a list: the list was 18 columns.
    app = make_app(project_with_tracker(tmp_path / "p"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        thread_list, sidebar = app.screen.query_one(ThreadList), app.screen.query_one("#sidebar")
        await pilot.press("t")
        await settle(pilot)
        tracker_list = app.screen.query_one(TrackerList)
        assert app.focused is tracker_list and tracker_list.region.width > 40
        assert thread_list.region.width >= 50 and sidebar.region.width == 0
        await pilot.press("3")  # the threads beside the open tracker
        await settle(pilot)
        assert isinstance(app.focused, ThreadList) and thread_list.region.width >= 50
        assert tracker_list.region.width > 40 and "Question about 3.4 fixes" in screen_text(app)
        await pilot.press("1")  # the sidebar comes back while it has the focus; the tracker folds, still open
        await settle(pilot)
        assert sidebar.region.width > 0 and thread_list.region.width >= 50 and tracker_list.region.width == 0
        await pilot.press("5")
        await settle(pilot)
        assert app.focused is tracker_list and tracker_list.region.width > 40 and sidebar.region.width == 0
    app = make_app(tmp_path / "p")
    async with app.run_test(size=(160, 40)) as pilot:  # room for all: nothing folds
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        widths = [app.screen.query_one(q).region.width for q in ("#sidebar", ThreadList, TrackerList)]
        assert all(width > 30 for width in widths), widths

# -- dates, folders, the banner ------------------------------------------------------------------

def test_folder_list_puts_the_inbox_first_with_full_paths():
    folders = [MailFolder("Lists/dev", "dev", "Lists", None, 0, 3), MailFolder("Archive", "Archive", None, "archive", 0, 1),
               MailFolder("Lists", "Lists", None, None, 0, 0, selectable=False),
               MailFolder("INBOX", "INBOX", None, "inbox", 2, 9), MailFolder("Lists/dev/old", "old", "Lists/dev", None, 0, 1)]
    assert [path for _folder, path in folder_paths(folders)] == [
        "INBOX", "Archive", "Lists", "Lists/dev", "Lists/dev/old"]


async def test_run_aborted_banner_clears_once_the_backend_recovers(tmp_path):
    project = mbox_project(tmp_path / "p")
    project_md = project / "project.md"
    project_md.write_text(project_md.read_text().replace("| `mbox` | primary | no |", "| `mbox` | primary | yes |"))
    archive = project / "list.mbox"
    hidden = archive.rename(project / "gone.mbox")
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert "run aborted" in screen_text(app)
        hidden.rename(archive)
        await pilot.press("R")
        await settle(pilot)
        shown = screen_text(app)
        assert "run aborted" not in shown and "⛔" not in shown
        assert "Heap overflow in the frob parser" in shown


# -- the triage overview -----------------------------------------------------------------------

async def test_filed_mark_jump_between_thread_and_issue_and_unpublished_changes(tmp_path):
    project = project_with_tracker(tmp_path / "p")
    app = make_app(project)
    async with app.run_test(size=(140, 50)) as pilot:
        await settle(pilot)
        assert "SEC-0001" not in "\n".join(row_texts(app))
        await pilot.press("G", "i")  # import the heap overflow report
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        # The publish review: who commits is pinned above the content, the file summary above the diff.
        assert isinstance(app.screen, ProposalDialog) and "Publish the tracker changes" in screen_text(app)
        pinned = str(app.screen.query_one("#proposal-summary", Static).render())
        assert "Commits as: " in pinned
        labels = [f.label for f in app.screen.proposal.writes[0].fields]
        assert labels[labels.index("Diff") - 1] == "Summary"
        await pilot.press("escape")  # the publish review: not now
        await settle(pilot)
        await marks_ready(pilot)  # the marks wait for the cursor to rest
        heap = next(r for r in row_texts(app) if "Heap overflow" in r)
        assert "SEC-0001" in heap
        assert "filed as SEC-0001" in screen_text(app)  # the cursor row, in words
        assert "tracker changes to publish" in app.sub_title  # the title says so
        # s: from the thread to its issue …
        await pilot.press("s")
        await settle(pilot)
        tracker_list = app.screen.query_one(TrackerList)
        assert app.focused is tracker_list
        assert tracker_list.get_option_at_index(tracker_list.highlighted).id == "issue:SEC-0001"
        assert "Heap overflow in the frob parser" in str(app.screen.query_one("#issue-detail").render())
        # … and back.
        await pilot.press("g", "s")
        await settle(pilot)
        assert isinstance(app.focused, ThreadList)
        assert "Heap overflow" in app.screen.query_one(ThreadList).current.subject
        assert app.screen.reader.thread is not None and "Heap overflow" in app.screen.reader.thread.subject
        # q: the unpublished change is pending, so it asks.
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.screen, QuitDialog)
        assert "local tracker changes are not published" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert app.return_code is None and not isinstance(app.screen, QuitDialog)
    assert "SEC-0001.md" in git(project, "status", "--porcelain")


# -- the backend console ------------------------------------------------------------------------

def test_trace_lines_filter_and_fold_keepalive_runs():
    from mailtriage.core.trace import TraceLine
    from mailtriage.tui.screens.console import trace_lines

    lines = [TraceLine("imap:work", ">", "A1 SELECT INBOX", 0.0)]
    for n in range(12):
        lines += [TraceLine("imap:work", ">", f"A{n + 2} IDLE", 1.0 + n), TraceLine("imap:work", "<", "+ idling", 1.0 + n),
                  TraceLine("imap:work", ">", "DONE", 2.0 + n), TraceLine("imap:work", "<", f"A{n + 2} OK Idle completed.", 2.0 + n)]
    lines += [TraceLine("imap:work", "<", "* 4 EXISTS", 20.0), TraceLine("http:gh", ">", "GET /repos/x", 21.0)]
    shown = trace_lines(lines)
    assert len(shown) == 4 and "SELECT INBOX" in shown[0] and "… 48 keep-alive lines" in shown[1]
    assert "* 4 EXISTS" in shown[2]  # news is never folded
    assert [s for s in trace_lines(lines, "GET") if "GET" in s] == trace_lines(lines, "get")
    assert len(trace_lines(lines, "http")) == 1
    # One keep-alive line alone is shown as it is.
    assert "A1 NOOP" in trace_lines([TraceLine("imap:work", ">", "A1 NOOP", 0.0)])[0]


async def test_console_op_log_has_time_and_caller_and_the_trace_is_kept_from_start_up(tmp_path):
    from textual.widgets import DataTable, Input, Log

    from mailtriage.core.trace import OPLOG, TRACE

    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert TRACE.enabled  # recording from start-up, before the console ever opened
        TRACE.log("imap:work", ">", "A1 LOGIN ana secret-password")
        for n in range(5):
            TRACE.log("imap:work", ">", f"A{n + 2} NOOP")
            TRACE.log("imap:work", "<", f"A{n + 2} OK NOOP completed (0.001 + 0.000 secs).")
        await pilot.press("b", "f3")
        await settle(pilot)
        table = app.screen.query_one("#oplog", DataTable)
        assert table.row_count == len(OPLOG.items()) > 0
        first = [str(c) for c in table.get_row_at(0)]
        assert first[1].count(":") == 2 and first[2] == "you" and first[4] == "list_recent_threads"
        await pilot.press("f4")
        await settle(pilot)
        log = app.screen.query_one("#trace-log", Log)
        text = "\n".join(log.lines)
        assert "LOGIN ana [REDACTED]" in text and "secret-password" not in text
        assert "… 10 keep-alive lines" in text and "NOOP completed" not in text
        app.screen.query_one("#trace-filter", Input).value = "LOGIN"
        await settle(pilot)
        assert "\n".join(log.lines).count("\n") == 0 and "LOGIN" in log.lines[0]


async def test_the_pollers_operations_are_marked_as_the_pollers(tmp_path):
    from mailtriage.core.trace import OPLOG

    folder = tmp_path / "p"
    mbox_project(folder, extra_config={"alerts": {"poll_seconds": 3600}})
    app = make_app(folder, alerts=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: any(r.caller == "poller" for r in OPLOG.items()), "the poller's operations")
        callers = {r.caller for r in OPLOG.items()}
        assert "poller" in callers and "you" in callers


