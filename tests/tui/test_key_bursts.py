"""Keys typed in one burst into a dialog's field, then its Ctrl+s or Enter (issue 35 §3):
the pipe, change folder, move picker, compose and proposal dialogs.

tmux send-keys, a paste or a fast typist hands the app every key of the burst at once, as the
terminal driver does here: each key posted to the app with no pause between them (Pilot's
``press`` waits for the app to go idle after each key, so it cannot show this). The dialog's
key is a priority binding, run as the app reads it, while the characters before it still wait
in the field's queue: the pipe dialog said "type a command first" to ``grep -c :``.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import App
from textual.keys import _character_to_key
from textual.widgets import Input, Static

from mailtriage.application.flows.compose import ComposeForm
from mailtriage.tui.dialogs.compose import ComposeDialog
from mailtriage.tui.dialogs.folder_jump import FolderJump
from mailtriage.tui.dialogs.folder_picker import FolderPicker
from mailtriage.tui.dialogs.pipe import PipeDialog
from mailtriage.tui.dialogs.proposal import ProposalDialog
from tests.tui.helpers import make_app, settle, until
from tests.tui.test_snapshots import drafting_project, workdir  # noqa: F401 (fixture)


class Host(App):
    """A bare app showing one dialog, whose dismissal it keeps."""

    def __init__(self, dialog) -> None:
        super().__init__()
        self.dialog = dialog
        self.results: list[object] = []

    def on_mount(self) -> None:
        self.push_screen(self.dialog, self.results.append)


def burst(app: App, typed: str, *keys: str) -> None:
    """``typed`` and then ``keys``, posted to the app at once, as the driver posts a burst."""
    for character in typed:
        app.post_message(events.Key(_character_to_key(character), character))
    for key in keys:
        app.post_message(events.Key(key, None))


async def idle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


async def test_pipe_ctrl_s_right_after_the_command_shows_the_plan_of_what_was_typed():
    ran: list[str] = []
    app = Host(PipeDialog("report", lambda command: (ran.append(command), (0, b"1\n", False))[1],
                          cursor_blink=False))
    async with app.run_test() as pilot:
        await idle(pilot)
        burst(app, "grep -c :", "ctrl+s")
        await idle(pilot)
        assert "Will run grep -c : (no shell)" in app.screen.query_one("#pipe-plan", Static).content.plain
        assert ran == []  # the first Ctrl+s shows the plan; the second runs it
        burst(app, "", "ctrl+s")
        await idle(pilot)
        assert ran == ["grep -c :"]


async def test_change_folder_enter_right_after_the_filter_opens_what_was_typed():
    dialog = FolderJump([(0, Text("INBOX")), (1, Text("Junk")), (2, Text("security"))], "Change folder",
                        cursor_blink=False)
    app = Host(dialog)
    async with app.run_test() as pilot:
        await idle(pilot)
        burst(app, "secu", "enter")
        await idle(pilot)
        assert app.results == [2]


async def test_move_picker_enter_right_after_the_filter_moves_to_what_was_typed():
    from tests.tui.test_folder_pickers import FOLDERS

    app = Host(FolderPicker(FOLDERS, current="INBOX", count=1, account_id="work", cursor_blink=False))
    async with app.run_test() as pilot:
        await idle(pilot)
        burst(app, "announce", "enter")  # the first choice before narrowing is another folder
        await idle(pilot)
        assert app.results == ["Lists.announce"]


async def test_compose_ctrl_s_right_after_typing_keeps_what_was_typed():
    dialog = ComposeDialog({"new": ComposeForm("new")}, where="personal account", cursor_blink=False)
    app = Host(dialog)
    async with app.run_test(size=(100, 40)) as pilot:
        await idle(pilot)
        dialog.query_one("#compose-subject", Input).focus()
        await idle(pilot)
        burst(app, "CVE-2026-1", "ctrl+s", "ctrl+s")  # a second Ctrl+s in the burst: dismissed once
        await idle(pilot)
        assert [form.subject for form in app.results] == ["CVE-2026-1"]


async def test_proposal_ctrl_s_right_after_editing_its_body_writes_what_was_typed(workdir):  # noqa: F811
    """The proposal's body is editable (a draft): what was typed into it just before Ctrl+s is
    in the draft written, not the body as it was before the burst."""
    app = make_app(drafting_project(workdir))
    async with app.run_test(size=(120, 40)) as pilot:
        for key in ("", "r", "ctrl+s"):  # settled, then the reply's compose dialog, then its proposal
            if key:
                await pilot.press(key)
            await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ProposalDialog) and dialog._editors
        area = next(iter(dialog._editors.values()))
        area.focus()
        area.move_cursor(area.document.end)
        await settle(pilot)
        burst(app, "PS: patched in 3.4.1", "ctrl+s")
        mail = workdir / "p" / "Mail"
        await until(pilot, lambda: any(path.is_file() for path in mail.rglob("*")), "the draft")
        drafts = [path.read_text() for path in mail.rglob("*") if path.is_file()]
        assert len(drafts) == 1 and "PS: patched in 3.4.1" in drafts[0]


async def test_keys_typed_right_after_a_key_that_opens_a_dialog_go_into_the_dialog(demo_dir):
    """``|grep`` typed in one burst on the message read: the letters are the pipe's command, not
    the reader's keys (g went to the top, r started a reply, e said "no attachments")."""
    from mailtriage.application import project_dir
    from mailtriage.tui.panes.reader import ThreadView

    app = make_app(project_dir(demo_session=True), demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.focused, ThreadView)
        app.clear_notifications()
        burst(app, "|grep -c :")
        await settle(pilot)
        assert isinstance(app.screen, PipeDialog), [str(n.message) for n in app._notifications]
        assert app.screen.query_one("#pipe-command", Input).value == "grep -c :"
        assert not app._notifications  # nothing acted on the reader meanwhile
        burst(app, "", "escape")  # Esc closes it: nothing is held any more, h is the reader's again
        await settle(pilot)
        assert isinstance(app.focused, ThreadView)
        await pilot.press("h")
        await settle(pilot)
        assert type(app.screen).__name__ == "HeadersDialog"


async def test_a_key_that_opens_no_dialog_holds_nothing_after_it(demo_dir):
    """e on a thread without attachments says so and opens nothing: the keys typed after it act
    on the reader as soon as the request is handled (not when the hold's limit ends)."""
    from mailtriage.application import project_dir
    from mailtriage.tui.panes.reader import ThreadView

    app = make_app(project_dir(demo_session=True), demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        view = app.screen.query_one(ThreadView)
        assert app.focused is view and view.scroll_y == 0 and view.max_scroll_y > 0
        app.clear_notifications()
        burst(app, "eG")
        for _ in range(6):  # message rounds, no timer: the hold's limit (1 s) cannot have ended
            await pilot.pause()
        assert [str(n.message) for n in app._notifications] == ["This thread has no attachments."]
        assert app._typeahead is None and view.scroll_y == view.max_scroll_y
