"""The errors of the application layer, and the one place the front ends find every error type.

Each layer has one root: :class:`MailError` for the mail backends, :class:`TrackerError`
for the trackers, :class:`ModesError` for the modes endpoint, :class:`CoreError` for core
(:class:`ConfigError` under it), :class:`ApplicationError` for the flows and here (defined in
``application/flows/errors.py`` so that the flows' errors sit under it too). Every public exception
class of the package sits under one of them
(``tests/application/test_errors_and_exit_codes.py`` walks them all). The application raises its own errors
for what the user typed (a thread id, a window, an option) and translates a lower
layer's error with ``raise … from exc`` where it adds meaning. The front ends catch the
types re-exported here; none of them carries an exit code or a screen colour: the CLI
keeps its own map from type to exit code, the TUI its own presentation.
"""

from __future__ import annotations

from mailtriage.backends.errors import (
    BackendFailure,
    ConnectionLost,
    DraftAlreadyPending,
    MailError,
    MandatoryBackendUnavailable,
    NoBackendAvailable,
    NoBackendReachable,
    NotSupported,
    SendRefused,
    SignInNeeded,
    Unavailable,
)
from mailtriage.core.errors import ConfigError, CoreError, ProjectFileError
from mailtriage.core.secrets import KeyringUnavailable, SecretCommandFailed, SecretMissing, SecretUnavailable
from mailtriage.modes.errors import ModesError
from mailtriage.trackers.errors import BackendError as TrackerBackendError
from mailtriage.trackers.errors import MalformedIssue, NotFound, Refused, TrackerError
from mailtriage.trackers.errors import UsageError as TrackerUsageError
from mailtriage.application.flows.errors import ApplicationError, NoListToReplyTo, UsageError  # below the flows (flows/errors.py)

__all__ = [
    "ApplicationError", "UsageError", "NoListToReplyTo", "AttachmentError",
    "MailError", "BackendFailure", "ConnectionLost", "DraftAlreadyPending", "MandatoryBackendUnavailable",
    "NoBackendAvailable", "NoBackendReachable", "NotSupported", "SendRefused", "SignInNeeded", "Unavailable",
    "TrackerError", "TrackerBackendError", "TrackerUsageError", "MalformedIssue", "NotFound", "Refused",
    "CoreError", "ConfigError", "ProjectFileError", "ModesError", "SecretMissing", "SecretUnavailable", "KeyringUnavailable",
    "SecretCommandFailed",
]


class AttachmentError(ApplicationError):
    """An attachment cannot be saved or handed to the user's own command (the folder, the disk,
    the program)."""
