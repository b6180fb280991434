"""Connecting and authenticating against a real Dovecot: TLS modes, errors, trace, reconnect."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from mailtriage.backends.errors import SignInNeeded, Unavailable
from mailtriage.backends.imap.account import ImapAccount, password_key, token_key
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.imap.connection import (ConnectionLost, ImapConnection, register_token_provider,
                                                 unregister_token_provider)
from mailtriage.backends.mailbox_contract import MailQuery
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.secrets import set_secret
from mailtriage.core.trace import TRACE
from tests.imap.conftest import account_for, make_mail


@pytest.fixture
def trace_lines():
    lines = []
    unsubscribe = TRACE.subscribe(lines.append)
    try:
        yield lines
    finally:
        unsubscribe()


def _login(acct: ImapAccount) -> ImapConnection:
    conn = ImapConnection(acct)
    try:
        assert "IMAP4REV1" in conn.capabilities
    finally:
        conn.close()
    return conn


@pytest.mark.parametrize("security", ["plain", "starttls", "tls"])
def test_every_transport_logs_in(dovecot, dovecot_user, memory_keyring, security, trace_lines):
    acct = account_for(dovecot, dovecot_user, security=security)
    set_secret(password_key(acct.id), dovecot_user.password)
    _login(acct)
    sent = [line.text for line in trace_lines if line.direction == ">" and line.channel == f"imap:{acct.id}"]
    assert any(" STARTTLS" in text for text in sent) == (security == "starttls")


def test_tls_with_an_untrusted_certificate_is_an_outage_not_a_sign_in(dovecot, dovecot_user, memory_keyring):
    acct = account_for(dovecot, dovecot_user, security="tls", ca_file=None)
    set_secret(password_key(acct.id), dovecot_user.password)
    with pytest.raises(Unavailable) as err:
        _login(acct)
    assert not isinstance(err.value, SignInNeeded)
    assert "certificate" in str(err.value)


def test_wrong_password_means_sign_in_needed(dovecot, dovecot_user, memory_keyring):
    acct = account_for(dovecot, dovecot_user)
    set_secret(password_key(acct.id), "not-the-password")
    with pytest.raises(SignInNeeded) as err:
        _login(acct)
    assert dovecot_user.name in str(err.value)
    assert "not-the-password" not in str(err.value)


def test_missing_password_names_the_keyring_key(dovecot, dovecot_user, memory_keyring):
    acct = account_for(dovecot, dovecot_user)
    with pytest.raises(SignInNeeded) as err:
        _login(acct)
    assert password_key(acct.id) in str(err.value)


def test_server_down_is_unavailable_not_sign_in(dovecot_user, memory_keyring):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    acct = ImapAccount(id="down", host="127.0.0.1", port=port, security="plain", username=dovecot_user.name)
    set_secret(password_key(acct.id), dovecot_user.password)
    with pytest.raises(Unavailable) as err:
        _login(acct)
    assert not isinstance(err.value, SignInNeeded)
    assert "refused" in str(err.value)


def test_a_silent_server_times_out_as_an_outage(memory_keyring):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    accepted = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()
    acct = ImapAccount(id="silent", host="127.0.0.1", port=listener.getsockname()[1], security="plain",
                       username="x", timeout=1.0)
    set_secret(password_key(acct.id), "pw")
    started = time.monotonic()
    try:
        with pytest.raises(Unavailable) as err:
            _login(acct)
    finally:
        listener.close()
        for conn, _addr in accepted:
            conn.close()
    assert time.monotonic() - started < 15  # its 1-s timeout held, not the default 30 s (nor a hang), whatever the load
    assert "timed out" in str(err.value) and not isinstance(err.value, SignInNeeded)


def test_plain_imap_is_refused_to_a_remote_host():
    with pytest.raises(ConfigError) as err:
        ImapAccount.from_settings("work", {"host": "imap.example.org", "security": "plain", "username": "me"},
                                  "config.toml")
    assert err.value.key == "accounts.work.security"


def test_account_settings_are_validated_with_file_and_key():
    acct = ImapAccount.from_settings("work", {"host": "imap.example.org", "username": "me@example.org",
                                              "access": "send", "smtp_host": "smtp.example.org",
                                              "folders": {"drafts": "Entwürfe"}}, "config.toml")
    assert (acct.port, acct.security, acct.smtp.port, acct.smtp.security) == (993, "tls", 587, "starttls")
    assert acct.can_send and acct.folder_roles == {"drafts": "Entwürfe"}
    with pytest.raises(ConfigError) as err:
        ImapAccount.from_settings("work", {"host": "h", "username": "u", "access": "write"}, "config.toml")
    assert err.value.key == "accounts.work.access" and "read | draft | send" in str(err.value)
    with pytest.raises(ConfigError) as err:
        ImapAccount.from_settings("work", {"host": "h", "username": "u", "access": "send"}, "config.toml")
    assert err.value.key == "accounts.work.smtp_host"


@pytest.mark.parametrize("auth", ["xoauth2", "oauthbearer"])
def test_oauth_through_a_token_provider(dovecot, dovecot_user, memory_keyring, auth, trace_lines):
    # Dovecot checks the bearer token against the passdb, so the user's password plays the token.
    acct = account_for(dovecot, dovecot_user, auth=auth)
    calls = []

    def provider(account):
        calls.append(account.id)
        return dovecot_user.password

    register_token_provider(acct.id, provider)
    try:
        _login(acct)
    finally:
        unregister_token_provider(acct.id)
    assert calls == [acct.id]
    assert not any(dovecot_user.password in line.text for line in trace_lines)
    assert any("AUTHENTICATE [REDACTED]" in line.text for line in trace_lines)


def test_oauth_token_from_keyring_and_a_rejected_token(dovecot, dovecot_user, memory_keyring):
    acct = account_for(dovecot, dovecot_user, auth="xoauth2")
    with pytest.raises(SignInNeeded) as err:
        _login(acct)
    assert token_key(acct.id) in str(err.value)
    set_secret(token_key(acct.id), "expired-token")
    with pytest.raises(SignInNeeded):
        _login(acct)
    set_secret(token_key(acct.id), dovecot_user.password)
    _login(acct)


def test_trace_redacts_the_login_password(account, dovecot_user, trace_lines):
    _login(account)
    texts = [line.text for line in trace_lines if line.channel == f"imap:{account.id}"]
    assert any("LOGIN [REDACTED]" in t for t in texts)
    assert not any(dovecot_user.password in t for t in texts)
    assert any(t.startswith("* OK") for t in texts)  # the greeting and responses are traced


def test_connection_lost_mid_fetch_is_a_clear_error_then_a_reconnect(dovecot, dovecot_user, account, mailbox, seed):
    for n in range(3):
        seed("INBOX", make_mail(n))
    assert mailbox.list(MailQuery(folder="INBOX")).total == 3
    killed = []

    def kill_on_fetch(line):
        if line.direction == ">" and " FETCH " in line.text and not killed:
            killed.append(dovecot.kill_user_connections(dovecot_user))

    unsubscribe = TRACE.subscribe(kill_on_fetch)
    try:
        with pytest.raises(ConnectionLost) as err:
            mailbox.list(MailQuery(folder="INBOX"))
    finally:
        unsubscribe()
    assert killed and killed[0] >= 1
    assert "lost during FETCH" in str(err.value) and "reconnect" in str(err.value)
    page = mailbox.list(MailQuery(folder="INBOX"))
    assert page.total == 3 and mailbox.conn.connects == 2


def test_an_open_connection_is_reused(account, mailbox, seed):
    seed("INBOX", make_mail(1))
    for _ in range(3):
        mailbox.list(MailQuery(folder="INBOX"))
    assert mailbox.conn.connects == 1
    mailbox.close()
    mailbox.close()  # closing twice is fine
    assert not mailbox.conn.is_open


def test_trace_shows_message_literals_only_by_size(account, trace_lines):
    from dataclasses import replace

    from mailtriage.backends.mailbox_contract import Compose

    mailbox = ImapMailbox(replace(account, address="me@example.org"))
    try:
        mailbox.save_draft(Compose("new", to=("someone@example.net",), subject="secret plans",
                                   body="The embargoed details.\n"))
    finally:
        mailbox.close()
    texts = [line.text for line in trace_lines if line.channel == f"imap:{account.id}"]
    assert any(" APPEND " in t for t in texts) and any(t.startswith("[literal ") for t in texts)
    assert not any("embargoed details" in t for t in texts)


def test_the_whole_server_killed_mid_fetch_then_restarted(memory_keyring):
    from tests.servers.dovecot import DovecotServer

    server = DovecotServer().start()  # our own: the session's server stays up for other tests
    try:
        user = server.add_user()
        for n in range(3):
            server.append(user, "INBOX", make_mail(n))
        acct = account_for(server, user)
        set_secret(password_key(acct.id), user.password)
        mailbox = ImapMailbox(acct)
        killed = []

        def kill_on_fetch(line):
            if line.direction == ">" and " FETCH " in line.text and not killed:
                killed.append(True)
                server.kill_master()

        assert mailbox.list(MailQuery(folder="INBOX")).total == 3
        unsubscribe = TRACE.subscribe(kill_on_fetch)
        try:
            with pytest.raises(ConnectionLost) as err:
                mailbox.list(MailQuery(folder="INBOX"))
        finally:
            unsubscribe()
        assert "lost during FETCH" in str(err.value)
        with pytest.raises(Unavailable) as down:  # nothing listens now: an outage, not a sign-in problem
            mailbox.list(MailQuery(folder="INBOX"))
        assert not isinstance(down.value, SignInNeeded)
        server.start()
        assert mailbox.list(MailQuery(folder="INBOX")).total == 3
        mailbox.close()
    finally:
        server.stop()
