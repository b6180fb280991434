"""What this build of mailtriage holds, asked without loading it."""

from __future__ import annotations

from importlib.util import find_spec


def trackers_installed() -> bool:
    """True when the tracker backends are part of this build.

    Found, not imported: the tracker pane asks when it is mounted, at start-up, and
    importing the trackers there cost the first paint 30-60 ms of the main loop (cProfile of
    the demo's start; the pane is hidden until ``t``).
    """
    try:
        return find_spec("mailtriage.trackers.registry") is not None
    except ModuleNotFoundError:  # no mailtriage.trackers package at all
        return False
