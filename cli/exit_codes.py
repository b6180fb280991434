"""The command line's exit codes, and the one map from error type to exit code.

Domain errors carry no exit code: the command line decides here, by the error's type
(its class and base classes, never its message), what a user's script sees.

Surfaces:

* ``mailtriage`` (sources, list, mail, import, sync, publish, poll, sweep) and ``account``:
  0 ok, 2 usage or configuration, 3 declined (not offered, not found), 4 failed.
* ``mailtriage tracker``: 0 ok, 2 usage, 3 not found, 4 refused by a guard, 5 the tracker's
  server or storage failed (and anything unforeseen).
* ``mailtriage modes``: 0 ok, 2 usage or configuration, 3 no such case, 4 failed.
"""

from __future__ import annotations

from enum import IntEnum

from mailtriage.application.errors import (
    AttachmentError,
    ConfigError,
    MailError,
    MandatoryBackendUnavailable,
    NoBackendAvailable,
    NoBackendReachable,
    NotFound,
    NotSupported,
    ProjectFileError,
    Refused,
    SecretMissing,
    SecretUnavailable,
    TrackerError,
    TrackerUsageError,
    UsageError,
)


class ExitCode(IntEnum):
    OK = 0
    USAGE = 2  # usage or configuration
    DECLINED = 3  # nothing to do it with: the op is not offered, the issue or case is not there
    FAILED = 4  # a backend failed, a mandatory backend is down, a guard refused, a write stopped part-way
    TRACKER_FAILED = 5  # the tracker's server or storage failed


# ``mailtriage`` and its flow commands. Tracker errors reach here from the flows.
MAIN: dict[type[BaseException], ExitCode] = {
    UsageError: ExitCode.USAGE,
    ConfigError: ExitCode.USAGE,
    AttachmentError: ExitCode.FAILED,
    SecretUnavailable: ExitCode.USAGE,  # no keyring service / password_command: the machine's set-up
    NotSupported: ExitCode.DECLINED,
    NoBackendAvailable: ExitCode.DECLINED,
    NoBackendReachable: ExitCode.FAILED,
    MandatoryBackendUnavailable: ExitCode.FAILED,
    MailError: ExitCode.FAILED,
    TrackerUsageError: ExitCode.USAGE,
    NotFound: ExitCode.DECLINED,
    TrackerError: ExitCode.FAILED,
}

# ``mailtriage tracker``.
TRACKER: dict[type[BaseException], ExitCode] = {
    TrackerUsageError: ExitCode.USAGE,
    NotFound: ExitCode.DECLINED,
    Refused: ExitCode.FAILED,
    TrackerError: ExitCode.TRACKER_FAILED,
    ProjectFileError: ExitCode.DECLINED,  # no tracker without a project: "not found"
    ConfigError: ExitCode.USAGE,
    SecretMissing: ExitCode.TRACKER_FAILED,
    Exception: ExitCode.TRACKER_FAILED,  # never a traceback: a message and 5
}


def modes_table() -> dict[type[BaseException], ExitCode]:
    """``mailtriage modes`` (a case that is not there is DECLINED, decided where it is looked up)."""
    # Lazy: the thread record's module (sqlite3 and the modes package) would add about 80 ms
    # to every command's start (python -X importtime), for the one command that needs it.
    from mailtriage.application import StoreError

    return {
        ConfigError: ExitCode.USAGE,
        StoreError: ExitCode.FAILED,
    }

# ``mailtriage account``.
ACCOUNT: dict[type[BaseException], ExitCode] = {
    ConfigError: ExitCode.USAGE,
    SecretUnavailable: ExitCode.USAGE,  # no keyring service: the message lists the options
    MailError: ExitCode.FAILED,
}


def exit_code(error: BaseException, table: dict[type[BaseException], ExitCode]) -> ExitCode | None:
    """The code of the most specific class of ``error`` that ``table`` names, or None."""
    for cls in type(error).__mro__:
        if cls in table:
            return table[cls]
    return None


def handled(table: dict[type[BaseException], ExitCode]) -> tuple[type[BaseException], ...]:
    """The error types ``table`` turns into an exit code (for an ``except`` clause)."""
    return tuple(table)
