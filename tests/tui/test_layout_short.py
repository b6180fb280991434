"""Issue 35 §2, 80x24: until a thread is opened the empty reader folds to its hint and the
thread list has the rows (the empty reader took 13 of 22 rows, the list 9); the first thread
opened gives the reader its rows back. Taller terminals keep the reader's rows (tui/layout.py).
"""

from __future__ import annotations

from tests.tui.helpers import make_app, mbox_project, settle
from tests.tui.test_snapshots import project, shot, workdir  # noqa: F401 (fixture)


def rows(app) -> tuple[int, int]:
    """The thread pane's and the reader pane's rows (with their borders)."""
    return app.screen.query_one("#thread-pane").region.height, app.screen.query_one("#reader-pane").region.height


def the_list_has_the_rows(app) -> None:
    threads, reader = rows(app)
    assert (threads, reader) == (18, 4)  # of the 22 between the title and the footer: the hint and its status line


def test_main_narrow_start_dark(snap_compare, workdir):  # noqa: F811
    app = make_app(project(workdir))
    assert snap_compare(app, terminal_size=(80, 24), run_before=shot(check=the_list_has_the_rows))


async def test_the_reader_has_its_rows_once_a_thread_is_opened_or_while_it_has_the_focus(tmp_path):
    mbox_project(tmp_path / "p")
    app = make_app(tmp_path / "p")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert rows(app) == (18, 4)
        await pilot.press("tab")  # the empty reader focused unfolds while it has the focus
        await settle(pilot)
        threads, reader = rows(app)
        assert reader > threads and threads + reader == 22
        await pilot.press("3")  # the list again: folded
        await settle(pilot)
        assert rows(app) == (18, 4)
        await pilot.press("enter")
        await settle(pilot)
        threads, reader = rows(app)
        assert reader > threads and threads + reader == 22
        await pilot.press("q")  # back in the list: the thread stays in the reader, its rows too
        await settle(pilot)
        threads, reader = rows(app)
        assert reader >= 11 and threads + reader == 22


async def test_a_taller_terminal_keeps_the_empty_reader_open(tmp_path):
    mbox_project(tmp_path / "p")
    app = make_app(tmp_path / "p")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        threads, reader = rows(app)
        assert threads < reader and threads + reader == 38
