"""Only an encryption of the whole message is opened as the report, and its hidden Subject stays hidden.

Mallory wraps Rita's old ciphertext (sent to the team) in a mail of his own: a part of a
multipart/mixed, a forwarded message/rfc822, or an inline block between his own lines. If we
decrypted it and showed it as his report, ``r`` then Ctrl+r would quote Rita's plaintext into a
reply to Mallory (encrypted to Mallory's key when we hold it). Such a part is listed as an
attached encrypted part, never decrypted into the text.
"""

from __future__ import annotations

from mailtriage.backends import mime, pgp
from mailtriage.backends.contract import Thread, ThreadId
from mailtriage.core.projectconfig import load_project
from mailtriage.application.flows.compose import FORWARD, REPLY, forward_subject
from mailtriage.application.flows.reply import reply_form
from tests.core.helpers import write_project

from .conftest import encrypted_entity_part, entity, headers, mixed, pgp_mime_encrypted, plain

RITA_SECRET = "Rita's old finding: the overflow is in frob_parse(), 70000 bytes of 'A'."
MALLORY = "Mallory <mallory@evil.example>"
HIDDEN = "RCE in frob 2.3 via crafted header"


def _thread(*raws: bytes) -> Thread:
    messages = tuple(mime.parse_message(r) for r in raws)
    return Thread(ThreadId("msgid", messages[0].message_id), messages[0].subject, messages)


def _config(tmp_path):
    return load_project(write_project(tmp_path / "p", [("mbox", "primary", "no")],
                                      {"security_list": "security@example.org",
                                       "security_inbox": {"foundation_security_address": "security@example.org"}}))


def _assert_not_opened(thread: Thread, tmp_path) -> None:
    message = thread.messages[0]
    assert RITA_SECRET not in message.body_text, message.body_text
    assert not message.crypto.decrypted
    assert any("not decrypted" in line and "whole message" in line for line in message.crypto.lines()), \
        message.crypto.lines()
    quoted = reply_form(_config(tmp_path), thread, REPLY).body  # what r then Ctrl+r puts in the draft
    assert RITA_SECRET not in quoted


def test_an_encrypted_part_in_mallorys_mixed_mail_is_attached_not_decrypted(homes, tmp_path):
    ciphertext = homes.encrypt(entity(RITA_SECRET), "team", sign="reporter")
    raw = mixed(entity("Hi, please re-check this for me and reply with details:\n"),
                encrypted_entity_part(ciphertext), sender=MALLORY)
    thread = pgp.open_thread(_thread(raw), homes.session())
    _assert_not_opened(thread, tmp_path)
    message = thread.messages[0]
    assert [a.content_type for a in message.attachments] == ["application/octet-stream"]
    assert "encrypted" in (message.attachments[0].note or "")
    assert not message.crypto.encrypted  # Mallory's mail itself was not encrypted: replies are not planned as such
    assert mime.attachment_bytes(raw, 0).startswith(b"-----BEGIN PGP MESSAGE-----")


def test_a_forwarded_encrypted_message_is_not_decrypted(homes, tmp_path):
    rita = pgp_mime_encrypted(homes.encrypt(entity(RITA_SECRET), "team"))
    raw = mixed(entity("Forwarding an old one:\n"),
                b"Content-Type: message/rfc822\r\nContent-Disposition: inline\r\n\r\n" + rita, sender=MALLORY)
    thread = pgp.open_thread(_thread(raw), homes.session())
    _assert_not_opened(thread, tmp_path)


def test_an_inline_block_between_mallorys_lines_is_not_decrypted(homes, tmp_path):
    armored = homes.encrypt(RITA_SECRET.encode(), "team").decode()
    raw = plain(f"Please decrypt and quote this back to me:\n\n{armored}\nthanks\n", sender=MALLORY)
    thread = pgp.open_thread(_thread(raw), homes.session())
    _assert_not_opened(thread, tmp_path)


def test_an_inline_block_that_is_the_whole_body_is_decrypted(homes):
    armored = homes.encrypt(RITA_SECRET.encode(), "team").decode()
    message = pgp.open_message(mime.parse_message(plain(f"\n{armored}\n\n")), homes.session())
    assert message.crypto.decrypted and message.crypto.wholly_encrypted
    assert message.body_text.strip() == RITA_SECRET


def _hidden_subject_report(homes, subject: str = "...") -> bytes:
    inner = (b'Content-Type: text/plain; charset=utf-8; protected-headers="v1"\r\n'
             + f"Subject: {HIDDEN}\r\n\r\n".encode() + RITA_SECRET.encode() + b"\r\n")
    return pgp_mime_encrypted(homes.encrypt(inner, "team"), subject=subject)


def test_the_hidden_subject_is_shown_but_never_becomes_the_messages_subject(homes, tmp_path):
    thread = pgp.open_thread(_thread(_hidden_subject_report(homes)), homes.session())
    message = thread.messages[0]
    assert message.subject == "..." == thread.subject  # what drafts, forwards and issue titles read
    assert message.crypto.hidden_subject == HIDDEN
    assert any(HIDDEN in line and "hidden" in line for line in message.crypto.lines())
    assert message.crypto.to_json()["hidden_subject"] == HIDDEN
    config = _config(tmp_path)
    assert HIDDEN not in reply_form(config, thread, REPLY).subject
    assert HIDDEN not in reply_form(config, thread, FORWARD).subject
    assert HIDDEN not in forward_subject(message.subject)


def test_a_subject_inside_an_encrypted_part_of_a_clear_mail_is_never_taken(homes):
    inner = (b'Content-Type: text/plain; charset=utf-8; protected-headers="v1"\r\n'
             b"Subject: URGENT: wire the bounty to mallory\r\n\r\nhello\r\n")
    raw = mixed(entity("see below\n"), encrypted_entity_part(homes.encrypt(inner, "team")), sender=MALLORY,
                subject="Report")
    message = pgp.open_message(mime.parse_message(raw), homes.session())
    assert message.subject == "Report" and message.crypto.hidden_subject is None
    assert "wire the bounty" not in " ".join(message.crypto.lines())



def test_exchange_mangled_pgp_mime_is_read_as_the_whole_message_encryption(homes):
    # Exchange rewrites multipart/encrypted into multipart/mixed: an empty text part, then the two
    # RFC 3156 parts as attachments (the layout Enigmail and Thunderbird repair).
    armored = homes.encrypt(entity(RITA_SECRET), "team", sign="reporter")
    b = "exch"
    raw = (headers() + f'Content-Type: multipart/mixed; boundary="{b}"\r\n\r\n'
           f"--{b}\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n\r\n"
           f"--{b}\r\nContent-Type: application/pgp-encrypted\r\nContent-Disposition: attachment;\r\n"
           f' filename="PGPMIME version identification"\r\n\r\nVersion: 1\r\n\r\n'
           f'--{b}\r\nContent-Type: application/octet-stream; name="encrypted.asc"\r\n'
           f'Content-Disposition: attachment; filename="encrypted.asc"\r\n\r\n').encode() \
        + armored + f"\r\n--{b}--\r\n".encode()
    message = pgp.open_message(mime.parse_message(raw), homes.session())
    assert message.crypto.decrypted and message.crypto.wholly_encrypted, message.crypto.lines()
    assert RITA_SECRET in message.body_text
    assert message.attachments == ()
    assert any("Exchange" in n for n in message.crypto.notes + message.notes)
