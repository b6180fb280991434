"""Pilot flows on a real project: an mbox archive written by the stdlib, read by our mbox backend.

What the app shows after only listing or reading (the resolution, a thread read, the unsubscribe
targets, a mandatory backend down) is checked beside the snapshot of the same app and keys in
tests/tui/test_snapshots.py (one app start instead of two)."""

import hashlib

from textual.widgets import DataTable, Select, TextArea

from mailtriage.core.trace import OPLOG
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.screens.console import ConsoleScreen
from tests.tui.helpers import back_to_the_list, make_app, mbox_project, reader_text, screen_text, settle
from tests.tui.test_unconfigured_list import WARNING as UNCONFIGURED


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def row_texts(app) -> list[str]:
    tl = app.screen.query_one(ThreadList)
    return [tl.render_line(y).text for y in range(min(len(tl.rows), tl.scrollable_content_region.height))]


async def test_hostile_subject_renders_inert(tmp_path):
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        hostile = row_texts(app)[1]
        assert "\\x1b[31mURGENT\\x1b[0m [bold red]Security[/bold red] advisory ⟨U+202E⟩gpj.exe" in hostile
        await pilot.press("j", "enter")
        await settle(pilot)
        strips = app.screen._compositor.render_strips()
        text = "\n".join(s.text for s in strips)
        assert "\x1b" not in text and "\u202e" not in text and "\u200b" not in text
        assert "Subject: \\x1b[31mURGENT\\x1b[0m [bold red]Security[/bold red]" in text
        assert "[link=https://evil.invalid]Security Team[/link]⟨U+200B⟩" in text
        assert "\\x1b[2J\\x1b[HYour terminal has been [blink]compromised[/blink]." in text
        # Markup stayed text: no segment on screen carries a link, blink or a markup-made red.
        for strip in strips:
            for segment in strip:
                style = segment.style
                if style is not None and "[bold red]" in segment.text:
                    assert not style.blink and style.link is None


async def test_propose_reply_see_cc_warning_and_cancel_writes_nothing(tmp_path):
    # No security_list: the CC falls back to the ASF address, with the prominent warning.
    project = mbox_project(tmp_path / "p", security_list=None)
    before = digest(project / "list.mbox")
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        shown = screen_text(app)
        assert "CONFIGURATION WARNING: security_list is missing" in shown  # banner on the main screen
        assert "security_list is not configured" in shown  # the list read is skipped, not guessed
        # The whole warning, as the CLI says it, in the notification (not a crash): issue 30 §7 (was
        # tests/tui/test_unconfigured_list.py's
        # test_listing_without_a_list_shows_the_configuration_warning_and_lists_nothing).
        assert UNCONFIGURED in " ".join(shown.split())  # the thread pane's state
        said = [n.message for n in app._notifications if UNCONFIGURED in n.message]
        assert len(said) == 1 and "list_recent_threads skipped" in said[0]
        assert "--list security@frob.example" in said[0]  # what the archive holds
        assert len(app.screen.query_one(ThreadList).rows) == 0
        # The archive's own list can be opened from the lists pane.
        await pilot.press("2")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert len(app.screen.query_one(ThreadList).rows) == 3
        # r on the list, the thread not opened: the reply reads the thread first.
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("ctrl+s")  # the compose dialog: review the proposal
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ProposalDialog)
        shown = screen_text(app)
        assert "⚠ CONFIGURATION WARNING: security_list is missing; the security CC falls back to " \
               "security@apache.org" in shown
        assert "Cc: security@apache.org   ◀ security CC (fallback)" in shown
        assert "To: bob@example.net" in shown
        assert "Subject: Re: Question about 3.4 fixes" in shown
        assert "In-Reply-To: <question-1@example.net>" in shown
        assert "no backend available for create_draft" in shown
        assert "create_draft" in shown and "Backends (resolution)" in shown
        body = dialog.query_one(TextArea).text
        assert body.startswith("Hi Bob Builder,") and "\nTest Triager\n" in body
        assert not dialog.can_confirm  # no backend of this project writes drafts
        await pilot.press("ctrl+s")  # refused, says why: the dialog stays
        await settle(pilot)
        assert app.screen is dialog
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, ProposalDialog)
        assert any("nothing was written" in n.message for n in app._notifications)
    assert digest(project / "list.mbox") == before
    assert [r.op for r in OPLOG.items() if r.op == "create_draft"] == []


async def test_lost_archive_shows_reconnect_state_and_R_recovers(tmp_path):
    project = mbox_project(tmp_path / "p")
    archive = project / "list.mbox"
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        hidden = archive.rename(project / "gone.mbox")
        await pilot.press("enter")
        await settle(pilot)
        shown = screen_text(app)
        assert "press R to reconnect" in shown and "✗ mbox" in shown
        assert app.errors and "unavailable" in app.errors[-1].message
        hidden.rename(archive)
        await pilot.press("R")
        await settle(pilot)
        shown = screen_text(app)
        assert "✓ mbox" in shown and "3 threads · via" in shown
        await pilot.press("!")
        await pilot.pause()
        assert "Reading the thread failed" in screen_text(app)


async def backend_console_shows_ops_and_runs_one_by_hand(app, pilot) -> None:
    await pilot.press("enter")
    await settle(pilot)
    await pilot.press("b")
    await settle(pilot)
    console = app.screen
    assert isinstance(console, ConsoleScreen)
    matrix = console.query_one("#matrix", DataTable)
    assert [str(c) for c in matrix.get_row("mbox")][:4] == ["mbox", "mbox", "primary", "no"]
    await pilot.press("f3")
    oplog = console.query_one("#oplog", DataTable)
    ops = [[str(c) for c in oplog.get_row_at(i)] for i in range(oplog.row_count)]
    # columns: #, time, by (you / poller / overview), backend, op, ms, size, error
    assert [(r[3], r[4], r[6]) for r in ops if r[2] == "you"] == [("mbox", "list_recent_threads", "3"),
                                                                  ("mbox", "read_thread", "1")]
    # Run read_thread by hand on the named backend.
    await pilot.press("f5")
    console.query_one("#run-op", Select).value = "read_thread"
    console.query_one("#run-backend", Select).value = "mbox"
    console.query_one("#run-thread").value = "mbox:<question-1@example.net>"
    await pilot.press("ctrl+r")
    await settle(pilot)
    result = console.query_one("#run-result", TextArea).text
    assert '"op": "read_thread"' in result and '"backend": "mbox"' in result
    assert "Will 3.4 get the fix?" in result
    assert oplog.row_count == 3  # the op run by hand is logged live


async def search_runs_on_the_backend_and_esc_restores_the_list(app, pilot) -> None:
    # / searches where the mail is (issue 14 §4; tests/tui/test_search.py has the rest): each
    # matching message, newest first, and the status names the backend that answered.
    await pilot.press("slash", *"overflow", "enter")
    await settle(pilot)
    rows = app.screen.query_one(ThreadList).rows
    assert len(rows) == 2 and "2 matches for 'overflow'" in screen_text(app) and "via mbox" in screen_text(app)
    await pilot.press("escape")
    await pilot.pause()
    assert len(app.screen.query_one(ThreadList).rows) == 3


async def every_bound_action_is_in_the_command_palette(app, pilot) -> None:
    from mailtriage.tui import bindings
    from mailtriage.tui.commands import SKIP_ACTIONS, MailtriageCommands

    await pilot.press("slash", "escape")  # the search box is mounted with the first search
    await settle(pilot)
    provider = MailtriageCommands(app.screen)
    titles = {title for title, _, _ in provider._commands()}
    main_contexts = [c for c in bindings.CONTEXTS if c.screen in (None, "MainScreen")]
    expected = {f"{c.title}: {b.description}" for c in main_contexts for b in c.bindings
                if b.action not in SKIP_ACTIONS}
    assert expected <= titles
    assert "Theme: mailtriage-high-contrast" in titles
    # And a command runs its action: the backend console opens.
    await pilot.press("ctrl+p", *"backends", "enter")
    await settle(pilot)
    assert isinstance(app.screen, ConsoleScreen)


async def test_the_console_search_and_palette_on_one_app(tmp_path):
    """Three tests, one app each, on one app (issue 36 §7): the console first (it counts the
    operations since the start), then the search and the palette, each from the list with the
    focus on it (``back_to_the_list`` asserts it). A failure's traceback names the check."""
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        await backend_console_shows_ops_and_runs_one_by_hand(app, pilot)
        await back_to_the_list(pilot)
        await search_runs_on_the_backend_and_esc_restores_the_list(app, pilot)
        await back_to_the_list(pilot)
        await every_bound_action_is_in_the_command_palette(app, pilot)


async def test_html_mail_is_shown_as_text_and_nothing_remote_is_fetched(tmp_path):
    import threading
    from email.message import EmailMessage
    from email.policy import default
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    requests = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            requests.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    remote = f"http://127.0.0.1:{server.server_address[1]}"
    html = EmailMessage(policy=default)
    html["From"] = "Zoë Reporter <zoe@example.com>"
    html["To"] = "security@frob.example"
    html["Subject"] = "Reflected XSS in /console/search"
    html["Date"] = "Tue, 03 Nov 2026 10:00:00 +0000"
    html["Message-ID"] = "<xss-1@example.com>"
    html["List-Unsubscribe"] = f"<{remote}/unsubscribe>"
    html.set_content("<html><body><p>The <b>q</b> parameter is reflected:</p>"
                     "<table><tr><td>payload</td><td>&lt;script&gt;alert(1)&lt;/script&gt;</td></tr></table>"
                     f"<img src='{remote}/pixel.gif'><link rel='stylesheet' href='{remote}/style.css'>"
                     "</body></html>", subtype="html")
    try:
        app = make_app(mbox_project(tmp_path / "p", messages=[html]))
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            await pilot.press("enter")
            await settle(pilot)
            text = reader_text(app)
            assert "[HTML shown as text]" in text
            assert "<script>alert(1)</script>" in text  # the page's markup is text here
            assert "<html>" not in text and "<table>" not in text
            assert f"{remote}/unsubscribe  (shown, never fetched)" in text
            await pilot.press("r")  # a reply proposal reads the thread again: still nothing fetched
            await settle(pilot)
            await pilot.press("ctrl+s")  # the compose dialog: review the proposal
            await settle(pilot)
    finally:
        server.shutdown()
        server.server_close()
    assert requests == []


