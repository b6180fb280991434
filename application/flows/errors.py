"""The root of the errors of the flows and of the application layer that runs them.

:class:`ApplicationError` lives here, below ``application/``, so that the flows' own errors
(what the user gave cannot be used, a check that could not run) sit under it too; the
application layer re-exports it from ``mailtriage.application.errors`` with its own subclasses
(issue 36 folded ``application/flows/`` into ``application/flows/``).
"""

from __future__ import annotations

__all__ = ["ApplicationError", "UsageError", "NoListToReplyTo"]


class ApplicationError(Exception):
    """Root of the errors the application layer and its flows raise themselves."""


class UsageError(ApplicationError):
    """What the user asked for cannot be read: a malformed thread id, window, option or file."""


class NoListToReplyTo(UsageError):
    """A list-reply (``L``) on mail that came through no mailing list (no List-Post address):
    the request is refused, with why and what to press instead; nothing failed."""
