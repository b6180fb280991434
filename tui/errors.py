"""How the UI tells errors apart: by their types, never by their names.

:func:`is_connection_problem` decides whether a failure shows the reconnect state,
:func:`is_expected` whether the error list needs a traceback, :func:`error_line` is what
the user reads (the message, never the class name) and :func:`debug_line` the one place
that puts the class name in front of the message, for the error list's technical part.
:class:`ErrorRecord` is one entry of the error list (kept here, light, so start-up does
not load the error dialog).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field

from mailtriage.application import MailError
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.secrets import scrub


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
    """A backend that went away (unavailable, or a connection lost mid-call, or the mandatory
    backend unreachable when the read reconnected): retrying may help."""
    # Every backend's "connection lost" derives from backends.errors.ConnectionLost, which
    # loads no protocol library: the type answers for IMAP and the others alike.
    from mailtriage.application import ConnectionLost, MandatoryBackendUnavailable, Unavailable

    return isinstance(error, (Unavailable, ConnectionError, ConnectionLost, MandatoryBackendUnavailable))


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
    """The error's class name, for the debug trace only: no decision anywhere is taken on it."""
    return type(error).__name__


def error_line(error: BaseException) -> str:
    """What the user reads about an error: its message, never its class name (that goes to
    the debug trace, :func:`debug_line`). An error with no message says what happened. Scrubbed:
    every status line and notice that shows a failure goes through here."""
    message = scrub(str(error).strip())
    return message or "something failed that mailtriage did not expect (press ! for the details)"


def debug_line(error: BaseException) -> str:
    """``ClassName: message``: the technical line of the error list, for a bug report."""
    return f"{error_name(error)}: {error}"


def error_record(title: str, error: BaseException, *, where: str = "", resolution: str = "",
                 details: str = "", scrub=str) -> ErrorRecord:
    """The error list's entry for ``error``: the user's message in front, and for an error
    the app did not expect, the traceback (with the class name) as the technical part.
    ``scrub`` removes the session's secrets from every field."""
    technical = ""
    if not is_expected(error):
        trace = "".join(traceback.format_exception(error)) if error.__traceback__ is not None else ""
        technical = scrub(trace or debug_line(error))
    return ErrorRecord(title, scrub(error_line(error)), where, scrub(resolution), scrub(details), technical)
