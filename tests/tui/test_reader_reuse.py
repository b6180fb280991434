"""Issue 33: the reading pane keeps its widgets from one thread to the next (updated in place,
not removed and mounted again on every Enter). What a reader sees must not change: a shorter
thread after a longer one shows only its own messages (nothing of the longer one is left
visible or readable), a longer one after a shorter one shows all of its own, notes come and
go with their thread, and n / p step through the messages shown.

Pilot tests on a real mbox project (newest thread first).
"""

from __future__ import annotations

from textual.widgets import Static

from mailtriage.tui.panes.reader import POOL_KEPT, ReaderPane, ThreadView
from tests.tui.helpers import mail, make_app, mbox_project, reader_text, settle, until


def three_and_one(folder):
    root = "<long-1@example.com>"
    filler = "".join(f"line {n} of the report\n" for n in range(25))  # taller than the pane: n scrolls
    return mbox_project(folder, messages=[
        mail("Long thread", "Ana Reporter <ana@example.com>", "Thu, 01 Oct 2026 09:00:00 +0000", root,
             "First of three.\n" + filler),
        mail("Re: Long thread", "Priya Raman <priya@frob.example>", "Thu, 01 Oct 2026 10:00:00 +0000",
             "<long-2@frob.example>", "Second of three.\n" + filler, in_reply_to=root),
        mail("Re: Long thread", "Ana Reporter <ana@example.com>", "Thu, 01 Oct 2026 11:00:00 +0000",
             "<long-3@example.com>", "Third of three.\n" + filler, in_reply_to=root),
        mail("Single note", "Bob Builder <bob@example.net>", "Wed, 30 Sep 2026 09:00:00 +0000",
             "<single-1@example.net>", "The only message.\n"),
    ])


def shown(app) -> list[Static]:
    """The reader's widgets a user can see: every displayed one (an empty header still shows its
    background and margin)."""
    view = app.screen.query_one(ThreadView)
    return [w for w in view.query(Static) if w.display]


def plain(widget: Static) -> str:
    return getattr(widget.content, "plain", str(widget.content))


def shown_headers(app) -> list[str]:
    return [(plain(w).splitlines() or [""])[0] for w in shown(app) if w.has_class("message-header")]


async def open_row(pilot, row: int) -> None:
    app = pilot.app
    from mailtriage.tui.panes.thread_list import ThreadList

    listing = app.screen.query_one(ThreadList)
    listing.focus()
    await settle(pilot)
    listing.cursor = row
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)


async def a_shorter_thread_after_a_longer_one_shows_only_its_own_messages(app, pilot) -> None:
    from textual.selection import SELECT_ALL

    reader = app.screen.query_one(ReaderPane)
    await open_row(pilot, 0)
    assert reader.thread.subject == "Long thread"
    assert shown_headers(app) == ["Message 1/3", "Message 2/3", "Message 3/3"]
    widgets = set(app.screen.query_one(ThreadView).query(".message-header"))
    # A text selection in one thread is not carried onto the next (was
    # test_a_text_selection_in_one_thread_is_not_carried_onto_the_next, an app of its own): the
    # reader's widgets are kept from thread to thread, so a mouse selection made in one thread's
    # body must not stay on the kept widget, highlighting (and copying, Ctrl+C) the next thread's
    # text that the user never selected.
    body = next(w for w in shown(app) if w.has_class("message-body"))
    app.screen.selections = {body: SELECT_ALL}  # what a mouse drag over the first body sets
    await settle(pilot)
    assert "First of three." in (app.screen.get_selected_text() or "")

    await open_row(pilot, 1)
    assert reader.thread.subject == "Single note"
    assert shown_headers(app) == ["Message 1/1"]
    text = reader_text(app)
    assert "The only message." in text
    selected = app.screen.get_selected_text()
    assert selected is None or "The only message." not in selected, selected
    assert all(w.text_selection is None for w in shown(app))
    assert not any(old in text for old in ("First of three", "Second of three", "Third of three"))
    # the same widgets, updated: not removed and mounted again
    assert set(app.screen.query_one(ThreadView).query(".message-header")) == widgets
    await pilot.press("n")  # the last message: said, not a jump to a hidden one
    await settle(pilot)
    assert app.screen.query_one(ThreadView).scroll_y == 0
    assert any("last message" in str(n.message) for n in app._notifications)

    await open_row(pilot, 0)  # longer again: every message shown, n steps to each
    assert shown_headers(app) == ["Message 1/3", "Message 2/3", "Message 3/3"]
    view = app.screen.query_one(ThreadView)
    assert view.scroll_y == 0
    assert all(f"{n} of three." in reader_text(app) for n in ("First", "Second", "Third"))
    await pilot.press("n")
    await settle(pilot)
    assert view.message_in_view() == 1


async def notes_come_and_go_with_their_thread_and_an_empty_thread_says_so(app, pilot) -> None:
    from mailtriage.application import Thread, ThreadId

    reader = app.screen.query_one(ReaderPane)
    await open_row(pilot, 0)
    long_thread = reader.thread
    noted = Thread(long_thread.thread_id, long_thread.subject, long_thread.messages,
                   notes=("read from the fallback archive",))
    reader.show_thread(noted, None)
    await settle(pilot)
    assert "Note: read from the fallback archive" in [plain(w) for w in shown(app)]

    reader.show_thread(Thread(ThreadId("msgid", "<none@example.com>"), "Empty", ()), None)
    await settle(pilot)
    assert [plain(w) for w in shown(app)] == ["This thread has no messages."]

    many = Thread(long_thread.thread_id, long_thread.subject, long_thread.messages * 4)  # 12 messages
    reader.show_thread(many, None)
    await settle(pilot)
    assert shown_headers(app) == [f"Message {n}/12" for n in range(1, 13)]

    await open_row(pilot, 1)
    texts = [plain(w) for w in shown(app)]
    assert not any("Note:" in t or "no messages" in t for t in texts)
    assert shown_headers(app) == ["Message 1/1"]
    # a long thread's extra widgets are let go, not kept hidden for ever
    assert len(app.screen.query_one(ThreadView).query(".message-header")) <= POOL_KEPT


async def the_first_thread_opened_fills_widgets_mounted_ahead_and_none_is_mounted_or_removed(app, pilot) -> None:
    """Issue 35: the first Enter mounted the notes and a message's header and body and removed
    the hint; each mount, removal and first size asked Textual for a second layout, run in a
    frame after the body's that an r typed at once waited behind. Now they are mounted hidden
    with the pane, the hint is hidden, and a message's size is set without that ask."""
    view = app.screen.query_one(ThreadView)
    before = list(view.children)
    assert [plain(w) for w in shown(app)] == ["Open a thread with Enter (or a click) to read it here."]
    await pilot.press("down", "enter")  # the single note: one message
    await settle(pilot)
    assert list(view.children) == before  # nothing mounted, nothing removed
    header, body = [w for w in shown(app) if w.has_class("message-header") or w.has_class("message-body")]
    assert "The only message." in plain(body) and "Bob Builder" in plain(header)
    assert body.size.height >= 1 and body.virtual_size.height >= body.size.height  # its size set all the same
    await pilot.press("q", "up", "enter")  # the longer thread: two more pairs mounted
    await settle(pilot)
    assert len([w for w in shown(app) if w.has_class("message-body")]) == 3


# -- three checks on one app (issue 36 §7: an app started and settled is most of such a test's
# CPU). The first needs the app as started (no thread opened yet); each later one opens the rows
# it needs, so none depends on what the one before left. A failure's traceback names the check.

async def test_the_reader_reuses_its_widgets_from_thread_to_thread(tmp_path):
    app = make_app(three_and_one(tmp_path / "p"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await the_first_thread_opened_fills_widgets_mounted_ahead_and_none_is_mounted_or_removed(app, pilot)
        await a_shorter_thread_after_a_longer_one_shows_only_its_own_messages(app, pilot)
        await notes_come_and_go_with_their_thread_and_an_empty_thread_says_so(app, pilot)


async def test_a_thread_read_ahead_is_shown_with_the_texts_made_where_it_was_read(tmp_path, monkeypatch):
    """The thread of the row the cursor rests on is read ahead on a worker, and what the reader
    shows of it (headers and bodies, inert) is made there too: Enter makes none of it on the
    UI thread, and shows the same text."""
    import threading

    from mailtriage.tui.panes import reader as reader_module
    from mailtriage.tui.panes.thread_list import ThreadList

    made_on: list[bool] = []  # per header made: on the UI (main) thread?
    header_text = reader_module.header_text

    def recorded(*args, **kwargs):
        made_on.append(threading.current_thread() is threading.main_thread())
        return header_text(*args, **kwargs)

    monkeypatch.setattr(reader_module, "header_text", recorded)
    app = make_app(three_and_one(tmp_path / "project"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        listing = app.screen.query_one(ThreadList)
        await pilot.press("j")  # the cursor moves to the single note and rests there: read ahead
        await until(pilot, lambda: app.screen.reading.thread_ahead.holds(listing.current), "the read ahead")
        assert made_on == [False]  # its one header, made on the worker that read it
        await pilot.press("enter")
        await settle(pilot)
        assert made_on == [False]  # nothing made at Enter
        assert "The only message." in reader_text(app) and "Single note" in reader_text(app)
        assert shown_headers(app) == ["Message 1/1"]
