"""Fixtures of the OAuth backends' tests: the Google and Microsoft emulators on loopback,
accounts that point at them through configuration, and saved sign-ins in a memory keyring.

Import them where needed (tests/oauth/conftest.py, tests/contract/conftest.py)::

    from tests.oauth.fixtures import *  # noqa: F401,F403
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from mailtriage.backends.gmail.account import GoogleAccount, client_secret_key, token_key
from mailtriage.core.secrets import set_secret
from mailtriage.core.trace import TRACE
from tests.oauth.google_server import GoogleEmulator
from tests.servers.fixtures import memory_keyring  # noqa: F401

__all__ = ["google_emulator", "memory_keyring", "gmail_account", "google_account", "save_google_sign_in",
           "oauth_certificate", "microsoft_emulator", "microsoft_account", "sign_in_microsoft", "graph_account",
           "trace_lines"]


@pytest.fixture
def google_emulator():
    emulator = GoogleEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()


def google_account(emulator: GoogleEmulator, account_id: str = "me", **settings) -> GoogleAccount:
    return GoogleAccount.from_settings(account_id, emulator.account_settings(**settings), "test-config.toml")


def save_google_sign_in(emulator: GoogleEmulator, account: GoogleAccount, *, expired: bool = False,
                        signed_in: datetime | None = None) -> tuple[str, str]:
    """Store tokens in keyring as a finished sign-in would (signed in now, or ``signed_in``);
    returns (access, refresh)."""
    access, refresh = emulator.issue(account.scopes, expires_in=-1 if expired else None)
    expiry = datetime.now(timezone.utc) + (timedelta(seconds=-10) if expired else timedelta(hours=1))
    set_secret(token_key(account.id), json.dumps({"refresh_token": refresh, "access_token": access,
                                                  "expiry": expiry.isoformat(), "scopes": list(account.scopes),
                                                  "signed_in": (signed_in or datetime.now(timezone.utc)).isoformat()}))
    set_secret(client_secret_key(account.id), emulator.client_secret)
    return access, refresh


@pytest.fixture
def gmail_account(google_emulator, memory_keyring) -> GoogleAccount:
    account = google_account(google_emulator, access="draft", organize=True)
    save_google_sign_in(google_emulator, account)
    return account


@pytest.fixture
def trace_lines():
    """Every protocol-trace line written during the test (the trace is enabled)."""
    lines = []
    unsubscribe = TRACE.subscribe(lines.append)
    try:
        yield lines
    finally:
        unsubscribe()


# --- Microsoft -----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def oauth_certificate(tmp_path_factory):
    from tests.servers.certs import make_certificate

    return make_certificate(tmp_path_factory.mktemp("oauth-tls"))


@pytest.fixture
def microsoft_emulator(oauth_certificate):
    from tests.oauth.microsoft_server import MicrosoftEmulator

    emulator = MicrosoftEmulator(oauth_certificate).start()
    try:
        yield emulator
    finally:
        emulator.stop()


def microsoft_account(emulator, account_id: str = "work", **settings):
    from mailtriage.backends.microsoft.account import MicrosoftAccount

    return MicrosoftAccount.from_settings(account_id, emulator.account_settings(**settings), "test-config.toml")


def sign_in_microsoft(emulator, account):
    """A real device-code sign-in against the emulator (the user approves at once)."""
    from mailtriage.backends.microsoft.auth import MicrosoftSignIn

    def approve(message: str) -> None:
        emulator.approve(message.rsplit("enter the code ", 1)[1].split()[0])

    signin = MicrosoftSignIn(account)
    try:
        return signin.login_device_code(announce=approve, timeout=10)
    finally:
        signin.close()


@pytest.fixture
def graph_account(microsoft_emulator, memory_keyring):
    account = microsoft_account(microsoft_emulator, access="draft", organize=True)
    sign_in_microsoft(microsoft_emulator, account)
    microsoft_emulator.token_calls.clear()
    return account
