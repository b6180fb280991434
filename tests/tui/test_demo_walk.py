"""The demo app walked by keystroke (issue 35 item 8): the Sources pane shows the demo's
personal Maildir account; Enter opens its folders, INBOX and a message, and a reply is
saved as a draft in the demo's Maildir, with the compose dialog saying nothing is sent. The way
back from a folder to the project's list: tests/tui/test_reader_follows_source.py."""

from mailtriage.application import project_dir
from mailtriage.tui.dialogs.compose import ComposeDialog
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.panes.folders import FolderList
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.panes.tracker import TrackerList
from tests.tui.helpers import back_to_the_list, make_app, screen_text, settle


async def open_demo_inbox(app, pilot) -> None:
    """Sources pane → the demo account (under the two backend rows) → its folders → INBOX."""
    await settle(pilot)
    await pilot.press("1")
    await settle(pilot)
    await pilot.press("down", "down", "enter")
    await settle(pilot)
    assert isinstance(app.focused, FolderList)
    shown = screen_text(app)
    assert "Folders · demo" in shown
    assert "INBOX inbox 2/4" in shown and "Drafts drafts 0/0" in shown
    await pilot.press("enter")  # INBOX is highlighted first
    await settle(pilot)
    assert isinstance(app.focused, ThreadList)
    assert "Threads · demo · INBOX" in screen_text(app)


def demo_app(demo_dir):
    """The demo app on a demo workspace of this test's own (its Maildir is written to), and
    that workspace (copied from the worker's template: ``demo_dir``, tests/tui/conftest.py)."""
    workspace = project_dir(demo_session=True)
    return make_app(workspace, demo=True), workspace


async def test_demo_walks_account_folder_message_and_drafts_a_reply(demo_dir):
    app, workspace = demo_app(demo_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_demo_inbox(app, pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert "Here is the rota for December." in screen_text(app)

        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, ComposeDialog)
        assert "DEMO: nothing is ever sent" in screen_text(app)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, ProposalDialog)
    [draft] = (workspace / "Personal" / ".Drafts" / "cur").iterdir()
    assert "Subject: Re: Security rota for December" in draft.read_text(encoding="utf-8")


async def test_demo_tags_two_messages_and_archives_them_in_one_proposal(demo_dir):
    app, workspace = demo_app(demo_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_demo_inbox(app, pilot)
        await pilot.press("v", "v", "a")  # tag the two newest (v moves down), archive the tagged set
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, ProposalDialog)
        rows = app.main.threads.thread_list.rows
        assert [rows.peek(i).subject for i in range(len(rows))] == [
            "[frobnicator] Nightly build failed on main (3.5.0-SNAPSHOT)", "Welcome to the security team"]
    archived = sorted(p.name.partition(".")[2].partition(".")[0] for p in (workspace / "Personal" / ".Archive" / "cur").iterdir())
    assert archived == ["demo01", "demo02", "demo05"]


async def import_refuses_a_personal_accounts_message_and_says_why(app, pilot) -> None:
    """i on a message of the personal account (open in the reader, under the cursor, or tagged)
    proposed a tracker issue "received on the security list" and a receipt CC'ing the list for
    private mail (the open thread was imported as it was); it says why it does not, as m/f/a/d
    say why on the list's threads (tagged rows said so already)."""
    # on the demo's INBOX, the cursor on its first message (the test puts it there)
    await pilot.press("enter")  # the rota message, open in the reader
    await settle(pilot)
    for keys in (("i",), ("q", "i"), ("v", "v", "i")):  # the reader, the list, tagged rows
        app.clear_notifications()
        await pilot.press(*keys)
        await settle(pilot)
        assert not isinstance(app.screen, ProposalDialog), keys
        said = [str(n.message) for n in app._notifications]
        assert any(s.startswith("Import works on a project source's threads") for s in said), (keys, said)


async def s_to_a_thread_the_list_does_not_show_puts_the_keys_on_that_thread(app, pilot) -> None:
    """s from an issue whose thread is not in the list shown (here the account's INBOX) reads it
    into the reading pane; the focus went to the list, so r and i acted on the list's row (a
    personal message), not on the thread on screen. The reader has the focus now, and the project
    list comes back under it with the cursor on that thread (q lands there, not in the INBOX)."""
    from mailtriage.tui.panes.reader import ThreadView
    from tests.tui.test_compose import field

    # on the demo's INBOX, the list focused (the test puts it there)
    await pilot.press("t")
    await settle(pilot)
    await pilot.press("5", "s")  # the tracker pane: the thread of its first issue
    await settle(pilot)
    assert "Reading · Open redirect in the login page" in screen_text(app)
    assert isinstance(app.focused, ThreadView)
    thread_list = app.screen.query_one(ThreadList)
    assert "Threads · demo · INBOX" not in screen_text(app)
    assert thread_list.current is not None and thread_list.current.subject.startswith("Open redirect in the login page")
    await pilot.press("r")
    await settle(pilot)
    assert isinstance(app.screen, ComposeDialog)
    assert field(app.screen, "to") == "elena.petrova@example.com"
    await pilot.press("escape")
    await settle(pilot)
    app.clear_notifications()
    await pilot.press("s")  # and back to its issue (it did nothing: the thread was no row of the list)
    await settle(pilot)
    assert isinstance(app.focused, TrackerList), [str(n.message) for n in app._notifications]


async def s_on_a_personal_accounts_message_says_why_it_finds_no_issue(app, pilot) -> None:
    # on the demo's INBOX, the cursor on its first message (the test puts it there)
    for keys in (("s",), ("enter", "s")):  # the list's row, the message open in the reader
        app.clear_notifications()
        await pilot.press(*keys)
        await settle(pilot)
        said = [str(n.message) for n in app._notifications]
        assert any(s.startswith("s finds the tracker issue of a project source's thread") for s in said), said


async def test_s_and_i_on_the_personal_accounts_inbox(demo_dir):
    """Three checks that write nothing, on one demo app at 140x44 in the account's INBOX (each was
    a test with an app of its own; issue 36 §7). Each starts from the INBOX's list, its cursor on
    the first message (``back_to_the_list`` between them); a failure's traceback names the check."""
    app, workspace = demo_app(demo_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_demo_inbox(app, pilot)
        await s_on_a_personal_accounts_message_says_why_it_finds_no_issue(app, pilot)
        await back_to_the_list(pilot)
        await import_refuses_a_personal_accounts_message_and_says_why(app, pilot)
        await back_to_the_list(pilot)
        await s_to_a_thread_the_list_does_not_show_puts_the_keys_on_that_thread(app, pilot)
        await back_to_the_list(pilot)  # the project list s brought back, the cursor on the thread
        assert "Open redirect in the login page" in str(app.screen.query_one(ThreadList).current.subject)
