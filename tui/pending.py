"""What keeps ``q`` from quitting at once: work that would be lost or left half done.

A screen on the stack that holds such work (an open proposal, a draft being composed)
is a :class:`PendingWork` and says what it holds; the main screen adds the writes still
running and the local tracker changes not published. ``q`` at the top level quits at
once when nothing is pending, and asks first otherwise (``tui/dialogs/quit.py``).
"""

from __future__ import annotations


class PendingWork:
    """A screen that holds work a quit would drop."""

    def pending_work(self) -> list[str]:
        """One line per thing a quit would drop now (empty: nothing)."""
        return []
