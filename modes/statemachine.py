"""The handoff status machine of the contract (§4), as data.

A handoff starts at ``(new)`` and moves only along :data:`TRANSITIONS`. Terminal
statuses are final. ``timed-out`` is recorded only by the timeout owner: email in the
master role, the outside master's own bookkeeping in the slave role; a mode never
sends it (see :func:`check_reporter`).
"""

from __future__ import annotations

from mailtriage.modes.errors import ModesError

NEW = "(new)"

#: From -> allowed next statuses, exactly the table of §4.
TRANSITIONS: dict[str, tuple[str, ...]] = {
    NEW: ("requested",),
    "requested": ("negotiating", "scheduled", "running", "refused", "failed", "cancelled", "timed-out"),
    "negotiating": ("negotiating", "scheduled", "refused", "expired", "cancelled", "timed-out"),
    "scheduled": ("running", "attempted", "expired", "cancelled", "timed-out"),
    "attempted": ("scheduled", "failed", "expired", "cancelled", "timed-out"),
    "running": ("completed", "failed", "cancelled", "timed-out"),
}

TERMINAL: frozenset[str] = frozenset({"completed", "failed", "expired", "refused", "cancelled", "timed-out"})

STATUSES: tuple[str, ...] = (
    "requested", "negotiating", "scheduled", "attempted", "running",
    "completed", "failed", "expired", "refused", "cancelled", "timed-out",
)

REFUSAL_REASONS: tuple[str, ...] = ("mode-unavailable", "mode-not-enabled", "declined", "out-of-hours", "blocked")

TIMED_OUT = "timed-out"
CANCELLED = "cancelled"


class InvalidTransition(ModesError):
    """A status the table does not allow after the current one (error ``invalid-transition``)."""

    def __init__(self, current: str | None, wanted: str) -> None:
        self.current = current or NEW
        self.wanted = wanted
        if self.current in TERMINAL:
            why = f"{self.current} is terminal; nothing follows it"
        else:
            allowed = ", ".join(TRANSITIONS.get(self.current, ())) or "nothing"
            why = f"after {self.current} only {allowed} may follow"
        super().__init__(f"{self.current} -> {wanted} is not allowed: {why}")


class NotTimeoutOwner(ModesError):
    """Someone other than the timeout owner tried to record ``timed-out``."""


def is_terminal(status: str | None) -> bool:
    return status in TERMINAL


def allowed(current: str | None, wanted: str) -> bool:
    return wanted in TRANSITIONS.get(current or NEW, ())


def check_transition(current: str | None, wanted: str) -> None:
    """Raise InvalidTransition unless ``current -> wanted`` is in the table."""
    if not allowed(current, wanted):
        raise InvalidTransition(current, wanted)


def check_reporter(wanted: str, *, timeout_owner: bool) -> None:
    """Raise NotTimeoutOwner when ``timed-out`` comes from anyone but the timeout owner."""
    if wanted == TIMED_OUT and not timeout_owner:
        raise NotTimeoutOwner("timed-out is recorded only by the timeout owner; a mode must not send it")
