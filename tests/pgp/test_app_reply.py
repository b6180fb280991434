"""From the keyboard: read an encrypted report on a real Dovecot, answer it, and the draft that
lands in Drafts is encrypted to the reporter and the team (real GnuPG)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from mailtriage.tui.dialogs.proposal import ProposalDialog
from tests.tui.helpers import make_app, reader_text, screen_text, settle, write_imap_project

from .conftest import entity, gpg, pgp_mime_encrypted

# The apps make each dialog on its key, as every TUI test's do (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("dialogs_made_on_the_key")

LIST = "security@frob.example"
SECRET = "The frob parser overflows on a 70000-byte header."


@pytest.fixture
def encrypted_imap_project(tmp_path, monkeypatch, dovecot, dovecot_user, memory_keyring, homes):
    config = tmp_path / "user-config"
    config.mkdir()
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config))
    project = write_imap_project(tmp_path, config, dovecot, dovecot_user, access="draft", list_address=LIST)
    with (config / "config.toml").open("a", encoding="utf-8") as out:
        out.write(f'\n[pgp]\ngnupg_home = "{homes.user}"\n')
    text = (project / "project.md").read_text(encoding="utf-8")
    (project / "project.md").write_text(text.replace("import:\n", f"pgp:\n  team_key: {homes.fprs['team']}\nimport:\n"),
                                        encoding="utf-8")
    raw = pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team", sign="reporter"))
    raw = raw.replace(b"Tue, 01 Dec 2026 10:00:00 +0000", b"Thu, 01 Oct 2026 09:00:00 +0000").replace(
        b"To: security@example.org", f"To: {LIST}".encode())
    dovecot.append(dovecot_user, "INBOX", raw, when=datetime(2026, 10, 1, 9, 0, tzinfo=timezone.utc))
    return project


def drafts(dovecot, user) -> list[bytes]:
    with dovecot.client(user) as client:
        if not client.folder_exists("Drafts"):
            return []
        client.select_folder("Drafts", readonly=True)
        uids = client.search("ALL")
        return [data[b"RFC822"] for data in client.fetch(uids, ["RFC822"]).values()] if uids else []


async def test_read_and_answer_an_encrypted_report_from_the_keyboard(encrypted_imap_project, dovecot,
                                                                     dovecot_user, homes):
    app = make_app(encrypted_imap_project)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        shown = reader_text(app)
        assert SECRET in shown and "(matches From)" in shown
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("ctrl+s")  # the compose dialog: on to the proposal
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        assert "Encryption: inline OpenPGP to rita@example.net" in screen_text(app)
        await pilot.press("ctrl+s")
        await settle(pilot)
    [draft] = drafts(dovecot, dovecot_user)
    assert b"-----BEGIN PGP MESSAGE-----" in draft and SECRET.encode() not in draft
    armored = draft[draft.index(b"-----BEGIN PGP MESSAGE-----"):]
    assert b"Rita Reporter" in gpg(homes.world, "--decrypt", data=armored).stdout  # the receipt greets her


async def test_the_editor_round_trip_of_a_quoted_reply_stays_in_memory(encrypted_imap_project, tmp_path,
                                                                      monkeypatch):
    # $EDITOR gets the decrypted quote in a file: a memory-backed folder (tmpfs), never the disk's /tmp.
    log = tmp_path / "editor.log"
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\necho "$1" >> {log}\ngrep -c "frob parser" "$1" >> {log}\nexit 0\n')
    editor.chmod(0o700)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    app = make_app(encrypted_imap_project)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("ctrl+r")  # the quoted reply: the decrypted text is in the body
        await settle(pilot)
        await pilot.press("ctrl+o")
        await settle(pilot)
    path, count = log.read_text().split()
    assert int(count) >= 1  # the editor did get the decrypted quote
    mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    mount = max((m for m in mounts if path.startswith(m[1].rstrip("/") + "/")), key=lambda m: len(m[1]))
    assert mount[2] in ("tmpfs", "ramfs"), (path, mount)
    assert not Path(path).exists()
