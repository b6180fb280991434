"""The app with OpenPGP: the reading pane's status lines, K (import an offered key), the clear-reply choice.

Snapshots use fixed test keys (tests/pgp/data/snapshot-keys.asc, no passphrase) so the
fingerprints on screen are the same on every run; the mails are encrypted and signed by gpg
at test time. Pilot tests use the per-test generated keys of conftest.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mailtriage.tui.dialogs.clear_reply import ClearReplyDialog
from mailtriage.tui.dialogs.passphrase import PassphraseDialog
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.panes.reader import ThreadView
from tests.tui.helpers import make_app, mbox_project, reader_text, screen_text, settle

from .conftest import (
    STRANGER,
    _new_home,
    encrypted_entity_part,
    entity,
    gpg,
    kill_agent,
    lock_key,
    mixed,
    pgp_mime_encrypted,
    pgp_mime_signed,
)

# The snapshot tests run their apps in plain functions, which tests/conftest.py does not give
# the collector's raised threshold (it marks the ``async def`` tests): as tests/tui/conftest.py does.
# The apps make each dialog on its key, not 0.3 s after the first list (tests/conftest.py's
# ``dialogs_made_on_the_key``), as every TUI test's do.
pytestmark = pytest.mark.usefixtures("young_collections_rarer", "dialogs_made_on_the_key")

KEYS = Path(__file__).parent / "data" / "snapshot-keys.asc"
TEAM_FPR = "2CE4498E05999AEE9F702027B96765B6BEC61B57"
RITA_FPR = "98C0E736D774923DE459E95653BBE905B4675393"
RITA = "Rita Reporter <rita@example.net>"
NARROW = (80, 24)
WIDE = (160, 45)
SECRET = "The frob parser overflows its heap buffer on a 70000-byte header.\nPoC: frob --parse big.frob\n"


def with_headers(raw: bytes, date: str) -> bytes:
    return raw.replace(b"Date: Tue, 01 Dec 2026 10:00:00 +0000", f"Date: {date}".encode())


@pytest.fixture
def fixed_home():
    home = _new_home()
    gpg(home, "--import", data=KEYS.read_bytes())
    yield home
    kill_agent(home)
    shutil.rmtree(home, ignore_errors=True)


def _enc(home: Path, data: bytes, sign: str | None = None) -> bytes:
    args = ["--armor", "--trust-model", "always", "--encrypt", "--recipient", TEAM_FPR]
    if sign:
        args += ["--sign", "--local-user", sign]
    return gpg(home, *args, data=data).stdout


def snapshot_thread(home: Path) -> list[bytes]:
    def h(sender, mid, _date, reply_to=None):
        extra = f"In-Reply-To: <{reply_to}>\r\nReferences: <{reply_to}>\r\n" if reply_to else ""
        return {"sender": sender, "mid": mid, "extra": extra,
                "subject": "Re: Heap overflow in frob" if reply_to else "Heap overflow in frob"}

    report = with_headers(pgp_mime_encrypted(_enc(home, entity(SECRET), sign=RITA_FPR),
                                             **h(RITA, "enc-1", "")), "Thu, 01 Oct 2026 09:00:00 +0000")
    clear = entity("(sent from the list web form; the attachment below is encrypted)\n")
    mixed_reply = mixed(clear, encrypted_entity_part(_enc(home, entity("Second PoC, encrypted.\n"))),
                         **h(RITA, "enc-2", "", "enc-1@example.net"))
    mixed_reply = with_headers(mixed_reply, "Thu, 01 Oct 2026 10:00:00 +0000")
    signed = entity("Please also CC me on the fix.\r\n")
    signature = gpg(home, "--armor", "--local-user", RITA_FPR, "--detach-sign", data=signed).stdout
    forged = with_headers(pgp_mime_signed(signed, signature, **h("Mallory <mallory@example.com>", "sig-3", "",
                                                                   "enc-1@example.net")),
                          "Thu, 01 Oct 2026 11:00:00 +0000")
    armored = _enc(home, entity("unreadable"))
    lines = armored.splitlines()
    lines[2] = b"!!!!" + lines[2][4:]
    broken = with_headers(pgp_mime_encrypted(b"\n".join(lines), **h(RITA, "bad-4", "", "enc-1@example.net")),
                          "Thu, 01 Oct 2026 12:00:00 +0000")
    return [report, mixed_reply, forged, broken]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", "config")
    (tmp_path / "config").mkdir()
    return tmp_path


def project_with(workdir: Path, home: Path, messages: list[bytes], team: str = TEAM_FPR) -> Path:
    (workdir / "config" / "config.toml").write_text(f'name = "Test Triager"\n[pgp]\ngnupg_home = "{home}"\n',
                                                     encoding="utf-8")
    mbox_project(workdir / "p", messages=[m.replace(b"\r\n", b"\n") for m in messages],
                 extra_config={"pgp": {"team_key": team}})
    return Path("p")


def shot(*keys: str, check=None):
    """Settle, press ``keys`` (settling after each), then ``check(app)`` before the shot: what the
    screen says, asserted in the app the snapshot starts anyway (a failed check fails the test)."""
    async def run_before(pilot):
        await settle(pilot)
        for key in keys:
            pilot.app.clear_notifications()
            await pilot.press(key)
            await settle(pilot)
        if check is not None:
            check(pilot.app)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


def says_what_was_encrypted_and_what_was_not(app) -> None:
    # (was test_reading_pane_says_what_was_encrypted_and_what_was_not, a Pilot test of its own on
    # the same thread and keys; reader_text holds the whole pane, scrolled or not)
    text = reader_text(app)
    assert "The frob parser overflows" in text
    assert f"OpenPGP: signature valid by {RITA_FPR} \"{RITA}\" (matches From)" in text
    # Rita's second mail wraps an encrypted part in a clear one: listed, never decrypted into the text.
    assert "OpenPGP: part 2: an encrypted part inside a clear mail: not decrypted" in text
    assert "Second PoC, encrypted." not in text
    assert "signature valid but by a key whose user IDs do not match From" in text
    assert "OpenPGP: corrupt armor" in text or "OpenPGP: gpg failed" in text


def test_reader_encrypted_and_mixed_wide(snap_compare, workdir, fixed_home):
    app = make_app(project_with(workdir, fixed_home, snapshot_thread(fixed_home)))
    assert snap_compare(app, terminal_size=WIDE,
                        run_before=shot("enter", check=says_what_was_encrypted_and_what_was_not))


def test_reader_forged_signature_and_failed_wide(snap_compare, workdir, fixed_home):
    app = make_app(project_with(workdir, fixed_home, snapshot_thread(fixed_home)))
    assert snap_compare(app, terminal_size=WIDE, run_before=shot("enter", "G"))  # Enter goes into the reader


def test_reader_encrypted_narrow(snap_compare, workdir, fixed_home):
    app = make_app(project_with(workdir, fixed_home, snapshot_thread(fixed_home)))
    assert snap_compare(app, terminal_size=NARROW, run_before=shot("enter"))


def test_encrypted_reply_proposal_narrow(snap_compare, workdir, fixed_home):
    app = make_app(project_with(workdir, fixed_home, snapshot_thread(fixed_home)))
    assert snap_compare(app, terminal_size=NARROW, run_before=shot("enter", "r", "ctrl+s"))


def test_encrypted_reply_proposal_wide(snap_compare, workdir, fixed_home):
    app = make_app(project_with(workdir, fixed_home, snapshot_thread(fixed_home)))
    assert snap_compare(app, terminal_size=WIDE, run_before=shot("enter", "r", "ctrl+s"))


def test_clear_reply_choice_wide(snap_compare, workdir, fixed_home):
    raw = with_headers(pgp_mime_encrypted(_enc(fixed_home, entity(SECRET)), sender=STRANGER, mid="s-1",
                                          subject="Heap overflow in frob"), "Thu, 01 Oct 2026 09:00:00 +0000")
    app = make_app(project_with(workdir, fixed_home, [raw]))
    assert snap_compare(app, terminal_size=WIDE, run_before=shot("enter", "r", "ctrl+s"))


async def test_no_reporter_key_asks_before_drafting_in_clear(workdir, fixed_home):
    raw = with_headers(pgp_mime_encrypted(_enc(fixed_home, entity(SECRET)), sender=STRANGER, mid="s-1",
                                          subject="Heap overflow in frob"), "Thu, 01 Oct 2026 09:00:00 +0000")
    app = make_app(project_with(workdir, fixed_home, [raw]))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("ctrl+s")  # the compose dialog: on to the proposal
        await settle(pilot)
        assert isinstance(app.screen, ClearReplyDialog)
        assert "no usable OpenPGP key for sam@example.com" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, (ClearReplyDialog, ProposalDialog))
        assert any("nothing was written" in n.message for n in app._notifications)
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("ctrl+s")  # the compose dialog: on to the proposal
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        assert "IN CLEAR" in screen_text(app)


async def test_k_offers_an_attached_key_and_imports_it_only_on_confirm(workdir, fixed_home):
    other = _new_home()
    try:
        gpg(other, "--quick-gen-key", STRANGER, "ed25519", "sign", "0")
        key = gpg(other, "--armor", "--export").stdout
        fpr = next(line.split(":")[9] for line in gpg(other, "--with-colons", "--list-keys").stdout.decode()
                   .splitlines() if line.startswith("fpr"))
    finally:
        kill_agent(other)
        shutil.rmtree(other, ignore_errors=True)
    b = "kb"
    raw = (f"From: {STRANGER}\r\nTo: security@frob.example\r\nSubject: my key\r\nMessage-ID: <k-1@example.com>\r\n"
           f"Date: Thu, 01 Oct 2026 09:00:00 +0000\r\nMIME-Version: 1.0\r\n"
           f'Content-Type: multipart/mixed; boundary="{b}"\r\n\r\n--{b}\r\n').encode() + entity("my key\n") \
        + (f'\r\n--{b}\r\nContent-Type: application/pgp-keys; name="key.asc"\r\nContent-Disposition: attachment; '
           f'filename="key.asc"\r\n\r\n').encode() + key + f"\r\n--{b}--\r\n".encode()
    app = make_app(project_with(workdir, fixed_home, [raw]))

    def in_keyring() -> bool:
        done = subprocess.run(["gpg", "--homedir", str(fixed_home), "--batch", "--list-keys", fpr],
                              capture_output=True, timeout=30)
        return done.returncode == 0

    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert f"offers a key {fpr} from the attachment key.asc: not imported (K to import)" in reader_text(app)
        app.screen.query_one(ThreadView).focus()
        await pilot.press("K")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        shown = screen_text(app)
        assert fpr in shown and "compare the fingerprint" in shown
        await pilot.press("escape")
        await settle(pilot)
        assert not in_keyring()  # cancelled: nothing imported
        await pilot.press("K")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert in_keyring()


async def test_a_locked_key_is_unlocked_from_the_app_with_loopback(workdir, fixed_home):
    _lock_team_key(fixed_home)
    raw = with_headers(pgp_mime_encrypted(_enc(fixed_home, entity(SECRET)), sender=RITA, mid="p-1",
                                          subject="Heap overflow in frob"), "Thu, 01 Oct 2026 09:00:00 +0000")
    folder = project_with(workdir, fixed_home, [raw])
    with (workdir / "config" / "config.toml").open("a", encoding="utf-8") as out:
        out.write('pinentry = "loopback"\n')
    app = make_app(folder)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, PassphraseDialog)
        assert "needs its passphrase" in screen_text(app)
        for key in "team-pw":
            await pilot.press(key if key != "-" else "minus")
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, PassphraseDialog)
        assert "The frob parser overflows" in reader_text(app)
        assert "team-pw" not in screen_text(app)


def _lock_team_key(home: Path) -> None:
    lock_key(home, TEAM_FPR, b"team-pw")


def test_passphrase_dialog_narrow(snap_compare, workdir, fixed_home):
    _lock_team_key(fixed_home)
    raw = with_headers(pgp_mime_encrypted(_enc(fixed_home, entity(SECRET)), sender=RITA, mid="p-1",
                                          subject="Heap overflow in frob"), "Thu, 01 Oct 2026 09:00:00 +0000")
    folder = project_with(workdir, fixed_home, [raw])
    with (workdir / "config" / "config.toml").open("a", encoding="utf-8") as out:
        out.write('pinentry = "loopback"\n')
    assert snap_compare(make_app(folder), terminal_size=NARROW, run_before=shot("enter"))


def test_key_import_proposal_wide(snap_compare, workdir, fixed_home):
    key = gpg(fixed_home, "--armor", "--export", RITA_FPR).stdout
    gpg(fixed_home, "--delete-secret-and-public-key", RITA_FPR)
    b = "kb"
    raw = (f"From: {RITA}\r\nTo: security@frob.example\r\nSubject: my key\r\nMessage-ID: <k-1@example.net>\r\n"
           f"Date: Thu, 01 Oct 2026 09:00:00 +0000\r\nMIME-Version: 1.0\r\n"
           f'Content-Type: multipart/mixed; boundary="{b}"\r\n\r\n--{b}\r\n').encode() + entity("my key\n") \
        + (f'\r\n--{b}\r\nContent-Type: application/pgp-keys; name="key.asc"\r\nContent-Disposition: attachment; '
           f'filename="key.asc"\r\n\r\n').encode() + key + f"\r\n--{b}--\r\n".encode()

    async def run_before(pilot):
        await shot("enter")(pilot)
        pilot.app.screen.query_one(ThreadView).focus()
        await shot("K")(pilot)

    assert snap_compare(make_app(project_with(workdir, fixed_home, [raw])), terminal_size=WIDE,
                        run_before=run_before)
