"""Full garbage collections while the user is idle, not in the middle of a key (issue 39).

Part of :class:`mailtriage.tui.app.MailTriageApp`: once the main screen is up (and where the
app paces at all, :attr:`IdleCollection.pace_collections`, which ``run_app`` sets), an
:class:`~mailtriage.core.collector.IdlePacer` pushes the collector's own full collections back
and a timer runs each due one after two seconds without a key or a click. Stopped, and the
collector's thresholds restored, when the app unmounts.

Less for those collections to find: on mount, painted lines stop leaving Textual's strips in
reference cycles (:func:`~mailtriage.tui.textual_private.acyclic_strip_divide`), most of the
cyclic garbage a storm made. And less to paint at each key: a partial screen update renders the
lines it updates only (:func:`~mailtriage.tui.textual_private.cropped_renders`), not every
widget whole.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

from textual import events

from mailtriage.core.collector import IdlePacer, end_key_hold, hold_for_key
from mailtriage.tui import textual_private

if TYPE_CHECKING:
    from textual.timer import Timer

__all__ = ["IdleCollection", "TICK_SECONDS"]

#: How often the pacer looks whether a full collection is due and the user idle.
TICK_SECONDS = 0.5
#: What counts as the user at work (keys, clicks, the wheel); not a mouse moving over.
_INPUT = (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp)
#: Seconds from a key (or a click) during which the collector's young collections wait: the
#: key's handling and its frame (Enter -> the body painted: 25-75 ms) run without them.
KEY_HOLD_SECONDS = 0.1


class IdleCollection:
    #: run_app sets it (and the benchmarks): the tests' apps keep the collector as it is.
    pace_collections = False
    #: Painted lines leave no strip in a reference cycle (benchmarks/bench_storm.py turns it off
    #: for the code before it).
    acyclic_strips = True
    #: A partial screen update renders the lines it updates only (textual_private.cropped_renders;
    #: benchmarks/bench_storm.py turns it off for the code before it).
    cropped_renders = True
    #: Start-up turned the collector off until the main screen is up (tui/startup.py; run_app sets it).
    collector_held = False
    idle_pacer: IdlePacer | None = None
    _pacer_timer: Timer | None = None
    _key_hold: Timer | None = None  # the collector off since a key, until this timer ends it
    key_hold_seconds = KEY_HOLD_SECONDS

    async def on_event(self, event: events.Event) -> None:
        pacer = self.idle_pacer
        if pacer is not None and isinstance(event, _INPUT):
            pacer.key()
            self._hold_for_key()
        await super().on_event(event)  # type: ignore[misc]  # the app's (a mixin of it)

    def _hold_for_key(self) -> None:
        """No young collection between a key and its frame (issue 33): the collector is off for
        :data:`KEY_HOLD_SECONDS` from the key, the keys typed meanwhile included (not extended
        by them), then on again. On an Enter its 10-20 young collections took ~7 % of the UI
        thread before the body's frame; they now run after it, on what is still garbage then.
        Only where it is on: start-up's hold and a listing's pause (``collector_paused``) are theirs;
        a listing that starts during the hold keeps it off until it ends (core/collector.py)."""
        if self._key_hold is not None or not hold_for_key():
            return
        self._key_hold = self.set_timer(self.key_hold_seconds, self._end_key_hold)  # type: ignore[attr-defined]

    def _end_key_hold(self) -> None:
        if self._key_hold is not None:
            self._key_hold = None
            end_key_hold()

    def on_mount(self) -> None:
        if self.acyclic_strips:
            textual_private.acyclic_strip_divide()
        if self.cropped_renders:
            textual_private.cropped_renders()

    def start_idle_collection(self) -> None:
        """The main screen is up (what start-up built frozen already, ``freeze_gc_after_start``): the
        collector held at start-up is on again, and the full collections are paced from now on (once)."""
        if self.collector_held:
            self.collector_held = False
            gc.enable()
        if not self.pace_collections or self.idle_pacer is not None:
            return
        # $EDITOR or a pinentry takes the terminal with the loop stopped: no key hold lasts through it
        self.app_suspend_signal.subscribe(self, self._end_key_hold_now, immediate=True)  # type: ignore[attr-defined]
        pacer = IdlePacer()
        pacer.start()
        self.idle_pacer = pacer
        self._pacer_timer = self.set_interval(TICK_SECONDS, pacer.tick)  # type: ignore[attr-defined]

    def _end_key_hold_now(self, *_app: object) -> None:
        if self._key_hold is not None:
            self._key_hold.stop()
            self._end_key_hold()

    def stop_idle_collection(self) -> None:
        self._end_key_hold_now()
        pacer, self.idle_pacer = self.idle_pacer, None
        if self._pacer_timer is not None:
            self._pacer_timer.stop()
            self._pacer_timer = None
        if pacer is not None:
            pacer.stop()

    def on_unmount(self) -> None:
        self.stop_idle_collection()
