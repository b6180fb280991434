"""Tags and batches in the thread list, against the real Dovecot: tag rows (v V T), act on the
tagged set in ONE proposal (m f M a d), see an honest partial failure; next unread (u)."""

from datetime import datetime, timezone

import pytest

from mailtriage.tui.arrange import Arrangement, ArrangedRows
from mailtriage.tui.dialogs.folder_picker import FolderPicker
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.rows import PagedRows
from mailtriage.tui.tagging import Tags
from tests.servers.faultproxy import FaultProxy
from tests.tui.test_paged_sort import summary
from tests.tui.helpers import make_app, mbox_project, screen_text, settle, write_imap_project
from tests.tui.test_account_folders import folder_subjects, inbox_flags, open_inbox

LIST = "security@frob.example"
SUBJECTS = ["Heap overflow in the frob parser", "Path traversal in frob-serve", "Race in the frob cache",
            "Crash on empty frob file"]


def report(n: int, subject: str) -> bytes:
    return (f"From: Ana Reporter <ana@example.com>\r\nTo: {LIST}\r\nSubject: {subject}\r\n"
            f"Date: Thu, 0{n} Oct 2026 09:00:00 +0000\r\nMessage-ID: <r{n}@example.com>\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
            f"Body of report {n}.\r\n").encode()


@pytest.fixture
def tags_project(tmp_path, user_config, dovecot, dovecot_user, memory_keyring):
    project = write_imap_project(tmp_path, user_config, dovecot, dovecot_user, access="draft", list_address=LIST)
    for n, subject in enumerate(SUBJECTS, 1):  # newest last: the list shows them in reverse
        dovecot.append(dovecot_user, "INBOX", report(n, subject), when=datetime(2026, 10, n, 9, 0, tzinfo=timezone.utc))
    with dovecot.client(dovecot_user) as client:
        client.create_folder("Lists")
    return project


def tagged_subjects(app) -> list[str]:
    return [row.subject for row in app.main.threads.thread_list.tags.rows()]


def status(app) -> str:
    return str(app.main.query_one("#threads-status").render())


async def test_tag_three_rows_and_flag_them_in_one_proposal(tags_project, dovecot, dovecot_user):
    app = make_app(tags_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("v", "v", "j", "v")  # rows 1, 2 and 4 (newest first); v moves down
        await settle(pilot)
        assert tagged_subjects(app) == [SUBJECTS[3], SUBJECTS[2], SUBJECTS[0]]
        assert "3 tagged" in status(app)
        shown = screen_text(app)
        assert sum(1 for line in shown.splitlines() if "●*" in line) == 3
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)  # ONE proposal for the three
        shown = screen_text(app)
        assert "Flag: 3 messages in account work" in shown
        assert "Flag · on the server of account work" in shown
        for subject in (SUBJECTS[3], SUBJECTS[2], SUBJECTS[0]):
            assert f"{subject} — from Ana Reporter <ana@example.com> — in INBOX — now unread" in shown
        assert SUBJECTS[1] not in shown
        assert not any(b"\\Flagged" in f for f in inbox_flags(dovecot, dovecot_user).values())
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, ProposalDialog)
        assert tagged_subjects(app) == []  # every one was done
        assert "tagged" not in status(app)
    flags = inbox_flags(dovecot, dovecot_user)
    assert {s for s, f in flags.items() if b"\\Flagged" in f} == {SUBJECTS[0], SUBJECTS[2], SUBJECTS[3]}
    assert not any(b"\\Seen" in f for f in flags.values())


async def test_a_message_expunged_between_tag_and_confirm_is_reported_and_untagged(
        tags_project, dovecot, dovecot_user):
    app = make_app(tags_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("v", "v", "v")
        await settle(pilot)
        await pilot.press("m")  # a mixed set (all unread here): mark read
        await settle(pilot)
        assert "Mark read: 3 messages in account work" in screen_text(app)
        with dovecot.client(dovecot_user) as other:  # another client deletes one meanwhile
            other.select_folder("INBOX")
            gone = other.search(["SUBJECT", SUBJECTS[2]])
            other.delete_messages(gone)
            other.expunge()
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert tagged_subjects(app) == []  # the vanished one is not kept tagged (issue 39): nothing to retry
        record = app.errors[-1]
        assert record.title == "Writing failed" and "1 of 3" in record.message
        assert "done: 2 of 3 messages" in record.details
        assert f"FAILED: {SUBJECTS[2]} — from Ana Reporter <ana@example.com>: no longer in 'INBOX'" in record.details
        rows = app.main.threads.thread_list.rows
        assert [rows.peek(i).subject for i in range(len(rows))] == [SUBJECTS[3], SUBJECTS[1], SUBJECTS[0]]
    flags = inbox_flags(dovecot, dovecot_user)
    assert b"\\Seen" in flags[SUBJECTS[3]] and b"\\Seen" in flags[SUBJECTS[1]]
    assert b"\\Seen" not in flags[SUBJECTS[0]]


async def test_next_unread_then_tag_all_clear_and_cancel_write_nothing(tags_project, dovecot, dovecot_user):
    """Two tests, one app each, on one app (issue 36 §7). u skips the messages the server has as
    seen (two are marked before the start) and wraps; then T, d cancelled, V and f cancelled
    write nothing: the flags after are those before the app started."""
    with dovecot.client(dovecot_user) as client:
        client.select_folder("INBOX")
        client.add_flags(client.search(["SUBJECT", SUBJECTS[3]]) + client.search(["SUBJECT", SUBJECTS[1]]),
                         [b"\\Seen"])
    before = inbox_flags(dovecot, dovecot_user)
    app = make_app(tags_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        # Next unread skips the server's seen messages and wraps.
        thread_list = app.main.threads.thread_list
        assert thread_list.cursor == 0
        await pilot.press("u")
        assert thread_list.current.subject == SUBJECTS[2], "u: the first unread"
        await pilot.press("u")
        assert thread_list.current.subject == SUBJECTS[0], "u: the next unread"
        await pilot.press("u")  # wraps to the top
        assert thread_list.current.subject == SUBJECTS[2], "u: wrapped"
        # With none unread, u says so and stays: the thread list's own, on rows of any source
        # (tests/tui/test_paged_unread.py's test_next_unread_says_none_only_after_every_page_was_looked_at).
        # Tag all, clear and cancel write nothing.
        await pilot.press("T")
        await settle(pilot)
        assert len(tagged_subjects(app)) == 4 and "4 tagged" in status(app)
        await pilot.press("d")
        await settle(pilot)
        assert "Move to the trash folder: 4 messages" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert len(tagged_subjects(app)) == 4  # cancelled: the tags stay
        await pilot.press("V")
        await settle(pilot)
        assert tagged_subjects(app) == [] and "tagged" not in status(app)
        await pilot.press("f")  # no tags: the row under the cursor, as before
        await settle(pilot)
        assert "Flag: 1 message in account work" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
    assert inbox_flags(dovecot, dovecot_user) == before, "T, d, V, f cancelled: nothing written"


async def test_move_the_tagged_messages_to_a_picked_folder(tags_project, dovecot, dovecot_user):
    app = make_app(tags_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("v", "v", "M")
        await settle(pilot)
        assert isinstance(app.screen, FolderPicker)
        shown = screen_text(app)
        assert "Move 2 messages to" in shown and "(the messages are here)" in shown
        options = app.screen.query_one("#folder-picker-list")
        options.highlighted = next(i for i in range(options.option_count)
                                   if options.get_option_at_index(i).id == "Lists")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        assert "To folder: Lists" in screen_text(app)
        await pilot.press("ctrl+s")
        await settle(pilot)
        rows = app.main.threads.thread_list.rows
        assert [rows.peek(i).subject for i in range(len(rows))] == [SUBJECTS[1], SUBJECTS[0]]
        assert tagged_subjects(app) == []
    assert folder_subjects(dovecot, dovecot_user, "Lists") == sorted(SUBJECTS[2:])


async def test_tag_all_of_a_paged_folder_and_flag_over_max_bulk_in_one_proposal(tags_project, dovecot, dovecot_user):
    with dovecot.client(dovecot_user) as client:
        for n in range(146):  # with the 4 reports: 150, two pages, two bulk calls
            client.append("INBOX", report(5, f"Bulk {n:03d}"),
                          msg_time=datetime(2026, 9, 1, 0, n % 60, n // 60, tzinfo=timezone.utc))
    app = make_app(tags_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("T")  # only the first page is fetched: T says so
        await settle(pilot)
        assert len(tagged_subjects(app)) == 100
        assert any("50 more are not fetched yet" in n.message for n in app._notifications)
        await pilot.press("G")
        await settle(pilot)
        await pilot.press("T")
        await settle(pilot)
        assert len(tagged_subjects(app)) == 150 and "150 tagged" in status(app)
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        shown = screen_text(app)
        assert "Flag: 150 messages in account work" in shown and "Batches: 2 calls of at most 100 messages" in shown
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert tagged_subjects(app) == []
    flags = inbox_flags(dovecot, dovecot_user)
    assert len(flags) == 150 and all(b"\\Flagged" in f for f in flags.values())


async def test_v_typed_faster_than_the_next_page_loads_tags_every_row(tags_project, user_config, dovecot, dovecot_user):
    """Issue 35: v typed on rows whose page of 100 is still on its way tags them when it
    comes (the presses were lost: the cursor stopped at the first row not fetched)."""
    with dovecot.client(dovecot_user) as client:
        for n in range(146):  # with the 4 reports: 150 messages, two pages
            client.append("INBOX", report(5, f"Bulk {n:03d}"),
                          msg_time=datetime(2026, 9, 1, 0, n % 60, n // 60, tzinfo=timezone.utc))
    proxy = FaultProxy(dovecot.port)
    settings = user_config / "config.toml"
    settings.write_text(settings.read_text().replace(f"port = {dovecot.port}", f"port = {proxy.port}"))
    app = make_app(tags_project)
    try:
        async with app.run_test(size=(140, 58)) as pilot:
            await open_inbox(app, pilot)
            listing = app.main.threads.thread_list
            assert listing.rows.peek(100) is None  # the second page is not fetched yet
            proxy.hold()  # and it stays on its way while the keys arrive
            await pilot.press(*["pagedown"] * 4)  # fewer keys (Pilot types ~0.1 s each)
            start = listing.cursor
            await pilot.press(*["v"] * (104 - start))  # rows start..103: four of them on page 2
            assert listing.rows.peek(100) is None and listing.cursor == 104
            await pilot.press("f")  # the action waits for the rows still loading
            assert any("4 tagged rows are still loading" in n.message for n in app._notifications)
            proxy.release()
            await settle(pilot)
            assert not isinstance(app.screen, ProposalDialog)
            rows = [listing.rows.peek(i) for i in range(len(listing.rows))]
            assert tagged_subjects(app) == [row.subject for row in rows[start:104]]
            assert f"{104 - start} tagged" in status(app)
            await pilot.press("k", "v")  # a row fetched late untags like any other
            await settle(pilot)
            assert rows[103].subject not in tagged_subjects(app) and len(tagged_subjects(app)) == 103 - start
    finally:
        proxy.close()


async def test_flag_and_move_on_tagged_list_threads_say_they_need_an_account(tmp_path):
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        await pilot.press("v", "v")
        await settle(pilot)
        assert len(tagged_subjects(app)) == 2
        for key in ("f", "M"):
            app.clear_notifications()
            await pilot.press(key)
            await settle(pilot)
            assert not isinstance(app.screen, (ProposalDialog, FolderPicker))
            assert any("personal account's messages" in n.message for n in app._notifications)
        assert len(tagged_subjects(app)) == 2  # nothing happened: the tags stay


def test_v_typed_on_rows_of_a_list_that_was_replaced_meanwhile_is_dropped_and_said():
    # review finding: a client-sorted list is rebuilt after each page, so a v waiting for page 2
    # was cleared without a word (an action then tagged fewer rows), or, with no page to come,
    # stayed pending and refused every action key until V
    paged = PagedRows(300, lambda offset, limit: [summary(i) for i in range(offset, min(offset + limit, 300))],
                      page_size=100)
    paged.fetch_page(0)
    first = ArrangedRows(paged, Arrangement(sort="subject"))
    tags = Tags()
    tags.toggle_later(first, 150)
    tags.toggle_later(first, 250)
    paged.fetch_page(1)
    assert tags.arrived(first) and len(tags) == 1 and tags.pending == 1
    rebuilt = ArrangedRows(paged, Arrangement(sort="subject"))  # what the list does after a page
    assert tags.pending_elsewhere(first) == 0
    assert tags.pending_elsewhere(rebuilt) == 1 and tags.pending == 0  # dropped, and the count says so
    assert len(tags) == 1
