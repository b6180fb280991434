"""The application service as the command line opens it: the one the app holds
(:class:`mailtriage.application.Service`), with the same user settings, so what a setting
decides holds in both front ends by construction (issue 36 §1)."""

from __future__ import annotations

import os
from pathlib import Path

import mailtriage.application as application


def open_service(directory: str | os.PathLike, *, demo: bool) -> application.Service:
    """The service on the project in ``directory``, opened (close it when done). gpg may ask
    for a passphrase on the terminal, unlike in the app.

    Raises:
        ConfigError: project.md or the user settings file is invalid (names file and key).
    """
    from mailtriage.core.settings import load_settings  # as the app's start-up: loaded where used (yaml)

    service = application.Service(Path(directory), demo=demo, settings=load_settings(), quiet_pinentry=False)
    service.open()
    return service
