"""Keys offered that do nothing, keys missing where the other lists have them, found by
keystroke on the demo (issue 35 §6, habits9): every list moves with j k g G (mutt's and aerc's
habit), a key that only refuses is not offered, an empty proposal is said in a toast rather than
a dialog with nothing to confirm, and the dialogs' words name the keys they take."""

from __future__ import annotations

from datetime import datetime, timezone

from textual.app import App, ComposeResult

from mailtriage.application import Address, ThreadId, ThreadSummary, project_dir
from mailtriage.tui import bindings
from mailtriage.tui.footer import KeyFooter
from mailtriage.tui.mailbox_rows import MAILBOX_KIND, MailboxRow
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.rows import ListRows
from tests.tui.helpers import back_to_the_list, make_app, screen_text, settle

WHEN = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)


def demo_app(demo_dir):
    """The demo app on a copy of the worker's demo template (tests/tui/conftest.py's ``demo_dir``:
    built once a worker, not once a test)."""
    return make_app(project_dir(demo_session=True), demo=True)


def footer_words(app) -> list[str]:
    return [key.description for footer in app.screen.query(KeyFooter) for key in footer.shown()]


def said(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


class ListHost(App):
    def __init__(self, rows, *, searched: bool = False) -> None:
        super().__init__()
        self.rows = rows
        self.searched = searched  # the rows are a search's result

    def compose(self) -> ComposeResult:
        yield ThreadList()
        yield KeyFooter()

    def on_mount(self) -> None:
        thread_list = self.query_one(ThreadList)
        thread_list.set_rows(ListRows(self.rows), filtered=self.searched)
        thread_list.focus()


def row(i: int, *, personal: bool) -> ThreadSummary:
    sender = Address(f"Sender {i}", f"s{i}@example.org")
    if personal:
        return MailboxRow(ThreadId(MAILBOX_KIND, f"m{i}"), f"Message {i}", f"<m{i}@x>", sender, WHEN, 1,
                          account_id="work")
    return ThreadSummary(ThreadId("msgid", f"<t{i}@x>"), f"Report {i}", f"<t{i}@x>", sender, WHEN, 1)


async def test_import_is_not_offered_on_a_personal_accounts_messages():
    """i refuses a personal account's message (a toast says why: tests/tui/test_demo_walk.py);
    a key that only refuses is not offered in the footer. On a project list's threads it is."""
    for personal in (False, True):
        app = ListHost([row(i, personal=personal) for i in range(3)])
        async with app.run_test(size=(100, 10)) as pilot:
            await pilot.pause()
            await pilot.pause()
            words = footer_words(app)
            assert "Open" in words and "Reply" in words, words
            assert ("Import to tracker" in words) is not personal, (personal, words)


#: The lists of the app: each moves down, up, to its first and to its last row with j k g G.
# (not the move and change-folder pickers: letters type into their filter there, the arrows move)
LISTS = {"Thread list": bindings.THREAD_LIST, "Sources pane": bindings.SOURCES, "Lists pane": bindings.FOLDERS,
         "Tracker pane": bindings.TRACKER, "Triage queue": bindings.QUEUE}


def test_every_list_moves_with_the_same_keys():
    for title, group in LISTS.items():
        keys = {key.strip() for binding in group for key in binding.key.split(",")}
        missing = [key for key in ("j", "k", "g", "G", "down", "up", "home", "end") if key not in keys]
        assert not missing, f"{title} has no {missing}"


async def _g_and_G_reach_both_ends(app, pilot, pane_key: str, pane_list) -> None:
    """The pane ``pane_key`` focuses: G goes to its last row (there is more than one), g back to its first."""
    await pilot.press(pane_key, "G")
    await settle(pilot)
    rows = app.screen.query_one(pane_list)
    assert rows.highlighted == rows.option_count - 1 > 0
    await pilot.press("g")
    await settle(pilot)
    assert rows.highlighted == 0


async def g_and_G_go_to_the_first_and_last_row_of_the_sources_tracker_and_queue(app, pilot) -> None:
    from mailtriage.tui.panes.sources import SourceList
    from mailtriage.tui.panes.tracker import TrackerList
    from mailtriage.tui.screens.queue import QueueScreen, QueueTable

    await settle(pilot)
    await _g_and_G_reach_both_ends(app, pilot, "1", SourceList)
    await pilot.press("t")
    await settle(pilot)
    await _g_and_G_reach_both_ends(app, pilot, "5", TrackerList)

    await pilot.press("Q")
    await settle(pilot)
    assert isinstance(app.screen, QueueScreen)
    table = app.screen.query_one(QueueTable)
    await pilot.press("G")
    await settle(pilot)
    assert table.cursor_row == table.row_count - 1 > 0
    await pilot.press("g")
    await settle(pilot)
    assert table.cursor_row == 0


async def f1_on_the_help_screen_closes_it_as_question_mark_does(app, pilot) -> None:
    """The help screen's footer offered "? Help" for F1 (the app's key), which did nothing there."""
    from mailtriage.tui.screens.help import HelpScreen

    await settle(pilot)
    for key in ("question_mark", "f1"):
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        assert "Help" not in [k.description for k in app.screen.query("FooterKey")]  # Textual's Footer
        await pilot.press(key)
        await settle(pilot)
        assert not isinstance(app.screen, HelpScreen), key


async def open_demo_inbox(app, pilot) -> None:
    from tests.tui.test_demo_walk import open_demo_inbox as walk

    await walk(app, pilot)


def dialog_footer(app) -> list[str]:
    """The keys Textual's own Footer shows (the small dialogs use it)."""
    return [key.description for key in app.screen.query("FooterKey")]


async def the_move_picker_narrows_as_typed_and_enter_moves_there(app, pilot) -> None:
    from mailtriage.tui.dialogs.folder_picker import FolderPicker
    from mailtriage.tui.dialogs.proposal import ProposalDialog
    from textual.widgets import OptionList

    # on the demo's INBOX, the cursor on its first message (the test puts it there)
    await pilot.press("M")
    await settle(pilot)
    assert isinstance(app.screen, FolderPicker)
    assert "Move here" in dialog_footer(app)
    folders = app.screen.query_one(OptionList)
    assert folders.highlighted == 1  # INBOX (the message is there) cannot be picked: Archive
    for key, index in (("down", 2), ("up", 1)):
        await pilot.press(key)
        await settle(pilot)
        assert folders.highlighted == index, key
    await pilot.press(*"dra")  # letters narrow (the change-folder picker's filter): Drafts only
    await settle(pilot)
    assert folders.option_count == 1 and folders.highlighted == 0
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(app.screen, ProposalDialog)
    assert "Drafts" in screen_text(app)


async def an_empty_proposal_says_why_in_a_toast_and_opens_no_dialog(app, pilot) -> None:
    """K on a thread that offers no key, P with nothing to publish: a dialog titled with the
    action said "Nothing to write." beside a disabled Confirm button; now a toast says why."""
    from mailtriage.tui.dialogs.proposal import ProposalDialog

    await settle(pilot)
    await pilot.press("enter")  # the newest project thread, in the reader
    await settle(pilot)
    for keys, why in ((("K",), "no message of this thread offers a key"),
                      (("q", "P"), "nothing to publish: the tracker has no pending changes")):
        app.clear_notifications()
        await pilot.press(*keys)
        await settle(pilot)
        assert not isinstance(app.screen, ProposalDialog), keys
        assert any(why in s for s in said(app)), (keys, said(app))


async def the_attachments_dialog_offers_its_view_keys_once_something_is_viewed(app, pilot) -> None:
    """x and [ ] were offered before anything was viewed and did nothing; the status line said
    "e/Enter view" where e does nothing in the dialog (v and Enter view)."""
    from mailtriage.tui.dialogs.attachments import AttachmentsDialog

    # on the demo's INBOX, the cursor on its first message (the test puts it there)
    await pilot.press("enter")  # the rota message, with its one attachment
    await settle(pilot)
    await pilot.press("e")
    await settle(pilot)
    assert isinstance(app.screen, AttachmentsDialog)
    shown = screen_text(app)
    assert "Enter/v view" in shown and "e/Enter" not in shown
    words = dialog_footer(app)
    assert "View" in words and "Hex / text" not in words and "Next page" not in words, words
    await pilot.press("v")
    await settle(pilot)
    words = dialog_footer(app)
    assert "Hex / text" in words, words
    assert "Next page" not in words and "Previous page" not in words, words  # 108 bytes: one page


async def test_n_and_N_are_not_offered_when_a_search_matched_nothing():
    """0 of 42 matched: the footer offered n / N (next and previous match), which moved nothing."""
    for count in (0, 2):
        app = ListHost([row(i, personal=False) for i in range(count)], searched=True)
        async with app.run_test(size=(100, 10)) as pilot:
            await pilot.pause()
            await pilot.pause()
            actions = [key.action for key in app.query_one(KeyFooter).shown()]  # the words shorten when narrow
            assert "clear_search" in actions, actions
            assert ("next_match" in actions) is bool(count), (count, actions)
            assert ("previous_match" in actions) is bool(count), (count, actions)


async def test_the_issue_view_scrolls_as_the_reader_does_and_q_goes_back_to_the_issues(demo_dir):
    """Tab from the tracker's issues reaches the issue's fields and rollup: j k g G did nothing
    there and q quit the app (every other pane's q goes back); the footer offered only Quit."""
    from textual.containers import VerticalScroll

    from mailtriage.tui.panes.tracker import TrackerList

    app = demo_app(demo_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        await pilot.press("5", "enter")  # the newest issue's fields and rollup
        await settle(pilot)
        await pilot.press("tab")
        await settle(pilot)
        view = app.screen.query_one("#issue-view", VerticalScroll)
        assert app.focused is view
        assert "Back to the issues" in footer_words(app), footer_words(app)
        assert view.max_scroll_y > 2  # 80x24: the issue is longer than the view
        for key, where in (("j", 1), ("G", view.max_scroll_y), ("k", view.max_scroll_y - 1), ("g", 0)):
            await pilot.press(key)
            await settle(pilot)
            assert view.scroll_y == where, key
        await pilot.press("q")
        await settle(pilot)
        assert app.is_running and isinstance(app.focused, TrackerList)


async def full_headers_scroll_with_the_readers_keys(app, pilot) -> None:
    """h on a thread of four messages: their headers run past the dialog, and j k space g G did
    nothing there (only the arrows scrolled): a triager reads the third message's Received lines."""
    from textual.containers import VerticalScroll

    from mailtriage.tui.dialogs.headers import HeadersDialog

    await settle(pilot)
    await pilot.press("enter")  # the newest thread: four messages
    await settle(pilot)
    await pilot.press("h")
    await settle(pilot)
    assert isinstance(app.screen, HeadersDialog)
    listing = app.screen.query_one("#headers-list", VerticalScroll)
    assert listing.max_scroll_y > listing.size.height
    for key, where in (("j", 1), ("k", 0), ("space", listing.size.height), ("G", listing.max_scroll_y),
                       ("g", 0)):
        await pilot.press(key)
        await settle(pilot)
        assert listing.scroll_y == where, key


async def test_the_first_run_screen_scrolls_with_j_k_space_g_G(tmp_path):
    """A newcomer's first screen (no project.md here) is longer than 80x24: only the arrows
    scrolled it; j k space g G did nothing."""
    from textual.containers import VerticalScroll

    from mailtriage.tui.screens.first_run import FirstRunScreen

    (tmp_path / "empty").mkdir()
    app = make_app(tmp_path / "empty")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, FirstRunScreen)
        guide = app.screen.query_one("#first-run", VerticalScroll)
        assert guide.max_scroll_y > guide.size.height
        for key, where in (("j", 1), ("k", 0), ("space", guide.size.height), ("G", guide.max_scroll_y), ("g", 0)):
            await pilot.press(key)
            await settle(pilot)
            assert guide.scroll_y == where, key


class ErrorsHost(App):
    def on_mount(self) -> None:
        from mailtriage.tui.dialogs.error import ErrorDialog, ErrorRecord

        records = [ErrorRecord(f"Listing failed ({i})", "the server closed the connection", where="list",
                               details="line one\nline two\nline three") for i in range(12)]
        self.push_screen(ErrorDialog(records))


async def test_the_error_list_scrolls_with_j_k_space_g_G():
    """Twelve errors run past the dialog; the focus is on Close, so only the mouse scrolled them."""
    from textual.containers import VerticalScroll

    app = ErrorsHost()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        listing = app.screen.query_one("#error-list", VerticalScroll)
        assert listing.max_scroll_y > listing.size.height
        for key, where in (("j", 1), ("k", 0), ("space", listing.size.height), ("G", listing.max_scroll_y),
                           ("g", 0)):
            await pilot.press(key)
            await settle(pilot)
            assert listing.scroll_y == where, key
        await pilot.press("enter")  # Close, as before
        await settle(pilot)
        assert not app.screen.query("#error-list")


async def error_details_with_no_error_say_so_in_a_toast(app, pilot) -> None:
    """! before anything failed opened a dialog titled "No errors so far" with nothing in it."""
    from mailtriage.tui.dialogs.error import ErrorDialog

    await settle(pilot)
    await pilot.press("exclamation_mark")
    await settle(pilot)
    assert not isinstance(app.screen, ErrorDialog)
    assert "No errors so far." in said(app)
    app.report_error("Listing failed", RuntimeError("the server closed the connection"))
    await pilot.press("exclamation_mark")
    await settle(pilot)
    assert isinstance(app.screen, ErrorDialog) and "the server closed the connection" in screen_text(app)


async def the_queues_all_key_is_offered_only_when_a_filter_is_on(app, pilot) -> None:
    """a (All) was offered with no filter set, where it changed nothing."""
    from mailtriage.tui.screens.queue import QueueScreen

    await settle(pilot)
    await pilot.press("Q")
    await settle(pilot)
    assert isinstance(app.screen, QueueScreen)
    assert "All" not in footer_words(app) and "By state" in footer_words(app)
    await pilot.press("s")  # state: new
    await settle(pilot)
    assert "All" in footer_words(app)
    await pilot.press("a")
    await settle(pilot)
    assert "state all" in screen_text(app) and "All" not in footer_words(app)


async def the_help_screen_pages_and_goes_to_its_ends_as_a_pager_does(app, pilot) -> None:
    """The help (every key, a long page) scrolled a line at a time with j/k only: space, -, g and
    G, the reader's and every pager's keys, did nothing there."""
    from mailtriage.tui.screens.help import HelpView

    await settle(pilot)
    await pilot.press("question_mark")
    await settle(pilot)
    view = app.screen.query_one(HelpView)
    for key, where in (("j", 1), ("k", 0), ("space", view.size.height), ("minus", 0), ("G", view.max_scroll_y),
                       ("g", 0)):
        await pilot.press(key)
        await settle(pilot)
        assert view.scroll_y == where, key


async def test_a_pane_with_nothing_to_open_does_not_offer_enter_and_says_why_in_words(tmp_path):
    """A project without a tracker: the tracker pane said "tracker.github.repo: is None" and
    offered "⏎ Open issue", which did nothing (its one row is the explanation, not an issue)."""
    from tests.tui.helpers import mbox_project

    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        shown = " ".join(screen_text(app).split())
        assert "is not set" in shown and "None" not in shown, shown
        words = footer_words(app)
        assert "Back to list" in words and "Open issue" not in words, words


# -- several checks on one app ----------------------------------------------------------------
# Each check above was a test that started an app of its own on the same project at the same size
# (issue 36 §7: an app started and settled is most of such a test's CPU). The checks are
# independent; each test below runs them in an order where each finds the state it starts from
# (asserted by ``back_to_the_list`` between them), and a failure's traceback names the check.


async def test_the_help_screen_and_the_error_details_take_their_keys(tmp_path):
    """F1 and ? close the help; the help pages as a pager; ! with no error says so in a toast."""
    from mailtriage.tui.screens.help import HelpScreen
    from tests.tui.helpers import mbox_project

    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(100, 30)) as pilot:
        await f1_on_the_help_screen_closes_it_as_question_mark_does(app, pilot)
        await the_help_screen_pages_and_goes_to_its_ends_as_a_pager_does(app, pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert not isinstance(app.screen, HelpScreen)
        await error_details_with_no_error_say_so_in_a_toast(app, pilot)


async def test_the_demos_panes_queue_and_dialogs_offer_and_take_their_keys(demo_dir):
    """An empty proposal is a toast; g and G in the sources, tracker and queue; the attachments
    dialog's view keys; the move picker's j k g G and Enter: the demo at 120x40."""
    app = demo_app(demo_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await an_empty_proposal_says_why_in_a_toast_and_opens_no_dialog(app, pilot)  # from the project's list
        await g_and_G_go_to_the_first_and_last_row_of_the_sources_tracker_and_queue(app, pilot)  # ends in the queue
        await back_to_the_list(pilot)
        await open_demo_inbox(app, pilot)  # the sources' first row is highlighted again (g above)
        await the_attachments_dialog_offers_its_view_keys_once_something_is_viewed(app, pilot)
        await back_to_the_list(pilot)  # the INBOX, the cursor on the message just read
        assert "Threads · demo · INBOX" in screen_text(app)
        await the_move_picker_narrows_as_typed_and_enter_moves_there(app, pilot)


async def test_the_full_headers_and_the_queues_filters_offer_and_take_their_keys(demo_dir):
    """The full headers scroll with the reader's keys; the queue's All is offered only while a
    filter is on: the demo at 100x30."""
    app = demo_app(demo_dir)
    async with app.run_test(size=(100, 30)) as pilot:
        await full_headers_scroll_with_the_readers_keys(app, pilot)
        await back_to_the_list(pilot)
        await the_queues_all_key_is_offered_only_when_a_filter_is_on(app, pilot)


class ReaderHost(App):
    """The reading pane and the footer alone: what the footer offers for the thread shown."""

    def compose(self) -> ComposeResult:
        from mailtriage.tui.panes.reader import ReaderPane

        yield ReaderPane()
        yield KeyFooter()

    def on_mount(self) -> None:
        from mailtriage.tui.panes.reader import ThreadView

        self.query_one(ThreadView).focus()


def one_message_thread(*, attachments: int, offers_key: bool):
    from mailtriage.application import Message, Thread
    from mailtriage.backends.contract import AttachmentInfo, TextPart
    from mailtriage.backends.pgp_status import CryptoStatus, OfferedKey

    crypto = CryptoStatus(offered_keys=(OfferedKey("Autocrypt header", "A" * 40, ("Rita <rita@x>",), b""),)) \
        if offers_key else None
    message = Message("<k@x>", "Report", Address("Rita", "rita@x"), date=WHEN,
                      text_parts=(TextPart("text/plain", "hello"),), crypto=crypto,
                      attachments=tuple(AttachmentInfo(f"a{i}.txt", "text/plain", 3) for i in range(attachments)))
    return Thread(ThreadId("msgid", "<k@x>"), "Report", (message,))


#: The reader's keys that act on some threads only, by the words the footer shows.
SOME_THREADS = {"Import to tracker", "Thread URL", "Attachments", "Import offered key"}


async def test_the_reader_offers_i_u_e_and_K_only_where_they_can_act():
    """Issue 35: no key that silently does nothing. The reader offered i and u on a personal
    account's message (no tracker import, no archive URL: u showed a file:// URL into the project
    archive), K on threads no message of which offers a key, e on threads without attachments;
    each could only refuse there (test_hidden_reader_keys_still_say_why: pressed, they say why)."""
    from mailtriage.tui.panes.reader import ReaderPane

    cases = [  # (account, attachments, a key offered) -> the keys of SOME_THREADS the footer offers
        ((None, 0, False), {"Import to tracker", "Thread URL"}),
        ((None, 2, True), SOME_THREADS),
        (("work", 1, True), {"Attachments", "Import offered key"}),
        (("work", 0, False), set()),
    ]
    app = ReaderHost()
    async with app.run_test(size=(160, 20)) as pilot:
        for (account, attachments, offers_key), offered in cases:
            app.query_one(ReaderPane).show_thread(one_message_thread(attachments=attachments, offers_key=offers_key),
                                                  None, account)
            await pilot.pause()
            await pilot.pause()
            words = footer_words(app)
            assert "Back to list" in words and "Reply" in words, words
            assert set(words) & SOME_THREADS == offered, (account, attachments, offers_key, words)


async def test_hidden_reader_keys_still_say_why_and_u_gives_no_archive_url_for_a_personal_message(demo_dir):
    """On the demo's personal inbox: u said a file:// URL into the project's archive for a
    personal message (reading's show_thread_url); now it says a personal message has none. i, u,
    K and e (no key offered, no attachment) are not offered there, and pressed each says why."""
    app = demo_app(demo_dir)
    async with app.run_test(size=(160, 50)) as pilot:
        await open_demo_inbox(app, pilot)
        await pilot.press("j", "j", "enter")  # the CI mail: no attachment, no key
        await settle(pilot)
        assert not set(footer_words(app)) & SOME_THREADS, footer_words(app)
        for key, why in (("u", "a personal account's message has none"),
                         ("i", "this is a personal account's message"),
                         ("K", "no message of this thread offers a key"),
                         ("e", "This thread has no attachments.")):
            app.clear_notifications()
            await pilot.press(key)
            await settle(pilot)
            assert any(why in s for s in said(app)), (key, said(app))
        assert "file://" not in screen_text(app)


async def test_change_folder_offers_enter_which_opens_the_match(demo_dir):
    """c's dialog offered Esc and nothing else; Enter (which opens the match) was not in its footer."""
    from mailtriage.tui.dialogs.folder_jump import FolderJump

    app = demo_app(demo_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_demo_inbox(app, pilot)
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, FolderJump)
        assert "Open" in dialog_footer(app), dialog_footer(app)
        await pilot.press(*"draft", "enter")
        await settle(pilot)
        assert not isinstance(app.screen, FolderJump)
        assert "Threads · demo · Drafts" in screen_text(app)


async def test_the_compose_dialog_offers_only_the_switch_its_mail_has(demo_dir):
    """Walking the demo at 160x50: a receipt's compose dialog offered ^g (forward inline / as
    attachment), dimmed, and ^g did nothing; only the key that switches this mail is offered."""
    from mailtriage.tui.dialogs.compose import ComposeDialog

    app = demo_app(demo_dir)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, ComposeDialog)
        offered = footer_words(app) + dialog_footer(app)
        assert "Receipt template / quoted reply" in offered
        assert "Forward inline / as attachment" not in offered, offered
