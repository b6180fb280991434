"""Secrets on headless machines (issue 14 §7): ``account set-password`` without a keyring
service says what the options are; ``password_command`` (a real script) gives the password
without a shell, within a timeout, its output never shown; ``account status`` on an IMAP
account logs in to the real Dovecot."""

from __future__ import annotations

import io
import json
import os
import stat
import sys

import keyring
import pytest
from keyring.backends import fail

from mailtriage.backends.errors import SignInNeeded
from mailtriage.backends.imap.account import password_key
from mailtriage.backends.imap.connection import ImapConnection
from mailtriage.cli.main import main
from mailtriage.core.secrets import SecretCommandFailed, command_secret, scrub, set_secret
from tests.imap.conftest import account_for, write_work_account


@pytest.fixture
def no_keyring():
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(previous)


def script(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def account_settings(tmp_path, monkeypatch, dovecot, user, **extra) -> None:
    config = write_work_account(tmp_path / "config", dovecot, user)
    text = (config / "config.toml").read_text(encoding="utf-8")
    text += "".join(f"{key} = {json.dumps(value)}\n" for key, value in extra.items())
    (config / "config.toml").write_text(text, encoding="utf-8")
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config))


def run(capsys, monkeypatch, *args, stdin=""):
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_set_password_without_a_keyring_service_says_what_the_options_are(tmp_path, monkeypatch, capsys, dovecot,
                                                                          dovecot_user, no_keyring):
    account_settings(tmp_path, monkeypatch, dovecot, dovecot_user)
    code, out, err = run(capsys, monkeypatch, "account", "set-password", "work", stdin="s3cret-pass\n")
    assert code == 2 and out == ""
    assert "Traceback" not in err and "no usable system keyring" in err
    assert 'password_command = "pass show mail/work"' in err and "[accounts.work]" in err
    assert "Secret Service" in err and "PYTHON_KEYRING_BACKEND" in err
    assert "s3cret-pass" not in err


def test_status_logs_in_with_the_keyring_password(tmp_path, monkeypatch, capsys, dovecot, dovecot_user,
                                                  memory_keyring):
    account_settings(tmp_path, monkeypatch, dovecot, dovecot_user)
    set_secret(password_key("work"), dovecot_user.password)
    code, out, err = run(capsys, monkeypatch, "account", "status", "work")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["signed_in"] is True and doc["provider"] == "imap" and doc["password_from"] == "keyring"
    assert doc["folders"] >= 1 and "IMAP4REV1" in doc["capabilities"]


def test_status_with_a_wrong_password_fails_without_showing_it(tmp_path, monkeypatch, capsys, dovecot,
                                                               dovecot_user, memory_keyring):
    account_settings(tmp_path, monkeypatch, dovecot, dovecot_user)
    set_secret(password_key("work"), "not-the-password-42")
    code, out, err = run(capsys, monkeypatch, "account", "status", "work")
    assert code == 4 and out == ""
    assert "rejected the credentials" in err and "not-the-password-42" not in err


def test_status_without_any_password_says_how_to_give_one(tmp_path, monkeypatch, capsys, dovecot, dovecot_user,
                                                          memory_keyring):
    account_settings(tmp_path, monkeypatch, dovecot, dovecot_user)
    code, out, err = run(capsys, monkeypatch, "account", "status", "work")
    assert code == 4 and "no password in keyring" in err and "password_command" in err


def test_password_command_logs_in_without_a_keyring(tmp_path, monkeypatch, capsys, dovecot, dovecot_user,
                                                    no_keyring):
    # A pass-like script: the password on the first line, more lines after it.
    command = script(tmp_path, "fake-pass", f'[ "$1 $2" = "show mail/work" ] || exit 3\n'
                                            f"printf '%s\\nlogin: me\\nurl: x\\n' '{dovecot_user.password}'\n")
    account_settings(tmp_path, monkeypatch, dovecot, dovecot_user, password_command=f"{command} show mail/work")
    code, out, err = run(capsys, monkeypatch, "account", "status", "work")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["signed_in"] is True and doc["password_from"] == "password_command"
    assert dovecot_user.password not in out + err


def test_password_command_runs_without_a_shell(tmp_path, dovecot, dovecot_user):
    marker = tmp_path / "pwned"
    command = script(tmp_path, "echo-args", 'printf "%s\\n" "$*"\n')
    # A shell would run the second command; without one it is only arguments.
    line = command_secret(f"{command} pw; touch {marker}", timeout=10)
    assert line == f"pw; touch {marker}" and not marker.exists()
    assert scrub(f"x {line} y") == "x [secret] y"  # remembered: masked in every output


@pytest.mark.parametrize("body, expected", [
    ("echo 'leaked-secret-1'\nexit 1\n", "failed with exit status 1"),
    ("printf '\\n'\n", "printed no password"),
    ("sleep 5\necho 'leaked-secret-2'\n", "did not finish within 1 s"),
])
def test_a_failing_password_command_never_shows_its_output(tmp_path, dovecot, dovecot_user, body, expected):
    command = script(tmp_path, "bad", body)
    acct = account_for(dovecot, dovecot_user, password_command=command, password_command_timeout=1.0)
    with pytest.raises(SignInNeeded) as info:
        ImapConnection(acct).capabilities
    text = str(info.value)
    assert expected in text and "password_command" in text
    assert "leaked-secret" not in text


def test_a_missing_password_program_is_named(tmp_path):
    with pytest.raises(SecretCommandFailed, match="no program 'no-such-pass-program' found"):
        command_secret("no-such-pass-program show x", timeout=5)


def test_an_unreadable_password_command_is_a_configuration_error(tmp_path, monkeypatch, capsys, dovecot,
                                                                 dovecot_user, memory_keyring):
    account_settings(tmp_path, monkeypatch, dovecot, dovecot_user, password_command="pass show 'unclosed")
    code, out, err = run(capsys, monkeypatch, "account", "status", "work")
    assert code == 2 and "accounts.work.password_command" in err
