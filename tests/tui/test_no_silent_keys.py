"""Issue 35: no key that silently does nothing. Every binding of the main screen, the thread
list and the reader is pressed on the demo in a state where it cannot act (nothing searched,
no thread open in the reader); each must act (the screen, focus, cursor or text changes), or
not be offered in the footer, or say why (a notification)."""

from __future__ import annotations

import pytest

from mailtriage.application import project_dir
from mailtriage.tui import bindings
from mailtriage.tui.panes.reader import ThreadView
from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.helpers import make_app, screen_text, settle

#: Keys that end the walk or leave the app (their own tests cover them), and the reader's
#: scroll keys, which move an empty view as any pager does (its hint says what to do).
SKIP = {"app.quit", "app.quit_now", "app.help_quit", "reader.down", "reader.up", "reader.page_down",
        "reader.page_up", "reader.half_down", "reader.half_up", "reader.top", "reader.bottom"}


def observe(app) -> tuple:
    view = app.screen.query(ThreadView)
    return (len(app.screen_stack), type(app.screen).__name__, type(app.focused).__name__,
            sorted(app.screen.classes), screen_text(app),
            app.screen.query_one(ThreadList).cursor if app.screen.query(ThreadList) else None,
            view.first().scroll_y if view else None)


def offered(app, binding) -> bool:
    from mailtriage.tui.footer import KeyFooter

    keys = [(key.action, key.disabled) for footer in app.screen.query(KeyFooter) for key in footer.shown()]
    keys += [(key.action, key.has_class("-disabled")) for key in app.screen.query("FooterKey")
             if not isinstance(key.parent, KeyFooter)]  # Textual's own Footer (the small dialogs)
    return any(action == binding.action and not disabled for action, disabled in keys)


async def still(app, pilot) -> tuple:
    """What the screen shows once it keeps still: two captures in a row the same, so a change
    seen after a key is the key's and not the end of something that was still going on (the
    caller has settled the app: no worker runs)."""
    seen = observe(app)
    for _ in range(50):
        await pilot.pause()
        now = observe(app)
        if now == seen:
            return now
        seen = now
    raise AssertionError(f"the screen does not keep still: {seen[:4]}")


async def walk(app, pilot, focus_key: str, groups) -> tuple[list[str], list[str]]:
    """Press every key of ``groups`` with ``focus_key``'s pane focused; returns the keys
    offered that did nothing, and the keys not offered that did nothing (said by neither)."""
    silent: list[str] = []
    hidden: list[str] = []
    await pilot.press(focus_key)
    await settle(pilot)
    pane = type(app.focused)
    for binding in (b for group in groups for b in group if b.id not in SKIP):
        if type(app.focused) is not pane:  # the last key moved the focus: back to the pane
            await pilot.press(focus_key)
            await settle(pilot)
        app.clear_notifications()
        before = await still(app, pilot)
        was_offered = offered(app, binding)
        key = bindings.effective_keys(binding, {})[0]
        await pilot.press(key)
        await settle(pilot)
        said = bool(app._notifications)
        if observe(app) == before and not said:
            (silent if was_offered else hidden).append(f"{key} ({binding.id})")
        while len(app.screen_stack) > 2:  # a dialog it opened: close it, write nothing
            app.pop_screen()
            await settle(pilot)
    return silent, hidden


@pytest.mark.slow  # presses every binding of three contexts (60-110 s at load 10)
async def test_no_key_of_the_list_or_the_reader_silently_does_nothing(demo_dir):
    app = make_app(project_dir(demo_session=True), demo=True)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        reader_silent, reader_hidden = await walk(app, pilot, "4", (bindings.READER,))
        list_silent, list_hidden = await walk(app, pilot, "3", (bindings.THREAD_LIST, bindings.MAIN, bindings.APP))
    # The empty reader is where a newcomer lands first (4, or Tab): its keys say why even
    # where the footer did not offer them. The list's hidden no-ops at the first row (g, Esc
    # with nothing to cancel…) are left as they are.
    print("not offered and silent in the list:", list_hidden)
    assert (reader_silent, reader_hidden, list_silent) == ([], [], [])
