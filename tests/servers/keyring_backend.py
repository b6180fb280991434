"""A keyring backend for tests that really stores and returns secrets, in memory.

Installed with ``keyring.set_keyring`` by the ``memory_keyring`` fixture and removed
afterwards; never part of the application.
"""

from __future__ import annotations

import threading

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class MemoryKeyring(KeyringBackend):
    priority = 1  # never chosen automatically; tests install it explicitly

    def __init__(self) -> None:
        super().__init__()
        self._secrets: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self.reads: list[tuple[str, str]] = []

    def get_password(self, service: str, username: str) -> str | None:
        with self._lock:
            self.reads.append((service, username))
            return self._secrets.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        with self._lock:
            self._secrets[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        with self._lock:
            if self._secrets.pop((service, username), None) is None:
                raise PasswordDeleteError(f"no secret for {service}/{username}")
