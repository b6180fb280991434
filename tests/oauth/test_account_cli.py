"""``mailtriage account login|status|logout`` end to end, and IMAP accounts that sign in
through Google or Microsoft (the XOAUTH2 token provider)."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
import tomli_w

from mailtriage.backends.gmail.account import client_secret_key, token_key
from mailtriage.backends.imap.account import ImapAccount
from mailtriage.backends.imap.connection import ImapConnection
from mailtriage.backends.microsoft.account import cache_key
from mailtriage.cli.main import main
from mailtriage.core.secrets import get_secret, set_secret
from tests.oauth.fixtures import google_account, save_google_sign_in


def settings(tmp_path, monkeypatch, accounts: dict) -> None:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text(tomli_w.dumps({"accounts": accounts}))
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config))


def test_login_status_logout_microsoft_with_a_device_code(microsoft_emulator, memory_keyring, tmp_path,
                                                           monkeypatch, capsys):
    settings(tmp_path, monkeypatch, {"work": microsoft_emulator.account_settings(access="draft")})
    microsoft_emulator.auto_approve = True
    assert main(["account", "login", "work"]) == 0
    out, err = capsys.readouterr()
    assert "enter the code" in err and json.loads(out)["username"] == "me@contoso.com"
    assert get_secret(cache_key("work"))
    assert main(["account", "status", "work"]) == 0
    assert json.loads(capsys.readouterr().out)["signed_in"] is True
    assert main(["account", "logout", "work"]) == 0
    assert get_secret(cache_key("work")) is None
    assert not [k for (_s, k) in memory_keyring._secrets if k.startswith(cache_key("work"))]  # no piece left
    assert main(["account", "status", "work"]) == 4
    assert "account login work" in capsys.readouterr().err


def test_login_google_prints_the_url_and_waits_for_the_redirect(google_emulator, memory_keyring, tmp_path,
                                                                  monkeypatch, capsys):
    settings(tmp_path, monkeypatch, {"me": google_emulator.account_settings(access="read")})
    set_secret(client_secret_key("me"), google_emulator.client_secret)
    outcome = {}
    worker = threading.Thread(target=lambda: outcome.setdefault("code", main(["account", "login", "me",
                                                                                "--no-browser", "--timeout", "10"])))
    worker.start()
    url = None
    deadline = time.monotonic() + 10
    seen = ""
    while url is None and time.monotonic() < deadline:
        seen += capsys.readouterr().err
        url = next((line for line in seen.splitlines() if line.startswith("http")), None)
        time.sleep(0.05)
    httpx.get(url, follow_redirects=True, timeout=5)
    worker.join(10)
    assert outcome["code"] == 0
    assert json.loads(capsys.readouterr().out)["scopes"] == ["https://www.googleapis.com/auth/gmail.readonly"]
    assert json.loads(get_secret(token_key("me")))["refresh_token"]


def test_login_of_a_password_account_is_a_usage_error(tmp_path, monkeypatch, memory_keyring, capsys):
    settings(tmp_path, monkeypatch, {"plain": {"kind": "imap", "host": "imap.example.org", "username": "u"}})
    assert main(["account", "login", "plain"]) == 2
    assert "does not sign in with OAuth" in capsys.readouterr().err


def test_an_imap_account_with_oauth_google_gets_its_token_from_the_google_sign_in(google_emulator, memory_keyring,
                                                                                  tmp_path, monkeypatch):
    body = {**google_emulator.account_settings(), "kind": "imap", "host": "imap.gmail.com",
            "username": "me@example.org", "auth": "xoauth2", "oauth": "google"}
    settings(tmp_path, monkeypatch, {"gimap": body})
    account = google_account(google_emulator, "gimap", kind="imap", username="me@example.org")
    access, _refresh = save_google_sign_in(google_emulator, account, expired=True)
    imap = ImapAccount.from_settings("gimap", body, tmp_path / "config" / "config.toml")
    token = ImapConnection(imap)._token()  # what XOAUTH2 would send at login
    assert token != access and token in google_emulator.access_tokens  # refreshed through google-auth
    assert google_emulator.access_tokens[token][1] == frozenset({"https://mail.google.com/"})


def test_an_imap_account_without_oauth_keeps_the_keyring_token(tmp_path, monkeypatch, memory_keyring):
    body = {"kind": "imap", "host": "imap.example.org", "username": "u", "auth": "xoauth2"}
    settings(tmp_path, monkeypatch, {"static": body})
    set_secret("imap-token:static", "static-token")
    imap = ImapAccount.from_settings("static", body, tmp_path / "config.toml")
    assert ImapConnection(imap)._token() == "static-token"


@pytest.mark.parametrize("value", ["okta", 3])
def test_an_unknown_oauth_provider_is_a_configuration_error(tmp_path, monkeypatch, memory_keyring, value):
    from mailtriage.backends.oauth_imap import provider_for
    from mailtriage.core.projectconfig import ConfigError

    settings(tmp_path, monkeypatch, {"x": {"kind": "imap", "host": "h", "username": "u", "oauth": value}})
    with pytest.raises(ConfigError) as caught:
        provider_for("x")
    assert "accounts.x.oauth" in str(caught.value)


def test_set_password_stores_in_keyring_only(memory_keyring, tmp_path, monkeypatch, capsys):
    import io
    import sys

    from mailtriage.backends.imap.account import password_key, smtp_password_key

    settings(tmp_path, monkeypatch, {"work": {"kind": "imap", "host": "127.0.0.1", "security": "plain",
                                              "username": "me"}})
    monkeypatch.setattr(sys, "stdin", io.StringIO("s3cret pass\n"))
    assert main(["account", "set-password", "work"]) == 0
    assert json.loads(capsys.readouterr().out) == {"account": "work", "stored": password_key("work")}
    assert get_secret(password_key("work")) == "s3cret pass"
    monkeypatch.setattr(sys, "stdin", io.StringIO("smtp-pass\n"))
    assert main(["account", "set-password", "work", "--smtp"]) == 0
    assert get_secret(smtp_password_key("work")) == "smtp-pass"
    assert "s3cret" not in (tmp_path / "config" / "config.toml").read_text()
    # An unknown account is a configuration error naming the valid ones.
    assert main(["account", "set-password", "home"]) == 2
    assert "accounts.home" in capsys.readouterr().err


@pytest.mark.parametrize("head", [["--project", "PROJECT"], ["--demo"], ["--project=PROJECT"]])
def test_account_commands_after_the_global_options_run_the_account_cli(google_emulator, memory_keyring, tmp_path,
                                                                        monkeypatch, capsys, head):
    # `mailtriage --project DIR account login ID` started the app (a listing off a terminal).
    settings(tmp_path, monkeypatch, {"me": google_emulator.account_settings(access="read")})
    save_google_sign_in(google_emulator, google_account(google_emulator, access="read"))
    (tmp_path / "project").mkdir()
    head = [part.replace("PROJECT", str(tmp_path / "project")) for part in head]
    assert main([*head, "account", "status", "me"]) == 0
    assert json.loads(capsys.readouterr().out)["signed_in"] is True
    assert main([*head, "account", "login", "nobody", "--no-browser"]) == 2  # the account CLI's own error
    assert "nobody" in capsys.readouterr().err


@pytest.mark.parametrize("head", [["--project", "PROJECT"], ["--demo"], ["--project=PROJECT"]])
def test_modes_commands_after_the_global_options_run_the_modes_cli(tmp_path, capsys, head):
    # `mailtriage --project DIR modes …` started the app, as `account` did (issue 34).
    (tmp_path / "project").mkdir()
    head = [part.replace("PROJECT", str(tmp_path / "project")) for part in head]
    absent = tmp_path / "absent-modes.toml"
    assert main([*head, "modes", "cases", "--config", str(absent)]) == 2  # the modes CLI's configuration error
    captured = capsys.readouterr()
    assert "absent-modes.toml" in captured.err and captured.out == ""
