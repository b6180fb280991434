"""``ImapConnection.abort()`` ends a connection still being opened: its TCP connect, TLS
handshake, greeting or STARTTLS handshake (a quit while the server is slow or silent waited
for the account's timeout, as the socket was out of reach inside imapclient's constructor);
``ImapMailbox.abort()`` also ends an SMTP send whose text has not gone out.

The servers are real sockets on loopback that stop answering at one step; an event (or the
kernel's socket table) says when the client is at that step, and the account's timeout
(60 s) is far beyond the join's bound, so a join that returns means the abort ended it.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from mailtriage.backends.errors import Unavailable
from mailtriage.backends.imap.account import ImapAccount, SmtpSettings, password_key, smtp_password_key
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.imap.connection import ImapConnection
from mailtriage.backends.mailbox_contract import Compose
from mailtriage.backends.send_ledger import SendLedger
from mailtriage.core.secrets import set_secret
from tests.servers.ports import await_syn_sent, unanswered_port
from tests.servers.silent_imap import SilentServer

ENDED = "was ended (the app quits)"


def _opening(conn: ImapConnection) -> tuple[threading.Thread, list]:
    """Open ``conn`` on a thread (as a worker's first call does); its outcome lands in the list."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(conn.capabilities)
        except Exception as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _account(port: int, security: str) -> ImapAccount:
    acct = ImapAccount(id="slow", host="127.0.0.1", port=port, security=security, username="sam",
                       timeout=60.0)
    set_secret(password_key(acct.id), "pw")
    return acct


def _aborted_in_time(conn: ImapConnection, thread: threading.Thread, outcome: list) -> None:
    conn.abort()
    thread.join(10)  # the account waits 60 s: only the abort ends it within this
    assert not thread.is_alive(), "abort() did not reach the connection being opened"
    [error] = outcome
    assert isinstance(error, Unavailable) and ENDED in str(error), error


@pytest.mark.parametrize("security, greeting", [
    ("plain", None),  # accepts, never greets
    ("plain", b"* OK slow\r\n"),  # greets, never answers imaplib's CAPABILITY
    ("tls", None),  # never answers the TLS ClientHello
])
def test_abort_ends_a_connection_waiting_for_the_server(memory_keyring, security, greeting):
    server = SilentServer(greeting, ())
    conn = ImapConnection(_account(server.port, security))
    try:
        thread, outcome = _opening(conn)
        assert server.reached.wait(10)  # connected: the client now waits on the server
        _aborted_in_time(conn, thread, outcome)
    finally:
        server.close()


def test_abort_ends_a_starttls_handshake(memory_keyring):
    server = SilentServer(b"* OK [CAPABILITY IMAP4rev1 STARTTLS] slow\r\n", (
        (b"CAPABILITY", b"* CAPABILITY IMAP4rev1 STARTTLS\r\nTAG OK done\r\n"),
        (b"STARTTLS", b"TAG OK begin TLS\r\n"),  # then silence: the handshake waits
    ))
    conn = ImapConnection(_account(server.port, "starttls"))
    try:
        thread, outcome = _opening(conn)
        assert server.reached.wait(10)
        _aborted_in_time(conn, thread, outcome)
    finally:
        server.close()


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's socket table")
def test_abort_ends_a_tcp_connect_the_server_does_not_answer(memory_keyring):
    """A listener whose queue is full drops the SYN (Linux), as an unreachable host does."""
    with unanswered_port() as port:
        conn = ImapConnection(_account(port, "plain"))
        thread, outcome = _opening(conn)
        await_syn_sent(port)
        _aborted_in_time(conn, thread, outcome)


def test_abort_of_the_openings_only_leaves_an_open_connections_call_to_finish(memory_keyring):
    """What a quit does first (application/service_lock.take_or_abort): a call on an open
    connection is left its chance to finish (a write the server is completing)."""
    server = SilentServer(b"* OK [CAPABILITY IMAP4rev1] hi\r\n", (
        (b"CAPABILITY", b"* CAPABILITY IMAP4rev1\r\nTAG OK done\r\n"),
        (b"LOGIN", b"TAG OK [CAPABILITY IMAP4rev1] logged in\r\n"),
        (b"NOOP", b""),  # the answer comes when the test sends it
    ))
    conn = ImapConnection(_account(server.port, "plain"))
    outcome: list = []

    def noop() -> None:
        try:
            outcome.append(conn.call("NOOP", lambda c: c.noop()))
        except Exception as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    thread = threading.Thread(target=noop, daemon=True)
    try:
        thread.start()
        assert server.reached.wait(10)  # the NOOP waits on the server
        conn.abort(opening_only=True)
        server.conns[0].sendall(server.tag + b" OK NOOP done\r\n")
        thread.join(10)
        assert not thread.is_alive()
        [(text, _untagged)] = outcome
        assert text == b"NOOP done"
    finally:
        server.close()


def _send_in_a_thread(smtp_port: int, tmp_path) -> tuple:
    """A send account on the SMTP server at ``smtp_port``, its mail sent confirmed in a thread
    (started): the mailbox, the send ledger, the account, the thread and what the send returned or raised."""
    account = replace(_account(1, "plain"), access="send", address="sam@example.org",
                      smtp=SmtpSettings("127.0.0.1", smtp_port, "plain", "sam"))
    set_secret(smtp_password_key(account.id), "smtp-pw")
    mailbox = ImapMailbox(account)
    ledger = SendLedger(tmp_path / "ledger.json")
    outcome: list = []

    def send() -> None:
        try:
            outcome.append(mailbox.send(Compose("new", to=("rita@example.org",), subject="s", body="b\n"),
                                        confirmed=True, ledger=ledger))
        except Exception as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return mailbox, ledger, account, thread, outcome


@pytest.mark.parametrize("opening_only", [True, False])
def test_abort_ends_an_smtp_send_before_its_text(memory_keyring, tmp_path, opening_only):
    """A send waiting on an SMTP server that never greets: nothing of the mail went out, so
    the quit ends it (either stage), and the send ledger counts nothing."""
    silent = SilentServer()  # accepts, never says 220
    try:
        mailbox, ledger, account, thread, outcome = _send_in_a_thread(silent.port, tmp_path)
        assert silent.reached.wait(10)  # connected; the greeting never comes (the account waits 60 s)
        mailbox.abort(opening_only)
        thread.join(10)
        assert not thread.is_alive(), "abort() did not reach the SMTP send"
        [error] = outcome
        assert isinstance(error, Unavailable) and "the app quits" in str(error), error
        assert ledger.count(account.id) == 0
    finally:
        silent.close()


class HeldSmtp:
    """An SMTP server on loopback that takes a mail's text and holds its answer to it until
    ``release``: the send waits with its text gone out."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.text_in, self.release = threading.Event(), threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _addr = self.listener.accept()
        with conn, conn.makefile("rb") as reader:
            conn.sendall(b"220 held ESMTP\r\n")
            for line in iter(reader.readline, b""):
                verb = line.split()[0].upper() if line.strip() else b""
                if verb == b"EHLO":
                    conn.sendall(b"250-held\r\n250 AUTH PLAIN\r\n")
                elif verb == b"AUTH":
                    conn.sendall(b"235 ok\r\n")
                elif verb == b"DATA":
                    conn.sendall(b"354 go ahead\r\n")
                    while reader.readline() not in (b".\r\n", b""):
                        pass
                    self.text_in.set()
                    self.release.wait(30)
                    conn.sendall(b"250 queued\r\n")
                elif verb == b"QUIT":
                    conn.sendall(b"221 bye\r\n")
                    return
                else:
                    conn.sendall(b"250 ok\r\n")


def test_abort_leaves_an_smtp_send_whose_text_went_out_to_finish(memory_keyring, tmp_path):
    """Cut after its text, a send might have been delivered without our knowing: the quit lets it end."""
    server = HeldSmtp()
    mailbox, ledger, account, thread, outcome = _send_in_a_thread(server.port, tmp_path)
    assert server.text_in.wait(10)
    mailbox.abort()  # its ending is queued on the send's loop before the server's answer comes
    server.release.set()
    thread.join(10)
    [result] = outcome
    # Sent; the copy to Sent then finds the IMAP side ended, and says so of a mail that left.
    assert "the mail was sent, but" in str(result), result
    assert ledger.count(account.id) == 1
