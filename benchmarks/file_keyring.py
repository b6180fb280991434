"""A keyring backend for benchmark child processes only: secrets in one 0600 JSON file.

The benchmark starts the app as a separate process on a pseudo-terminal; that process
reads the IMAP password the usual way, through keyring. ``PYTHON_KEYRING_BACKEND`` points
it here and ``MAILTRIAGE_BENCH_KEYRING`` at the file, which lives in the benchmark's
temporary folder and is deleted with it. Never part of the application.
"""

from __future__ import annotations

import json
import os

from keyring.backend import KeyringBackend


class FileKeyring(KeyringBackend):
    priority = 1

    @property
    def path(self) -> str:
        return os.environ["MAILTRIAGE_BENCH_KEYRING"]

    def _load(self) -> dict:
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return {}

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}\n{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[f"{service}\n{username}"] = password
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        data.pop(f"{service}\n{username}", None)
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(data, f)
