"""The root of the MAS modes endpoint's errors (the ``modes`` layer sits between the flows and
the backends, so it has a root of its own).

The endpoint answers most of them itself (a contract error to the caller, a retry of a poll,
a log line); :class:`~mailtriage.modes.store.StoreError` reaches ``mailtriage modes`` and the
app's case view.
"""

from __future__ import annotations

__all__ = ["ModesError"]


class ModesError(Exception):
    """Root of every error of the modes endpoint."""
