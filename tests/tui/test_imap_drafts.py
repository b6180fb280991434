"""Confirming a reply proposal writes the draft on a real Dovecot; cancelling writes nothing.

The project's primary source is an IMAP account (``access = "draft"``) on the test
Dovecot; the draft the dialog shows, edited in the dialog, is what lands in Drafts.
"""

from datetime import datetime, timezone
from email import message_from_bytes, policy

import pytest
from textual.widgets import TextArea

from mailtriage.core.trace import OPLOG
from mailtriage.tui.dialogs.proposal import ProposalDialog
from tests.tui.helpers import make_app, screen_text, settle, write_imap_project

LIST = "security@frob.example"
WHEN = datetime(2026, 10, 1, 9, 0, tzinfo=timezone.utc)

REPORT = (
    "From: Ana Reporter <ana@example.com>\r\n"
    f"To: {LIST}\r\n"
    "Subject: Heap overflow in the frob parser\r\n"
    "Date: Thu, 01 Oct 2026 09:00:00 +0000\r\n"
    "Message-ID: <overflow-1@example.com>\r\n"
    "MIME-Version: 1.0\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n"
    "\r\n"
    "A crafted .frob file overflows the parser's heap buffer.\r\n"
).encode()


@pytest.fixture
def imap_project(tmp_path, user_config, dovecot, dovecot_user, memory_keyring):
    project = write_imap_project(tmp_path, user_config, dovecot, dovecot_user, access="draft", list_address=LIST)
    dovecot.append(dovecot_user, "INBOX", REPORT, when=WHEN)
    return project


def drafts(dovecot, user) -> list:
    with dovecot.client(user) as client:
        if not client.folder_exists("Drafts"):
            return []
        client.select_folder("Drafts", readonly=True)
        uids = client.search("ALL")
        fetched = client.fetch(uids, ["RFC822", "FLAGS"]) if uids else {}
        return [(message_from_bytes(data[b"RFC822"], policy=policy.default), data[b"FLAGS"])
                for _, data in sorted(fetched.items())]


async def open_proposal(app, pilot):
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
    await pilot.press("r")
    await settle(pilot)
    await pilot.press("ctrl+s")  # the compose dialog: review the proposal
    await settle(pilot)
    assert isinstance(app.screen, ProposalDialog)


async def test_confirm_writes_the_edited_draft_to_the_imap_drafts_folder(imap_project, dovecot, dovecot_user):
    app = make_app(imap_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_proposal(app, pilot)
        shown = screen_text(app)
        assert "1. Save draft · into Drafts of account work" in shown
        assert "To: ana@example.com" in shown
        assert f"Cc: {LIST}   ◀ security CC" in shown
        assert "Subject: Re: Heap overflow in the frob parser" in shown
        assert "In-Reply-To: <overflow-1@example.com>" in shown
        assert "create_draft → imap (primary)" in shown
        assert app.screen.can_confirm
        assert drafts(dovecot, dovecot_user) == []  # nothing written while the dialog is open
        area = app.screen.query_one(TextArea)
        area.load_text("Thanks Ana, confirmed receipt.\n\n-- Test Triager\n")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, ProposalDialog)
        assert any(n.title == "Written" for n in app._notifications)
    written = drafts(dovecot, dovecot_user)
    assert len(written) == 1
    draft, flags = written[0]
    assert b"\\Draft" in flags
    assert draft["To"] == "ana@example.com" and draft["Cc"] == LIST
    assert draft["In-Reply-To"] == "<overflow-1@example.com>"
    assert draft["Subject"] == "Re: Heap overflow in the frob parser"
    assert draft.get_content().replace("\r\n", "\n") == "Thanks Ana, confirmed receipt.\n\n-- Test Triager\n"
    assert [r.op for r in OPLOG.items() if r.op == "create_draft" and r.error is None] == ["create_draft"]


async def test_cancel_writes_nothing_and_a_confirmed_draft_blocks_a_second_one(imap_project, dovecot, dovecot_user):
    """One app for the two halves (each was a test of its own): a cancelled proposal leaves no
    draft behind, so asking again proposes again; a confirmed one is pending, so the same
    reply asked again is said to be that draft, with nothing to confirm."""
    app = make_app(imap_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_proposal(app, pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, ProposalDialog)
        assert drafts(dovecot, dovecot_user) == []
        assert [r.op for r in OPLOG.items() if r.op == "create_draft"] == []
        # Asking again proposes again: the cancelled one left no draft behind.
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("ctrl+s")  # the compose dialog: review the proposal
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        assert "already pending" not in screen_text(app)
        assert "already written as a draft" not in " ".join(screen_text(app).split())
        await pilot.press("ctrl+s")  # confirmed: the draft is written
        await settle(pilot)
        assert len(drafts(dovecot, dovecot_user)) == 1
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("ctrl+s")  # the compose dialog: review the proposal
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        shown = screen_text(app)
        # The same text as the pending draft is that draft (issue 39): said, nothing to confirm.
        assert "this reply is already written as a draft" in " ".join(shown.split())
        assert not app.screen.can_confirm
        await pilot.press("escape")
    assert len(drafts(dovecot, dovecot_user)) == 1


async def test_imap_listing_paints_the_newest_threads_first_then_the_rest(imap_project, dovecot, dovecot_user):
    for n in (2, 3):
        dovecot.append(dovecot_user, "INBOX", REPORT.replace(b"overflow-1@", f"report-{n}@".encode())
                       .replace(b"Heap overflow", f"Report {n}:".encode()), when=WHEN)
    app = make_app(imap_project)
    app.first_page = 2
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        from mailtriage.tui.panes.thread_list import ThreadList

        assert len(app.screen.query_one(ThreadList).rows) == 3
        assert "3 threads · via list_recent_threads → imap (primary)" in screen_text(app)
    listings = [r.size for r in OPLOG.items() if r.op == "list_recent_threads"]
    assert listings == [2, 3]  # the newest two first (limit), then the whole window



def test_a_screens_row_marks_talk_to_the_server_only_under_the_backend_lock(imap_project):
    """The row marks' batch (``Service.thread_statuses``, a worker at start-up) resolved which
    backend lists drafts outside the backend lock: an IMAP source's first capabilities connect and
    SELECT Drafts, on the connection the start-up's sources check (holding the lock) opened at the
    same moment. One thread read the other's tagged answer and the start-up listing waited for ever
    ("asking the server …": 5 of ~150 bench_habits launches, reply11). Every protocol line the
    batch sends is sent holding the lock."""
    from mailtriage.application.service import Service
    from mailtriage.backends.contract import ThreadId
    from mailtriage.core.settings import load_settings
    from mailtriage.core.trace import TRACE

    service = Service(imap_project, demo=False, settings=load_settings())
    service.open()
    unlocked: list[str] = []

    def seen(line) -> None:  # on the thread that sends it: this one
        if getattr(line, "direction", "") == ">" and not service._lock._held.depth:
            unlocked.append(line.text)
    unsubscribe = TRACE.subscribe(seen)
    try:
        service.thread_statuses([ThreadId("msgid", "<overflow-1@example.com>")])
    finally:
        unsubscribe()
    assert unlocked == []
