"""An in-memory keyring backend, so tests never read or write a real keyring."""

from __future__ import annotations

from keyring.backend import KeyringBackend


class MemoryKeyring(KeyringBackend):
    priority = 1

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.store.get((service, username))

    def set_password(self, service, username, password):
        self.store[(service, username)] = password

    def delete_password(self, service, username):
        self.store.pop((service, username), None)


def use_memory_keyring(request) -> MemoryKeyring:
    """Install a fresh MemoryKeyring for the current test; the previous keyring comes back after."""
    import keyring

    previous = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    request.addfinalizer(lambda: keyring.set_keyring(previous))
    return ring
