"""The app's start-up, behind one seam for the command line: before Textual loads, the child that
reads the head start, lists a cold start's first list and reads the first row's thread ahead
(tui/head_start.py), and the kept first frame on the terminal (tui/first_paint.py); then the app
(tui/app.py, tui/first_screen.py), which takes both over. ``mailtriage`` calls :func:`launch`
and knows neither the child nor the frame. Nothing here imports Textual at import time.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

from mailtriage.core.settings import settings_file
from mailtriage.tui import first_paint
from mailtriage.tui.head_start import ForkedHeadStart


def launch(folder: Path, *, demo: bool) -> int:
    """Run the app on this terminal for the project in ``folder``; its exit code."""
    # Forked before Textual loads: the child opens the project meanwhile (tui/head_start.py).
    head_start = ForkedHeadStart.start(folder, demo=demo)
    held = hold_collector()  # after the fork: the child collects as ever
    shown = None
    try:
        # The screen the app drew last time, on the terminal while Textual loads (tui/first_paint.py).
        try:
            terminal = sys.__stderr__.fileno() if sys.__stderr__ is not None else 2
            shown = first_paint.show(folder, demo=demo, settings_path=settings_file(), fd=terminal)
        except OSError:  # the terminal went away: the app finds out itself
            shown = None
        from mailtriage.tui.app import run_app  # Textual loads only now (see the module)

        return run_app(folder, demo=demo, head_start=head_start, first_paint=shown, collector_held=held)
    except BaseException:
        if shown is not None:
            shown.undo()  # Textual may never have taken the screen over
        raise
    finally:
        if held:
            gc.enable()  # the app ended before its main screen was up (else it is on already)


def hold_collector() -> bool:
    """No cyclic garbage collection from here until the app's main screen is up (the app turns
    it back on then, tui/idle_collection.py): start-up makes next to no cyclic garbage (~450 objects in all
    its imports), but the collector walked what it imported and mounted some 150 times, ~40 ms
    of the UI thread's ~0.55 s before the first key acts (benchmarks/trace_startup.py). True
    when it was on (and is now held)."""
    if not gc.isenabled():
        return False
    gc.disable()
    return True
