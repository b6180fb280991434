"""A dialog pushed for the first time is laid out once (issue 35: the confirmed flag's f).

Its push's ScreenResume lays it out at the terminal's size; that reflow counted the screen as
shown and posted it a Resize, whose handler laid the whole dialog out and rendered it again at
the same size: profiled at ~50 ms of the UI thread for the proposal of 200 tagged messages (the
slow half of a bimodal 48 / 103 ms)."""

from __future__ import annotations

from textual.app import App

from mailtriage.application.flows.proposals import Field, Proposal, Write, WriteKind
from mailtriage.tui.dialogs.proposal import ProposalDialog


def flag_proposal(messages: int) -> Proposal:
    proposal = Proposal(f"Flag {messages} messages")
    proposal.writes.append(Write(WriteKind.FLAG, "account work", f"flag {messages} messages",
                                 [Field("Messages", "\n".join(f"message {n}" for n in range(messages)), multiline=True)],
                                 lambda w: None))
    return proposal


class Host(App):
    def __init__(self) -> None:
        super().__init__()
        self.layouts: list[object] = []

    def on_mount(self) -> None:
        dialog = ProposalDialog(flag_proposal(200), cursor_blink=False)
        laid_out = dialog._refresh_layout  # a spy that calls through: each full layout of the dialog

        def counted(size=None, scroll=False):
            self.layouts.append(size)
            return laid_out(size, scroll)

        dialog._refresh_layout = counted
        self.push_screen(dialog)


async def test_a_dialog_pushed_fresh_is_laid_out_once():
    app = Host()
    async with app.run_test(size=(160, 50)) as pilot:
        for _ in range(4):
            await pilot.pause()
        assert isinstance(app.screen, ProposalDialog)
        # at the terminal's size once (the push's); what its widgets asked for after it, at the
        # update timer's tick (no size given): twice at 160x50 more before, from the Resizes
        assert [size for size in app.layouts if size is not None] == [(160, 50)], app.layouts
        await pilot.resize_terminal(120, 40)  # a terminal resized: laid out again at its size
        for _ in range(4):
            await pilot.pause()
        assert (120, 40) in app.layouts and app.screen.size == (120, 40)
