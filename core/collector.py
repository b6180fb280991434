"""Pausing the cyclic garbage collector while many small objects that all survive are made."""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def collector_paused():
    """Pause the cyclic garbage collector while building many small acyclic objects that all
    survive (an archive's index, a listing's rows and summaries): the collector would walk
    them over and over (about a tenth of the work, and some full collections on a 43k-message
    window) and free nothing. Reference counting still frees everything as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
