"""The private Textual members tui/ touches exist on the installed Textual (issue 36 §4).

One check per member of ``tui/textual_private.py``'s ``MEMBERS``: a Textual upgrade that
renames or reshapes one fails here, naming it, instead of at start-up or on a notification.
And no other module of tui/ reads a private member our code does not define.
"""

from __future__ import annotations

import pytest
from textual.app import App
from textual.notifications import Notification

from mailtriage.tui import textual_private
from mailtriage.tui.textual_private import MEMBERS
from tests.core.private_members import SEAMS, check_member, private_reads_outside


@pytest.mark.parametrize("module, owner, member, use", MEMBERS, ids=[f"{o}.{m}" for _, o, m, _ in MEMBERS])
def test_the_private_member_is_still_there(module, owner, member, use):
    check_member(module, owner, member, use, "tui/textual_private.py")


def test_no_other_module_of_the_tui_reads_a_private_member():
    found = private_reads_outside("tui", SEAMS)
    assert found == [], "private members of a library read outside tui/textual_private.py: " + ", ".join(found)


def test_the_scan_sees_a_private_member(tmp_path):
    (tmp_path / "tui").mkdir()
    (tmp_path / "tui" / "x.py").write_text("from textual._x import _y\n\n\nclass A:\n    def f(self):\n"
                                           "        self._mine = 1\n        return self._mine, self._notifications\n")
    assert private_reads_outside("tui", (), root=tmp_path, folders=("tui",)) == ["tui/x.py: _notifications",
                                                                                 "tui/x.py: _y"]


def test_only_a_notification_still_shown_is_withdrawn():
    app = App()
    shown, gone = Notification("a", "t"), Notification("b", "t")
    app._notifications.add(shown)
    textual_private.withdraw(app, gone)
    assert textual_private.notifications_shown(app)
    textual_private.withdraw(app, shown)
    assert not textual_private.notifications_shown(app)


def _cyclic_garbage_of_a_divided_strip() -> int:
    import gc

    from rich.segment import Segment
    from textual.strip import Strip

    # Only the youngest generation: everything made here is in it (the collector is off between),
    # and it was emptied first, so what it finds is this strip's. Full collections walked the
    # worker's whole heap (a million objects late in a run): 4-50 s of the suite for 4 objects.
    gc.collect(0)
    gc.disable()
    try:
        strip = Strip([Segment("abc"), Segment("def")])
        assert [s.text for s in strip.divide([6])] == ["abcdef"]
        assert [s.text for s in strip.divide([2, 6])] == ["ab", "cdef"]  # other cuts: Textual's own
        del strip
        return gc.collect(0)
    finally:
        gc.enable()


def test_a_strip_divided_at_its_own_length_leaves_no_cyclic_garbage():
    """Issue 39: each painted line left a strip in a reference cycle (Textual caches [self]),
    some 100,000 objects a minute for the full collections to find in a storm."""
    textual_private.acyclic_strip_divide(False)
    try:
        # Textual's own still makes the cycle; when an upgrade fixes it, drop ours.
        assert _cyclic_garbage_of_a_divided_strip() > 0
    finally:
        textual_private.acyclic_strip_divide()
    assert _cyclic_garbage_of_a_divided_strip() == 0


async def test_a_partial_update_renders_the_lines_it_updates_and_writes_what_textual_writes():
    """Issue 39: at each key Textual's partial update rendered every widget whole (the header,
    the footer, the reader: eleven widgets, some 40 lines each) to keep two lines of the list.
    Ours renders the widgets the update meets, over its lines only, none behind a widget that
    covers the update (issue 33: the reader's containers), and writes the same bytes."""
    from textual.app import ComposeResult
    from textual.containers import Horizontal, Vertical
    from textual.widgets import Static

    rendered: list[tuple[str, int]] = []

    class Counted(Static):
        def render_lines(self, crop):
            rendered.append((str(self.id), crop.height))
            return super().render_lines(crop)

    class CountedColumn(Vertical):
        def render_lines(self, crop):
            rendered.append((str(self.id), crop.height))
            return super().render_lines(crop)

    class Host(App):
        CSS = "#side { width: 20; } Vertical { width: 1fr; } #rows { height: 1fr; } #status { height: 1; }"

        def compose(self) -> ComposeResult:
            yield Counted("head", id="head")
            with Horizontal():
                yield Counted("\n".join(f"side {i}" for i in range(20)), id="side")
                with CountedColumn(id="column"):  # behind the status line: it shows nowhere in the update
                    yield Counted("\n".join(f"row {i}" for i in range(20)), id="rows")
                    yield Counted("status", id="status")
            yield Counted("foot", id="foot")

    app = Host()
    async with app.run_test(size=(60, 30)) as pilot:
        await pilot.pause()
        compositor = textual_private.compositor(app.screen)
        status = app.query_one("#status", Static)
        written = {}
        try:  # ours is put back even when an assertion fails: later tests in this worker draw with it
            for ours in (False, True):
                textual_private.cropped_renders(ours)
                status.update(f"status {ours}", layout=False)
                status.update("status", layout=False)
                compositor.update_widgets({status})  # what the screen's update timer does first
                rendered.clear()
                written[ours] = compositor.render_update().render_segments(app.console)
                widgets = {name for name, _ in rendered}
                if ours:
                    assert widgets == {"status"} and all(height == 1 for _, height in rendered)
                else:  # Textual's own, whole: when an upgrade renders the update's lines only, drop ours
                    assert {"head", "side", "rows", "foot", "column"} <= widgets
            assert written[True] == written[False] and "status" in written[True]
        finally:
            textual_private.cropped_renders()


def test_main_screen_redeclares_textuals_own_focused_reactive_but_for_its_repaint():
    """tui/screens/main.py declares ``focused`` again, as Textual's Screen does, with
    ``repaint=False`` (a focus change repainted the whole screen, issue 33). It leans on how
    Textual declares it: when an upgrade renames it, makes it something else than a reactive, or
    changes how it is declared, ours would shadow it silently (focus kept in a dead attribute, or
    the upstream change undone): fail here instead."""
    from textual.reactive import Reactive
    from textual.screen import Screen

    from mailtriage.tui.screens.main import MainScreen

    upstream, ours = vars(Screen).get("focused"), vars(MainScreen).get("focused")
    assert isinstance(upstream, Reactive), "Screen.focused is no longer a Reactive: update tui/screens/main.py"
    assert isinstance(ours, Reactive) and upstream._repaint and not ours._repaint
    declared = ("_default", "_layout", "_init", "_always_update", "_run_compute", "_recompose", "_bindings",
                "_toggle_class")
    assert [getattr(ours, name) for name in declared] == [getattr(upstream, name) for name in declared], (
        "Screen.focused is declared otherwise now: update tui/screens/main.py")


async def test_output_is_pending_while_the_writer_thread_holds_text_for_the_terminal():
    """Issue 35: the work after the body's frame waits until the frame is written, not only drawn."""
    import os
    import time

    from textual.drivers._writer_thread import WriterThread
    from textual.drivers.linux_driver import LinuxDriver

    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)  # the test reads what there is, never waits for more
    app = App()
    driver = LinuxDriver(app)  # not started: the terminal is left alone
    assert not textual_private.output_pending(app)  # before it runs: no writer
    terminal = os.fdopen(write_end, "w")
    writer = WriterThread(terminal)
    driver._writer_thread = writer  # as its start_application_mode holds it
    app._driver = driver
    writer.start()
    deadline = time.monotonic() + 30

    def read_some() -> None:
        assert time.monotonic() < deadline, "the writer thread did not catch up"
        try:
            os.read(read_end, 65536)
        except BlockingIOError:
            time.sleep(0.001)
    try:
        for _ in range(20):  # more than the pipe takes (the queue holds 30): the writer blocks, text waits
            writer.write("x" * 8192)
        assert textual_private.output_pending(app)
        while textual_private.output_pending(app):  # the terminal reads: the writer catches up
            read_some()
        assert not textual_private.output_pending(app)
    finally:
        while textual_private.output_pending(app):
            read_some()
        writer.write(None)  # type: ignore[arg-type]  # its stop, as WriterThread.stop puts it
        while writer.is_alive():
            read_some()
            writer.join(0.01)
        terminal.close()
        os.close(read_end)
