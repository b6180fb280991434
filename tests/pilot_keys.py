"""Pilot's key presses wait until the app has handled the key, not until the process looks idle.

Textual's ``Pilot.press`` sends each key, then twice waits for "idle" (``textual._wait.wait_for_idle``):
it sleeps in slices of 20 ms until a slice in which this process used under 1 ms of CPU, for at
most a second. That costs at least 40 ms a key when nothing happens, up to 2 s a key while a
thread of the process works (an IMAP fetch, an in-process SMTP or HTTP emulator), and under load
it returns early: a process the kernel does not schedule uses no CPU and looks idle while the key
still waits in a queue.

``until_handled`` waits on the condition itself: rounds of a callback queued behind every message
pump of the app and of every screen on its stack, until two rounds in a row found every queue
empty when they started and when they ended. Everything the key set off (the bindings, the
actions, the messages they post, a dialog's mount) has then been handled. Work outside the
message pumps (a thread worker, a timer) is not waited for, as before: tests wait for it with
``tests.tui.helpers.settle``. A handler that keeps its pump busy (it awaits a stalled server)
is waited for ``max_sleep`` at most, as Textual did, so a test can press Esc while it hangs.

``install()`` (tests/conftest.py) puts it where ``App._press_keys`` looks up ``wait_for_idle``;
``tests/tui/test_pilot_keys.py`` fails when an upgrade of Textual moves that name.
"""

from __future__ import annotations

import asyncio

import textual.app
from textual._context import active_app
from textual._wait import wait_for_idle as textual_wait_for_idle

#: Rounds in a row that must find every queue empty.
QUIET_ROUNDS = 2
#: The longest a press waits for its key to be handled (Textual's own cap per wait is 1 s).
CAP = 2.0


def _pumps(app) -> list:
    pumps = [app]
    for screen in app.screen_stack:
        pumps.extend(screen.walk_children(with_self=True))
    return pumps


async def _one_round(app) -> bool:
    """Queue a callback behind every pump's messages and wait until each ran; True when every
    queue was empty before and after."""
    pumps = _pumps(app)
    quiet = not any(pump.message_queue_size for pump in pumps)
    waiting = 0
    done = asyncio.Event()

    def one_ran() -> None:
        nonlocal waiting
        waiting -= 1
        if waiting == 0:
            done.set()

    for pump in pumps:
        if pump.call_later(one_ran):
            waiting += 1
    if waiting:
        await done.wait()
    return quiet and not any(pump.message_queue_size for pump in _pumps(app))


async def _drained(app) -> None:
    quiet = 0
    while quiet < QUIET_ROUNDS:
        await app.animator.wait_until_complete()
        quiet = quiet + 1 if await _one_round(app) else 0


async def until_handled(min_sleep: float = 0.0, max_sleep: float = 1.0) -> None:
    """Drop-in for ``textual._wait.wait_for_idle`` as ``App._press_keys`` calls it."""
    app = active_app.get(None)
    if app is None or not app.is_running:
        await textual_wait_for_idle(min_sleep, max_sleep)
        return
    try:
        await asyncio.wait_for(_drained(app), timeout=max(CAP, max_sleep))
    except TimeoutError:
        pass  # as Textual's wait: the test goes on and waits for what it needs itself


def install() -> None:
    textual.app.wait_for_idle = until_handled
