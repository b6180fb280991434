"""Issue 35: r and f at aerc's speed in a fresh process. The dialogs' modules and stylesheet are
made ready while the list is read (not on the first r or f), and the reply to the message in
the reading pane is built while it is read, so r only shows it; what was built belongs to the
message as read and is never shown for another. Against the real Dovecot behind a proxy."""

from __future__ import annotations

import pytest
from textual.widgets import Input, TextArea

from mailtriage.tui.controllers import compose
from mailtriage.tui.dialogs import DIALOG_CSS
from mailtriage.tui.dialogs.compose import ComposeDialog
from mailtriage.tui.panes.reader import ReaderPane
from tests.tui.helpers import make_app, screen_text, settle
from tests.tui.test_account_folders import open_inbox
from tests.tui.test_imap_network import wait_until
from tests.tui.test_read_ahead import BODY, held_project  # noqa: F401 (a fixture)

# What they test is made 0.3 s after the first list (off in the other TUI tests: tests/tui/conftest.py).
pytestmark = pytest.mark.usefixtures("dialogs_ahead")


def counted(monkeypatch, session, name: str) -> list[tuple]:
    """A spy that calls through: each call of ``session.<name>`` is recorded."""
    calls: list[tuple] = []
    real = getattr(session, name)

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)
    monkeypatch.setattr(session, name, spy)
    return calls


def started_screens(monkeypatch) -> list:
    """A spy that calls through: the screens the compose controller starts ahead, hidden."""
    from mailtriage.tui.controllers import compose

    started: list = []
    real = compose.start_screen

    def spy(app, screen):
        started.append(screen)
        real(app, screen)
    monkeypatch.setattr(compose, "start_screen", spy)
    return started


def frames_of(app, monkeypatch, screen_of) -> list[tuple[str, str, str | None]]:
    """A spy that calls through: each frame ``App._display`` gets (headless, it writes nothing) for
    the screen ``screen_of()`` names: (its kind, the text it writes, Textual's own full update of
    that screen at that moment for its first frame, else None)."""
    from mailtriage.tui.textual_private import full_frame

    frames: list = []
    real = app._display

    def display(screen, renderable):
        if renderable is not None and screen is screen_of():
            text = renderable.render_segments(app.console)
            own = None if frames else full_frame(screen, app.console)
            frames.append((type(renderable).__name__, text, own))
        return real(screen, renderable)
    monkeypatch.setattr(app, "_display", display)
    return frames


def dialog_ahead(app) -> ComposeDialog | None:
    """The compose dialog made ahead, hidden, for the reply to the message in the reading pane."""
    kept = app.main.composing._dialog_ahead
    return None if kept is None else kept[1]


async def prepared_dialog_ahead(app, pilot) -> ComposeDialog:
    """Into INBOX, Enter on the newest message: its reply's dialog made ahead, once laid out and
    rendered hidden (it has settled)."""
    await open_inbox(app, pilot)
    await pilot.press("enter")
    await settle(pilot)
    dialog = dialog_ahead(app)
    assert dialog is not None
    await wait_until(pilot, lambda: dialog.prepared)
    return dialog


async def r_while_the_read_is_held(app, pilot, proxy) -> None:
    """Enter and r on the message while the server holds its read (no dialog meanwhile), then
    the read let go: until the compose dialog shows, settled."""
    proxy.hold()
    try:
        await pilot.press("enter", "r")
        await pilot.pause()
        assert not isinstance(app.screen, ComposeDialog)
    finally:
        proxy.release()
    await wait_until(pilot, lambda: isinstance(app.screen, ComposeDialog))
    await settle(pilot)


async def test_the_first_dialog_finds_its_stylesheet_and_widgets_ready(held_project):
    """A screen that brings its own CSS file makes Textual parse every stylesheet again and
    restyle every widget on its push: done once the list is shown, the push adds no source."""
    project, _ = held_project
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await wait_until(pilot, lambda: app.stylesheet.has_source(str(DIALOG_CSS)))
        await settle(pilot)
        before = set(app.stylesheet.source)
        await pilot.press("enter", "r")
        await wait_until(pilot, lambda: isinstance(app.screen, ComposeDialog))
        assert f"> {BODY}" in screen_text(app)
        assert set(app.stylesheet.source) - before == set()


async def test_the_dialogs_get_ready_once_the_first_list_is_painted_with_no_timer(held_project, monkeypatch):
    """Made 0.3 s after the first list (a timer), the dialogs' stylesheet, widgets and the empty
    compose dialog were still being made when a habit user's Enter and r came, a fresh process's
    first reply (bench_habits, reply11: r 0.05-0.14 s against ~0.02 once they were ready). They
    start as soon as the first list is painted: here no timer of the main screen ever fires, and
    they are ready once the app has settled after its first list."""
    from mailtriage.tui.screens.main import MainScreen

    real = MainScreen.set_timer

    def held(self, delay, callback=None, *, name=None, pause=False):
        return real(self, delay, callback, name=name, pause=True)  # made, never resumed
    monkeypatch.setattr(MainScreen, "set_timer", held)
    project, _ = held_project
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await wait_until(pilot, lambda: app.main.threads.thread_list.rows.peek(0) is not None)
        await settle(pilot)
        assert app.stylesheet.has_source(str(DIALOG_CSS))
        blank = app.main.composing._blank
        assert blank is not None and blank.fillable


async def test_what_the_dialogs_ahead_made_is_frozen_out_of_the_collectors_way(held_project):
    """As the app freezes what start-up made (``freeze_gc_after_start``), the dialogs' modules
    and stylesheet made ahead are frozen once they are ready: a full collection while r mounts
    the dialog does not walk them (issue 35)."""
    import gc  # why: only this test looks at the collector

    project, _ = held_project
    app = make_app(project)
    app.freeze_gc_after_start = True
    try:
        async with app.run_test(size=(140, 44)) as pilot:
            await open_inbox(app, pilot)
            await wait_until(pilot, lambda: app.stylesheet.has_source(str(DIALOG_CSS)))
            await settle(pilot)
            made_ahead = app.stylesheet.source[(str(DIALOG_CSS), "")]
            assert not any(o is made_ahead for o in gc.get_objects()), "not frozen (gc.get_objects lists it)"
    finally:
        gc.unfreeze()


async def test_the_reply_is_built_while_the_message_is_read_and_r_only_shows_it(held_project, monkeypatch):
    project, _ = held_project
    app = make_app(project)
    built = counted(monkeypatch, app.session, "personal_forms")
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await settle(pilot)
        assert len(built) == 1  # as the newest message was read ahead, before Enter
        await pilot.press("enter")
        await settle(pilot)
        assert len(built) == 1  # and not again once it is read
        # its dialog is made ready too (mounted, filled), not shown (the reader is)
        made = dialog_ahead(app)
        assert isinstance(made, ComposeDialog) and made.is_running
        assert not isinstance(app.screen, ComposeDialog)
        assert BODY in screen_text(app) and "Goes to" not in screen_text(app)
        await pilot.press("r")
        await pilot.pause()
        assert app.screen is made  # in the key's own turn, the dialog made ahead
        assert f"> {BODY}" in screen_text(app)
        assert len(built) == 1
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("r")  # again: the same message as read, the same draft
        await pilot.pause()
        assert isinstance(app.screen, ComposeDialog) and len(built) == 1


async def test_a_reply_built_ahead_is_dropped_when_another_message_is_read(held_project, monkeypatch):
    project, _ = held_project
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("enter")  # the personal message: its reply is built ahead
        await settle(pilot)
        first = dialog_ahead(app)
        assert first is not None and BODY in first.query_one("#compose-body", TextArea).text
        await pilot.press("q", "down", "enter")  # the report to the security list, read
        await wait_until(pilot, lambda: "Body of report 1." in screen_text(app))
        await settle(pilot)  # the personal message's reply is gone from its hidden dialog
        # (the dialog itself is removed, or kept and filled with the report's reply)
        assert not first.is_running or BODY not in first.query_one("#compose-body", TextArea).text
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, ComposeDialog))
        await settle(pilot)
        dialog = app.screen
        assert dialog.query_one("#compose-subject", Input).value == "Re: Heap overflow in the frob parser"
        assert BODY not in dialog.query_one("#compose-body", TextArea).text


async def test_r_while_the_reply_is_built_ahead_waits_for_it_and_builds_nothing_again(held_project, monkeypatch):
    """The report answers a security-list thread: its reply is built from the project's thread
    (read through the proxy). r typed while the server is held shows that build when it ends,
    and no hidden dialog of it is mounted (and laid out) beside the one r opens."""
    project, proxy = held_project
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("down")
        await settle(pilot)  # the report is read ahead
        built = counted(monkeypatch, app.session, "reply_forms")
        hidden = started_screens(monkeypatch)
        await r_while_the_read_is_held(app, pilot, proxy)
        assert app.screen.query_one("#compose-subject", Input).value == "Re: Heap overflow in the frob parser"
        assert len(built) == 1
        assert app.main.query_one(ReaderPane).thread is not None
        assert hidden == []  # the build r waited for mounted no hidden dialog beside r's own


async def test_the_next_message_read_stops_the_reply_built_ahead_for_the_one_before(held_project, monkeypatch):
    """One reply built ahead at a time (issue 35): the report's reply needs the project's thread
    (the server is held); reading the personal message next cancels that build, which stops
    before it builds the report's forms, and r shows the personal message's reply."""
    project, proxy = held_project
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("down")
        await settle(pilot)  # the report is read ahead
        built = counted(monkeypatch, app.session, "reply_forms")
        proxy.hold()
        try:
            await pilot.press("enter")  # the report's reply is built ahead: it waits for the server
            await wait_until(pilot, lambda: any(w.group == "reply-ahead" for w in app.main.workers))
            await pilot.press("q", "up", "enter")  # the personal message, read ahead already
            await wait_until(pilot, lambda: BODY in screen_text(app))
        finally:
            proxy.release()
        await settle(pilot)
        assert built == []  # the report's build stopped at the cancel
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, ComposeDialog))
        assert f"> {BODY}" in screen_text(app)


async def _shown_by_r(app, pilot) -> str:
    await pilot.press("r")
    await settle(pilot)
    assert isinstance(app.screen, ComposeDialog)
    shot = app.export_screenshot()
    await pilot.press("escape")
    await settle(pilot)
    return shot


async def test_the_dialog_made_ahead_shows_as_the_one_made_on_the_key_without_a_restyle(held_project, monkeypatch):
    """Issue 35: the push of the dialog mounted ahead skips Textual's restyle of every node when
    nothing it depends on changed since it was mounted; the screen is the same as the dialog
    composed on the key (the second r), also after a theme change while it waited."""
    from mailtriage.tui.controllers.compose import Compose

    project, _ = held_project
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert dialog_ahead(app) is not None
        restyled: list = []
        real = ComposeDialog.update_node_styles

        def spy(self, *args, **kwargs):
            restyled.append(self)
            return real(self, *args, **kwargs)
        monkeypatch.setattr(ComposeDialog, "update_node_styles", spy)
        ahead = await _shown_by_r(app, pilot)
        assert restyled == []  # shown as mounted
        again = await _shown_by_r(app, pilot)  # a second r composes its own dialog
        assert ahead == again
        # a theme changed while the dialog waited, mounted ahead: restyled on the push
        await pilot.press("q")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert dialog_ahead(app) is not None and isinstance(app.main.composing, Compose)
        app.theme = "mailtriage-light" if app.theme != "mailtriage-light" else "mailtriage-dark"
        await settle(pilot)
        themed = await _shown_by_r(app, pilot)
        assert themed != ahead and themed == await _shown_by_r(app, pilot)


async def test_the_dialog_made_ahead_is_laid_out_and_rendered_before_r_which_paints_it_whole(held_project,
                                                                                         monkeypatch):
    """Issue 35: the push of the dialog mounted ahead laid out its widgets and rendered every line
    of them (its footer's keys most) between r and the draft on the screen. Laid out and rendered
    while hidden, its push renders no line of a widget of it again and still paints the whole
    screen (a full update, not the lines changed since). reply12: that frame, the whole screen
    composed from cached lines (~5 ms of r's UI time in tmux), is rendered ahead too: the push
    composes nothing and writes what Textual's own full update of the dialog writes."""
    from textual._compositor import Compositor
    from textual.widget import Widget
    from textual.widgets import TextArea

    project, _ = held_project
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        hidden = [await prepared_dialog_ahead(app, pilot)]
        rendered: list[str] = []
        full: list[bool] = []

        def counting(real):
            def render_line(self, y):
                if self.screen is hidden[0] and self is not hidden[0]:
                    rendered.append(type(self).__name__)
                return real(self, y)
            return render_line
        monkeypatch.setattr(Widget, "render_line", counting(Widget.render_line))
        monkeypatch.setattr(TextArea, "render_line", counting(TextArea.render_line))
        real_full = Compositor.render_full_update

        def render_full_update(self, *args, **kwargs):
            full.append(app.screen is hidden[0])
            return real_full(self, *args, **kwargs)
        monkeypatch.setattr(Compositor, "render_full_update", render_full_update)
        frames = frames_of(app, monkeypatch, lambda: hidden[0])
        await pilot.press("r")
        await settle(pilot)
        assert app.screen is hidden[0] and f"> {BODY}" in screen_text(app)
        assert rendered == []
        _, written, own = frames[0]
        assert full[:1] == [True]  # Textual's own full update of it, made by the spy for the comparison
        assert written == own and f"> {BODY}" in written  # the whole screen, as Textual writes it
        assert len(full) == 1  # and the push composed none itself


async def test_a_frame_rendered_ahead_is_not_written_after_the_terminal_was_resized(held_project, monkeypatch):
    """reply12: the frame the dialog's push writes is rendered while it is hidden, at the
    terminal's size then. Resized since, the push lays the dialog out at the new size and draws
    Textual's own frame; the frame kept ahead (the old size) is never written over it."""
    project, _ = held_project
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        hidden = [await prepared_dialog_ahead(app, pilot)]
        await pilot.resize_terminal(120, 40)
        await settle(pilot)
        frames = frames_of(app, monkeypatch, lambda: hidden[0])
        await pilot.press("r")
        await settle(pilot)
        assert app.screen is hidden[0] and f"> {BODY}" in screen_text(app)
        kinds = [kind for kind, _, _ in frames]
        assert "_WrittenAhead" not in kinds, kinds
        assert frames[0][1] == frames[0][2]  # Textual's own full update at the new size


async def test_the_first_reply_fills_the_empty_dialog_mounted_ahead_and_shows_as_one_made_on_the_key(
        held_project, monkeypatch):
    """Issue 35: composing, mounting and styling the compose dialog's ~25 widgets was most of an r
    typed as the body shows. An empty one is mounted, hidden, while the list is read; the reply
    built ahead fills it (no screen started after Enter), and r shows it. Filled, it shows what a
    dialog composed with the same forms shows (the second r composes its own). The fill restyles
    none of its widgets (reply11: an Input's first new value adds its -valid class, a restyle of
    it and its parts, ~1.3 ms of a ~2.6 ms fill; mounted ahead, its Inputs carry the class)."""
    from textual.dom import DOMNode

    project, _ = held_project
    monkeypatch.setattr(compose, "ROWS_AHEAD", False)  # the fill after Enter (or on r)
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await wait_until(pilot, lambda: app.main.composing._blank is not None and app.main.composing._blank.fillable)
        blank = app.main.composing._blank
        assert blank.query_one("#compose-body", TextArea).text == ""
        await settle(pilot)
        started = started_screens(monkeypatch)
        restyled: list[str] = []
        real = DOMNode.update_node_styles

        def spy(self, *args, **kwargs):
            if self is blank or blank in self.ancestors:
                restyled.append(f"{type(self).__name__}#{self.id}")
            return real(self, *args, **kwargs)
        monkeypatch.setattr(DOMNode, "update_node_styles", spy)
        await pilot.press("enter")
        await settle(pilot)
        assert dialog_ahead(app) is blank and started == []
        assert BODY in blank.query_one("#compose-body", TextArea).text
        assert restyled == []
        monkeypatch.setattr(DOMNode, "update_node_styles", real)
        await pilot.press("r")
        await settle(pilot)
        assert app.screen is blank and f"> {BODY}" in screen_text(app) and "Goes to" in screen_text(app)
        filled = app.export_screenshot()
        await pilot.press("escape")
        await settle(pilot)
        assert started == [] and not blank.is_running  # shown, then dismissed (Esc)
        fresh = await _shown_by_r(app, pilot)  # the second r composes its own on the key
        assert filled == fresh


async def test_a_compose_on_the_key_fills_the_empty_dialog_too(held_project, monkeypatch):
    """The report's reply is not made ahead while the server is held: r waits for it, and its
    dialog is the empty one mounted ahead, filled (no screen started on the key), showing what
    a dialog composed on the key shows (its receipt/reply switch and key included)."""
    project, proxy = held_project
    monkeypatch.setattr(compose, "ROWS_AHEAD", False)  # the fill after Enter (or on r)
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await wait_until(pilot, lambda: app.main.composing._blank is not None and app.main.composing._blank.fillable)
        blank = app.main.composing._blank
        await pilot.press("down")
        await settle(pilot)  # the report is read ahead
        started = started_screens(monkeypatch)
        frames = frames_of(app, monkeypatch, lambda: blank)
        await r_while_the_read_is_held(app, pilot, proxy)
        assert app.screen is blank and started == []
        # filled and pushed in one turn, its push lays it out: one full frame, not that and the
        # push's repaint of the same screen at once again (reply12: two frames of 23 kB in tmux)
        kinds = [kind for kind, _, _ in frames]
        assert kinds[:1] == ["LayoutUpdate"] and kinds[1:2] != ["LayoutUpdate"], kinds
        assert frames[0][1] == frames[0][2]  # as Textual's own full update of it
        assert blank.query_one("#compose-subject", Input).value == "Re: Heap overflow in the frob parser"
        filled = app.export_screenshot()  # with the receipt/reply switch (^r) the empty one had not
        assert "Receipt/reply" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert filled == await _shown_by_r(app, pilot)  # the second r composes its own on the key


async def test_the_dialog_mounted_ahead_blinks_only_once_shown(held_project, monkeypatch):
    """Hidden, each blink of its cursor was a render and a prepare of the dialog, while the
    person read the list (issue 35): its cursor blinks (as the setting says) from the show."""
    project, _ = held_project
    monkeypatch.setattr(compose, "ROWS_AHEAD", False)  # the empty one, seen before Enter
    app = make_app(project)
    app.cursor_blink = True
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await wait_until(pilot, lambda: app.main.composing._blank is not None and app.main.composing._blank.fillable)
        blank = app.main.composing._blank
        assert blank.query_one("#compose-body", TextArea).cursor_blink is False
        await pilot.press("enter")
        await settle(pilot)
        assert dialog_ahead(app) is blank and blank.query_one("#compose-body", TextArea).cursor_blink is False
        await pilot.press("r")
        await pilot.pause()
        assert app.screen is blank and blank.query_one("#compose-body", TextArea).cursor_blink is True
