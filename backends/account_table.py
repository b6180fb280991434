"""Reading one ``[accounts.<id>]`` table of the user settings, shared by the IMAP, Google
and Microsoft account settings so every key is validated and reported the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from mailtriage.core.projectconfig import ConfigError

ACCESS_LEVELS = ("read", "draft", "send")


class AccountTable:
    """Typed reads of one ``[accounts.<id>]`` table. Each raises ConfigError naming the
    settings file, the key and what would be valid."""

    def __init__(self, account_id: str, body: Mapping[str, Any], file: Path | str) -> None:
        self.account_id, self.body, self.file = account_id, body, file

    def key(self, name: str) -> str:
        return f"accounts.{self.account_id}.{name}"

    def error(self, name: str, problem: str, valid: str) -> ConfigError:
        return ConfigError(self.file, self.key(name), problem, valid)

    def text(self, name: str, default: str | None = None, required: bool = False) -> str | None:
        value = self.body.get(name, default)
        if value is None:
            if required:
                raise self.error(name, "missing", f"a {name} string")
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.error(name, f"must be a non-empty string, not {value!r}", f"a {name} string")
        return value.strip()

    def choice(self, name: str, options: tuple[str, ...], default: str) -> str:
        value = self.body.get(name, default)
        if value not in options:
            raise self.error(name, f"unknown value {value!r}", " | ".join(options))
        return value

    def number(self, name: str, default, kind=int, minimum=0):
        value = self.body.get(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
            raise self.error(name, f"must be a number >= {minimum}, not {value!r}", f"e.g. {default}")
        return kind(value)

    def flag(self, name: str, default: bool = False) -> bool:
        value = self.body.get(name, default)
        if not isinstance(value, bool):
            raise self.error(name, f"must be true or false, not {value!r}", "true | false")
        return value


class AccessLevels:
    """What an account's ``access`` setting (read | draft | send) allows; shared by every account kind."""

    access: str
    address: str

    @property
    def can_draft(self) -> bool:
        return self.access in ("draft", "send")

    @property
    def can_send(self) -> bool:
        return self.access == "send"

    @property
    def from_address(self) -> str:
        return self.address
