"""The attachments dialog (issue 14 §1), driven with the pilot on a real mbox project: ``e``
lists the open thread's attachments with their real names inert, views them as inert text
or hex, and saves one after the proposal is confirmed, under its safe name."""

from __future__ import annotations

import os

from textual.widgets import Input

from mailtriage.tui.dialogs.attachments import AttachmentsDialog
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.panes.reader import ThreadView
from tests.tui.attachment_data import BINARY, POC_TEXT, attachments_project
from tests.tui.helpers import back_to_the_list, make_app, mbox_project, screen_text, settle


async def open_dialog(pilot) -> AttachmentsDialog:
    await settle(pilot)
    await pilot.press("enter")  # the newest thread: the PoC report
    await settle(pilot)
    pilot.app.screen.query_one(ThreadView).focus()
    await pilot.press("e")
    await settle(pilot)
    assert isinstance(pilot.app.screen, AttachmentsDialog)
    return pilot.app.screen


async def e_lists_views_text_and_hex_inert(app, pilot) -> None:
    dialog = await open_dialog(pilot)
    shown = screen_text(app)
    assert "Attachments (2)" in shown and "../../poc.sh" in shown and "saved as poc.sh" in shown
    assert "report" in shown and "fdp.exe" in shown and "\u202e" not in shown  # the override is a marker
    await pilot.press("enter")
    await settle(pilot)
    shown = screen_text(app)
    assert "line 0: curl http://x.invalid/0" in shown and "text · page 1/1" in shown
    assert "\x1b" not in shown and "\x07" not in shown
    await pilot.press("x")
    await settle(pilot)
    assert "00000000  23 21 2f 62 69 6e 2f 73" in screen_text(app)  # "#!/bin/s" as hex
    await pilot.press("j", "enter")
    await settle(pilot)
    shown = screen_text(app)
    assert "hex · page 1/2" in shown and "00000000  00 01 02 03" in shown  # binary opens as hex
    await pilot.press("right_square_bracket")
    await settle(pilot)
    assert "hex · page 2/2" in screen_text(app)
    await pilot.press("escape")
    await settle(pilot)
    assert not isinstance(app.screen, AttachmentsDialog)
    assert dialog.attachments.items[1].filename == "report\u202efdp.exe"


async def save_asks_for_a_folder_proposes_and_writes_only_after_confirm(app, pilot, tmp_path) -> None:
    target = tmp_path / "saved"
    target.mkdir()
    await open_dialog(pilot)
    # The folder box cancels with Esc, and o runs nothing while unbound (was
    # test_the_folder_box_cancels_with_escape_and_o_runs_nothing_unbound, an app of its own).
    await pilot.press("s")
    await settle(pilot)
    await pilot.press("escape")
    await settle(pilot)
    assert isinstance(app.screen, AttachmentsDialog) and "saving cancelled" in screen_text(app)
    await pilot.press("o")
    await settle(pilot)
    assert "set attachment_command" in screen_text(app)
    await pilot.press("s")
    await settle(pilot)
    box = app.screen.query_one(Input)
    assert app.focused is box
    box.value = str(target)
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(app.screen, ProposalDialog)
    shown = screen_text(app)
    assert "Real name: ../../poc.sh" in shown and "Saved as: poc.sh" in shown
    assert os.listdir(target) == []  # nothing before the confirmation
    await pilot.press("escape")  # cancel: nothing written
    await settle(pilot)
    assert isinstance(app.screen, AttachmentsDialog) and os.listdir(target) == []
    await pilot.press("A")
    await settle(pilot)
    app.screen.query_one(Input).value = str(target)
    await pilot.press("enter")
    await settle(pilot)
    await pilot.press("ctrl+s")
    await settle(pilot)
    assert sorted(os.listdir(target)) == ["poc.sh", "reportfdp.exe"]
    assert (target / "poc.sh").read_bytes() == POC_TEXT.encode() and (target / "reportfdp.exe").read_bytes() == BINARY
    assert "saved 2" in screen_text(app)
    assert not list(tmp_path.glob("*.sh"))  # nothing outside the folder


async def test_e_views_the_attachments_then_saves_them_after_confirm(tmp_path):
    """Two tests, one app each, on one app (issue 36 §7): the view check closes its dialog (Esc,
    asserted); the save check opens it again from the list (``back_to_the_list``)."""
    app = make_app(attachments_project(tmp_path / "p"))
    async with app.run_test(size=(120, 40)) as pilot:
        await e_lists_views_text_and_hex_inert(app, pilot)
        await back_to_the_list(pilot)
        await save_asks_for_a_folder_proposes_and_writes_only_after_confirm(app, pilot, tmp_path)


async def test_attachment_command_gets_the_file_without_a_shell(tmp_path, monkeypatch):
    log = tmp_path / "seen"
    script = tmp_path / "viewer"
    script.write_text(f'#!/bin/sh\ncat "$1" > {log}\nbasename "$1" >> {log}\n', encoding="utf-8")
    script.chmod(0o755)
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text(f'attachment_command = "{script}"\n', encoding="utf-8")
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config))
    app = make_app(attachments_project(tmp_path / "p"))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_dialog(pilot)
        await pilot.press("o")
        await settle(pilot)
        assert "exited with status 0" in screen_text(app)
    assert log.read_bytes() == POC_TEXT.encode() + b"poc.sh\n"


async def test_e_on_a_thread_without_attachments_says_so(tmp_path):
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        app.screen.query_one(ThreadView).focus()
        await pilot.press("e")
        await settle(pilot)
        assert not isinstance(app.screen, AttachmentsDialog)
        assert any("no attachments" in n.message for n in app._notifications)
