"""Pausing the cyclic garbage collector while many small objects that all survive are made."""

from __future__ import annotations

import contextlib
import gc


#: A pause that made more objects than this ends by moving them to the oldest generation
#: unwalked (a dense listing: some 600,000); a smaller one just turns the collector back on.
MOVE_ABOVE = 100_000
#: Moved objects are not counted towards the oldest generation's next full collection, nor is
#: the cyclic garbage other threads made meanwhile and that was moved along: after this many
#: were moved, the end of a large pause runs one full collection (rare: some three dense
#: listings; none at start-up).
COLLECT_AFTER = 2_000_000
_moved = 0


@contextlib.contextmanager
def collector_paused():
    """Pause the cyclic garbage collector while building many small acyclic objects that all
    survive (an archive's index, a listing's rows and summaries): the collector would walk
    them over and over (about a tenth of the work, and some full collections on a 43k-message
    window) and free nothing. Reference counting still frees everything as usual.

    At the end of a large pause (:data:`MOVE_ABOVE`), what was made is moved to the oldest
    generation without a walk (freeze, then unfreeze): turned back on as it was, the collector
    would walk all of it in a young collection at the next allocation (50-90 ms after a dense
    listing, on the way to its paint). What was moved is collected in full now and then
    (:data:`COLLECT_AFTER`), so a cycle made meanwhile by any thread is freed, only later."""
    global _moved
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            made = gc.get_count()[0]
            if made > MOVE_ABOVE:
                gc.freeze()
                gc.unfreeze()
                _moved += made
                if _moved > COLLECT_AFTER:
                    _moved = 0
                    gc.collect()
            gc.enable()
