"""Pausing the cyclic garbage collector while many small objects that all survive are made."""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def collector_paused():
    """Pause the cyclic garbage collector while building many small acyclic objects that all
    survive (an archive's index, a listing's rows and summaries): the collector would walk
    them over and over (about a tenth of the work, and some full collections on a 43k-message
    window) and free nothing. Reference counting still frees everything as usual.

    At the end, what was made is moved to the oldest generation without a walk (freeze, then
    unfreeze): turned back on as it was, the collector would walk all of it in a young
    collection at the next allocation (50-90 ms after a dense listing, on the way to its
    paint). The oldest generation is still collected in full now and then, so a cycle made
    meanwhile (by any thread) is freed, only later."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
