"""Issue 35 item 6 in the proposal dialog: it names the change and where it lands in the
user's words, says "Send" for a send, and Ctrl+o never does nothing without saying why."""

from __future__ import annotations

from textual.app import App

from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.application.flows.attachments import AttachmentItem, propose_save
from mailtriage.application.flows.proposals import Field, Proposal, Write, WriteKind


class DialogHost(App):
    def __init__(self, proposal: Proposal) -> None:
        super().__init__()
        self.proposal = proposal

    def on_mount(self) -> None:
        self.push_screen(ProposalDialog(self.proposal, cursor_blink=False))


def screen_words(app: App) -> str:
    return "\n".join(str(w.render()) for w in app.screen.query("Static, Button"))


def footer_words(app: App) -> list[str]:
    return [b.binding.description for b in app.screen.active_bindings.values() if b.binding.show]


def send_proposal() -> Proposal:
    proposal = Proposal("Send: Re: the report")
    proposal.writes.append(Write(WriteKind.SEND, "account work", "send: Re: the report",
                                 [Field("To", "r@example.net"), Field("Body", "thanks", multiline=True)],
                                 lambda w: None, editable_body=True, body="thanks", label="Send",
                                 where="from account work"))
    return proposal


async def test_a_file_save_says_which_folder_the_file_goes_into_and_ctrl_o_why_it_edits_nothing(tmp_path):
    item = AttachmentItem(1, 0, "<m@x>", None, "report.pdf", "application/pdf", 10)
    proposal = propose_save([item], tmp_path, lambda i: b"x", source="mbox")
    app = DialogHost(proposal)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        words = screen_words(app)
        assert f"1. Save file · into the folder {tmp_path}" in words
        assert "backend mbox" not in words and "written by" not in words
        # Ctrl+o is not offered where nothing is editable, and says why when pressed (was a test of
        # its own on the same proposal: test_ctrl_o_is_not_offered_where_nothing_is_editable_and_says_why_when_pressed).
        assert "Edit in $EDITOR" not in footer_words(app)
        assert "Confirm and write" in footer_words(app)
        await pilot.press("ctrl+o")
        await pilot.pause()
        toasts = [str(n.message) for n in app._notifications]
        assert any(t.startswith("Nothing to edit here") for t in toasts), toasts


async def test_a_send_says_send_on_the_button_and_in_the_footer():
    app = DialogHost(send_proposal())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        words = screen_words(app)
        assert "Send (ctrl+s)" in words and "Confirm and write" not in words
        assert "1. Send · from account work" in words
        assert "Send" in footer_words(app) and "Confirm and write" not in footer_words(app)
        await pilot.press("ctrl+s")  # the same key sends
        await pilot.pause()
        assert not isinstance(app.screen, ProposalDialog)


async def test_a_toast_leaves_the_status_lines_readable(tmp_path):
    from textual.widgets._toast import Toast

    from tests.tui.helpers import make_app, mbox_project, settle

    mbox_project(tmp_path / "p")
    app = make_app(tmp_path / "p")
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # the reader open beside the list: two status lines at the bottom
        await settle(pilot)
        app.notify("Written: 1 draft in account work\nsecond line\nthird line", title="Written")
        await settle(pilot)
        statuses = [w.region for w in app.screen.query(".pane-status") if w.region.area]
        toasts = [t.region for t in app.screen.query(Toast)]
        assert statuses and toasts
        assert all(not toast.overlaps(status) for toast in toasts for status in statuses), (toasts, statuses)


async def test_a_blocked_proposal_does_not_offer_ctrl_s_and_says_why_when_pressed():
    """The dimmed "^s Confirm and write" of a blocked proposal (a draft already pending) was
    still on show, and ctrl+s did nothing: not offered now, and pressed it says why."""
    from mailtriage.application.flows.proposals import BlockedBy

    proposal = send_proposal().block(BlockedBy.PENDING_DRAFT, "a draft is already pending on this thread")
    app = DialogHost(proposal)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert not {"Send", "Confirm and write"} & set(footer_words(app)), footer_words(app)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ProposalDialog)  # nothing written, the dialog stays
        toasts = [str(n.message) for n in app._notifications]
        assert toasts == ["This proposal cannot be written: a draft is already pending on this thread"], toasts
