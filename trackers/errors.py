"""Errors of the trackers: one root, :class:`TrackerError`, for everything a tracker raises.

They say what went wrong (a usage error, not found, refused by a guard, a backend
failure); the command line chooses the exit code by their type. Kept apart from the
contract so a front end can name them without loading the contract's editors.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BackendError", "MalformedIssue", "NotFound", "Refused", "ReviewOutdated", "TrackerError", "UsageError"]


class TrackerError(Exception):
    """Root of every tracker error.

    ``partial`` optionally carries a JSON-ready result of work that did happen before the
    failure (e.g. a commit made before a push failed), which the CLI prints on stdout.
    """

    def __init__(self, message: str, *, partial: Any = None) -> None:
        self.message = message
        self.partial = partial
        super().__init__(message)


class UsageError(TrackerError):
    """Bad arguments: a malformed title, an unknown state, an unreadable --*-file."""


class NotFound(TrackerError):
    """No such tracker, issue or section."""


class Refused(TrackerError):
    """A guard said no: undeclared value, tracker not shown access-restricted, amend mismatch,
    an ID escaping the tracker, an operation with no counterpart."""


class ReviewOutdated(Refused):
    """The working copy changed between a publish review and its confirmation: nothing was
    committed; ``differences`` names each path (``new: p``, ``removed: p``, ``modified: p``)."""

    def __init__(self, message: str, differences: list[str]) -> None:
        self.differences = differences
        super().__init__(message)


class BackendError(TrackerError):
    """I/O, HTTP or VCS failure."""


class MalformedIssue(TrackerError):
    """One issue's stored form cannot be read; reported for that issue, the rest keeps working."""

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")
