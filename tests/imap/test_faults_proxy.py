"""Fault suite (issue 38), part 2: a connection reset during a STORE (a flag change) and
during uploads (the APPEND of a draft, SMTP DATA of a large message), and a slow or stalled
server, through the loopback fault proxy (tests/servers/faultproxy.py) to a real Dovecot and a
real aiosmtpd. Each fault ends in a clear error or a completed call; what is reported done is
what the server holds; the rerun converges; the next call on the same mailbox works."""

from __future__ import annotations

import email
from email import policy

import pytest

from mailtriage.backends.errors import MailError
from mailtriage.backends.imap.account import password_key
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.imap.ids import decode_message_id
from mailtriage.backends.mailbox_contract import Compose, MailQuery, PartialFailure
from mailtriage.core.secrets import set_secret
from tests.imap.conftest import account_for, make_mail
from tests.imap.test_faults_smtp import plain_smtp, proxied_sender  # noqa: F401  (fixtures)
from tests.imap.test_send import PASS, inbox_id
from tests.servers.faultproxy import FaultProxy

TIMEOUT = 5  # the stall tests' network timeout: a stall ends soon, a loaded machine still answers in time


def proxied(dovecot, user, **overrides) -> tuple[ImapMailbox, FaultProxy]:
    proxy = FaultProxy(dovecot.port)
    acct = account_for(dovecot, user, port=proxy.port, **overrides)
    set_secret(password_key(acct.id), user.password)
    return ImapMailbox(acct), proxy


@pytest.fixture
def faulty(dovecot, dovecot_user, memory_keyring):
    mb, proxy = proxied(dovecot, dovecot_user, address="sam@example.org")  # the account's own timeout
    try:
        yield mb, proxy
    finally:
        mb.close()
        proxy.close()


@pytest.fixture
def stalling(dovecot, dovecot_user, memory_keyring):
    mb, proxy = proxied(dovecot, dovecot_user, timeout=TIMEOUT, address="sam@example.org")
    try:
        yield mb, proxy
    finally:
        mb.close()
        proxy.close()


def fill(dovecot, user, count: int) -> None:
    with dovecot.client(user) as client:
        for n in range(count):
            client.append("INBOX", make_mail(n, subject=f"Report {n:03d}"))


def listing(mailbox, folder="INBOX"):
    return list(mailbox.list(MailQuery(folder=folder, page_size=500)).messages)


def server_flags(dovecot, user, mailbox, ids) -> dict[str, set[bytes]]:
    """The flags the server holds for each ID, read by another client (not through the proxy)."""
    uids = {decode_message_id(i, mailbox.account_id).uid: i for i in ids}
    with dovecot.client(user) as other:
        other.select_folder("INBOX", readonly=True)
        got = other.fetch(list(uids), ["FLAGS"])
    return {uids[uid]: set(item[b"FLAGS"]) for uid, item in got.items()}


# -- a reset during a STORE ------------------------------------------------------------------

@pytest.mark.parametrize("fault", ["answer lost", "second change never sent"])
def test_a_reset_during_a_store_reports_nothing_done_that_is_not_and_the_rerun_sets_every_flag(
        faulty, dovecot, dovecot_user, fault):
    mailbox, proxy = faulty
    fill(dovecot, dovecot_user, 12)
    ids = [h.id for h in listing(mailbox)]
    if fault == "answer lost":
        proxy.cut_when_server_sends(b"Store completed")  # the server set \Seen; we never hear it
    else:
        proxy.cut_when_client_sends(b"+FLAGS (\\Flagged)")  # \Seen set, \Flagged never reaches it
    try:
        mailbox.set_flags(ids, read=True, flagged=True)
        reported_done, failed = ids, {}
    except PartialFailure as exc:
        reported_done, failed = exc.done, exc.failed
        assert all("lost during UID STORE" in why for why in failed.values()), failed
    assert proxy.cuts == 1
    held = server_flags(dovecot, dovecot_user, mailbox, ids)
    for i in reported_done:  # done means the server holds both flags
        assert {b"\\Seen", b"\\Flagged"} <= held[i], (i, held[i])
    assert sorted([*reported_done, *failed]) == sorted(ids)  # every message accounted for
    mailbox.set_flags(ids, read=True, flagged=True)  # the rerun: no error
    held = server_flags(dovecot, dovecot_user, mailbox, ids)
    assert all({b"\\Seen", b"\\Flagged"} <= f for f in held.values()), held
    assert all(h.read for h in listing(mailbox))  # and the mailbox keeps working


# -- a reset during the upload of a draft (the APPEND literal) -------------------------------

BIG = "".join(f"line {n:06d} of the reproduction steps, kept whole\n" for n in range(8000))  # ~370 KB


def drafts(mailbox) -> list:
    return listing(mailbox, "Drafts")


def test_a_reset_part_way_through_a_draft_upload_stores_nothing_and_the_rerun_stores_it_once(faulty):
    mailbox, proxy = faulty
    compose = Compose("new", to=("reporter@example.net",), subject="Reproduction steps", body=BIG)
    proxy.cut_when_client_sends(b"APPEND", after=100_000)  # a quarter of the literal, then reset
    with pytest.raises(MailError) as err:
        mailbox.save_draft(compose)
    assert proxy.cuts == 1
    assert "lost during APPEND" in str(err.value), str(err.value)
    assert drafts(mailbox) == []  # no torn draft on the server (and the mailbox works again)
    draft_id = mailbox.save_draft(compose)
    [draft] = drafts(mailbox)
    assert draft.id == draft_id
    text = "".join(part.text for part in mailbox.get(draft_id).content.text_parts)
    assert BIG.strip() in text.replace("\r\n", "\n")  # the whole text, nothing lost


# -- a slow server, and a stall mid-response -------------------------------------------------

def test_a_slow_server_still_completes_reads_and_writes(faulty, dovecot, dovecot_user):
    mailbox, proxy = faulty
    fill(dovecot, dovecot_user, 5)
    proxy.delay(0.1)  # every answer held 100 ms: slower than the work, well under the timeout
    ids = [h.id for h in listing(mailbox)]
    mailbox.set_flags(ids, flagged=True)
    draft_id = mailbox.save_draft(Compose("new", to=("reporter@example.net",), subject="Slow", body="Hello\n"))
    proxy.delay(0)
    assert all(h.flagged for h in listing(mailbox))
    assert [d.id for d in drafts(mailbox)] == [draft_id]


def test_a_stall_mid_listing_times_out_clearly_and_the_next_read_works(stalling, dovecot, dovecot_user):
    mailbox, proxy = stalling
    fill(dovecot, dovecot_user, 30)
    mailbox.list(MailQuery(folder="Drafts"))  # connected, logged in
    proxy.stall_when_server_sends(b"Report 017")  # the headers arrive up to this one, then nothing
    with pytest.raises(MailError) as err:
        listing(mailbox)
    assert proxy.stalls == 1
    assert f"timed out after {TIMEOUT:g} s" in str(err.value), str(err.value)
    assert dovecot_user.password not in str(err.value)
    assert len(listing(mailbox)) == 30  # a fresh connection: the whole folder again


def test_a_stall_during_a_store_is_not_reported_done_and_the_rerun_completes(stalling, dovecot, dovecot_user):
    mailbox, proxy = stalling
    fill(dovecot, dovecot_user, 6)
    ids = [h.id for h in listing(mailbox)]
    proxy.stall_when_server_sends(b"Store completed")
    with pytest.raises(PartialFailure) as err:
        mailbox.set_flags(ids, flagged=True)
    assert proxy.stalls == 1 and err.value.done == []
    assert all(f"timed out after {TIMEOUT:g} s" in why for why in err.value.failed.values()), err.value.failed
    mailbox.set_flags(ids, flagged=True)
    assert all(h.flagged for h in listing(mailbox))


# -- a reset during SMTP DATA of a large message ---------------------------------------------

# plain_smtp and proxied_sender: the SMTP server behind a fault proxy, from test_faults_smtp.py


def test_a_reset_part_way_through_smtp_data_is_not_reported_sent_and_the_rerun_sends_the_whole_text_once(
        proxied_sender, plain_smtp, seed):
    """The text was cut before its end, so the server cannot have taken it; the client cannot
    tell how much of its buffer left, so it says the mail *may* have been sent and counts it
    against the cap (the safe side), never that it was sent, and files no Sent copy."""
    seed("INBOX", make_mail(1, subject="[SECURITY] XSS", message_id="<r1@reporter.net>", extra=PASS))
    compose = Compose("reply", body=BIG, source_id=inbox_id(proxied_sender, "<r1@reporter.net>"))
    plain_smtp.proxy.cut_when_client_sends(b"DATA\r\n", after=120_000)  # mid-message, before its end
    with pytest.raises(MailError) as err:
        proxied_sender.send(compose, confirmed=True, ledger=proxied_sender.ledger)
    assert plain_smtp.proxy.cuts == 1
    assert "smtp-secret" not in str(err.value)
    assert "may have been sent" in str(err.value), str(err.value)
    assert plain_smtp.log.messages == []  # nothing delivered
    assert listing(proxied_sender, "Sent") == []  # and no copy filed as sent...
    # ...which the words say, instead of sending the user to look in Sent for a copy that is not there
    assert "no copy was filed in Sent" in str(err.value) and "or in Sent" not in str(err.value), str(err.value)

    message_id = proxied_sender.send(compose, confirmed=True, ledger=proxied_sender.ledger)
    assert len(plain_smtp.log.messages) == 1
    sent = email.message_from_bytes(plain_smtp.log.messages[0].message.as_bytes(), policy=policy.default)
    assert sent["Message-ID"] == message_id
    assert BIG.strip() in sent.get_body(("plain",)).get_content().replace("\r\n", "\n")  # nothing lost
    assert [m.message_id for m in listing(proxied_sender, "Sent")] == [message_id]
