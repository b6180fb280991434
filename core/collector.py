"""Pausing the cyclic garbage collector while many small objects that all survive are made;
giving the heap a storm freed back to the system once it quiets."""

from __future__ import annotations

import contextlib
import gc
from typing import Callable


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
    (:data:`COLLECT_AFTER`), so a cycle made meanwhile by any thread is freed, only later.

    Where objects are frozen already (the app freezes its start-up state, ``gc.freeze``), what
    a large pause made is frozen with them instead of moved: an unfreeze would hand the
    start-up state back to the collector too, and every full collection would walk it all
    with the window's rows (issue 39: 6 full collections in a 90 s storm on 14,000 threads,
    up to ~1 s each on the UI thread). The collection in full after :data:`COLLECT_AFTER`
    then unfreezes, collects and freezes again."""
    global _moved
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            made = gc.get_count()[0]
            if made > MOVE_ABOVE:
                keep_frozen = gc.get_freeze_count() > 0
                gc.freeze()
                if not keep_frozen:
                    gc.unfreeze()
                _moved += made
                if _moved > COLLECT_AFTER:
                    _moved = 0
                    if keep_frozen:
                        gc.unfreeze()
                    gc.collect()
                    if keep_frozen:
                        gc.freeze()
            gc.enable()


class QuietTrim:
    """When to give freed heap back after a storm (issue 39): glibc keeps the memory that a
    storm's polls freed (some 5 MB after three minutes at 10 mails/s on 14,000 threads) for
    later allocations rather than return it. After polls with news, the first poll without
    any calls :func:`trim_heap`; then not again until news came. Before it, where the app froze
    its state (``gc.freeze``), :func:`refreeze` collects the storm's garbage and freezes what it
    left alive, so later full collections walk only what came since (they grew over a storm)."""

    def __init__(self, trim: Callable[[], bool] | None = None) -> None:
        self._trim = trim or trim_heap
        self._news = False
        self.trims = 0

    def polled(self, had_news: bool) -> bool:
        """Note a poll; True when it trimmed the heap."""
        if had_news:
            self._news = True
            return False
        if not self._news:
            return False
        self._news = False
        self.trims += 1
        refreeze()
        return self._trim()


def refreeze() -> None:
    """Where objects are frozen (the app's start-up state), collect in full once and freeze
    what survives with them; elsewhere nothing. Objects a storm left alive (outcomes, rows,
    widgets) otherwise stay in the oldest generation, walked by every full collection."""
    if gc.get_freeze_count() == 0:
        return
    gc.collect()
    gc.freeze()


_LIBC: list = []


def trim_heap() -> bool:
    """Return the free memory at the top and in the middle of glibc's heap to the system
    (``malloc_trim(0)``; it releases the GIL while it runs). False where there is no glibc."""
    if not _LIBC:
        try:
            import ctypes  # why: glibc's malloc_trim, loaded on the first trim only

            _LIBC.append(ctypes.CDLL("libc.so.6").malloc_trim)
        except (OSError, AttributeError):
            _LIBC.append(None)
    trim = _LIBC[0]
    return bool(trim is not None and trim(0))
