"""The application service as the command line opens it: the one the app holds
(:class:`mailtriage.application.Service`), with the same user settings, so what a setting
decides holds in both front ends by construction (issue 36 §1).

A settings file that cannot be read (invalid TOML, not UTF-8) stops only a command that needs
a value from it (``poll --watch`` without
``--interval``, an account): the others run on the defaults, after a warning on stderr that
names the file and the problem (docs/cli.md)."""

from __future__ import annotations

import os
from pathlib import Path

import mailtriage.application as application
from mailtriage.cli.output import err
from mailtriage.application.errors import ConfigError


def open_service(directory: str | os.PathLike, *, demo: bool) -> application.Service:
    """The service on the project in ``directory``, opened (close it when done). gpg may ask
    for a passphrase on the terminal, unlike in the app.

    Raises:
        ConfigError: project.md is invalid (names file and key); UnsafePath / UnsafeFile: the
            settings file or its folder could have been planted by another user.
    """
    service = unopened_service(directory, demo=demo)
    service.open()
    return service


def unopened_service(directory: str | os.PathLike, *, demo: bool) -> application.Service:
    """The service for a command that needs no project (a sweep, an account's search): its
    calls that need one fail; close it when done (it may have opened an account's mailbox)."""
    return application.Service(Path(directory), demo=demo, settings=user_settings(), quiet_pinentry=False)


def tracker_service(directory: str | os.PathLike) -> application.Service:
    """The service for ``mailtriage tracker``, not opened: its tracker opens from project.md alone
    (no mail source is built), and the user settings are not read (the tracker needs none)."""
    from mailtriage.core.settings import UserSettings, settings_file  # why: as user_settings below

    return application.Service(Path(directory), demo=False, settings=UserSettings(settings_file(), {}),
                               quiet_pinentry=False)


def user_settings():
    """The user settings; when the file cannot be read, a stand-in on the defaults that carries
    the problem (:meth:`UserSettings.require` raises it), after a warning on stderr."""
    from mailtriage.core.settings import UserSettings, load_settings  # why: as the app's start-up, loaded where used (yaml)
    from mailtriage.core.paths import UnsafePath  # why: with load_settings
    from mailtriage.core.private_files import UnsafeFile  # why: with load_settings

    try:
        return load_settings()
    except (UnsafePath, UnsafeFile):
        raise  # a file another user could have planted stops every command (docs/security.md)
    except ConfigError as exc:
        err(f"warning: user settings not loaded: {exc}; running on their defaults "
            "(a command that needs a value from the file stops)")
        return UserSettings(Path(exc.file), {}, readable=False, problem=exc)
