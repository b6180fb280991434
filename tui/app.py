"""The mailtriage Textual app and :func:`run_app`, which the ``mailtriage`` command calls.

The app is a shell: it loads the user settings, the theme and the key map, opens the project (the
:class:`Service`) and shows the first-run screen when that fails, keeps the list of errors (``!`` shows it),
and runs the app-wide keys. The main screen (:mod:`mailtriage.tui.screens.main`) owns the panes and workers.

Start-up imports only what the main screen needs; the console, help, dialogs and
first-run screens are imported when first opened.
"""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, work
from textual.app import App
from textual.command import CommandPalette
from textual.worker import Worker, WorkerState

from mailtriage.core.errors import ConfigError
from mailtriage.core.secrets import scrub
from mailtriage.core.cache_file import UNWRITABLE
from mailtriage.core.trace import OPLOG, TRACE
from mailtriage.core.settings import UserSettings, load_settings
from mailtriage.themes import DEFAULT_THEME, THEMES, canonical_name, theme_css_paths
from mailtriage.tui import bindings, keymaps, quick_flags, textual_private
from mailtriage.tui.commands import MailtriageCommands, ThemeCommands
from mailtriage.tui.errors import ErrorRecord, error_record
from mailtriage.tui.first_screen import FirstScreen
from mailtriage.tui.head_start import ForkedHeadStart
from mailtriage.tui.idle_collection import IdleCollection
from mailtriage.tui.messages import CacheUnwritable, SessionFailed, SessionOpened, SettingsSaved
from mailtriage.tui.pending import PendingWork
from mailtriage.tui.sanitize import inert
from mailtriage.tui.screens.main import MainScreen
from mailtriage.application import Service
from mailtriage.tui.startup_keys import StartupKeys
from mailtriage.tui.terminal_watch import watch_terminal
from mailtriage.tui.toasts import Toasts
from mailtriage.tui.typeahead import TypeAhead

if TYPE_CHECKING:
    from mailtriage.application import Resolution
    from mailtriage.tui.first_paint import Shown

HERE = Path(__file__).parent


class MailTriageApp(IdleCollection, StartupKeys, TypeAhead, FirstScreen, Toasts, App[int], bindings.KeymapHost,
                    inherit_bindings=False):
    # The dialogs' and the console's stylesheets belong to those screens (their CSS_PATH):
    # parsed when one first opens, not before the first frame.
    CSS_PATH = [HERE / "app.tcss", *theme_css_paths()]
    BINDINGS = bindings.APP
    TITLE = "mailtriage"
    COMMANDS = App.COMMANDS | {MailtriageCommands}
    NOTIFICATION_TIMEOUT = 8
    #: At most one new-report notification this often (seconds); news in between is coalesced.
    alert_notice_seconds = 5.0
    #: run_app sets it: once the main screen is up, what start-up built is moved out of the collector's
    #: way (gc.freeze): a full collection in a burst of mail walks only the newer objects.
    freeze_gc_after_start = False

    def __init__(self, project_dir: Path, *, demo: bool = False, settings=None, cursor_blink: bool = True,
                 alerts: bool = True) -> None:
        super().__init__()
        self.startup_problems: list[str] = []
        self.settings_writable = True
        if settings is None:
            try:
                settings = load_settings()
            except ConfigError as exc:
                # A broken settings file is reported, never overwritten.
                self.startup_problems.append(f"settings not loaded: {exc}")
                settings = UserSettings(Path(exc.file), {}, readable=False)
                self.settings_writable = False
        self.settings = settings
        self.session = Service(project_dir, demo=demo, settings=settings)
        self.cursor_blink = cursor_blink
        self.errors: list[ErrorRecord] = []
        #: Keys typed before the main screen is up (its panes mounted, the head start's rows
        #: on them), in order; None once they act (see :meth:`on_event`).
        self._held_keys: list[events.Key] | None = []
        #: The kept first frame the command showed (tui/first_paint.py): run_app sets it.
        self.first_paint_shown: Shown | None = None
        self._theme_ready = False
        # New-report alerts (the main screen's alerts controller): off in tests that snapshot the screen.
        self.alerts_enabled = alerts
        self._cache_said = False  # the one notice that the caches cannot be written
        self._cache_watch = lambda: None  # unsubscribes from the op log (set on mount)
        self.session_closing = False  # a quit closes the session before the app ends (dialogs/quitting.py)

        # Only the themes measured at 4.5:1 (tests/tui/test_theme_contrast.py) are offered, by
        # Ctrl+t and by Textual's own "Theme" command: its built-ins read as low as 2.6:1 here.
        for name in list(self.available_themes):
            self.unregister_theme(name)
        for theme in THEMES:
            self.register_theme(theme)
        self.mailtriage_themes = [t.name for t in THEMES]
        wanted = canonical_name(settings.theme) or DEFAULT_THEME
        if wanted not in self.available_themes:
            self.startup_problems.append(f"theme {settings.theme!r} is unknown; using {DEFAULT_THEME} "
                                         f"(valid: {', '.join(self.mailtriage_themes)})")
            wanted = DEFAULT_THEME
        self._start_with_theme(wanted)

        try:
            keymap = keymaps.keymap(settings)  # [keys] preset, then the user's own entries
        except ConfigError as exc:
            keymap = {}
            self.startup_problems.append(str(exc))
        try:
            #: The thread list's date column: the sender's Date: ("sent") or the arrival time.
            self.date_column = settings.date_column
        except ConfigError as exc:
            self.date_column = "sent"
            self.startup_problems.append(str(exc))
        try:
            quick_flags.confirm_flag_changes(settings)
        except ConfigError as exc:
            self.startup_problems.append(str(exc))
        self.user_keymap, problems = bindings.validate_keymap(keymap)
        self.startup_problems += problems
        if self.user_keymap:
            self.set_keymap(self.user_keymap)

    def _start_with_theme(self, name: str) -> None:
        """The first theme, set before any CSS is parsed.

        ``self.theme = name`` here would run Textual's theme watcher, which queues a
        ``refresh_css``: a second parse of every stylesheet from scratch, and a restyle of
        every node, on the main loop before the first paint (about 3 % of the start-up's CPU,
        benchmarks/bench_startup.py). Nothing is parsed yet, so the watcher's work is done
        here without it: the theme classes, the ANSI colour filter, the CSS variables.
        """
        self.set_reactive(MailTriageApp.theme, name)
        theme = self.current_theme
        classes = {cls: False for cls in self.classes if cls.startswith("-theme-")}
        classes.update({f"-theme-{theme.name}": True, "-dark-mode": theme.dark, "-light-mode": not theme.dark})
        self.update_classes(classes, update=False)
        textual_private.refresh_truecolor_filter(self, self.ansi_theme)
        self.stylesheet.set_variables(self.get_css_variables())

    # -- screens -------------------------------------------------------------
    def get_default_screen(self) -> MainScreen:
        return MainScreen()

    @property
    def main(self) -> MainScreen | None:
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                return screen
        return None

    def on_mount(self) -> None:
        self._theme_ready = True
        # The protocol trace keeps its ring buffer from start-up (the console shows it).
        TRACE.enabled = True
        self.sub_title = "demo" if self.session.demo else ""
        self._keep_terminal_modes()
        for problem in self.startup_problems:
            self.notify(problem, title="Settings", severity="warning", markup=False)
        # A cache that cannot be written (a full disk): one notice, from any thread, also before now.
        self._cache_watch = OPLOG.subscribe(self._cache_record)
        for record in OPLOG.items():
            self._cache_record(record)
        if self.open_after_first_frame():  # the head start's (tui/first_screen.py)
            return
        # Backend work starts now, while Textual is still composing the first screen;
        # results that arrive before the panes exist wait in the main screen.
        self._open_session()

    def main_screen_ready(self) -> None:
        """The main screen has mounted its panes."""
        if self.freeze_gc_after_start:
            gc.freeze()
        self.start_idle_collection()  # the collector back on, full collections between keys (tui/idle_collection.py)
        # Its on_mount shows the head start's rows next (no await in between): keys act on them.
        self.call_later(self.release_keys)

    # -- session -------------------------------------------------------------
    @work(thread=True, exclusive=True, group="session", exit_on_error=False)
    def _open_session(self) -> None:
        main = self.main
        # A cold start's child lists already: its first page shows while the project opens here.
        listing_first = main is not None and self.listing_child_waits()
        # The listing's worker is started on the UI thread (its exclusive start cancels the
        # screen's "threads" work, which only that thread may touch).
        if listing_first and main is not None:
            self.call_from_thread(main.listing.start_first_listing)
        try:
            if not self.session.is_open:
                self.session.open()
        except ConfigError as exc:
            missing = exc.key == "project.md" and "not found" in exc.problem
            (self if main is None else main).post_message(SessionFailed(exc, missing))  # main's, then here
            return
        main = self.main
        if main is not None:
            main.listing.post_message(SessionOpened())  # one queue with the first listing's answers
            if not listing_first:
                self.call_from_thread(main.listing.start_first_listing)

    def on_session_failed(self, message: SessionFailed) -> None:
        self.drop_held_keys()  # no rows come for the keys held since the kept frame (tui/startup_keys.py)
        from mailtriage.tui.screens.first_run import FirstRunScreen  # lazy: only without a project (start-up)
        self.push_screen(FirstRunScreen(self.session.project_dir, str(message.error), self.settings.path,
                                        missing=message.missing_project))

    def reopen(self) -> None:
        """Try the project again (first-run screen, after fixing project.md)."""
        from mailtriage.tui.screens.first_run import FirstRunScreen  # lazy: only without a project (start-up)

        while isinstance(self.screen, FirstRunScreen):
            self.pop_screen()
        main = self.main
        if main is not None:
            main.alerts.stop()
        self.session.close()
        self.session = Service(self.session.project_dir, demo=self.session.demo, settings=self.settings)
        self.forget_start_up()  # this opening lists and reads as any other
        self._open_session()

    def open_demo(self) -> None:
        """First-run ``d``: the demo project, in a fresh workspace of this run (as ``--demo``)."""
        try:  # lazy: the demo may not be part of the build (and loads only for it)
            from mailtriage.demo.workspace import new_demo_session
        except ImportError:
            self.notify("The demo data is not part of this build of mailtriage.", severity="error", markup=False)
            return
        try:
            workspace = new_demo_session()
        except (OSError, subprocess.CalledProcessError, ConfigError) as exc:
            self.notify(f"The demo workspace could not be made: {exc}", severity="error", markup=False)
            return
        self.session = Service(workspace, demo=True, settings=self.settings)
        self.first_paint_project = None  # the demo's screen is not the project's start screen
        self.sub_title = "demo"
        self.reopen()

    # -- global errors and notices -------------------------------------------
    def report_error(self, title: str, error: BaseException, *, where: str = "", resolution: Resolution | None = None,
                     details: str = "", severity: str = "error") -> None:
        # The error list keeps tracebacks: every field is scrubbed of the session's secrets.
        record = error_record(title, error, where=where, details=details, scrub=scrub,
                              resolution=resolution.summary() if resolution is not None else "")
        self.errors.append(record)
        self.notify(f"{inert(record.message)}\n(press ! for details)", title=title, severity=severity,
                    markup=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.report_error(f"Unexpected error in {event.worker.name or 'a background task'}", event.worker.error)

    # -- app actions ---------------------------------------------------------
    def action_help(self) -> None:
        from mailtriage.tui.screens.help import HelpScreen  # lazy: only when first opened (start-up)

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_console(self) -> None:
        from mailtriage.tui.screens.console import ConsoleScreen  # lazy: only when first opened (start-up)

        ConsoleScreen.open(self, None)

    def action_pick_theme(self) -> None:
        self.push_screen(CommandPalette(providers=[ThemeCommands], placeholder="Theme …"))

    def action_show_errors(self) -> None:
        from mailtriage.tui.dialogs.error import ErrorDialog  # lazy: only when first opened (start-up)

        ErrorDialog.open(self, self.errors)

    # The keys below work on every screen (the key map puts them on the app); their work
    # is the main screen's.
    def action_refresh(self) -> None:
        if not self.session.is_open or (main := self.main) is None:
            self.reopen()
            return
        main.refresh_all()

    def action_toggle_tracker(self) -> None:
        if (main := self.main) is not None and self.screen is main:
            main.toggle_tracker()

    def action_publish(self) -> None:
        if (main := self.main) is not None:
            main.start_flow("publish")

    def action_sync(self) -> None:
        if (main := self.main) is not None:
            main.start_flow("sync")

    def action_poll_now(self) -> None:
        if (main := self.main) is not None:
            main.alerts.poll_now()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("refresh", "toggle_tracker", "publish", "sync"):
            return self.session.is_open or action == "refresh"
        return True

    # -- theme ---------------------------------------------------------------
    def watch_theme(self, name: str) -> None:
        if self._theme_ready and name != (canonical_name(self.settings.theme) or DEFAULT_THEME):
            self._save_theme(name)

    @work(thread=True, exclusive=True, group="settings", exit_on_error=False)
    def _save_theme(self, name: str) -> None:
        if not self.settings_writable:
            self.post_message(SettingsSaved("theme", "the settings file could not be read, so it is not rewritten"))
            return
        self.settings.set("theme", name)
        try:
            self.settings.save()
        except OSError as exc:
            self.post_message(SettingsSaved("theme", f"{exc.strerror or exc}"))
            return
        self.post_message(SettingsSaved("theme"))

    def on_settings_saved(self, message: SettingsSaved) -> None:
        if message.error:
            self.notify(f"theme not saved: {message.error}", severity="warning", markup=False)

    async def action_quit(self) -> None:
        """``q`` at the top level: quit, or first ask when something is pending."""
        pending = self.pending_work()
        if not pending:
            self.action_quit_now()
            return
        from mailtriage.tui.dialogs.quit import QuitDialog  # lazy: only when quitting with work pending (start-up)

        if isinstance(self.screen, QuitDialog) or self.session_closing:  # asked, or already quitting
            return

        def decided(quit_anyway: bool | None) -> None:
            if quit_anyway:
                self.action_quit_now()

        self.push_screen(QuitDialog(pending), decided)

    def action_quit_now(self) -> None:
        from mailtriage.tui.dialogs.quitting import quit_after_close  # lazy: only when quitting (start-up)

        quit_after_close(self)

    def pending_work(self) -> list[str]:
        """What a quit would drop now: the main screen's writes and unpublished tracker
        changes, and each screen on the stack that holds work (an open proposal, a draft)."""
        pending: list[str] = []
        for screen in self.screen_stack:
            if isinstance(screen, PendingWork):
                pending += screen.pending_work()
        return pending

    def _cache_record(self, record) -> None:
        if record.op == UNWRITABLE:
            self.post_message(CacheUnwritable(record.detail))

    def on_cache_unwritable(self, message: CacheUnwritable) -> None:
        if not self._cache_said:
            self._cache_said = True
            self.notify(inert(message.text), title="Cache", severity="warning", markup=False, timeout=10)

    def on_unmount(self) -> None:
        self._cache_watch()
        self.cancel_head_start()
        main = self.main
        if main is not None:
            main.alerts.stop()
        if not self.session_closing:
            self.session.close()


def run_app(project_dir: Path, demo: bool = False, *, head_start: ForkedHeadStart | None = None,
            first_paint: Shown | None = None, collector_held: bool = False) -> int:
    """Run the app on a terminal; returns the exit code. ``head_start``: the child the
    command forked before it imported Textual (tui/head_start.py); ``first_paint``: the kept
    screen it wrote meanwhile (tui/first_paint.py), which the app takes over; collector_held: tui/startup.py."""
    app = MailTriageApp(Path(project_dir), demo=demo)
    app.freeze_gc_after_start = app.pace_collections = True
    app.first_paint_shown, app.collector_held = first_paint, collector_held
    app.prepare_first_screen(head_start)
    app.first_paint_project = (Path(project_dir), demo)  # the next start shows this start's screen at once
    watch_terminal(sys.__stdin__.fileno())
    if first_paint is not None:
        first_paint.hand_over()
    try:
        result = app.run()
    finally:
        if first_paint is not None:
            first_paint.give_back()  # the terminal's modes from before the kept frame held the keys
    return int(result or 0) if app.return_code in (None, 0) else int(app.return_code)

