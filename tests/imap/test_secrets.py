"""Secrets never reach an output (issue 20 §3), against the real Dovecot and aiosmtpd:
non-ASCII passwords log in; a wrong one is a credentials problem; no error, reason,
JSON document or stderr line carries a secret the session holds."""

from __future__ import annotations

import io
import json
import sys
import uuid
from dataclasses import replace

import pytest
from imapclient import IMAPClient

from mailtriage.backends.errors import BackendFailure, SignInNeeded, Unavailable
from mailtriage.backends.imap.account import SmtpSettings, password_key, smtp_password_key
from mailtriage.backends.imap.connection import ImapConnection, _text
from mailtriage.backends.imap.smtp import verify_smtp
from mailtriage.cli.main import main
from mailtriage.core.secrets import MASK, remember_secret, scrub, set_secret
from mailtriage.core.trace import redact
from mailtriage.modes.config import MailServer
from mailtriage.modes.inbox import Inbox
from tests.imap.conftest import account_for, write_imap_project, write_work_account
from tests.servers.smtp import SmtpServer

LIST = "security@example.org"


def non_ascii_password() -> str:
    return f"pässwörd-Ω-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def umlaut_user(dovecot):
    return dovecot.add_user(password=non_ascii_password())


def test_a_non_ascii_password_logs_in(dovecot, umlaut_user, memory_keyring):
    acct = account_for(dovecot, umlaut_user, security="starttls")
    set_secret(password_key(acct.id), umlaut_user.password)
    conn = ImapConnection(acct)
    try:
        assert "IMAP4REV1" in conn.capabilities
    finally:
        conn.close()


def test_the_modes_mailbox_logs_in_with_a_non_ascii_password(dovecot, umlaut_user, monkeypatch):
    monkeypatch.setenv("MT_TEST_MODES_IMAP", umlaut_user.password)
    server = MailServer(host="127.0.0.1", port=dovecot.port, security="starttls", username=umlaut_user.name,
                        password_key=None, password_env="MT_TEST_MODES_IMAP", ca_file=str(dovecot.cert.cert),
                        timeout=10)
    fetched = Inbox(server).fetch_after(None)  # first start: a silent baseline, after logging in
    assert fetched.uidvalidity > 0 and fetched.items == []


def test_a_wrong_non_ascii_password_is_a_credentials_problem_without_the_password(dovecot, umlaut_user,
                                                                                   memory_keyring):
    wrong = non_ascii_password()
    acct = account_for(dovecot, umlaut_user)
    set_secret(password_key(acct.id), wrong)
    with pytest.raises(SignInNeeded) as info:
        ImapConnection(acct).capabilities
    text = str(info.value)
    assert "rejected the credentials" in text and "unavailable" not in text
    assert wrong not in text and wrong not in info.value.reason
    # The library's error is not chained (issue 36 §6: sign-in keeps `from None`): its text can
    # quote the LOGIN line, and a traceback of ours would carry it.
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_the_library_error_that_leaked_the_password_is_scrubbed(dovecot, umlaut_user, memory_keyring):
    # What imapclient raises for LOGIN with a non-ASCII password: its args quote the command line.
    set_secret("imap:leak-check", umlaut_user.password)
    client = IMAPClient("127.0.0.1", dovecot.port, ssl=False, timeout=10)
    try:
        with pytest.raises(UnicodeError) as info:
            client.login(umlaut_user.name, umlaut_user.password)
    finally:
        client.shutdown()
    leaked = _text(info.value)
    assert umlaut_user.password in leaked  # the library's text does carry it...
    for error in (Unavailable("imap", f"login failed: {leaked}"), BackendFailure("imap", leaked),
                  SignInNeeded("imap", leaked)):
        assert umlaut_user.password not in str(error)  # ...ours never does
        assert MASK in str(error)


def write_setup(tmp_path, dovecot, user):
    return (write_work_account(tmp_path / "config", dovecot, user),
            write_imap_project(tmp_path / "project", LIST))


def run_cli(capsys, monkeypatch, *args):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_sources_json_and_stderr_say_credentials_and_never_the_password(tmp_path, dovecot, umlaut_user,
                                                                         memory_keyring, capsys, monkeypatch):
    config_dir, project = write_setup(tmp_path, dovecot, umlaut_user)
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config_dir))
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path / "data"))
    wrong = non_ascii_password()
    set_secret(password_key("work"), wrong)
    code, out, err = run_cli(capsys, monkeypatch, "--project", str(project), "sources", "--json")
    assert code == 0, err
    row = json.loads(out)["backends"][0]
    assert row["available"] is False and row["problem"] == "credentials"
    assert "rejected the credentials" in row["reason"]
    assert wrong not in out and wrong not in err

    code, out, err = run_cli(capsys, monkeypatch, "--project", str(project), "list")
    assert code == 4
    assert "sign-in needed" in err and "rejected the credentials" in err and "unavailable" not in err
    assert wrong not in out + err


def test_a_good_non_ascii_password_works_through_the_cli(tmp_path, dovecot, umlaut_user, memory_keyring, capsys,
                                                          monkeypatch):
    config_dir, project = write_setup(tmp_path, dovecot, umlaut_user)
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config_dir))
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path / "data"))
    set_secret(password_key("work"), umlaut_user.password)
    code, out, err = run_cli(capsys, monkeypatch, "--project", str(project), "sources", "--json")
    assert code == 0, err
    assert json.loads(out)["backends"][0]["available"] is True


def test_smtp_auth_with_a_non_ascii_password_and_a_wrong_one(dovecot, dovecot_user, memory_keyring):
    server = SmtpServer(dovecot.cert, mode="starttls").start()
    try:
        password = non_ascii_password()
        server.add_user(dovecot_user.name, password)
        acct = account_for(dovecot, dovecot_user, access="send", address=f"{dovecot_user.name}@example.org",
                           smtp=SmtpSettings("127.0.0.1", server.port, "starttls", dovecot_user.name))
        set_secret(smtp_password_key(acct.id), password)
        verify_smtp(acct)
        wrong = non_ascii_password()
        set_secret(smtp_password_key(acct.id), wrong)
        with pytest.raises(SignInNeeded) as info:
            verify_smtp(replace(acct))
        assert "SMTP credentials" in str(info.value) and wrong not in str(info.value)
    finally:
        server.stop()


def test_oauth_tokens_of_a_stored_token_blob_are_scrubbed(memory_keyring):
    access, refresh = "ya29." + uuid.uuid4().hex, "1//" + uuid.uuid4().hex
    set_secret("gmail:token:work", json.dumps({"token": access, "refresh_token": refresh, "scopes": ["x"]}))
    msal = {"AccessToken": {"k": {"secret": "eyJ" + uuid.uuid4().hex}}, "RefreshToken": {"k": {"secret": "0.AR" +
                                                                                                 uuid.uuid4().hex}}}
    set_secret("graph:cache:work", json.dumps(msal))
    text = (f"GET https://x/?access_token={access} failed; refresh {refresh}; "
            f"{msal['AccessToken']['k']['secret']} {msal['RefreshToken']['k']['secret']}")
    for shown in (scrub(text), str(Unavailable("gmail", text)), redact(text)):
        for secret in (access, refresh, msal["AccessToken"]["k"]["secret"], msal["RefreshToken"]["k"]["secret"]):
            assert secret not in shown


@pytest.mark.parametrize("form", [
    lambda s: s,
    lambda s: repr(s),
    lambda s: json.dumps(s),
    lambda s: str(s.encode()),
    lambda s: s.encode().decode("latin-1"),
])
def test_every_usual_form_of_a_secret_is_scrubbed(form):
    secret = non_ascii_password()
    remember_secret(secret)
    shown = scrub(f"error: {form(secret)} !")
    assert shown.startswith("error: ") and secret not in shown and MASK in shown
