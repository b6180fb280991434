"""Reading encrypted and signed reports with real GnuPG: PGP/MIME, inline, mixed, signatures."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from mailtriage.backends import mime, pgp
from mailtriage.backends.contract import Thread, ThreadId
from mailtriage.application.flows import sweep

from .conftest import (
    REPORTER,
    gpg,
    kill_agent,
    lock_key,
    STRANGER,
    encrypted_entity_part,
    entity,
    mixed,
    pgp_mime_encrypted,
    pgp_mime_signed,
    plain,
)

SECRET = "The overflow is in parse_header(); send 70000 bytes of 'A'."
PAST = ("--faked-system-time", "20200601T000000!")


def opened(raw: bytes, session) -> mime.Message:
    return pgp.open_message(mime.parse_message(raw), session)


def test_pgp_mime_encrypted_report_is_decrypted_through_the_mime_pipeline(homes):
    inner = entity(SECRET + "\n")
    raw = pgp_mime_encrypted(homes.encrypt(inner, "team"))
    parsed = mime.parse_message(raw)
    assert SECRET not in parsed.body_text  # parsing alone never decrypts
    assert [m.kind for m in parsed.pgp] == ["encrypted"]
    message = pgp.open_message(parsed, homes.session())
    assert SECRET in message.body_text
    status = message.crypto
    assert status.encrypted and status.decrypted and not status.mixed and status.wholly_encrypted
    team_subkeys = status.encrypted_to
    assert team_subkeys and "Security Team <security@example.org>" in team_subkeys[0]
    assert status.lines()[0].startswith("encrypted to ")
    assert message.attachments == ()  # the two RFC 3156 parts are not shown as attachments
    assert json.loads(json.dumps(message.to_json()))["crypto"]["decrypted"] is True


def test_encrypted_multipart_tree_keeps_its_attachments_and_notes_them_as_decrypted(homes):
    b = "inner-b"
    inner = (f'Content-Type: multipart/mixed; boundary="{b}"\r\n\r\n--{b}\r\n'.encode() + entity(SECRET)
             + f'\r\n--{b}\r\nContent-Type: text/x-c; name="poc.c"\r\nContent-Disposition: attachment; '
               f'filename="poc.c"\r\n\r\nint main(void) {{ return 0; }}\r\n--{b}--\r\n'.encode())
    message = opened(pgp_mime_encrypted(homes.encrypt(inner, "team")), homes.session())
    assert SECRET in message.body_text
    assert [a.filename for a in message.attachments] == ["poc.c"]
    assert "decrypted" in message.attachments[0].note


def test_signed_and_encrypted_by_the_reporter_shows_a_valid_signature_matching_from(homes):
    raw = pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team", sign="reporter"))
    status = opened(raw, homes.session()).crypto
    [sig] = status.signatures
    assert sig.state == "valid" and sig.matches_from is True and sig.trustworthy
    assert sig.fingerprint == homes.fprs["reporter"]
    assert REPORTER in sig.uids
    assert "(matches From)" in sig.describe()


def test_valid_signature_by_a_key_whose_uid_does_not_match_from_is_not_a_plain_valid(homes):
    raw = pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team", sign="reporter"),
                             sender="Mallory <mallory@example.com>")
    [sig] = opened(raw, homes.session()).crypto.signatures
    assert sig.state == "valid" and sig.matches_from is False and not sig.trustworthy
    assert "do not match From" in sig.describe()


def test_pgp_mime_signed_report_verifies_and_a_changed_body_is_bad(homes):
    signed = entity("I found a bug.\r\nDetails follow.\r\n")
    signature = homes.detach_sign(signed, "reporter")
    message = opened(pgp_mime_signed(signed, signature), homes.session())
    assert "I found a bug." in message.body_text
    [sig] = message.crypto.signatures
    assert sig.state == "valid" and sig.matches_from
    assert not message.crypto.encrypted
    assert [a.filename for a in message.attachments] == []  # signature.asc is not an attachment

    tampered = pgp_mime_signed(signed.replace(b"a bug", b"no bug"), signature)
    [bad] = opened(tampered, homes.session()).crypto.signatures
    assert bad.state == "bad" and "BAD signature" in bad.describe()


def test_signature_by_a_key_not_in_the_keyring_says_unknown_key(homes):
    signed = entity("hello\r\n")
    message = opened(pgp_mime_signed(signed, homes.detach_sign(signed, "stranger"), sender=STRANGER), homes.session())
    [sig] = message.crypto.signatures
    assert sig.state == "unknown-key" and "not in your keyring" in sig.describe()
    assert sig.matches_from is None


def test_signature_by_an_expired_key_says_expired(homes):
    signed = entity("old news\r\n")
    raw = pgp_mime_signed(signed, homes.detach_sign(signed, "expired", extra=PAST), sender="Old <old@example.net>")
    [sig] = opened(raw, homes.session()).crypto.signatures
    assert sig.state == "expired-key" and "EXPIRED key" in sig.describe()


def test_signature_by_a_revoked_key_says_revoked(homes):
    signed = entity("revoked\r\n")
    raw = pgp_mime_signed(signed, homes.detach_sign(signed, "revoked"), sender="Gone <gone@example.net>")
    [sig] = opened(raw, homes.session()).crypto.signatures
    assert sig.state == "revoked-key" and "REVOKED" in sig.describe()


def test_mixed_message_lists_its_encrypted_part_as_an_attachment_not_decrypted(homes):
    # Only an encryption of the whole message is the report (test_whole_message.py says why).
    clear = entity("Forwarded by the list: please keep confidential.\n")
    raw = mixed(clear, encrypted_entity_part(homes.encrypt(entity(SECRET), "team")))
    message = opened(raw, homes.session())
    status = message.crypto
    assert not status.encrypted and not status.decrypted and not status.wholly_encrypted
    assert SECRET not in message.body_text
    assert "Forwarded by the list" in message.text_parts[0].text
    assert any(line.startswith("part 2: an encrypted part inside a clear mail: not decrypted") for line in status.lines())
    assert [a.filename for a in message.attachments] == ["encrypted.asc"]


def test_inline_pgp_block_with_clear_text_around_it_is_left_encrypted_and_said(homes):
    armored = homes.encrypt(SECRET.encode(), "team").decode()
    raw = plain(f"Hi team,\n\n{armored}\n-- \nsent from my phone\n")
    message = opened(raw, homes.session())
    status = message.crypto
    assert not status.decrypted
    assert SECRET not in message.body_text and "-----BEGIN PGP MESSAGE-----" in message.body_text
    assert any("inline encrypted block inside a clear text was not decrypted" in n for n in status.notes)


def test_inline_clearsigned_text_verifies(homes):
    raw = plain(homes.clearsign("Patch attached.\n- item one\n", "reporter"))
    message = opened(raw, homes.session())
    [sig] = message.crypto.signatures
    assert sig.state == "valid" and sig.matches_from
    assert "Patch attached." in message.body_text and "BEGIN PGP" not in message.body_text


def test_wrong_key_gives_a_specific_note_and_the_rest_of_the_thread_shows(homes):
    raw = pgp_mime_encrypted(homes.encrypt(entity(SECRET), "stranger"))
    message = opened(raw, homes.session())
    assert message.crypto.encrypted and not message.crypto.decrypted
    assert any("wrong key" in n for n in message.crypto.notes)
    assert SECRET not in message.body_text
    thread = pgp.open_thread(mime_thread([raw, plain("second message", mid="r2")]), homes.session())
    assert thread.messages[1].body_text.startswith("second message")


def test_corrupt_armor_gives_a_specific_note(homes):
    armored = homes.encrypt(entity(SECRET), "team")
    lines = armored.splitlines()
    lines[3] = lines[3][:10] + b"!!!!" + lines[3][14:]
    message = opened(pgp_mime_encrypted(b"\n".join(lines)), homes.session())
    assert not message.crypto.decrypted
    assert any("corrupt armor" in n or "gpg failed" in n for n in message.crypto.notes), message.crypto.notes


def test_decompression_bomb_is_stopped_with_a_specific_note(homes):
    bomb = b"Content-Type: text/plain\r\n\r\n" + b"A" * (8 * 1024 * 1024)
    armored = homes.encrypt(bomb, "team", extra=("--compress-algo", "bzip2", "--compress-level", "9"))
    assert len(armored) < 20_000
    message = opened(pgp_mime_encrypted(armored), homes.session(max_output=1024 * 1024))
    assert not message.crypto.decrypted
    assert any("larger than the limit" in n for n in message.crypto.notes), message.crypto.notes
    assert len(message.body_text) < 10_000


def test_missing_gpg_binary_gives_a_specific_note(homes):
    raw = pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team"))
    message = opened(raw, homes.session(binary="/nonexistent/gpg"))
    assert any("could not be run: install gnupg" in n for n in message.crypto.notes)
    assert "encrypted part" in message.body_text


def test_missing_agent_gives_a_specific_note(homes):
    (homes.user / "gpg.conf").write_text("agent-program /nonexistent/gpg-agent\n")
    raw = pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team"))
    message = opened(raw, homes.session())
    assert any("agent could not be reached" in n for n in message.crypto.notes), message.crypto.notes


def test_nothing_decrypted_is_written_to_disk(homes, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    before = set(os.listdir(homes.user))
    signed = entity(SECRET + "\r\n")
    raw = mixed(pgp_mime_signed(signed, homes.detach_sign(signed, "reporter")).split(b"\r\n", 6)[-1],
                encrypted_entity_part(homes.encrypt(entity(SECRET), "team", sign="reporter")))
    opened(raw, homes.session())
    assert list(tmp_path.iterdir()) == []
    for name in set(os.listdir(homes.user)) - before:
        path = homes.user / name
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes()


def mime_thread(raws):
    messages = tuple(mime.parse_message(r) for r in raws)
    return Thread(ThreadId("msgid", messages[0].message_id), messages[0].subject, messages)


def test_a_key_with_a_passphrase_and_no_pinentry_is_said_and_unlocks_by_loopback(homes):
    # Protect the team key with a passphrase (loopback: no pinentry needed for the change itself).
    lock_key(homes.user, homes.fprs["team"], b"secret-pw")
    raw = pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team"))
    session = homes.session(pinentry="loopback")
    thread = pgp.open_thread(mime_thread([raw]), session)
    status = thread.messages[0].crypto
    assert status.needs_passphrase and not status.decrypted
    assert any("needs its passphrase" in n for n in status.notes)
    assert pgp.locked_ciphertext(thread) is not None
    assert "needs its passphrase" in (session.unlock(pgp.locked_ciphertext(thread), passphrase="wrong") or "")
    assert session.unlock(pgp.locked_ciphertext(thread), passphrase="secret-pw") is None
    again = pgp.open_thread(mime_thread([raw]), session)
    assert SECRET in again.messages[0].body_text and not again.messages[0].crypto.needs_passphrase


def test_an_autocrypt_header_is_offered_never_imported(homes):
    keydata = gpg(homes.world, "--export", homes.fprs["stranger"]).stdout
    folded = "\r\n ".join(base64.b64encode(keydata).decode()[i:i + 70] for i in range(0, 10_000, 70)).rstrip()
    raw = plain("hello", sender=STRANGER, extra=f"Autocrypt: addr=sam@example.com; keydata=\r\n {folded}\r\n")
    thread = pgp.open_thread(mime_thread([raw]), homes.session())
    [key] = thread.messages[0].crypto.offered_keys
    assert key.fingerprint == homes.fprs["stranger"] and key.source == "Autocrypt header"
    assert not key.in_keyring
    assert "K to import" in " ".join(thread.messages[0].crypto.lines())
    listed = gpg(homes.user, "--list-keys", homes.fprs["stranger"], check=False)
    assert listed.returncode != 0  # offered, not imported


def test_the_feedback_sweep_never_decrypts(homes):
    raw = pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team"))
    line = sweep.summary(mime.parse_message(raw))  # what the sweep reads: the archive's bytes, parsed
    assert SECRET not in line and "[encrypted part: not decrypted]" in line


def test_a_signed_multipart_with_an_attachment_verifies(homes):
    b = "inner-signed"
    poc = base64.encodebytes(b"\x7fELF" + bytes(range(256)) * 4).replace(b"\n", b"\r\n")
    signed = (f'Content-Type: multipart/mixed; boundary="{b}";\r\n protected-headers="v1"\r\n\r\n'
              f"--{b}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n"
              f"\r\nThe PoC is attached =E2=80=94 run it on 1.2.3.\r\n\r\n--{b}\r\n"
              f'Content-Type: application/octet-stream; name="poc.bin"\r\nContent-Disposition: attachment;\r\n'
              f' filename="poc.bin"\r\nContent-Transfer-Encoding: base64\r\n\r\n').encode() + poc \
        + f"\r\n--{b}--\r\n".encode()
    message = opened(pgp_mime_signed(signed, homes.detach_sign(signed, "reporter")), homes.session())
    [sig] = message.crypto.signatures
    assert sig.state == "valid", message.crypto.lines()
    assert "The PoC is attached — run it" in message.body_text
    assert [a.filename for a in message.attachments] == ["poc.bin"]
    assert all(p.signed for p in message.crypto.parts)


FAKE_PINENTRY = """#!/bin/sh
# A pinentry that answers every GETPIN with the test passphrase (the Assuan protocol, minimal).
echo "OK Pleased to meet you"
while read -r cmd rest; do
  case "$cmd" in
    GETPIN) echo "D secret-pw"; echo "OK";;
    BYE) echo "OK closing connection"; exit 0;;
    *) echo "OK";;
  esac
done
"""


def test_inside_the_app_no_pinentry_is_started_behind_the_screen(homes):
    pinentry = homes.user / "pinentry.sh"
    pinentry.write_text(FAKE_PINENTRY)
    pinentry.chmod(0o700)
    lock_key(homes.user, homes.fprs["team"], b"secret-pw", pinentry=str(pinentry))
    raw = pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team"))
    # The app's session (quiet): the pinentry is never asked, the message says the key is locked.
    quiet = opened(raw, homes.session(quiet=True))
    assert quiet.crypto.needs_passphrase and SECRET not in quiet.body_text
    # The command line's session: the agent's pinentry asks (here: answers) as it would on a terminal.
    kill_agent(homes.user)
    loud = opened(raw, homes.session())
    assert loud.crypto.decrypted and SECRET in loud.body_text


# Public test vectors: CPython's own email test messages (Debian libpython3.11-testsuite, PSF
# License), read in place as tests/mbox does; nothing is copied into this repository.
CPYTHON_EMAIL_DATA = Path("/usr/lib/python3.11/test/test_email/data")


def cpython_message(name: str) -> bytes:
    if not CPYTHON_EMAIL_DATA.is_dir():
        pytest.fail(f"{CPYTHON_EMAIL_DATA} is missing: install Debian libpython3.11-testsuite (scripts/test does)")
    return (CPYTHON_EMAIL_DATA / name).read_bytes()


def test_cpython_msg_45_a_real_pgp_mime_signature_by_a_key_we_do_not_have(homes):
    message = opened(cpython_message("msg_45.txt"), homes.session())
    [sig] = message.crypto.signatures
    assert sig.state == "unknown-key" and sig.key_id.upper().endswith("461A7AA389BD745B")
    assert "This is the signed contents." in message.body_text
    assert message.attachments == ()


def test_cpython_msg_33_a_signed_multipart_without_a_signature_part_keeps_both_parts(homes):
    message = opened(cpython_message("msg_33.txt"), homes.session())
    assert "part 1" in message.body_text and "part 2" in message.body_text
    assert message.crypto is None  # nothing OpenPGP in it: no claim either way


def test_a_gpg_that_runs_past_the_time_limit_is_stopped_with_a_note(homes):
    slow = b"Content-Type: text/plain\r\n\r\n" + os.urandom(6 * 1024 * 1024).hex().encode()
    raw = pgp_mime_encrypted(homes.encrypt(slow, "team", extra=("--compress-algo", "none")))
    message = opened(raw, homes.session(timeout=0.005, max_output=64 * 1024 * 1024))
    assert not message.crypto.decrypted
    assert any("did not finish within the time limit" in n for n in message.crypto.notes), message.crypto.notes


def test_an_offered_key_is_imported_into_the_keyring_the_settings_name(homes):
    from mailtriage.application.flows.pgp_keys import propose_key_import

    keydata = gpg(homes.world, "--armor", "--export", homes.fprs["stranger"]).stdout
    raw = mixed(entity("my key\n"), b'Content-Type: application/pgp-keys; name="key.asc"\r\n\r\n' + keydata,
                sender=STRANGER)
    session = homes.session()
    proposal = propose_key_import(pgp.open_thread(mime_thread([raw]), session), session)
    assert [(w.heading, w.destination) for w in proposal.writes] == [
        ("Import key", "into your GnuPG home (pgp.gnupg_home in your settings)")]
