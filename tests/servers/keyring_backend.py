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


class CappedKeyring(MemoryKeyring):
    """A keyring that refuses an entry over Windows Credential Manager's size, as Windows does.

    Windows caps a credential blob at CRED_MAX_CREDENTIAL_BLOB_SIZE = 5 * 512 = 2,560 bytes
    (wincred.h, the CREDENTIALW documentation), and keyring's Windows backend stores the
    password as UTF-16, so 1,280 characters at most. Over it, ``CredWrite`` fails with
    Win32 error 1783 "The stub received bad data" (jaraco/keyring#355), which keyring lets
    through as an OSError.
    """

    CAP_BYTES = 2560

    def set_password(self, service: str, username: str, password: str) -> None:
        if len(password.encode("utf-16-le")) > self.CAP_BYTES:
            raise OSError(22, "[WinError 1783] The stub received bad data.")
        super().set_password(service, username, password)

    def largest(self) -> int:
        """The largest stored entry, in UTF-16 bytes."""
        with self._lock:
            return max((len(v.encode("utf-16-le")) for v in self._secrets.values()), default=0)
