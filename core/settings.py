"""User settings: TOML in the platformdirs config dir (``MAILTRIAGE_CONFIG_DIR`` overrides).

Holds accounts, theme, key bindings and defaults. Never secrets: passwords and tokens
live in keyring (see :mod:`mailtriage.core.secrets`).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from mailtriage.core import private_files
from mailtriage.core.projectconfig import ConfigError

SETTINGS_FILE = "config.toml"
#: What the thread list's date column shows: the sender's ``Date:`` or when the mail arrived.
DATE_COLUMNS = ("sent", "arrival")
_SECRET_KEYS = {"password", "token", "access_token", "refresh_token", "client_secret", "secret", "cookie"}


def config_dir() -> Path:
    override = os.environ.get("MAILTRIAGE_CONFIG_DIR")
    if override:
        return Path(override)
    return Path(platformdirs.user_config_dir("mailtriage"))


def data_dir() -> Path:
    override = os.environ.get("MAILTRIAGE_DATA_DIR")
    if override:
        return Path(override)
    return Path(platformdirs.user_data_dir("mailtriage"))


@dataclass
class UserSettings:
    path: Path
    data: dict[str, Any] = field(default_factory=dict)
    #: False for the stand-in a front end uses when the file could not be read: what it says
    #: is unknown, so nothing it could forbid is allowed (e.g. caching mail metadata on disk).
    readable: bool = True
    #: Why the file could not be read, for the command line's stand-in: a call that needs a
    #: value from the file (:meth:`require`) raises it; the rest runs on the defaults.
    problem: ConfigError | None = None

    def require(self) -> None:
        """Raise why the file could not be read, when it could not: for a caller that needs a
        value from it (the alert-polling interval, an account), not its default."""
        if self.problem is not None:
            raise self.problem

    @property
    def theme(self) -> str | None:
        value = self.data.get("theme")
        return str(value) if value else None

    @property
    def bindings(self) -> dict[str, str]:
        keys = self.data.get("keys", {})
        if not isinstance(keys, dict):
            raise ConfigError(self.path, "keys", "must be a table of binding-id = \"key\"", "[keys] table")
        return {str(k): str(v) for k, v in keys.items()}

    @property
    def date_column(self) -> str:
        """``date_column = "sent"`` (default: the sender's ``Date:``) or ``"arrival"``."""
        value = self.data.get("date_column", "sent")
        if value not in DATE_COLUMNS:
            raise ConfigError(self.path, "date_column", f"unknown value {value!r}", '"sent" or "arrival"')
        return str(value)

    def accounts(self) -> dict[str, dict[str, Any]]:
        if "accounts" not in self.data:  # (a demo run's stand-in carries the demo's account)
            self.require()
        accounts = self.data.get("accounts", {})
        if not isinstance(accounts, dict):
            raise ConfigError(self.path, "accounts", "must be a table of [accounts.<id>] tables", "[accounts.work]")
        out: dict[str, dict[str, Any]] = {}
        for account_id, body in accounts.items():
            if not isinstance(body, dict):
                raise ConfigError(self.path, f"accounts.{account_id}", "must be a table", "[accounts.<id>] with keys")
            for key in body:
                if key.lower() in _SECRET_KEYS:
                    raise ConfigError(self.path, f"accounts.{account_id}.{key}",
                                      "secrets never go in the config file", "store it with `mailtriage account set-password`")
            out[str(account_id)] = dict(body)
        return out

    def account(self, account_id: str) -> dict[str, Any]:
        accounts = self.accounts()
        if account_id not in accounts:
            raise ConfigError(self.path, f"accounts.{account_id}", "no such account",
                              ", ".join(accounts) or "no accounts configured")
        return accounts[account_id]

    def set(self, key: str, value: Any) -> None:
        self.data[key] = value

    def save(self) -> None:
        # lazy: only saving settings writes TOML, so tomli_w loads only then
        import tomli_w

        # The one rule (core/private_files.py): a private folder, written whole or not at all.
        private_files.write_atomic(self.path, tomli_w.dumps(self.data).encode("utf-8"))


def settings_file() -> Path:
    """Where the user settings live (they need not exist)."""
    return config_dir() / SETTINGS_FILE


def load_settings(path: Path | None = None) -> UserSettings:
    """The settings in ``path`` (default :func:`settings_file`); empty when there is no file.

    The file names programs we run (``password_command``, ``attachment_command``, ``[pgp] gpg``),
    so it is read only under the rule every file of ours follows (core/private_files.py): a
    regular file of the user, not a link, in a folder no one else can write.

    Raises:
        ConfigError: the file is not valid TOML or UTF-8; UnsafePath / UnsafeFile (both
            ConfigErrors) when another user could have planted it.
    """
    path = path or settings_file()
    try:
        data = tomllib.loads(private_files.read_text(path))
    except FileNotFoundError:
        return UserSettings(path, {})
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, "(file)", f"not valid TOML: {exc}", "TOML key = value lines") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(path, "(file)", f"not UTF-8 ({exc.reason})", "UTF-8 text") from exc
    return UserSettings(path, data)
