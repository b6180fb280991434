"""How the UI tells errors apart: by their types, never by their names.

:func:`is_connection_problem` decides whether a failure shows the reconnect state,
:func:`is_expected` whether the error list needs a traceback, and :func:`error_line`
is the one place that puts an error's class name in front of its message for display.
:class:`ErrorRecord` is one entry of the error list (kept here, light, so start-up does
not load the error dialog).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mailtriage.application import MailError
from mailtriage.core.projectconfig import ConfigError


@dataclass
class ErrorRecord:
    """One entry of the app's error list (``!`` shows them); every field is already scrubbed."""

    title: str
    message: str
    where: str = ""
    resolution: str = ""
    details: str = ""
    technical: str = ""
    hints: list[str] = field(default_factory=list)


def is_connection_problem(error: BaseException) -> bool:
    """A backend that went away (unavailable, or a connection lost mid-call): retrying may help."""
    # Every backend's "connection lost" derives from backends.errors.ConnectionLost, which
    # loads no protocol library: the type answers for IMAP and the others alike.
    from mailtriage.application import ConnectionLost, Unavailable

    return isinstance(error, (Unavailable, ConnectionError, ConnectionLost))


def is_expected(error: BaseException) -> bool:
    """Errors of the backend/config layers are explained by their message; no traceback needed."""
    expected: tuple = (MailError, ConfigError, LookupError)
    try:
        # the trackers may not be part of the build
        from mailtriage.application import TrackerError

        expected += (TrackerError,)
    except ImportError:
        pass
    return isinstance(error, expected)


def error_name(error: BaseException) -> str:
    """The error's class name, for display only: no decision anywhere is taken on it."""
    return type(error).__name__


def error_line(error: BaseException) -> str:
    """``ClassName: message``, for an unexpected error shown to the user."""
    return f"{error_name(error)}: {error}"
