"""Every private Textual member the terminal UI touches, in this one module (issue 36 §4).

Textual names these with a leading underscore: they may change in any release. Each use is
a small function here, ``MEMBERS`` lists them, and tests/tui/test_textual_private.py checks
each one against the installed Textual, naming the member that is gone or changed, so an
upgrade fails one test instead of the start-up or a notification at run time. The upper
bound on ``textual`` in pyproject.toml is the next major version for the same reason.
No other module of tui/ reads a private Textual member (the test scans for that too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich._wrap import divide_line  # what Content wraps a line with (a private module of rich)
from rich.segment import Segment
from textual._compositor import CompositorUpdate  # what App._display writes (FrameAhead)
from textual.strip import Strip
# The footer's own key widget (a private module): tui/footer.py draws its keys as one and docks one.
from textual.widgets._footer import Footer, FooterKey

__all__ = ["FooterKey", "MEMBERS"]

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.terminal_theme import TerminalTheme
    from textual.app import App
    from textual.driver import Driver
    from textual.notifications import Notification
    from textual.screen import Screen
    from textual.widget import Widget

#: (module, class, member, how it is used): "method" is called with the parameters named
#: after it; "attribute" is read or written on an instance; "property" is read on an instance.
MEMBERS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("textual.app", "App", "_driver", ("attribute",)),
    ("textual.app", "App", "_notifications", ("attribute",)),
    ("textual.app", "App", "_unnotify", ("method", "notification", "refresh")),
    ("textual.app", "App", "_refresh_truecolor_filter", ("method", "theme")),
    ("textual.screen", "Screen", "_compositor", ("attribute",)),
    ("textual._compositor", "Compositor", "_dirty_regions", ("attribute",)),
    ("textual._compositor", "Compositor", "update_widgets", ("method", "widgets")),
    ("textual._compositor", "Compositor", "render_full_update", ("method", "simplify")),
    ("textual._compositor", "Compositor", "render_partial_update", ("method",)),
    ("textual.widgets._footer", "Footer", "_bindings_ready", ("attribute",)),
    ("textual.widgets._footer", "", "FooterKey", ("class", "Widget")),
    ("textual.dom", "DOMNode", "_get_default_css", ("method",)),
    ("textual.app", "App", "_register", ("method", "parent", "widgets")),
    ("textual._compositor", "Compositor", "_get_renders", ("method", "crop")),
    ("textual._compositor", "Compositor", "_render_chops", ("method", "crop", "is_rendered_line")),
    ("textual.app", "App", "_css_update_count", ("attribute",)),
    ("textual.screen", "Screen", "_refresh_layout", ("method", "size", "scroll")),
    ("textual.screen", "Screen", "_layout_required", ("attribute",)),
    ("textual.screen", "Screen", "_scroll_required", ("attribute",)),
    ("textual.screen", "Screen", "_repaint_required", ("attribute",)),
    ("textual.screen", "Screen", "_dirty_widgets", ("attribute",)),
    ("textual.widget", "Widget", "_size_updated", ("method", "size", "virtual_size", "container_size", "layout")),
    ("textual.screen", "Screen", "_update_timer", ("property",)),
    ("textual.screen", "Screen", "_on_idle", ("method", "event")),
    ("textual.screen", "Screen", "_on_timer_update", ("method",)),
    ("textual.drivers.linux_driver", "LinuxDriver", "_writer_thread", ("attribute",)),
    ("textual.drivers._writer_thread", "WriterThread", "_queue", ("attribute",)),
    ("textual.app", "App", "_display", ("method", "screen", "renderable")),
    ("textual.app", "App", "_batch_count", ("attribute",)),
    ("textual.screen", "Screen", "_recompose_required", ("attribute",)),
    ("textual._compositor", "", "CompositorUpdate", ("class", "object")),
    ("textual.screen", "Screen", "_screen_resized", ("method", "size")),
    ("textual.widget", "Widget", "_size", ("attribute",)),
)


class SizedInPlace:
    """A widget whose new size (a reflow's) asks for no second reflow (a mixin, before the
    widget's class). Textual sets a resized widget's ``virtual_size`` reactive with layout,
    so every widget a frame resized or showed first asked for a whole second layout in the
    next frame: the frame after the body's (Enter), which an r typed at once waited behind
    (issue 35). For a widget whose content the layout itself measures and that scrolls
    nothing (the reader's message headers and bodies), the size the reflow gave is final:
    it is set without that ask, as Textual's own reflow of the visible widgets sets it. So it is
    for the reading pane's view, which scrolls: its virtual size is its children's, measured by
    that reflow, and a scrollbar the new size shows or hides asks its own layout (the
    ``show_vertical_scrollbar`` reactive), so the ask only laid the screen out again unchanged."""

    def _size_updated(self, size, virtual_size, container_size, layout: bool = True) -> bool:  # type: ignore[no-untyped-def]
        return super()._size_updated(size, virtual_size, container_size, layout=False)  # type: ignore[misc]


class LaidOutOnce:
    """A screen pushed for the first time is laid out once (a mixin, before the Screen's class).

    The push's ScreenResume lays a new screen out at the terminal's size; that reflow counts the
    screen as shown and posts it a Resize (two, traced), whose handler laid the whole screen out
    and rendered it again at the size it had just been laid out at: the slow half (~50 ms of the
    UI thread) of the confirmed flag's f on 200 tagged messages (issue 35, bimodal 48 / 103 ms,
    profiled). A size it is not laid out at (a terminal resized) still lays it out; what its
    widgets ask for after that first layout is laid out at the update timer's tick, as always."""

    def _screen_resized(self, size) -> None:  # type: ignore[no-untyped-def]
        screen: Screen = self  # type: ignore[assignment]
        if screen._size == size:  # a layout asked for since is the update timer's, as for any screen
            return
        super()._screen_resized(size)  # type: ignore[misc]


class FrameAtIdle:
    """A screen whose update, once :meth:`frame_at_idle` asks for it, is drawn as soon as the
    screen is idle with it pending rather than at its update timer's next tick (a mixin, before
    the Screen's class).

    Textual draws a screen's updates on a timer of 1/60 s whose ticks keep a fixed grid from its
    start: an update asked within a period of the last frame waits for the next tick (0-16.7 ms,
    and 1-2 periods when the last tick ran late). Enter typed as the folder's rows show came
    within a period of their frame: the body's frame waited 1-10 ms with the UI thread idle
    (tmux traces of bench_habits, issue 35). Asked once per key that shows something; other
    updates keep Textual's pace."""

    _frame_at_idle = False

    def frame_at_idle(self) -> None:
        """Draw the next update that lays the screen out (a text shown anew) as soon as the
        screen is idle with it pending (once)."""
        self._frame_at_idle = True

    async def _on_idle(self, event) -> None:  # type: ignore[no-untyped-def]
        # Textual calls each class's handler in the MRO: Screen's comes after this one and, the
        # update drawn here, finds nothing pending and runs the after-refresh callbacks.
        screen: Screen = self  # type: ignore[assignment]
        # A layout: what was shown has arrived (an update of another widget, a clock or a row
        # mark, drawn at once would take the ask and leave the body to the next tick, as traced).
        if self._frame_at_idle and screen._layout_required:
            self._frame_at_idle = False
            screen._on_timer_update()  # what the timer's tick runs (nothing drawn when not current)


class FrameAhead:
    """A screen mounted hidden whose first frame once pushed is written from text rendered while
    it was hidden (a mixin, before the Screen's class; ``keep_frame_ahead`` with what
    ``prepare_hidden(frame=True)`` returns).

    The push of a screen prepared hidden still drew one full update on r's path (issue 35, tmux
    traces of bench_habits: ~5 ms of the UI thread at load 4, most of r's): every widget's cached
    lines cut and joined into the screen's, the screen's own background rendered again (the
    push's ``refresh`` drops its lines) and the whole turned into escape codes. The dialog is
    opaque: nothing of the screen below shows, so that frame is known before the push. Kept
    while nothing changed: a layout, a scroll or a widget's update pending at the push (each
    reaches the screen before its update), or a terminal resized since, draws Textual's own
    frame instead.

    Also, a push's update that lays the screen out when the whole screen is to be painted
    anyway (prepared hidden, changed since) drew two full frames: the layout's, then the
    push's repaint of the same lines (23 kB each on a 160 x 50 terminal): one now."""

    _frame_ahead: str | None = None
    _frame_size: object = None  # the terminal's size it was rendered at

    def keep_frame_ahead(self, text: str | None) -> None:
        """Keep ``text``, the full frame the push will write (``prepare_hidden(frame=True)``)."""
        self._frame_ahead = text
        self._frame_size = self.app.size  # type: ignore[attr-defined]

    @property
    def frame_kept(self) -> bool:
        return self._frame_ahead is not None

    def drop_frame_ahead(self) -> None:
        """A change is coming (a fill): the frame kept ahead shows what was there before it."""
        self._frame_ahead = None

    def _on_timer_update(self) -> None:
        screen: Screen = self  # type: ignore[assignment]
        if screen.is_current and not screen.app._batch_count:  # (a tick while hidden draws nothing)
            text, self._frame_ahead = self._frame_ahead, None  # once: a later update is Textual's
            compositor = screen._compositor
            if text is not None and self._frame_size == screen.app.size and not (
                    screen._layout_required or screen._scroll_required or screen._recompose_required
            ) and screen._dirty_widgets <= {screen}:
                screen._repaint_required = False  # what the push asked for: the whole screen, drawn here
                screen._dirty_widgets.clear()
                compositor._dirty_regions.clear()
                screen.app._display(screen, _WrittenAhead(text))
            elif screen._layout_required and compositor.size.region in compositor._dirty_regions:
                screen._repaint_required = False  # the layout's frame is a full update already
        super()._on_timer_update()  # type: ignore[misc]


class _WrittenAhead(CompositorUpdate):
    """A frame rendered ahead, as ``App._display`` writes a compositor's update."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Segment(self.text)  # as a renderable (App._display writes render_segments' text)

    def render_segments(self, console: Console) -> str:
        return self.text


def mark_bindings_ready(footer: Footer) -> None:
    """What Footer.bindings_changed sets before its compose shows any key."""
    footer._bindings_ready = True


def bindings_ready(footer: Footer) -> bool:
    return bool(footer._bindings_ready)


def full_frame(screen: Screen, console: Console) -> str:
    """Textual's own full update of ``screen``, as its first frame writes it.

    Rendering it clears the compositor's dirty regions: they are put back, so the next
    refresh draws what it would have drawn."""
    compositor = screen._compositor
    pending = set(compositor._dirty_regions)
    try:
        return compositor.render_full_update().render_segments(console)
    finally:
        compositor._dirty_regions.update(pending)


def compositor(screen: Screen):  # type: ignore[no-untyped-def]
    """The screen's compositor (what draws its updates)."""
    return screen._compositor


def notifications_shown(app: App) -> bool:
    """Whether a notification is on screen (Textual keeps no public count)."""
    return bool(app._notifications)


def notifications(app: App) -> list[Notification]:
    """The notifications on screen (Textual keeps no public list of them)."""
    return list(app._notifications)


def withdraw(app: App, notification: Notification) -> None:
    """Take ``notification`` off the screen if it is still there, without a refresh of its own
    (the notification that replaces it refreshes)."""
    if notification in app._notifications:
        app._unnotify(notification, refresh=False)


def refresh_truecolor_filter(app: App, theme: TerminalTheme) -> None:
    """The ANSI colour filter for ``theme``, as Textual's theme watcher sets it."""
    app._refresh_truecolor_filter(theme)


def driver(app: App) -> Driver | None:
    """The app's terminal driver (None before it runs)."""
    return app._driver


def output_pending(app: App) -> bool:
    """Whether the terminal driver's writer thread still holds text to write (a frame drawn, not
    yet on the terminal: the writer needs the GIL and a CPU, and work started at once on the UI
    thread or a worker took them, 17-44 ms at load 9 in tmux traces of Enter, issue 35)."""
    from textual.drivers.linux_driver import LinuxDriver  # why: loaded once the app runs in a terminal

    driver = app._driver
    writer = driver._writer_thread if isinstance(driver, LinuxDriver) else None  # headless: none
    return writer is not None and writer._queue.qsize() > 0


def register_default_css(app: App, widget: Widget) -> None:
    """Add ``widget``'s default CSS (its class's and its bases') to the app's stylesheet, as
    Textual's ``Widget._post_register`` does when the first such widget mounts."""
    for read_from, css, tie_breaker, scope in widget._get_default_css():
        app.stylesheet.add_source(css, read_from=read_from, is_default_css=True, tie_breaker=tie_breaker,
                                  scope=scope)


_DIVIDE: list = []  # Textual's own Strip.divide, while ours stands in for it


def acyclic_strip_divide(on: bool = True) -> None:
    """Strips divided at their own length make no reference cycle (issue 39); ``on=False``
    puts Textual's own ``Strip.divide`` back.

    Textual's ``Strip.divide`` caches its result in the strip: a strip cut only at its own end
    caches ``[self]``, a cycle (strip, its cache, the list, the strip). The compositor cuts
    every line it paints, so each painted line that fits in one region became cyclic garbage,
    with the strip's seven caches and its segments: some 100,000 objects a minute in a storm
    with keys every 100 ms (bench_storm.py --cycles), freed only by the collector's full
    passes. Ours answers that case with a new ``[self]`` and caches nothing; every other cut
    is Textual's own. tests/tui/test_textual_private.py checks both that Textual's still makes
    the cycle (else this can go) and that ours does not."""
    if on and not _DIVIDE:
        divide = Strip.divide
        _DIVIDE.append(divide)

        def acyclic_divide(self: Strip, cuts):  # type: ignore[no-untyped-def]
            cuts = [cut for cut in cuts if cut <= self.cell_length]
            if cuts == [self.cell_length]:
                return [self]
            return divide(self, cuts)

        Strip.divide = acyclic_divide  # type: ignore[method-assign]
    elif not on and _DIVIDE:
        Strip.divide = _DIVIDE.pop()  # type: ignore[method-assign]


def wrap_cuts(plain: str, width: int, fold: bool) -> list[int]:
    """Where a Static's text (Textual's Content) is cut to wrap the one line ``plain`` at ``width``:
    rich's ``divide_line``, as ``Content._wrap_and_format`` calls it (the rows are one more).
    tests/tui/test_long_text.py checks the rows counted with it against a Static's."""
    return divide_line(plain, width, fold=fold)


def css_updates(app: App) -> int:
    """How many times the app's CSS changed (a theme, a variable, a stylesheet): Textual's count,
    which it compares with a screen's to restyle a screen it shows again."""
    return int(app._css_update_count)


def start_screen(app: App, screen: Screen) -> None:
    """Compose and mount ``screen`` now, without showing it: what ``App.push_screen`` does first
    for a screen that is not running (``App._get_screen``). A later push of it finds it
    running and only shows it; a screen never pushed is removed with ``screen.remove()``."""
    app._register(app, screen)


def hidden(screen: Screen) -> bool:
    """Whether ``screen`` is mounted and running but not shown nor in the stack (``start_screen``)."""
    return screen not in screen.app.screen_stack and screen.is_running and screen.is_attached


def hidden_changed(screen: Screen) -> bool:
    """Whether a hidden ``screen`` has a layout or a repaint pending (what its update timer would
    do if it were shown): a widget of it changed since ``prepare_hidden``."""
    return bool(screen._layout_required or screen._scroll_required or screen._repaint_required
                or screen._dirty_widgets)


def prepare_hidden(screen: Screen, first: bool, frame: bool = False) -> str | None:
    """Lay a hidden ``screen`` out at the app's size and render its lines, writing nothing: what
    the push's ``ScreenResume`` does (``Screen._refresh_layout`` when the screen's size is not the
    app's, then a full update) less the writing, done while it is hidden. Its widgets get their
    sizes (and their Resize and Show events) now and keep their lines in their own caches, so
    the push finds its size unchanged and composes cached lines; a widget that changes later
    renders again then, as it would have. ``first``: lay out even with nothing pending.
    ``frame``: render the whole screen and return the text its push's full update writes
    (``FrameAhead``), else None.

    The whole screen stays to be painted (a full update clears the compositor's dirty regions:
    the screen's region is put back), so the first frame of the push is a full update."""
    if not hidden(screen) or not (first or frame or hidden_changed(screen)):
        return None
    compositor = screen._compositor
    compositor._dirty_regions.clear()  # the whole screen's region, put back below
    if first or screen._layout_required or screen._scroll_required:
        screen._layout_required = screen._scroll_required = False
        screen._refresh_layout(screen.app.size)  # marks what moved or changed size
    compositor.update_widgets(screen._dirty_widgets)  # and what asked for a repaint
    screen._dirty_widgets.clear()
    screen._repaint_required = False
    text = None
    if first or frame:
        update = compositor.render_full_update()
        text = update.render_segments(screen.app.console) if frame else None
    else:  # what changed since (a key of the footer, a blink of the cursor) renders alone
        compositor.render_partial_update()
    compositor._dirty_regions.add(compositor.size.region)
    if first:
        start_update_timer(screen)
    return text


def start_update_timer(screen: Screen) -> None:
    """Start ``screen``'s update timer (paused) so that its first update once shown runs at once.

    Textual draws a screen's updates on a timer of 1/60 s (``Screen._update_timer``), made
    paused; a ``Timer`` starts its clock at its first resume and ticks one period *after* it.
    So the first frame of a screen pushed for the first time (the dialog mounted ahead) waited
    a whole period (16.7 ms; more under load) with nothing to do (issue 35: r's frame). A
    timer past its first tick waits paused and ticks as soon as it is resumed: resumed here, it
    ticks once a period later while the screen is hidden (the tick pauses it and draws
    nothing: the screen is not current), then waits for the push's update."""
    screen._update_timer.resume()


_RENDERS: list = []  # Textual's own Compositor._get_renders, while ours stands in for it


def cropped_renders(on: bool = True) -> None:
    """A partial update renders the lines it updates, not every widget whole (issue 39);
    ``on=False`` puts Textual's own ``Compositor._get_renders`` back.

    Textual's partial update crops to the box around the regions that changed (at a key: two
    rows of the list, or the status line), then renders every widget whose clip meets that box
    (the screen's whole area for a top-level widget: the header, the footer, the reader) over
    its whole height, and keeps the box's lines: eleven widgets, some 40 lines each, at every
    key, about half the key's time on the UI thread. Ours skips the widgets whose visible area
    misses the box and renders the others over the box's lines only (their clip cut to them),
    which ``_render_chops`` lines up as it does any clipped widget. The widgets come front to
    back, and the first segment of a cut wins: behind a widget that covers the whole box
    nothing is rendered (issue 33: the body's frame after Enter rendered the reading pane's
    three containers behind it, 27 lines each, for nothing). A full update (the box is the
    screen) renders as before. tests/tui/test_textual_private.py compares ours with
    Textual's on a partial update."""
    from textual._compositor import Compositor  # why: the compositor is private to Textual
    from textual.geometry import Region

    if on and not _RENDERS:
        renders = Compositor._get_renders
        _RENDERS.append(renders)

        def lines_of_the_crop(self, crop=None):  # type: ignore[no-untyped-def]
            if not crop:
                yield from renders(self, crop)
                return
            top, bottom = crop.y, crop.bottom
            for widget, (region, clip) in self.visible_widgets.items():
                shown = region.intersection(clip)
                if not (shown.width and shown.height) or not crop.overlaps(shown):
                    continue
                if clip.y < top or clip.bottom > bottom:  # the clip, cut to the crop's lines
                    y = max(clip.y, top)
                    clip = Region(clip.x, y, clip.width, max(0, min(clip.bottom, bottom) - y))
                    shown = region.intersection(clip)
                    if not (shown.width and shown.height):
                        continue
                yield (region, clip, widget.render_lines(Region(shown.x - region.x, shown.y - region.y,
                                                                 shown.width, shown.height)))
                if shown.contains_region(crop):
                    return  # front to back: what is behind a widget that covers the crop shows nowhere in it

        Compositor._get_renders = lines_of_the_crop  # type: ignore[method-assign]
    elif not on and _RENDERS:
        Compositor._get_renders = _RENDERS.pop()  # type: ignore[method-assign]
