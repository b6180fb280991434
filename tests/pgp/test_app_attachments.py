"""The app's attachments dialog on an encrypted report: the attachment inside the encryption is
listed, saved after the proposal (which names its source) and never handed to attachment_command."""

from __future__ import annotations

import os

import pytest
from textual.widgets import Input

from mailtriage.tui.dialogs.attachments import AttachmentsDialog
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.panes.reader import ThreadView
from tests.tui.helpers import make_app, screen_text, settle

from .conftest import pgp_mime_encrypted
from .test_app import RITA, RITA_FPR, _enc, fixed_home, project_with, with_headers, workdir  # noqa: F401 - fixtures
from .test_attachments import POC, _inner_with_attachment

# The apps make each dialog on its key, as every TUI test's do (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("dialogs_made_on_the_key")


def _report(home) -> bytes:
    raw = pgp_mime_encrypted(_enc(home, _inner_with_attachment(), sign=RITA_FPR), sender=RITA, mid="enc-a",
                             subject="Heap overflow in frob")
    return with_headers(raw, "Thu, 01 Oct 2026 09:00:00 +0000")


async def _open_dialog(pilot) -> AttachmentsDialog:
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
    pilot.app.screen.query_one(ThreadView).focus()
    await pilot.press("e")
    await settle(pilot)
    assert isinstance(pilot.app.screen, AttachmentsDialog), screen_text(pilot.app)
    return pilot.app.screen


async def test_the_dialog_saves_an_attachment_from_inside_the_encryption(workdir, fixed_home):  # noqa: F811
    target = workdir / "saved"
    target.mkdir(mode=0o700)
    app = make_app(project_with(workdir, fixed_home, [_report(fixed_home)]))
    async with app.run_test(size=(140, 40)) as pilot:
        await _open_dialog(pilot)
        assert "poc.sh" in screen_text(app)
        await pilot.press("s")
        await settle(pilot)
        app.screen.query_one(Input).value = str(target)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        assert "Source: the encrypted part" in screen_text(app)
        assert os.listdir(target) == []  # nothing before the confirmation
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert os.listdir(target) == ["poc.sh"] and (target / "poc.sh").read_bytes() == POC


async def test_o_never_hands_a_decrypted_attachment_to_attachment_command(workdir, fixed_home):  # noqa: F811
    seen = workdir / "seen"
    script = workdir / "viewer"
    script.write_text(f'#!/bin/sh\ncat "$1" > {seen}\n', encoding="utf-8")
    script.chmod(0o755)
    project = project_with(workdir, fixed_home, [_report(fixed_home)])
    config = workdir / "config" / "config.toml"
    config.write_text(f'attachment_command = "{script}"\n' + config.read_text(encoding="utf-8"), encoding="utf-8")
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        await _open_dialog(pilot)
        await pilot.press("o")
        shown = ""
        for _ in range(300):  # the command runs in a worker: wait for its outcome (generous bound)
            await settle(pilot)
            shown = screen_text(app) + " ".join(n.message for n in app._notifications)
            if "encrypted part" in shown or "exited with status" in shown:
                break
            await pilot.pause(0.05)
        assert "encrypted part" in shown and "exited with status" not in shown, shown
    assert not seen.exists()
