"""Headers we compose from mail content are cleaned and folded, never raise (issue 20 §2).

A subject whose RFC 2047 word decodes to CR/LF, a display name that does, an over-long
subject and References full of junk: the receipt draft and the personal reply are still
written, with one clean header line each and no header the reporter invented."""

from __future__ import annotations

from email import message_from_bytes, policy

import pytest

from mailtriage.backends.contract import DraftRequest, ThreadId, reply_subject
from mailtriage.backends.imap.account import password_key
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.imap.smtp import compose_message
from mailtriage.backends.imap.source import ImapSource
from mailtriage.backends.mailbox_contract import Compose, MailQuery
from mailtriage.core.secrets import set_secret
from tests.imap.conftest import account_for, make_mail

LIST = "security@example.org"
CRLF_SUBJECT = "=?utf-8?q?Hello=0D=0ACc:_attacker@evil.example?="
CRLF_NAME = "=?utf-8?b?RXZlDQpCY2M6IGFsbEBleGFtcGxlLm9yZw==?= <reporter@example.net>"  # "Eve\r\nBcc: all@…"


def test_reply_subject_is_one_line():
    assert reply_subject("Hello\r\nCc: attacker@evil.example") == "Re: Hello Cc: attacker@evil.example"
    assert reply_subject("re: \x1b]0;t\x07 x\u202e") == "Re: ]0;t x"


def _stored_drafts(mailbox) -> list:
    return mailbox.list(MailQuery(folder="Drafts")).messages


@pytest.fixture
def seeded(dovecot, dovecot_user, memory_keyring):
    set_secret(password_key(f"acct-{dovecot_user.name}"), dovecot_user.password)
    refs = "<a@reporter.net> <bad id@x> <b\x01@x> " + " ".join(f"<r{i}@reporter.net>" for i in range(60))
    dovecot.append(dovecot_user, "INBOX", make_mail(1, subject=CRLF_SUBJECT, sender=CRLF_NAME,
                                                    message_id="<crlf@reporter.net>"))
    dovecot.append(dovecot_user, "INBOX", make_mail(2, subject="x" * 3000 + " =?utf-8?q?=0A?= end",
                                                    message_id="<long@reporter.net>", references=refs,
                                                    in_reply_to="<a@reporter.net>"))
    return account_for(dovecot, dovecot_user, address=f"{dovecot_user.name}@example.org")


def test_receipt_draft_with_crlf_subject_is_written(seeded):
    source = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=seeded)
    try:
        tid = ThreadId("imap", "<crlf@reporter.net>")
        thread = source.read_thread(tid)
        request = DraftRequest(tid, "Thanks.\n", to=("reporter@example.net",), cc=(LIST,),
                               subject=reply_subject(thread.subject), in_reply_to="<crlf@reporter.net>")
        draft = source.create_draft(request)  # today: ValueError (header value contains linefeed)
        assert draft.subject == "Re: Hello Cc: attacker@evil.example"
        again = source.create_draft(request)  # and a re-run finds it, no second failure
        assert again.draft_ref == draft.draft_ref
        mb = ImapMailbox(seeded)
        try:
            stored, = _stored_drafts(mb)
            assert [a.email for a in stored.cc] == [LIST]
            assert stored.subject == "Re: Hello Cc: attacker@evil.example"
        finally:
            mb.close()
    finally:
        source.close()


def test_draft_with_long_subject_and_junk_references_is_written(seeded):
    source = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=seeded)
    try:
        tid = ThreadId("imap", "<a@reporter.net>")
        draft = source.create_draft(DraftRequest(tid, "Thanks.\n", to=("reporter@example.net",),
                                                 in_reply_to="<long@reporter.net>"))
        assert "\n" not in draft.subject and draft.subject.startswith("Re: xxx")
        mb = ImapMailbox(seeded)
        try:
            stored, = _stored_drafts(mb)
            assert stored.references[0] == "<a@reporter.net>" and stored.references[-1] == "<long@reporter.net>"
            assert all(" " not in r and "\x01" not in r for r in stored.references)
        finally:
            mb.close()
    finally:
        source.close()


def test_personal_reply_to_a_crlf_name_and_subject_is_composed(seeded):
    mb = ImapMailbox(seeded)
    try:
        source_id = next(m.id for m in mb.list(MailQuery(folder="INBOX")).messages
                         if m.message_id == "<crlf@reporter.net>")
        source = mb.get(source_id)
        for kind in ("reply", "reply_all", "forward"):
            out = compose_message(seeded, Compose(kind, to=("Eve\r\nBcc: x <reporter@example.net>",)
                                                  if kind == "forward" else (), body="x\n", source_id=source_id),
                                  source)
            raw = out.message.as_bytes(policy=policy.SMTP)
            parsed = message_from_bytes(raw, policy=policy.default)
            assert parsed["Bcc"] is None and parsed["Cc"] is None or "attacker" not in str(parsed["Cc"])
            assert "\n" not in str(parsed["Subject"])
            for line in raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
                assert not line.startswith((b"Bcc:", b"Cc: attacker")), line
        mb.save_draft(Compose("reply", body="Draft\n", source_id=source_id))
    finally:
        mb.close()
