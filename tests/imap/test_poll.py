"""Inbox polling: silent baseline, new headers with the next cursor, reset = new baseline, IDLE."""

from __future__ import annotations

import threading
import time

import pytest

from mailtriage.backends.errors import BackendFailure
from mailtriage.core.trace import TRACE
from mailtriage.modes.config import MailServer
from mailtriage.modes.inbox import Inbox
from tests.imap.conftest import make_mail


def test_baseline_then_new_mail_then_nothing(mailbox, seed):
    seed("INBOX", make_mail(1))
    first = mailbox.poll(None)
    assert first.baseline and first.messages == () and first.cursor.startswith("imap:")
    assert mailbox.poll(first.cursor).messages == ()
    seed("INBOX", make_mail(2))
    seed("INBOX", make_mail(3))
    seed("Archive", make_mail(4))  # only the inbox is polled
    second = mailbox.poll(first.cursor)
    assert not second.baseline
    assert [m.message_id for m in second.messages] == ["<m2@example.net>", "<m3@example.net>"]
    assert all(m.thread_count == 1 for m in second.messages)
    third = mailbox.poll(second.cursor)
    assert third.messages == () and third.cursor == second.cursor


def test_a_reset_inbox_gives_a_new_silent_baseline(dovecot, dovecot_user, mailbox, seed):
    seed("INBOX", make_mail(1))
    cursor = mailbox.poll(None).cursor
    # Simulate a mailbox reset: a UIDVALIDITY the server never had.
    validity, last = cursor.split(":")[1:]
    stale = f"imap:{int(validity) + 1}:{last}"
    seed("INBOX", make_mail(2))
    result = mailbox.poll(stale)
    assert result.baseline and result.messages == ()
    assert result.cursor.startswith(f"imap:{validity}:")


def test_a_bad_cursor_is_refused(mailbox):
    with pytest.raises(BackendFailure):
        mailbox.poll("gmail:abc")


def test_idle_wakes_on_new_mail(dovecot, dovecot_user, mailbox, seed):
    assert mailbox.conn.has("IDLE")
    mailbox.poll(None)
    timer = threading.Timer(0.3, lambda: seed("INBOX", make_mail(9)))
    timer.start()
    try:
        assert mailbox.wait_for_mail(5.0) is True
    finally:
        timer.join()
    assert mailbox.wait_for_mail(0.2) is False


def test_the_modes_inbox_reads_whole_mail_through_the_adapter_read_only(dovecot, dovecot_user, seed, monkeypatch):
    # The modes gateway's mailbox is read by ImapMailbox.read_new: one traced connection,
    # EXAMINE (not SELECT) and BODY.PEEK[], so not even \Seen or \Recent changes.
    monkeypatch.setenv("MT_TEST_MODES_INBOX", dovecot_user.password)
    server = MailServer(host="127.0.0.1", port=dovecot.port, security="plain", username=dovecot_user.name,
                        password_key=None, password_env="MT_TEST_MODES_INBOX", timeout=10)
    seed("INBOX", make_mail(1))
    lines = []
    unsubscribe = TRACE.subscribe(lines.append)
    try:
        first = Inbox(server).fetch_after(None)
        assert first.items == [] and first.baseline is not None
        seed("INBOX", make_mail(2))
        seed("INBOX", make_mail(3))
        second = Inbox(server).fetch_after((first.uidvalidity, first.baseline))
    finally:
        unsubscribe()
    assert [uid for uid, _raw in second.items] == [first.baseline + 1, first.baseline + 2]
    assert b"<m2@example.net>" in second.items[0][1] and b"<m3@example.net>" in second.items[1][1]
    sent = [line.text.split()[1].upper() for line in lines
            if line.channel == "imap:modes" and line.direction == ">" and len(line.text.split()) > 1]
    assert "EXAMINE" in sent and "SELECT" not in sent, sent
    with dovecot.client(dovecot_user) as client:
        client.select_folder("INBOX", readonly=True)
        flags = client.fetch(client.search(["ALL"]), ["FLAGS"])
    assert all(b"\\Seen" not in item[b"FLAGS"] for item in flags.values())


def test_mail_that_arrived_between_the_listing_and_idle_is_new_mail(dovecot, dovecot_user, mailbox, seed):
    # The poll looked at INBOX; a report lands before the poller starts waiting. IDLE alone
    # would announce only later arrivals, so this one would wait a whole poll interval.
    mailbox.conn.select("INBOX")
    seed("INBOX", make_mail(11))
    assert mailbox.wait_for_mail(30.0) is True  # IDLE alone would not announce it: False after 30 s
    assert mailbox.wait_for_mail(0.2) is False  # and it is announced once


def test_mail_that_came_to_the_list_folder_after_its_listing_is_new_mail_whatever_was_selected_since(
        mailbox, seed):
    # The list's folder as its listing saw it; then the connection selected another folder
    # (a Drafts probe), and a report came to the list's folder before the wait began.
    seed("seclist", make_mail(1))
    listed = mailbox.conn.reselect("seclist")
    mailbox.conn.select("Drafts")
    seed("seclist", make_mail(2))
    assert mailbox.wait_for_mail(30.0, "seclist", seen=listed) is True  # IDLE alone: False after 30 s
    assert mailbox.wait_for_mail(0.2, "seclist") is False  # once


@pytest.fixture
def no_idle_mailbox(memory_keyring):
    """An account on a Dovecot of its own that does not offer IDLE."""
    from mailtriage.backends.imap.account import password_key
    from mailtriage.backends.imap.adapter import ImapMailbox
    from mailtriage.core.secrets import set_secret
    from tests.imap.conftest import account_for
    from tests.servers.dovecot import DovecotServer

    server = DovecotServer(capability="IMAP4rev1 LITERAL+ NAMESPACE").start()
    try:
        user = server.add_user()
        account = account_for(server, user)
        set_secret(password_key(account.id), user.password)
        mb = ImapMailbox(account)
        try:
            yield mb, server, user
        finally:
            mb.close()
    finally:
        server.stop()


def test_without_idle_the_wait_takes_its_time_then_asks_once(no_idle_mailbox):
    # A wait that returned at once would be called again at once by the poller: a NOOP loop.
    mailbox, server, user = no_idle_mailbox
    assert not mailbox.conn.has("IDLE")
    lines = []
    unsubscribe = TRACE.subscribe(lambda line: lines.append(line.text) if line.direction == ">" else None)
    started = time.monotonic()
    try:
        assert mailbox.wait_for_mail(1.0) is False
    finally:
        unsubscribe()
    assert time.monotonic() - started >= 1.0
    assert sum(" NOOP" in text for text in lines) <= 2
    cancel = threading.Event()
    cancel.set()
    server.append(user, "INBOX", make_mail(5))
    assert mailbox.wait_for_mail(60.0, cancel=cancel) is True  # ended by cancel at once, then one NOOP sees it
