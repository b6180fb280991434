"""Issue 30: mail that answers a security-list thread leaves only as a project draft with
the security CC, whatever pane, folder, account or search the person came from (real
Dovecot + aiosmtpd). The personal account ``work`` may send; its INBOX is also the
project's security list folder, so every path below can reach a report."""

from __future__ import annotations

from datetime import datetime, timezone

from textual.widgets import Input, TextArea

from mailtriage.tui.dialogs.compose import ComposeDialog
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.panes.folders import FolderList
from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.helpers import make_app, screen_text, settle
from tests.tui.test_compose import LIST, field, open_inbox, report, sending_project, smtp  # noqa: F401 (fixtures)
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
        assert "Save draft · into Drafts of account work" in proposal
        assert f"Cc: {LIST}   ◀ security CC" in proposal
    assert smtp.log.messages == []  # nothing sent
    [(draft, _flags)] = drafts(dovecot, dovecot_user)
    assert draft["Cc"] == LIST and draft["In-Reply-To"] == "<r1@example.com>"


async def test_r_in_the_personal_view_of_the_projects_mailbox_is_the_project_draft(sending_project, dovecot,
                                                                                   dovecot_user, smtp):
    """Item 2: Sources → the account → INBOX → r on a report sent to the security list. It
    used to be a personal send with no CC and no warning."""
    app = make_app(sending_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        assert "Threads · work · INBOX" in screen_text(app)
        await pilot.press("j", "r")  # under the account's own mail: the path traversal report, To: the list
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ComposeDialog)
        shown = screen_text(app)
        assert "sent from account" not in shown and "security CC kept" in shown
        assert field(dialog, "to") == "ana@example.com" and field(dialog, "cc") == LIST
        proposal = await confirm_twice(app, pilot)
        assert "Save draft · into Drafts of account work" in proposal
        assert f"Cc: {LIST}   ◀ security CC" in proposal
    assert smtp.log.messages == []
    [(draft, _flags)] = drafts(dovecot, dovecot_user)
    assert draft["Cc"] == LIST and draft["In-Reply-To"] == "<r2@example.com>"


def archived(raw: bytes, dovecot, dovecot_user) -> None:
    """A message in the account's Archive, which is no project source."""
    dovecot.append(dovecot_user, "Archive", raw, when=datetime(2026, 10, 4, 9, 0, tzinfo=timezone.utc))


async def open_archive(app, pilot) -> None:
    await open_inbox(app, pilot)
    await pilot.press("2")
    await settle(pilot)
    await pilot.press("j", "enter")  # INBOX, then Archive
    await settle(pilot)
    assert "Threads · work · Archive" in screen_text(app)


FOLLOW_UP = (b"From: Ana Reporter <ana@example.com>\r\nTo: me@example.org\r\nSubject: Re: Heap overflow\r\n"
             b"Date: Sun, 04 Oct 2026 09:00:00 +0000\r\nMessage-ID: <r1-private@example.com>\r\n"
             b"In-Reply-To: <r1@example.com>\r\nReferences: <r1@example.com>\r\n"
             b"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nA PoC, only to you.\r\n")


async def test_a_private_follow_up_of_a_report_is_answered_as_the_project_draft(sending_project, dovecot,
                                                                                dovecot_user, smtp):
    """Not sent to the list, but its References lead to a thread of the security list: the
    reply, and a forward too, are the project's drafts with the CC."""
    archived(FOLLOW_UP, dovecot, dovecot_user)
    app = make_app(sending_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_archive(app, pilot)
        await pilot.press("F")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ComposeDialog)
        assert "(security CC kept) — it answers the thread <r1@example.com> of the security" in screen_text(app)
        assert field(dialog, "to") == "" and field(dialog, "cc") == LIST
        assert "A PoC, only to you." in dialog.query_one(TextArea).text  # the message chosen, forwarded
        dialog.query_one("#compose-to", Input).value = "dev@example.net"
        proposal = await confirm_twice(app, pilot)
        assert "Save draft · into Drafts of account work" in proposal
    assert smtp.log.messages == []
    [(draft, _flags)] = drafts(dovecot, dovecot_user)
    assert draft["To"] == "dev@example.net" and draft["Cc"] == LIST
    # Threaded in the project's thread (the IMAP drafter answers a message it holds), the chosen text forwarded.
    assert draft["In-Reply-To"] == "<r1@example.com>" and "A PoC, only to you." in draft.get_content()


async def test_list_mail_the_project_does_not_hold_is_refused_with_why(sending_project, dovecot, dovecot_user, smtp):
    """Sent to the security list, but the project's sources hold no thread of it: no
    personal send (it would lack the CC) and no draft either; the proposal says why."""
    archived(report(7, "Stray copy of a report"), dovecot, dovecot_user)
    app = make_app(sending_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_archive(app, pilot)
        await pilot.press("A")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        shown = screen_text(app)
        assert "Nothing can be written" in shown and f"sent to the project's list {LIST}" in shown
        assert "hold no thread of <r7@example.com>" in shown
        assert not app.screen.can_confirm
    assert smtp.log.messages == [] and drafts(dovecot, dovecot_user) == []
