"""Sort keys (o O) and the collapsible thread tree (z Z) of a personal account's folder,
against the real Dovecot (a folder of one page: arranged at hand). A paged folder is sorted
and folded by the server: tests/tui/test_paged_whole_folder.py."""

from datetime import datetime, timezone

import pytest

from mailtriage.tui.arrange import ArrangedRows
from tests.tui.helpers import make_app, mbox_project, settle, write_imap_project
from tests.tui.test_account_folders import open_inbox

LIST = "security@frob.example"


def mail(n: int, subject: str, sender: str, *, reply_to: int | None = None, root: int | None = None,
         padding: int = 0) -> bytes:
    refs = ""
    if reply_to is not None:
        chain = " ".join(f"<m{r}@example.com>" for r in dict.fromkeys([root or reply_to, reply_to]))
        refs = f"In-Reply-To: <m{reply_to}@example.com>\r\nReferences: {chain}\r\n"
    return (f"From: {sender}\r\nTo: {LIST}\r\nSubject: {subject}\r\n"
            f"Date: Thu, 0{n} Oct 2026 09:00:00 +0000\r\nMessage-ID: <m{n}@example.com>\r\n{refs}"
            "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
            f"Body {n}.\r\n{'x' * padding}\r\n").encode()


MAILS = [  # n, subject, sender, reply_to, root, padding
    (1, "Heap overflow in the frob parser", "Ana Reporter <ana@example.com>", None, None, 10),
    (2, "Re: Heap overflow in the frob parser", "Priya Raman <priya@frob.example>", 1, 1, 3000),
    (3, "Path traversal in frob-serve", "Bo Finder <bo@example.net>", None, None, 500),
    (4, "Re: Heap overflow in the frob parser", "Ana Reporter <ana@example.com>", 2, 1, 0),
]


@pytest.fixture
def thread_project(tmp_path, user_config, dovecot, dovecot_user, memory_keyring):
    project = write_imap_project(tmp_path, user_config, dovecot, dovecot_user, access="draft", list_address=LIST)
    for n, subject, sender, reply_to, root, padding in MAILS:
        dovecot.append(dovecot_user, "INBOX", mail(n, subject, sender, reply_to=reply_to, root=root, padding=padding),
                       when=datetime(2026, 10, n, 9, 0, tzinfo=timezone.utc))
    return project


def shown(app) -> list[tuple[str, str]]:
    """(tree mark, subject) of each row, top to bottom."""
    rows = app.main.threads.thread_list.rows
    marks = rows.decoration if isinstance(rows, ArrangedRows) else (lambda i: "")
    return [(marks(i), rows.peek(i).subject) for i in range(len(rows))]


def status(app) -> str:
    return str(app.main.query_one("#threads-status").render())


async def test_sort_keys_cycle_and_reverse(thread_project):
    app = make_app(thread_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        assert [s for _m, s in shown(app)][0] == "Re: Heap overflow in the frob parser"  # newest first
        first = app.main.threads.thread_list.current.thread_id
        await pilot.press("o")  # date, newest first
        await settle(pilot)
        assert "sorted by date ↓" in status(app)
        assert [s for _m, s in shown(app)] == [MAILS[i][1] for i in (3, 2, 1, 0)]
        await pilot.press("o")  # sender, A to Z
        await settle(pilot)
        assert "sorted by sender ↑" in status(app)
        senders = [app.main.threads.thread_list.rows.peek(i).sender.name for i in range(4)]
        assert senders == ["Ana Reporter", "Ana Reporter", "Bo Finder", "Priya Raman"]
        await pilot.press("O")
        await settle(pilot)
        assert "sorted by sender ↓" in status(app)
        assert app.main.threads.thread_list.rows.peek(0).sender.name == "Priya Raman"
        await pilot.press("o")  # subject ("Re:" ignored), A to Z
        await settle(pilot)
        assert "sorted by subject ↑" in status(app)
        assert [s for _m, s in shown(app)][-1] == "Path traversal in frob-serve"
        await pilot.press("o")  # size (IMAP gives sizes), largest first
        await settle(pilot)
        assert "sorted by size ↓" in status(app)
        assert app.main.threads.thread_list.rows.peek(0).sender.name == "Priya Raman"  # 3,000 bytes of body
        thread_list = app.main.threads.thread_list
        assert thread_list.current.thread_id == first and thread_list.cursor != 0  # the cursor follows its row


async def test_thread_tree_collapses_and_expands(thread_project):
    app = make_app(thread_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("z")  # the tree on
        await settle(pilot)
        assert "thread tree" in status(app)
        assert shown(app) == [("▾ ", "Heap overflow in the frob parser"),
                              ("└ ", "Re: Heap overflow in the frob parser"),
                              ("  └ ", "Re: Heap overflow in the frob parser"),
                              ("", "Path traversal in frob-serve")]
        assert app.main.threads.thread_list.cursor == 2  # still on the newest message
        await pilot.press("z")  # the cursor's thread (the heap overflow one) collapses
        await settle(pilot)
        assert shown(app) == [("▸ +2 ", "Heap overflow in the frob parser"), ("", "Path traversal in frob-serve")]
        assert app.main.threads.thread_list.cursor == 0  # its root
        assert "2 in collapsed threads" in status(app)
        await pilot.press("Z")  # everything collapsed
        await settle(pilot)
        assert len(shown(app)) == 2
        await pilot.press("Z")  # everything expanded
        await settle(pilot)
        assert len(shown(app)) == 4
        assert app.main.threads.thread_list.cursor == 0  # on the collapsed thread's root, and stays there
        await pilot.press("v", "v")  # tags work on the tree's rows
        await settle(pilot)
        assert len(app.main.threads.thread_list.tags) == 2


async def test_a_mailing_list_sorts_by_subject_and_has_no_tree(tmp_path):
    project = mbox_project(tmp_path / "p")
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        thread_list = app.main.threads.thread_list
        before = [thread_list.rows.peek(i).subject for i in range(len(thread_list.rows))]
        await pilot.press("o", "o", "o")  # date, sender, subject (threads carry no size)
        await settle(pilot)
        assert "sorted by subject ↑" in status(app)
        after = [thread_list.rows.peek(i).subject for i in range(len(thread_list.rows))]
        assert sorted(after) == sorted(before) and after != before
        await pilot.press("o")  # no size key here: back to date
        await settle(pilot)
        assert "sorted by date ↓" in status(app)
        await pilot.press("z")
        await settle(pilot)
        assert "thread tree" not in status(app)
        assert any("rows are threads already" in n.message for n in app._notifications)
