"""Pausing the cyclic garbage collector while many small objects that all survive are made;
giving the heap a storm freed back to the system once it quiets; running full collections
while the user is idle rather than in the middle of a key (:class:`IdlePacer`)."""

from __future__ import annotations

import contextlib
import gc
import threading
import time
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
#: The collector is off for a key (:func:`hold_for_key`), and how many ``collector_paused``
#: bodies run (any thread): each end turns it on only when the other is not on too.
_key_held = False
_pauses = 0
_state = threading.Lock()


def hold_for_key() -> bool:
    """Turn the collector off for a key's handling and frame (tui/idle_collection.py); True when
    held. Not where it is off already (start-up's hold, a listing's pause: theirs)."""
    global _key_held
    with _state:
        if _key_held or not gc.isenabled():
            return False
        _key_held = True
        gc.disable()
        return True


def end_key_hold() -> None:
    """The key's hold is over: the collector on again, unless a ``collector_paused`` that began
    during the hold still runs (it turns it on at its end, as it would have found it on)."""
    global _key_held
    with _state:
        if not _key_held:
            return
        _key_held = False
        if _pauses == 0:
            gc.enable()


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
    global _moved, _pauses
    with _state:
        was_enabled = gc.isenabled() or _key_held  # a key's hold ends under it: on at its end
        gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _state:
            _pauses -= 1
            key_held = _key_held
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
            if not key_held:  # else the hold's end turns it on
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


#: The oldest generation's threshold while an app paces its full collections (:class:`IdlePacer`):
#: the collector's own full collection comes ten times later than by default (CPython's 10), a
#: safety net for a user who never stops typing; the pacer runs the due ones between keys.
PACED_THRESHOLD2 = 100


class IdlePacer:
    """When to run the cyclic collector's full collection in an interactive app (issue 39).

    Left to itself the collector runs a full collection at the allocation that makes one due,
    often on the UI thread in the middle of a key's work: in a 30-minute storm 135 of them, up
    to a second each at load 15, were most of the keys' p99. Paced, the collector's own full
    collections are pushed back (:data:`PACED_THRESHOLD2`) and the app calls :meth:`tick` on a
    timer: a full collection runs when one is due (as many young-generation collections went by
    as the default threshold asks, :attr:`due_after`) AND no key came for :attr:`idle_seconds`.
    Young collections are unchanged. ``clock``, ``counts`` and ``collect`` are injectable for
    tests; :meth:`start` and :meth:`stop` change and restore the process's thresholds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, idle_seconds: float = 2.0,
                 due_after: int = 0, counts: Callable[[], tuple[int, int, int]] = gc.get_count,
                 collect: Callable[[], object] = gc.collect) -> None:
        self._clock = clock
        self._counts = counts
        self._collect = collect
        self.idle_seconds = idle_seconds
        #: Middle-generation collections since the last full one that make a full one due.
        self.due_after = due_after or 10  # CPython's default threshold for the oldest generation
        self._last_key = float("-inf")
        self._saved: tuple[int, int, int] | None = None
        #: Calls of :meth:`tick`, and the full collections they ran.
        self.ticks = self.collections = 0

    def start(self) -> None:
        """Push the collector's own full collections back (:data:`PACED_THRESHOLD2`)."""
        if self._saved is None:
            self._saved = gc.get_threshold()
            first, second, third = self._saved
            gc.set_threshold(first, second, max(third, PACED_THRESHOLD2))

    def stop(self) -> None:
        """The thresholds as :meth:`start` found them."""
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None

    def key(self) -> None:
        """A key came (the user is not idle)."""
        self._last_key = self._clock()

    def due(self) -> bool:
        return self._counts()[2] >= self.due_after

    def idle(self) -> bool:
        return self._clock() - self._last_key >= self.idle_seconds

    def tick(self) -> bool:
        """Run the full collection when due and the user is idle; True when it ran."""
        self.ticks += 1
        if not (self.due() and self.idle()):
            return False
        self._collect()
        self.collections += 1
        return True
