"""The errors of the application layer, and the one place the front ends find every error type.

Each layer has one root: :class:`MailError` for the mail backends, :class:`TrackerError`
for the trackers, :class:`ApplicationError` here. The application raises its own errors
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
from mailtriage.core.errors import ConfigError, ProjectFileError
from mailtriage.core.secrets import KeyringUnavailable, SecretCommandFailed, SecretMissing, SecretUnavailable
from mailtriage.trackers.errors import BackendError as TrackerBackendError
from mailtriage.trackers.errors import MalformedIssue, NotFound, Refused, TrackerError
from mailtriage.trackers.errors import UsageError as TrackerUsageError

__all__ = [
    "ApplicationError", "UsageError", "AttachmentError",
    "MailError", "BackendFailure", "ConnectionLost", "DraftAlreadyPending", "MandatoryBackendUnavailable",
    "NoBackendAvailable", "NoBackendReachable", "NotSupported", "SendRefused", "SignInNeeded", "Unavailable",
    "TrackerError", "TrackerBackendError", "TrackerUsageError", "MalformedIssue", "NotFound", "Refused",
    "ConfigError", "ProjectFileError", "SecretMissing", "SecretUnavailable", "KeyringUnavailable",
    "SecretCommandFailed",
]


class ApplicationError(Exception):
    """Root of the errors the application layer raises itself."""


class UsageError(ApplicationError):
    """What the user asked for cannot be read: a malformed thread id, window, option or file."""


class AttachmentError(ApplicationError):
    """An attachment cannot be saved or handed to the user's own command (the folder, the disk,
    the program)."""
