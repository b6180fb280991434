"""OpenPGP for the front ends: the run's GnuPG, built only when a thread carries OpenPGP.

Per user (config.toml ``[pgp]``): ``gnupg_home`` (when not gpg's default), ``gpg`` (the
binary), ``pinentry`` (``agent``: the agent's own pinentry, the app suspends for a terminal
one; ``loopback``: opted in, the app asks), ``timeout`` and ``max_output``. Per project
(project.md): ``pgp.team_key`` (the team's fingerprint) and ``pgp.encrypt_replies``.

Decryption runs on ``read_thread`` only (the source set's ``thread_opener``); a listing never
decrypts. ``decrypt = False`` (``--no-decrypt``) says which messages are encrypted and opens none.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from typing import Any

from mailtriage.backends import pgp
from mailtriage.backends.contract import Thread
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.settings import load_settings

__all__ = ["KeyImportFlow", "PgpSupport", "editor_folder", "pgp_settings"]

_PINENTRY = ("agent", "loopback")


def pgp_settings(user_settings: Any | None) -> pgp.PgpSettings:
    """The ``[pgp]`` table of the user settings (defaults when absent).

    Raises:
        ConfigError: a value of the table has the wrong type (names file and key).
    """
    settings = user_settings if user_settings is not None else load_settings()
    table = settings.data.get("pgp", {}) if settings is not None else {}
    if not isinstance(table, dict):
        raise ConfigError(settings.path, "pgp", "must be a table", "[pgp] with gnupg_home = \"…\"")
    home = table.get("gnupg_home")
    if home is not None and not isinstance(home, str):
        raise ConfigError(settings.path, "pgp.gnupg_home", "must be a path", "gnupg_home = \"~/.gnupg\"")
    pinentry = str(table.get("pinentry", "agent"))
    if pinentry not in _PINENTRY:
        raise ConfigError(settings.path, "pgp.pinentry", f"unknown mode {pinentry!r}", " or ".join(_PINENTRY))
    try:
        timeout = float(table.get("timeout", pgp.DEFAULT_TIMEOUT))
        max_output = int(table.get("max_output", pgp.DEFAULT_MAX_OUTPUT))
    except (TypeError, ValueError) as exc:
        raise ConfigError(settings.path, "pgp.timeout", "timeout and max_output must be numbers",
                          "timeout = 20, max_output = 16777216") from exc
    return pgp.PgpSettings(gnupg_home=os.path.expanduser(home) if home else None, binary=str(table.get("gpg", "gpg")),
                           timeout=timeout, max_output=max_output, pinentry=pinentry)


ON_DISK_EDITOR_NOTE = ("no memory-backed folder (tmpfs) was found: the text goes through a temporary file on disk "
                       "while the editor runs")


def editor_folder() -> str | None:
    """A memory-backed folder (tmpfs: ``$XDG_RUNTIME_DIR``, ``/dev/shm``) for the file ``$EDITOR``
    edits, so a decrypted quote never reaches the disk; None when there is none (say so)."""
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts_file:
            mounts = [line.split() for line in mounts_file]
    except OSError:
        return None
    for candidate in (os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm"):
        if not candidate or not os.path.isdir(candidate) or not os.access(candidate, os.W_OK | os.X_OK):
            continue
        real = os.path.realpath(candidate)
        mount = max((m for m in mounts if len(m) > 2 and (real == m[1] or real.startswith(m[1].rstrip("/") + "/"))),
                    key=lambda m: len(m[1]), default=None)
        if mount is not None and mount[2] in ("tmpfs", "ramfs"):
            return real
    return None


class PgpSupport:
    """The run's OpenPGP: the GnuPG session (built on first need) and the decrypt switch."""

    def __init__(self, user_settings: Any | None = None) -> None:
        self._user_settings = user_settings
        self._gpg: pgp.GnuPG | None = None
        self._gpg_lock = threading.Lock()
        self.decrypt = True
        # Set by the app: gpg calls made behind its screen never start a terminal pinentry.
        self.quiet_pinentry = False

    @property
    def gpg(self) -> pgp.GnuPG:
        """The run's one GnuPG session (one gpg call at a time): threads that ask for it at once
        (reads of encrypted threads on workers) wait for the first to build it."""
        gpg = self._gpg
        if gpg is None:
            with self._gpg_lock:
                if self._gpg is None:
                    settings = pgp_settings(self._user_settings)
                    self._gpg = pgp.GnuPG(dataclasses.replace(settings, quiet=self.quiet_pinentry))
                gpg = self._gpg
        return gpg

    def reply_encryption(self, config, *, allow_clear: bool = False):
        """The reply flow's encryption step for this project (application/flows/pgp_reply.py)."""
        # lazy: the workflows load with the first reply, not when the project opens
        from mailtriage.application.flows.pgp_reply import ProjectPgp, plan_reply_encryption

        project = ProjectPgp(config)
        return lambda thread, target, recipients=None: plan_reply_encryption(
            thread, target, self.gpg, project, recipients, allow_clear=allow_clear)

    @property
    def pinentry(self) -> str:
        """``agent`` (suspend the app for the agent's pinentry) or ``loopback`` (the app asks)."""
        return self.gpg.settings.pinentry

    def needs_passphrase(self, thread: Thread) -> bool:
        """Whether a message of ``thread`` stayed encrypted because its key needs a passphrase."""
        return pgp.locked_ciphertext(thread) is not None

    def unlock(self, thread: Thread, *, passphrase: str | None = None, tty: str | None = None) -> str | None:
        """Unlock the key ``thread`` needs (see :meth:`pgp.GnuPG.unlock`); None when done, else why not."""
        data = pgp.locked_ciphertext(thread)
        if data is None:
            return None
        return self.gpg.unlock(data, passphrase=passphrase, tty=tty)

    def open_thread(self, thread: Thread) -> Thread:
        """What ``read_thread`` returns: OpenPGP opened (or, with ``decrypt`` off, only named)."""
        if not self.decrypt:
            return pgp.skip_thread(thread)
        if not pgp.carries_openpgp(thread):
            return thread
        return pgp.open_thread(thread, self.gpg)


class KeyImportFlow:
    """Import a key a report offers (an attached key, an Autocrypt header), after confirmation."""

    def __init__(self, project: Any) -> None:
        self.project = project

    def propose(self, thread: Thread):
        # lazy: the workflows load with the first proposal, not when the project opens
        from mailtriage.application.flows.pgp_keys import propose_key_import

        return propose_key_import(thread, self.project.pgp.gpg)
