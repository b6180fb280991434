"""The medium items of issue 32: what "matches From" means, mixed signing, forwarded signatures,
gpg missing, BAD parts, and one gpg budget per message (real GnuPG)."""

from __future__ import annotations

from mailtriage.backends import mime, pgp

from .conftest import (REPORTER, _make_key, entity, gpg, headers, kill_agent, pgp_mime_encrypted, pgp_mime_signed,
                       plain)

MALLORY = "Mallory <mallory@evil.example>"


def opened(raw: bytes, session) -> mime.Message:
    return pgp.open_message(mime.parse_message(raw), session)


def _user_key(homes, uid: str) -> str:
    """A key made in the world's home and imported into the user's (as a served or attached key would be)."""
    fpr = _make_key(homes.world, uid)
    gpg(homes.user, "--import", data=gpg(homes.world, "--export", fpr).stdout)
    homes.fprs[uid] = fpr
    return fpr


def _signed_by(homes, signer: str, text: str = "I found a bug.\r\n", **kw) -> bytes:
    signed = entity(text)
    return pgp_mime_signed(signed, homes.detach_sign(signed, signer), **kw)


def test_from_is_matched_on_the_mailbox_gpg_reads_in_a_uid(homes):
    _user_key(homes, "rita@example.net <mallory@evil.example>")
    [sig] = opened(_signed_by(homes, "rita@example.net <mallory@evil.example>"), homes.session()).crypto.signatures
    assert sig.state == "valid" and sig.matches_from is False, sig.describe()


def test_a_revoked_uid_does_not_match_from(homes):
    fpr = _user_key(homes, MALLORY)
    gpg(homes.world, "--quick-add-uid", fpr, REPORTER)
    gpg(homes.world, "--quick-revoke-uid", fpr, REPORTER)
    gpg(homes.user, "--import", data=gpg(homes.world, "--export", fpr).stdout)
    [sig] = opened(_signed_by(homes, MALLORY), homes.session()).crypto.signatures
    assert sig.state == "valid" and sig.matches_from is False, sig.describe()
    assert REPORTER not in sig.uids


def test_a_signature_says_the_keys_validity(homes):
    [sig] = opened(_signed_by(homes, "reporter"), homes.session()).crypto.signatures
    assert sig.validity == "unknown"  # imported, never certified by the user
    assert "key validity: unknown" in sig.describe()


def test_a_second_key_claiming_the_senders_address_is_flagged(homes):
    other = _user_key(homes, "Rita R. <rita@example.net>")
    [sig] = opened(_signed_by(homes, "reporter"), homes.session()).crypto.signatures
    assert sig.matches_from is True
    assert other in sig.other_keys
    assert f"another key in your keyring also claims rita@example.net: {other}" in sig.describe()


def test_an_unsigned_part_inside_an_encrypted_report_is_flagged(homes):
    b = "in"
    signed = entity("Signed part.\r\n")
    inner = (f'Content-Type: multipart/mixed; boundary="{b}"\r\n\r\n--{b}\r\n'.encode()
             + pgp_mime_signed(signed, homes.detach_sign(signed, "reporter")).split(b"MIME-Version: 1.0\r\n", 1)[1]
             + f"\r\n--{b}\r\n".encode() + entity("Unsigned part, added later.\r\n") + f"\r\n--{b}--\r\n".encode())
    status = opened(pgp_mime_encrypted(homes.encrypt(inner, "team")), homes.session()).crypto
    assert status.decrypted and status.mixed, status.lines()
    assert [p.signed for p in status.parts] == [True, False]
    assert "part 2 was NOT signed" in status.lines()
    assert status.to_json()["mixed"] is True


def test_a_signature_in_a_forwarded_message_is_not_the_outer_mails(homes):
    rita = _signed_by(homes, "reporter", "Rita's words.\r\n")
    b = "fw"
    raw = (headers(sender=MALLORY) + f'Content-Type: multipart/mixed; boundary="{b}"\r\n\r\n--{b}\r\n').encode() \
        + entity("My words, see Rita's mail below.\r\n") \
        + f"\r\n--{b}\r\nContent-Type: message/rfc822\r\n\r\n".encode() + rita + f"\r\n--{b}--\r\n".encode()
    status = opened(raw, homes.session()).crypto
    assert status.signatures == ()
    assert not any("matches From" in line for line in status.lines())
    assert any("forwarded message" in line and "signature valid" in line for line in status.lines()), status.lines()
    assert not any(p.signed for p in status.parts)


def test_a_missing_gpg_or_home_does_not_read_as_a_part_sent_in_clear(homes):
    raw = pgp_mime_encrypted(homes.encrypt(entity("secret"), "team"))
    for session in (homes.session(binary="/nonexistent/gpg"), pgp.GnuPG(pgp.PgpSettings(gnupg_home="/nonexistent"))):
        lines = opened(raw, session).crypto.lines()
        assert not any("NOT encrypted" in line for line in lines), lines
        assert any("NOT decrypted" in line for line in lines), lines


def test_parts_under_a_bad_signature_are_not_signed(homes):
    signed = entity("Pay 10 EUR.\r\n")
    raw = pgp_mime_signed(signed.replace(b"10 EUR", b"1000 EUR"), homes.detach_sign(signed, "reporter"))
    status = opened(raw, homes.session()).crypto
    assert [s.state for s in status.signatures] == ["bad"]
    assert [p.signed for p in status.parts] == [False]
    assert not any("NOT signed" in line for line in status.lines())  # the BAD line says it


def test_one_gpg_budget_per_message(homes):
    b = "many"
    one = _signed_by(homes, "reporter").split(b"MIME-Version: 1.0\r\n", 1)[1]
    raw = (headers() + f'Content-Type: multipart/mixed; boundary="{b}"\r\n\r\n').encode() \
        + b"".join(f"--{b}\r\n".encode() + one + b"\r\n" for _ in range(pgp.MAX_GPG_CALLS + 5)) \
        + f"--{b}--\r\n".encode()
    kill_agent(homes.user)
    status = opened(raw, homes.session()).crypto
    assert len(status.signatures) == pgp.MAX_GPG_CALLS
    assert any("gpg budget of this message" in n and "5 more" in n for n in status.notes), status.notes


def _plan(homes, tmp_path, raw):
    from mailtriage.backends.contract import Thread, ThreadId
    from mailtriage.core.projectconfig import load_project
    from mailtriage.application.flows.pgp_reply import ProjectPgp, plan_reply_encryption
    from tests.core.helpers import write_project

    message = mime.parse_message(raw)
    thread = pgp.open_thread(Thread(ThreadId("msgid", message.message_id), message.subject, (message,)),
                             homes.session())
    config = load_project(write_project(tmp_path / "p", [("mbox", "primary", "no")],
                                        {"pgp": {"team_key": homes.fprs["team"]}}))
    return plan_reply_encryption(thread, thread.messages[0], homes.session(), ProjectPgp(config))


def test_a_reply_never_goes_to_whichever_of_two_keys_was_imported_first(homes, tmp_path):
    other = _user_key(homes, "Rita R. <rita@example.net>")
    unsigned = _plan(homes, tmp_path, pgp_mime_encrypted(homes.encrypt(entity("secret"), "team")))
    assert unsigned.blocked and "several keys in your keyring claim rita@example.net" in unsigned.blocked
    assert other in unsigned.blocked and homes.fprs["reporter"] in unsigned.blocked
    signed = _plan(homes, tmp_path, pgp_mime_encrypted(homes.encrypt(entity("secret"), "team", sign="reporter")))
    assert not signed.blocked and homes.fprs["reporter"] in signed.recipients and other not in signed.recipients


def test_the_reading_pane_labels_a_part_under_a_bad_signature_so(homes):
    from mailtriage.tui.panes.crypto import part_label

    signed = entity("Pay 10 EUR.\r\n")
    raw = pgp_mime_signed(signed.replace(b"10 EUR", b"1000 EUR"), homes.detach_sign(signed, "reporter"))
    message = opened(raw, homes.session())
    assert part_label(message, 0) == " · BAD signature"


def test_no_decrypt_says_a_signature_went_unchecked(homes):
    from mailtriage.backends.contract import Thread, ThreadId

    message = mime.parse_message(_signed_by(homes, "reporter"))
    thread = pgp.skip_thread(Thread(ThreadId("msgid", message.message_id), message.subject, (message,)))
    status = thread.messages[0].crypto
    assert status is not None and status.skipped and not status.encrypted
    assert any("signature was NOT checked" in line for line in status.lines()), status.lines()


def test_opaque_signed_inline_text_is_a_signature_not_a_failed_decryption(homes):
    armored = gpg(homes.world, "--armor", "--local-user", homes.fprs["reporter"], "--sign",
                  data=b"Opaque-signed words.\n").stdout.decode()
    status_and_text = opened(headers().encode() + entity(f"\n{armored}\n"), homes.session())
    status = status_and_text.crypto
    assert [s.state for s in status.signatures] == ["valid"], status.lines()
    assert not status.encrypted and not any("decryption" in n for n in status.notes), status.lines()
    assert "Opaque-signed words." in status_and_text.body_text


def test_a_second_armor_block_in_a_part_is_read_too(homes):
    first = homes.clearsign("First signed block.\n", "reporter")
    second = homes.clearsign("Second signed block.\n", "reporter")
    message = opened(headers().encode() + entity(f"{first}\nin between\n\n{second}"), homes.session())
    assert [s.state for s in message.crypto.signatures] == ["valid", "valid"], message.crypto.lines()
    assert "BEGIN PGP" not in message.body_text


def test_symmetric_and_hidden_recipient_encryption_are_named_as_such(homes):
    import subprocess

    symmetric = subprocess.run(["gpg", "--homedir", str(homes.world), "--batch", "--pinentry-mode", "loopback",
                                "--passphrase", "pw", "--armor", "--symmetric"], input=entity("secret"),
                               capture_output=True, timeout=60, check=True).stdout
    kill_agent(homes.user)
    lines = opened(pgp_mime_encrypted(symmetric), homes.session(quiet=True)).crypto.lines()
    assert any("encrypted with a passphrase (symmetric), not to a key" in line for line in lines), lines
    assert not any("could not be read" in line or "secret key needs its passphrase" in line for line in lines), lines

    hidden = homes.encrypt(entity("secret"), extra=("--hidden-recipient", homes.fprs["team"]))
    status = opened(pgp_mime_encrypted(hidden), homes.session()).crypto
    assert status.decrypted
    assert any("a hidden recipient" in line for line in status.lines()), status.lines()


def test_a_missing_gpg_or_home_does_not_read_as_inline_text_sent_in_clear(homes):
    # Failed first on main: the whole-body inline block read "part 1 was NOT encrypted".
    armored = homes.encrypt(b"secret", "team").decode()
    html = armored.replace("\n", "<br>\n")
    for raw in (plain(f"\n{armored}\n"), headers().encode() + b"Content-Type: text/html; charset=utf-8\r\n\r\n"
                + html.encode()):
        for session in (homes.session(binary="/nonexistent/gpg"),
                        pgp.GnuPG(pgp.PgpSettings(gnupg_home="/nonexistent"))):
            status = opened(raw, session).crypto
            assert not any("NOT encrypted" in line for line in status.lines()), status.lines()
            assert any("NOT decrypted" in line for line in status.lines()), status.lines()
            assert [p.encrypted for p in status.parts] == [True]


def test_an_inline_block_left_unopened_by_the_spent_budget_is_not_read_as_clear(homes, monkeypatch):
    # Failed first on main: the budget note was there, and no word that the body was encrypted at all.
    monkeypatch.setattr(pgp, "MAX_GPG_CALLS", 0)
    armored = homes.encrypt(b"secret", "team").decode()
    status = opened(plain(f"\n{armored}\n"), homes.session()).crypto
    assert status.encrypted and not status.decrypted, status.lines()
    assert any("NOT decrypted" in line for line in status.lines()), status.lines()
    assert not any("NOT encrypted" in line for line in status.lines()), status.lines()


def test_no_decrypt_reads_an_opaque_signed_inline_block_as_an_unchecked_signature_not_encryption(homes):
    # Failed first on main: --no-decrypt said "encrypted: not decrypted" and nothing about a signature.
    from mailtriage.backends.contract import Thread, ThreadId

    armored = gpg(homes.world, "--armor", "--local-user", homes.fprs["reporter"], "--sign",
                  data=b"Opaque-signed words.\n").stdout.decode()
    message = mime.parse_message(headers().encode() + entity(f"\n{armored}\n"))
    thread = pgp.skip_thread(Thread(ThreadId("msgid", message.message_id), message.subject, (message,)))
    status = thread.messages[0].crypto
    assert status is not None and status.skipped and not status.encrypted, status.lines()
    assert any("signature was NOT checked" in line for line in status.lines()), status.lines()
