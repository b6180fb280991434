"""Google accounts: one ``[accounts.<id>]`` table with ``kind = "gmail"`` in the user settings.

Example::

    [accounts.me]
    kind = "gmail"
    address = "me@example.org"       # the Google account (login_hint, From: of drafts)
    access = "draft"                 # read | draft | send
    client_id = "1234-abc.apps.googleusercontent.com"   # your Desktop-app OAuth client
    organize = false                 # true: also flags, labels, moves (adds gmail.modify)
    timeout = 30
    send_cap = 20                    # sends per rolling 24 hours (Principle 10)
    authserv_id = "mx.google.com"    # the Authentication-Results issuer to trust
    # Endpoints (defaults are Google's; tests point them at a loopback emulator):
    auth_uri = "https://accounts.google.com/o/oauth2/v2/auth"
    token_uri = "https://oauth2.googleapis.com/token"
    api_base = "https://gmail.googleapis.com"
    web_url = "https://mail.google.com/mail/"
    ca_file = "/path/ca.pem"         # extra CA to trust (a TLS-intercepting proxy, tests)

Secrets never go in this file. In keyring (service ``mailtriage``):
``google-token:<id>`` holds the tokens (refresh token, access token, expiry, scopes) and
``google-client-secret:<id>`` the client secret of the Desktop-app client, when it has
one (Google's installed-app clients do; Google documents that it is not confidential,
but it still stays out of files that get shared).

An IMAP account can sign in with Google too (Gmail over IMAP with XOAUTH2): give it
``auth = "xoauth2"``, ``oauth = "google"`` and the same ``client_id``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from mailtriage.backends.account_table import ACCESS_LEVELS, AccessLevels, AccountTable
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.settings import load_settings

DEFAULT_AUTH_URI = "https://accounts.google.com/o/oauth2/v2/auth"
DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token"
DEFAULT_API_BASE = "https://gmail.googleapis.com"
DEFAULT_WEB_URL = "https://mail.google.com/mail/"
DEFAULT_TIMEOUT = 30.0
DEFAULT_SEND_CAP = 20

SCOPE_READONLY = "https://www.googleapis.com/auth/gmail.readonly"
SCOPE_COMPOSE = "https://www.googleapis.com/auth/gmail.compose"
SCOPE_SEND = "https://www.googleapis.com/auth/gmail.send"
SCOPE_MODIFY = "https://www.googleapis.com/auth/gmail.modify"
SCOPE_LABELS = "https://www.googleapis.com/auth/gmail.labels"
SCOPE_FULL = "https://mail.google.com/"  # the only scope Gmail's IMAP accepts


def token_key(account_id: str) -> str:
    return f"google-token:{account_id}"


def client_secret_key(account_id: str) -> str:
    return f"google-client-secret:{account_id}"


@frozen_dataclass
class GoogleAccount(AccessLevels):
    id: str
    client_id: str
    address: str = ""
    access: str = "read"
    organize: bool = False
    imap: bool = False  # a Gmail-over-IMAP account (XOAUTH2): needs the full mail scope
    auth_uri: str = DEFAULT_AUTH_URI
    token_uri: str = DEFAULT_TOKEN_URI
    api_base: str = DEFAULT_API_BASE
    web_url: str = DEFAULT_WEB_URL
    timeout: float = DEFAULT_TIMEOUT
    send_cap: int = DEFAULT_SEND_CAP
    authserv_id: str | None = None
    ca_file: str | None = None

    @property
    def scopes(self) -> tuple[str, ...]:
        """The narrowest scopes for the account's access (see docs/gmail.md).

        read: gmail.readonly. draft: + gmail.compose (drafts). send: + gmail.send.
        organize: + gmail.modify and gmail.labels (flags, labels, moves; never permanent
        deletion). An IMAP account needs https://mail.google.com/, Gmail's only IMAP scope.
        """
        if self.imap:
            return (SCOPE_FULL,)
        scopes = [SCOPE_READONLY]
        if self.can_draft:
            scopes.append(SCOPE_COMPOSE)
        if self.can_send:
            scopes.append(SCOPE_SEND)
        if self.organize:
            scopes += [SCOPE_MODIFY, SCOPE_LABELS]
        return tuple(scopes)

    @classmethod
    def from_settings(cls, account_id: str, body: Mapping[str, Any], file: Path | str) -> "GoogleAccount":
        """Validate one ``[accounts.<id>]`` table. Raises ConfigError naming file and key."""

        table = AccountTable(account_id, body, file)
        key, text, number = table.key, table.text, table.number

        def url(name: str, default: str) -> str:
            value = text(name, default) or default
            if not value.startswith(("https://", "http://127.0.0.1", "http://localhost", "http://[::1]")):
                raise ConfigError(file, key(name), f"must be an https:// URL (http only to loopback), not {value!r}",
                                  default)
            return value.rstrip("/") if name in ("api_base",) else value

        kind = body.get("kind", "gmail")
        imap = kind == "imap"
        if kind not in ("gmail", "imap"):
            raise ConfigError(file, key("kind"), f"not a Google account (kind = {kind!r})", "gmail")
        access = table.choice("access", ACCESS_LEVELS, "read")
        organize = table.flag("organize")
        address = text("address") or (text("username") if imap else None) or ""
        return cls(
            id=account_id,
            client_id=text("client_id", required=True) or "",
            address=address,
            access=access,
            organize=organize,
            imap=imap,
            auth_uri=url("auth_uri", DEFAULT_AUTH_URI),
            token_uri=url("token_uri", DEFAULT_TOKEN_URI),
            api_base=url("api_base", DEFAULT_API_BASE),
            web_url=url("web_url", DEFAULT_WEB_URL),
            timeout=number("timeout", DEFAULT_TIMEOUT, float, minimum=1),
            send_cap=number("send_cap", DEFAULT_SEND_CAP),
            authserv_id=text("authserv_id"),
            ca_file=text("ca_file"),
        )


def load_google_account(account_id: str, settings=None) -> GoogleAccount:
    settings = settings or load_settings()
    return GoogleAccount.from_settings(account_id, settings.account(account_id), settings.path)
