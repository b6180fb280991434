"""reply15 (issue 35): the compose dialog mounted ahead, hidden, is laid out and its frame rendered
while the person reads (r then only shows it). The reply to the row read ahead is filled into it
as that read lands, often just before Enter: its layout and frame (~7 ms of the UI thread) came
between Enter and its body's frame. That work now waits for a key the app has queued, and for
the thread Enter opens (``hold``: the reading controller's ``after_open``)."""

from textual import events
from textual.app import App

from mailtriage.application import ComposeForm
from mailtriage.tui.dialogs.compose import ComposeDialog
from mailtriage.tui.textual_private import start_screen
from tests.tui.test_imap_network import wait_until

REPLY = {"reply": ComposeForm("reply", to=("ann@example.org",), subject="Re: lunch", body="> see you")}


async def test_the_hidden_dialogs_layout_and_frame_wait_for_the_thread_enter_opens():
    app = App()
    held: list = []
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = ComposeDialog.blank(cursor_blink=False)
        dialog.hold = held.append
        start_screen(app, dialog)
        await wait_until(pilot, lambda: held)  # its first layout, held
        assert not dialog.prepared
        held.pop()()
        assert dialog.prepared and held == []
        dialog.fill(REPLY, where="sent from ann")
        await wait_until(pilot, lambda: held)  # the fill's layout and frame, held
        assert not dialog.prepared and not dialog.frame_kept
        held.pop()()
        assert dialog.prepared and dialog.frame_kept


async def test_the_hidden_dialogs_layout_waits_for_a_key_the_app_has_queued(monkeypatch):
    from mailtriage.tui.dialogs import compose

    queued: list[int] = []  # the app's queue at each layout of the hidden dialog (a spy that calls through)
    real = compose.prepare_hidden

    def prepare_hidden(screen, first, frame=False):
        queued.append(screen.app.message_queue_size)
        return real(screen, first, frame)

    monkeypatch.setattr(compose, "prepare_hidden", prepare_hidden)
    app = App()
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = ComposeDialog.blank(cursor_blink=False)
        start_screen(app, dialog)
        await wait_until(pilot, lambda: dialog.prepared)
        dialog.fill(REPLY, where="sent from ann")
        queued.clear()
        app.post_message(events.Key("x", "x"))  # typed as the fill's layout is due
        dialog._prepare()
        await wait_until(pilot, lambda: dialog.prepared and dialog.frame_kept)
        assert queued and all(size == 0 for size in queued)  # the key first
