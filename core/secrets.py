"""Secrets live in keyring only; this module is the one place that touches it."""

from __future__ import annotations

SERVICE = "mailtriage"


class SecretMissing(Exception):
    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"no secret stored in keyring for {key}")


def get_secret(key: str) -> str | None:
    import keyring

    return keyring.get_password(SERVICE, key)


def require_secret(key: str) -> str:
    value = get_secret(key)
    if value is None:
        raise SecretMissing(key)
    return value


def set_secret(key: str, value: str) -> None:
    import keyring

    keyring.set_password(SERVICE, key, value)


def delete_secret(key: str) -> None:
    import keyring
    from keyring.errors import PasswordDeleteError

    try:
        keyring.delete_password(SERVICE, key)
    except PasswordDeleteError:
        pass
