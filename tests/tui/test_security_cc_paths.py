"""Issue 30: mail that answers a security-list thread leaves only as a project draft with
the security CC, whatever pane, folder, account or search the person came from (real
Dovecot + aiosmtpd). The personal account ``work`` may send; its INBOX is also the
project's security list folder, so every path below can reach a report."""

from __future__ import annotations

from datetime import datetime, timezone

from textual.widgets import Input

from mailtriage.tui.dialogs.compose import ComposeDialog
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.panes.folders import FolderList
from mailtriage.tui.panes.thread_list import ThreadList
from tests.servers.fixtures import *  # noqa: F401,F403
from tests.tui.helpers import make_app, screen_text, settle
from tests.tui.test_compose import LIST, field, open_inbox, sending_project, smtp  # noqa: F401 (fixtures)
from tests.tui.test_imap_drafts import drafts
from tests.tui.test_search import search


async def back_to_the_security_list(app, pilot) -> None:
    """From an account's folders: "← project lists", then the security list again."""
    await pilot.press("2")  # the lists pane (the account's folders now)
    await settle(pilot)
    assert isinstance(app.focused, FolderList)
    await pilot.press("k", "enter")  # "← project lists" is the row above INBOX
    await settle(pilot)
    assert "← project lists" not in screen_text(app)
    await pilot.press("enter")  # the security list is the first list
    await settle(pilot)
    assert f"Threads · {LIST}" in screen_text(app)
    assert isinstance(app.focused, ThreadList)


async def confirm_twice(app, pilot) -> str:
    """Ctrl+s in the compose dialog, then what the proposal shows, then Ctrl+s again."""
    await pilot.press("ctrl+s")
    await settle(pilot)
    assert isinstance(app.screen, ProposalDialog), type(app.screen)
    shown = screen_text(app)
    await pilot.press("ctrl+s")
    await settle(pilot)
    return shown


async def test_a_reply_from_a_search_after_an_account_folder_is_the_project_draft(sending_project, dovecot,
                                                                                  dovecot_user, smtp):
    """Item 1: folder → back → the security list → / → r. The account context left by the
    folder used to make the search and the reply act on the account: a personal send, no CC."""
    app = make_app(sending_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await back_to_the_security_list(app, pilot)
        await search(pilot, "overflow")
        shown = screen_text(app)
        assert "via imap" in shown and "via work" not in shown  # the list was searched, not the account
        await pilot.press("r")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ComposeDialog)
        assert "sent from account" not in screen_text(app)
        assert field(dialog, "to") == "ana@example.com" and field(dialog, "cc") == LIST
        proposal = await confirm_twice(app, pilot)
        assert "DRAFT · will be written by backend imap" in proposal
        assert f"Cc: {LIST}   ◀ security CC" in proposal
    assert smtp.log.messages == []  # nothing sent
    [(draft, _flags)] = drafts(dovecot, dovecot_user)
    assert draft["Cc"] == LIST and draft["In-Reply-To"] == "<r1@example.com>"
