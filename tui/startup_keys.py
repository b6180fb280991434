"""Keys typed during start-up: held until the main screen is up, then acted on in order.

Part of :class:`mailtriage.tui.app.MailTriageApp` (issue 33, item 4): the kept first frame
(tui/first_paint.py) looks ready before the app is live, so a key typed on it must neither be
lost nor act on the wrong row. The app sets ``_held_keys`` to a list at construction and
``first_paint_shown`` when a kept frame was shown.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Callable

from textual import events

from mailtriage.tui import textual_private

if TYPE_CHECKING:
    from mailtriage.tui.first_paint import Shown
    from mailtriage.tui.head_start import ForkedHeadStart

__all__ = ["StartupKeys"]


class StartupKeys:
    #: Keys that act at once, even while start-up holds the others (quit now).
    KEYS_NOT_HELD = frozenset({"ctrl+q"})
    _held_keys: list[events.Key] | None
    first_paint_shown: Shown | None
    offer_read_ahead: Callable[[], None]
    open_held_enter: Callable[[events.Key], bool]
    _late_head_start: ForkedHeadStart | None  # FirstScreen's: a child still reading after the first frame
    start_rows_pending: Callable[[], bool]  # FirstScreen's
    #: The main screen's first listing has not answered yet (start_listing_answered).
    start_rows_awaited = True

    async def on_event(self, event: events.Event) -> None:
        """A key typed before the main screen is up is held (with nothing focused, or the head
        start's rows not yet on it, it would act on nothing, or on the wrong row) and acts, in the
        order typed, once it is (:meth:`release_keys`); ctrl+q quits at once. A line feed held
        is the Enter it was: typed before the app read the terminal (no kept frame held the keys,
        tui/first_paint.py), an Enter was turned into one by the terminal's line mode."""
        if (self._held_keys is not None and isinstance(event, events.Key) and not event.is_forwarded
                and event.key not in self.KEYS_NOT_HELD):
            self._held_keys.append(events.Key("enter", "\r") if event.key == "ctrl+j" else event)
            event.stop()
            return
        await super().on_event(event)

    def release_keys(self) -> None:
        """The main screen is up: the keys held meanwhile act now, in order (each posted as
        typed, before any key typed from now on). This comes before the app's first frame is
        drawn: the kept frame's "starting…" mark (tui/first_paint.py) is replaced by a live screen.
        While a late head start is still read, the main screen is up with no rows: the keys
        wait for its rows (tui/first_screen.py releases them), else they acted on the empty
        list and were lost (an Enter typed on the kept frame's rows opened nothing). So do keys
        held while the main screen has no rows to show yet and its first listing has not
        answered (a head start given up, failed, or without rows: the app lists itself; the
        listing releases them, :meth:`start_listing_answered`). With no key held, the app is
        live at once."""
        if self._late_head_start is not None or (self._held_keys and self.start_rows_pending()):
            return
        held, self._held_keys = self._held_keys, None
        if held is None:
            return
        self.offer_read_ahead()  # an Enter on the first row shows start-up's read ahead (tui/first_screen.py)
        if held and self.open_held_enter(held[0]):  # acted here, before the first frame is laid out
            held = held[1:]
        for key in held:
            again = events.Key(key.key, key.character)
            again.set_sender(self)  # as the driver sends a key
            self.post_message(again)

    def start_listing_answered(self) -> None:
        """The main screen's listing shows rows, or has answered with none, or failed: keys
        held for its rows act now (the Listing component calls it)."""
        self.start_rows_awaited = False
        if self._held_keys is not None:
            self.release_keys()
        else:  # a cold start's read ahead that came before its rows were on: offered now
            self.offer_read_ahead()

    def drop_held_keys(self) -> None:
        """The project cannot be opened (the first-run screen comes instead): the keys held for
        the kept frame's rows have nothing to act on, and keys typed from now on are not held."""
        self._held_keys = None

    def _keep_terminal_modes(self) -> None:
        """The terminal modes from before the kept frame held the keys (tui/first_paint.py)
        are what Textual gives back when the app ends or suspends (an editor, a pager), not
        the held ones it found when it took the terminal over."""
        shown = self.first_paint_shown
        if shown is None or shown.terminal_modes is None or sys.platform == "win32":
            return
        from textual.drivers.linux_driver import LinuxDriver  # (loaded already: the app runs on it)

        driver = textual_private.driver(self)
        if isinstance(driver, LinuxDriver) and driver.attrs_before is not None:
            driver.attrs_before = shown.terminal_modes
