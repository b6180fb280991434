"""IMAP account settings: one ``[accounts.<id>]`` table of the user settings TOML.

Example::

    [accounts.work]
    kind = "imap"
    host = "imap.example.org"
    port = 993                 # default: 993 for tls, 143 for starttls/plain
    security = "tls"           # tls | starttls | plain (plain only to a loopback host)
    username = "me@example.org"
    access = "draft"           # read | draft | send
    auth = "password"          # password | xoauth2 | oauthbearer
    address = "me@example.org" # From: of drafts and sent mail (default: username)
    timeout = 30               # seconds, every network call
    smtp_host = "smtp.example.org"
    smtp_port = 587
    smtp_security = "starttls" # tls | starttls | plain (plain only to loopback)
    smtp_username = "me@example.org"  # default: username
    password_command = "pass show mail/work"  # instead of the keyring: the first line it prints
    smtp_password_command = "pass show mail/work-smtp"  # default: password_command
    password_command_timeout = 60     # seconds
    send_cap = 20              # sends per rolling 24 hours (Principle 10)
    authserv_id = "mx.example.org"    # the only Authentication-Results trusted
    ca_file = "/path/ca.pem"   # extra CA to trust (self-hosted servers)
    cache_summaries = true     # keep the summary cache on disk (default: [settings] cache_summaries, else true)
    [accounts.work.folders]    # role overrides when the server has no SPECIAL-USE
    drafts = "Entwürfe"

Secrets never go in this file. The IMAP password is in keyring under service
``mailtriage``, key ``imap:<account-id>``; the SMTP password under ``smtp:<account-id>``
(falling back to the IMAP one); a static OAuth access token under
``imap-token:<account-id>`` when no token provider is registered. With
``password_command`` (a machine without a keyring service, or a password manager such as
``pass``) the password is the first line that command prints instead: it runs without a
shell (split like a shell would), stdin and stderr closed, within
``password_command_timeout`` seconds, and its output is never logged or shown.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import field, replace
from pathlib import Path
from typing import Any, Mapping

from mailtriage.backends.account_table import ACCESS_LEVELS, AccessLevels, AccountTable
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.paths import user_allows_caches
from mailtriage.core.origins import is_loopback
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.secrets import COMMAND_TIMEOUT, command_secret, lookup_secret
from mailtriage.core.settings import load_settings

SECURITIES = ("tls", "starttls", "plain")
AUTH_METHODS = ("password", "xoauth2", "oauthbearer")
ROLES = ("drafts", "sent", "trash", "junk", "archive")
_ACCOUNT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
DEFAULT_TIMEOUT = 30.0
DEFAULT_SEND_CAP = 20


def password_key(account_id: str) -> str:
    return f"imap:{account_id}"


def smtp_password_key(account_id: str) -> str:
    return f"smtp:{account_id}"


def token_key(account_id: str) -> str:
    return f"imap-token:{account_id}"


@frozen_dataclass
class SmtpSettings:
    host: str
    port: int
    security: str
    username: str


@frozen_dataclass
class ImapAccount(AccessLevels):
    id: str
    host: str
    port: int
    security: str
    username: str
    access: str = "read"
    auth: str = "password"
    address: str = ""
    timeout: float = DEFAULT_TIMEOUT
    smtp: SmtpSettings | None = None
    send_cap: int = DEFAULT_SEND_CAP
    authserv_id: str | None = None
    ca_file: str | None = None
    folder_roles: Mapping[str, str] = field(default_factory=dict)
    password_command: str | None = None
    smtp_password_command: str | None = None
    password_command_timeout: float = COMMAND_TIMEOUT
    cache_summaries: bool = True  # the persisted summary cache (backends/imap/summary_cache.py)


    @property
    def can_send(self) -> bool:
        return self.access == "send" and self.smtp is not None

    @property
    def from_address(self) -> str:
        return self.address or (self.username if "@" in self.username else "")

    @classmethod
    def from_settings(cls, account_id: str, body: Mapping[str, Any], file: Path | str) -> "ImapAccount":
        """Validate one ``[accounts.<id>]`` table. Raises ConfigError naming file and key."""

        table = AccountTable(account_id, body, file)
        key, text, choice, number = table.key, table.text, table.choice, table.number
        if not _ACCOUNT_ID.match(account_id):
            raise ConfigError(file, f"accounts.{account_id}", "account id has characters other than letters, "
                              "digits, '.', '_' and '-'", "e.g. [accounts.work]")
        kind = body.get("kind", "imap")
        if kind != "imap":
            raise ConfigError(file, key("kind"), f"not an IMAP account (kind = {kind!r})", "imap")
        host = text("host", required=True)
        security = choice("security", SECURITIES, "tls")
        if security == "plain" and not is_loopback(host):
            raise ConfigError(file, key("security"), f"plain (unencrypted) IMAP is allowed only to a loopback "
                              f"host, not {host!r}", "tls | starttls")
        port = number("port", 993 if security == "tls" else 143, minimum=1)
        username = text("username", required=True)
        access = choice("access", ACCESS_LEVELS, "read")
        auth = choice("auth", AUTH_METHODS, "password")
        smtp = None
        if "smtp_host" in body:
            smtp_host = text("smtp_host", required=True)
            smtp_security = choice("smtp_security", SECURITIES, "starttls")
            if smtp_security == "plain" and not is_loopback(smtp_host):
                raise ConfigError(file, key("smtp_security"), f"plain (unencrypted) SMTP is allowed only to a "
                                  f"loopback host, not {smtp_host!r}", "tls | starttls")
            smtp = SmtpSettings(smtp_host, number("smtp_port", 465 if smtp_security == "tls" else 587, minimum=1),
                                smtp_security, text("smtp_username", username))
        elif access == "send":
            raise ConfigError(file, key("smtp_host"), "access = \"send\" needs an SMTP server", "smtp_host = \"...\"")
        roles = body.get("folders", {})
        if not isinstance(roles, dict) or any(r not in ROLES or not isinstance(v, str) for r, v in roles.items()):
            raise ConfigError(file, key("folders"), f"must map roles to folder names, not {roles!r}",
                              ", ".join(ROLES) + " = \"Folder\"")
        ca_file = text("ca_file")
        commands = {}
        for name in ("password_command", "smtp_password_command"):
            value = text(name)
            if value is not None:
                try:
                    if not shlex.split(value):
                        raise ValueError("no program")
                except ValueError as exc:
                    raise ConfigError(file, key(name), f"cannot be read as a command: {exc}",
                                      "a command line, e.g. \"pass show mail/work\" (run without a shell)") from None
            commands[name] = value
        cache_summaries = body.get("cache_summaries", True)
        if not isinstance(cache_summaries, bool):
            raise ConfigError(file, key("cache_summaries"), f"must be true or false, not {cache_summaries!r}",
                              "true | false")
        return cls(
            id=account_id, host=host, port=port, security=security, username=username, access=access, auth=auth,
            address=text("address") or "",
            timeout=number("timeout", DEFAULT_TIMEOUT, float, minimum=1),
            smtp=smtp, send_cap=number("send_cap", DEFAULT_SEND_CAP),
            authserv_id=text("authserv_id"), ca_file=ca_file, folder_roles=dict(roles),
            password_command=commands["password_command"], smtp_password_command=commands["smtp_password_command"],
            password_command_timeout=number("password_command_timeout", COMMAND_TIMEOUT, float, minimum=1),
            cache_summaries=cache_summaries,
        )


def load_account(account_id: str, settings=None) -> ImapAccount:
    """The IMAP account ``account_id`` from the user settings (loaded when not given)."""
    settings = settings or load_settings()
    body = settings.account(account_id)
    account = ImapAccount.from_settings(account_id, body, settings.path)
    if not user_allows_caches(settings.data, body):  # [settings] cache_summaries = false
        account = replace(account, cache_summaries=False)
    return account


def imap_password(account: ImapAccount) -> str | None:
    """The IMAP password: the first line of ``password_command``, else the keyring's
    ``imap:<id>`` (None when the keyring holds none).

    Raises:
        SecretCommandFailed: the password command failed (its output is never quoted).
        KeyringUnavailable: no usable keyring (the message says what the options are).
    """
    if account.password_command:
        return command_secret(account.password_command, timeout=account.password_command_timeout,
                              what=f"accounts.{account.id}.password_command")
    return lookup_secret(password_key(account.id), account.id)


def smtp_password(account: ImapAccount) -> str | None:
    """The SMTP password: ``smtp_password_command``, else ``password_command``, else the
    keyring's ``smtp:<id>`` falling back to ``imap:<id>``. Raises as :func:`imap_password`."""
    if account.smtp_password_command:
        return command_secret(account.smtp_password_command, timeout=account.password_command_timeout,
                              what=f"accounts.{account.id}.smtp_password_command")
    if account.password_command:
        return imap_password(account)
    return lookup_secret(smtp_password_key(account.id), account.id) or lookup_secret(password_key(account.id),
                                                                                    account.id)
