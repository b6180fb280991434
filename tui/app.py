"""The mailtriage Textual app and :func:`run_app`, which the ``mailtriage`` command calls.

The app owns the :class:`Session` (project, mail sources, settings) and runs every
backend call in a thread worker; workers post messages (:mod:`messages`) and the
handlers here update the panes on the UI thread. A newer request supersedes an older
one of the same kind (exclusive worker groups plus request numbers), errors become a
notification with a details dialog, and a backend that went away shows a reconnect
state (``R`` retries) instead of a frozen pane.

Start-up imports only what the main screen needs; the console, help, dialogs and
first-run screens are imported when first opened.
"""

from __future__ import annotations

import itertools
import subprocess
import traceback
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import App
from textual.worker import Worker, WorkerState, get_current_worker

from mailtriage.themes import DEFAULT_THEME, THEMES, canonical_name, theme_css_paths
from mailtriage.tui import bindings
from mailtriage.tui.commands import MailtriageCommands
from mailtriage.tui.messages import (ProposalApplied, ProposalReady, SessionFailed, SessionOpened, SettingsSaved,
                                     SourcesChecked, ThreadLoaded, ThreadsLoaded, ThreadUrlReady, TrackerIssueLoaded,
                                     TrackerLoaded, WorkFailed)
from mailtriage.tui.messages import AlertsFailed, AlertsFound, CaseLoaded
from mailtriage.tui.sanitize import inert
from mailtriage.tui.session import Session

HERE = Path(__file__).parent
#: Threads asked for first from a backend that can list the newest ones fast (IMAP).
FIRST_PAGE = 200


class MailTriageApp(App[int], inherit_bindings=False):
    CSS_PATH = [HERE / "app.tcss", HERE / "dialogs.tcss", HERE / "console.tcss", *theme_css_paths()]
    BINDINGS = bindings.APP
    TITLE = "mailtriage"
    COMMANDS = App.COMMANDS | {MailtriageCommands}
    NOTIFICATION_TIMEOUT = 8
    first_page = FIRST_PAGE
    #: At most one new-report notification this often (seconds); news in between is coalesced.
    alert_notice_seconds = 5.0
    #: run_app sets it: once the main screen is up, what start-up built (modules, widgets) is
    #: moved out of the collector's way (gc.freeze), so a full collection during a burst of
    #: mail walks only the newer objects and the UI does not stall on it.
    freeze_gc_after_start = False

    def __init__(self, project_dir: Path, *, demo: bool = False, settings=None, cursor_blink: bool = True,
                 alerts: bool = True) -> None:
        from mailtriage.core.projectconfig import ConfigError
        from mailtriage.core.settings import UserSettings, load_settings

        super().__init__()
        self.startup_problems: list[str] = []
        self.settings_writable = True
        if settings is None:
            try:
                settings = load_settings()
            except ConfigError as exc:
                # A broken settings file is reported, never overwritten.
                self.startup_problems.append(f"settings not loaded: {exc}")
                settings = UserSettings(Path(exc.file), {})
                self.settings_writable = False
        self.settings = settings
        self.session = Session(project_dir, demo=demo, settings=settings)
        self.cursor_blink = cursor_blink
        self.errors: list = []
        self.last_matrix: list[dict] | None = None
        self.last_resolutions: dict = {}
        self.mandatory_problem: str | None = None
        self._requests = itertools.count(1)
        self._current: dict[str, int] = {}
        self._current_list: str | None = None
        self._open_summary = None
        self._theme_ready = False
        self._main_ready = False
        self._deferred: list = []
        # New-report alerts (tui/alerts.py): off in tests that snapshot the screen.
        self.alerts_enabled = alerts
        self._alert_loop = None
        self._alert_marks: set[str] = set()
        # News not announced yet (coalesced): thread key -> summary, and the outcomes whose
        # cursors the next notification acknowledges.
        self._alert_new: dict[str, object] = {}
        self._alert_updated: dict[str, object] = {}
        self._alert_unacked: list = []
        self._alert_last_notice = float("-inf")  # time.monotonic() of the last alert notification
        self._alert_timer = None
        self._alert_notice = None  # the alert notification on screen (replaced by the next)
        # News that arrived since the listing on its way was asked for: merged into it.
        self._alert_live: dict[str, object] = {}

        for theme in THEMES:
            self.register_theme(theme)
        self.mailtriage_themes = [t.name for t in THEMES]
        wanted = canonical_name(settings.theme) or DEFAULT_THEME
        if wanted not in self.available_themes:
            self.startup_problems.append(f"theme {settings.theme!r} is unknown; using {DEFAULT_THEME} "
                                         f"(valid: {', '.join(self.mailtriage_themes)})")
            wanted = DEFAULT_THEME
        self.theme = wanted

        try:
            keymap = settings.bindings
        except ConfigError as exc:
            keymap = {}
            self.startup_problems.append(str(exc))
        self.user_keymap, problems = bindings.validate_keymap(keymap)
        self.startup_problems += problems
        if self.user_keymap:
            self.set_keymap(self.user_keymap)

    # -- screens -------------------------------------------------------------
    def get_default_screen(self):
        from mailtriage.tui.screens.main import MainScreen

        return MainScreen()

    @property
    def main(self):
        from mailtriage.tui.screens.main import MainScreen

        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                return screen
        return None

    def on_mount(self) -> None:
        self._theme_ready = True
        self.sub_title = "demo" if self.session.demo else ""
        for problem in self.startup_problems:
            self.notify(problem, title="Settings", severity="warning", markup=False)
        # Backend work starts now, while Textual is still composing the first screen;
        # results that arrive before the panes exist wait in _deferred.
        self._open_session()

    def main_screen_ready(self) -> None:
        """The main screen has mounted its panes: deliver what arrived before."""
        self._main_ready = True
        if self.freeze_gc_after_start:
            import gc

            gc.freeze()
        deferred, self._deferred = self._deferred, []
        for handler, message in deferred:
            handler(message)

    def _defer(self, handler, message) -> bool:
        """True (and keep the message for later) when the main screen is not ready yet."""
        if self._main_ready:
            return False
        self._deferred.append((handler, message))
        return True

    # -- session -------------------------------------------------------------
    @work(thread=True, exclusive=True, group="session", exit_on_error=False)
    def _open_session(self) -> None:
        from mailtriage.core.projectconfig import ConfigError

        try:
            self.session.open()
        except ConfigError as exc:
            missing = exc.key == "project.md" and "not found" in exc.problem
            self.post_message(SessionFailed(exc, missing))
            return
        self.post_message(SessionOpened())
        self._check_and_list(self._new_request("threads"), None, first=True)

    def on_session_failed(self, message: SessionFailed) -> None:
        from mailtriage.tui.screens.first_run import FirstRunScreen

        self.push_screen(FirstRunScreen(self.session.project_dir, str(message.error), self.settings.path,
                                        missing=message.missing_project))

    def on_session_opened(self, message: SessionOpened) -> None:
        if self._defer(self.on_session_opened, message):
            return
        session = self.session
        self.title = f"mailtriage · {inert(session.title)}"
        main = self.main
        if main is None:
            return
        lists = session.lists()
        main.folders.show_lists(lists, session.since().strftime("%Y-%m-%d"))
        main.sources.show_cc(session.cc)
        self._current_list = lists[0].list_name if lists else None
        main.threads.show_loading(self._current_list)
        if session.cc is not None and session.cc.warnings:
            main.show_banner(Text.assemble(("⚠ ", "bold"), inert(" ".join(session.cc.warnings))),
                             error=session.cc.blocked)
        self.start_alerts()

    def reopen(self) -> None:
        """Try the project again (first-run screen, after fixing project.md)."""
        from mailtriage.tui.screens.first_run import FirstRunScreen

        while isinstance(self.screen, FirstRunScreen):
            self.pop_screen()
        self.stop_alerts()
        self.session.close()
        self.session = Session(self.session.project_dir, demo=self.session.demo, settings=self.settings)
        self._open_session()

    def open_demo(self) -> None:
        """First-run ``d``: the demo project, from the same working copy ``--demo`` uses."""
        try:
            from mailtriage.demo.workspace import ensure_demo_workspace
        except ImportError:
            self.notify("The demo data is not part of this build of mailtriage.", severity="error", markup=False)
            return
        from mailtriage.core.projectconfig import ConfigError

        try:
            workspace = ensure_demo_workspace()
        except (OSError, subprocess.CalledProcessError, ConfigError) as exc:
            self.notify(f"The demo workspace could not be made: {exc}", severity="error", markup=False)
            return
        self.session = Session(workspace, demo=True, settings=self.settings)
        self.sub_title = "demo"
        self.reopen()

    # -- requests ------------------------------------------------------------
    def _new_request(self, kind: str) -> int:
        request = next(self._requests)
        self._current[kind] = request
        return request

    def _is_current(self, kind: str, request: int) -> bool:
        return self._current.get(kind) == request

    def cancel_work(self) -> None:
        """Esc: drop the pending listing / thread / proposal (their answers are ignored)."""
        main = self.main
        cancelled = []
        for kind, group in (("threads", "threads"), ("reader", "reader"), ("reply", "reply")):
            if any(w.group == group and w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in self.workers):
                self.workers.cancel_group(self, group)
                self._current[kind] = next(self._requests)
                cancelled.append(kind)
        if main is not None:
            if "threads" in cancelled:
                main.threads.show_message("loading cancelled — press R to load again")
            if "reader" in cancelled:
                main.reader.show_status("loading cancelled")
            elif "reply" in cancelled:
                main.reader.restore_status()
        if cancelled:
            self.notify("cancelled: " + ", ".join(cancelled), markup=False)

    # -- listing -------------------------------------------------------------
    def load_threads(self, list_name: str | None) -> None:
        self._current_list = list_name
        self._alert_live = {}
        main = self.main
        if main is not None:
            main.threads.show_loading(list_name)
        self._check_and_list(self._new_request("threads"), list_name)

    @work(thread=True, exclusive=True, group="threads", exit_on_error=False)
    def _check_and_list(self, request: int, list_name: str | None, first: bool = False) -> None:
        worker = get_current_worker()
        session = self.session
        matrix, resolutions, problem = session.check_sources()
        self.post_message(SourcesChecked(matrix, resolutions, str(problem) if problem else None))
        if worker.is_cancelled:
            return
        if first:
            # Start-up reads the security list only; without one the read is skipped.
            lists = session.lists()
            list_name = lists[0].list_name if lists else None
        if problem:
            # The contract: a mandatory backend that is unavailable stops the run.
            self.post_message(WorkFailed(request, "threads", "Run stopped", problem))
            return
        if list_name is None:
            self.post_message(WorkFailed(request, "threads", "No list to read",
                                         LookupError("security_list is not configured in project.md; "
                                                     "the list read is skipped"), None))
            return
        from mailtriage.tui.rows import rows_for

        try:
            if session.listing_can_be_limited():
                # The newest threads first, painted at once; then the whole window.
                first = session.list_threads(list_name, limit=self.first_page)
                if worker.is_cancelled:
                    return
                if len(first.value) < self.first_page:
                    self.post_message(ThreadsLoaded(request, list_name, rows_for(first.value), first.resolution))
                    return
                self.post_message(ThreadsLoaded(request, list_name, rows_for(first.value), first.resolution,
                                                partial=True))
            result = session.list_threads(list_name)
        except Exception as exc:  # turned into the pane's error state and a notification
            self.post_message(WorkFailed(request, "threads", "Listing threads failed", exc,
                                         session.sources.resolve(_op("list_recent_threads"))))
            return
        if worker.is_cancelled:
            return
        self.post_message(ThreadsLoaded(request, list_name, rows_for(result.value), result.resolution))

    def on_sources_checked(self, message: SourcesChecked) -> None:
        if self._defer(self.on_sources_checked, message):
            return
        self.last_matrix = message.matrix
        self.last_resolutions = message.resolutions
        self.mandatory_problem = message.mandatory_problem
        main = self.main
        if main is not None:
            main.sources.show_matrix(message.matrix, _accounts(self.settings))
            if message.mandatory_problem:
                main.show_banner(Text.assemble(("⛔ ", "bold"), inert(message.mandatory_problem)), error=True)
        for screen in self.screen_stack:
            if hasattr(screen, "show_sources"):
                screen.show_sources(message.matrix, message.resolutions, self.session.cc)

    def on_threads_loaded(self, message: ThreadsLoaded) -> None:
        if self._defer(self.on_threads_loaded, message):
            return
        if not self._is_current("threads", message.request):
            return
        main = self.main
        if main is not None:
            rows = message.rows
            if self._alert_live and _same_name(message.list_name, self._alert_list()):
                # News that arrived while this listing was on its way.
                from mailtriage.tui.rows import ListRows, merge_news, plain_rows

                items = plain_rows(rows)
                if items is not None:
                    rows = ListRows(merge_news(items, self._alert_live.values()))
            main.threads.show_rows(self._mark_alerted(rows), message.resolution, message.list_name,
                                   partial=message.partial)
            if not message.partial:
                self._alert_live = {}  # in the rows now; later news is applied to them directly

    # -- reading -------------------------------------------------------------
    def open_thread(self, summary) -> None:
        main = self.main
        self._alert_marks.discard(str(summary.thread_id))
        self._open_summary = summary
        if main is not None:
            main.reader.show_loading(summary.subject)
        self._read(self._new_request("reader"), summary.thread_id)

    @work(thread=True, exclusive=True, group="reader", exit_on_error=False)
    def _read(self, request: int, thread_id) -> None:
        worker = get_current_worker()
        try:
            result = self.session.read_thread(thread_id)
        except Exception as exc:
            self.post_message(WorkFailed(request, "reader", "Reading the thread failed", exc,
                                         self.session.sources.resolve(_op("read_thread"))))
            return
        if not worker.is_cancelled:
            self.post_message(ThreadLoaded(request, result.value, result.resolution))

    def on_thread_loaded(self, message: ThreadLoaded) -> None:
        if not self._is_current("reader", message.request):
            return
        main = self.main
        if main is not None:
            main.reader.show_thread(message.thread, message.resolution)
            self._load_case(message.request, message.thread)

    # -- proposals: reply, import, publish, sync ------------------------------
    FLOW_TITLES = {"reply": "Preparing the reply failed", "import": "Preparing the import failed",
                   "publish": "Preparing the publish review failed", "sync": "Preparing the sync failed"}

    def _thread_for(self, summary):
        """(open thread or None, thread id or None) for a flow on ``summary`` (None: the open thread)."""
        main = self.main
        thread = main.reader.thread if main is not None else None
        if summary is not None and (thread is None or thread.thread_id != summary.thread_id):
            thread = None
        thread_id = summary.thread_id if summary is not None else (thread.thread_id if thread else None)
        return thread, thread_id

    def reply_to(self, summary) -> None:
        """Propose a reply draft on ``summary``'s thread (None: the thread in the reading pane)."""
        thread, thread_id = self._thread_for(summary)
        if thread_id is None:
            self.notify("Open a thread first (Enter), then reply with r.", severity="warning", markup=False)
            return
        self._start_flow("reply", "preparing the reply proposal …", thread=thread, thread_id=thread_id)

    def import_thread(self, summary) -> None:
        """Propose importing ``summary``'s thread (None: the open one) into the tracker."""
        thread, thread_id = self._thread_for(summary)
        if thread_id is None:
            self.notify("Open a thread first (Enter), then import it with i.", severity="warning", markup=False)
            return
        self._start_flow("import", "preparing the import proposal …", thread=thread, thread_id=thread_id)

    def action_publish(self) -> None:
        self._start_flow("publish", "preparing the publish review …")

    def action_sync(self) -> None:
        self._start_flow("sync", "collecting new mail on the tracker's threads …")

    def _start_flow(self, flow: str, status: str, **kwargs) -> None:
        if not self.session.is_open:
            return
        main = self.main
        if main is not None:
            main.reader.show_status(f"{status} (Esc cancels)")
        self._build_proposal(self._new_request("reply"), flow, kwargs)

    @work(thread=True, exclusive=True, group="reply", exit_on_error=False)
    def _build_proposal(self, request: int, flow: str, args: dict) -> None:
        from mailtriage.core.projectconfig import ConfigError

        worker = get_current_worker()
        session = self.session
        try:
            if flow == "publish":
                proposal = session.propose_publish()
            elif flow == "sync":
                proposal = session.propose_sync()
            else:
                thread = args.get("thread")
                if flow == "import":
                    proposal = session.propose_import(args["thread_id"], thread)
                else:
                    from mailtriage.workflows.templates import receipt_body

                    if thread is None:
                        thread = session.read_thread(args["thread_id"]).value
                    rendered = receipt_body(session.config, thread, sender_name=session.sender_name())
                    proposal = session.propose_reply(thread, rendered.text)
                    if rendered.note:
                        proposal.notes.append(rendered.note)
        except ConfigError as exc:
            self.post_message(WorkFailed(request, "reply", self.FLOW_TITLES[flow], exc))
            return
        except Exception as exc:
            op = "create_draft" if flow == "reply" else "read_thread"
            resolution = session.sources.resolve(_op(op)) if flow in ("reply", "import") else None
            self.post_message(WorkFailed(request, "reply", self.FLOW_TITLES[flow], exc, resolution))
            return
        if not worker.is_cancelled:
            self.post_message(ProposalReady(request, proposal, flow))

    def on_proposal_ready(self, message: ProposalReady) -> None:
        if not self._is_current("reply", message.request):
            return
        if self.main is not None:
            self.main.reader.restore_status()
        self.show_proposal(message.proposal, message.flow)

    def show_proposal(self, proposal, flow: str = "reply") -> None:
        from mailtriage.tui.dialogs.proposal import ProposalDialog

        def decided(confirmed: bool | None) -> None:
            if confirmed:
                self.notify("writing …", markup=False, timeout=3)
                self._apply(proposal, flow)
            else:
                self.notify("Cancelled: nothing was written.", markup=False)

        self.push_screen(ProposalDialog(proposal, cursor_blink=self.cursor_blink), decided)

    @work(thread=True, group="apply", exit_on_error=False)
    def _apply(self, proposal, flow: str = "reply") -> None:
        try:
            report = self.session.apply(proposal)
        except Exception as exc:
            self.post_message(WorkFailed(0, "apply", "Writing failed", exc))
            return
        self.post_message(ProposalApplied(proposal, report, flow))

    def on_proposal_applied(self, message: ProposalApplied) -> None:
        report = message.report
        if report.ok:
            self.notify(report.describe(), title="Written", markup=False)
        else:
            self.report_error("Writing failed", RuntimeError(report.failed[1]), where="apply",
                              details=report.describe())
        if message.flow == "organize":
            self._after_organize()
        if message.flow in ("import", "sync"):
            main = self.main
            if main is not None and main.has_class("-tracker"):
                self.load_tracker()
            if report.written:
                # A local-files tracker publishes separately, after its own confirmation.
                self._offer_publish(self._new_request("reply"))

    @work(thread=True, exclusive=True, group="reply", exit_on_error=False)
    def _offer_publish(self, request: int) -> None:
        try:
            if not self.session.needs_publish():
                return
            proposal = self.session.propose_publish()
        except Exception as exc:
            self.post_message(WorkFailed(request, "reply", self.FLOW_TITLES["publish"], exc))
            return
        self.post_message(ProposalReady(request, proposal, "publish"))

    # -- thread URL ----------------------------------------------------------
    def show_thread_url(self) -> None:
        main = self.main
        thread = main.reader.thread if main is not None else None
        if thread is None:
            return
        self._thread_url(thread.thread_id)

    @work(thread=True, exclusive=True, group="url", exit_on_error=False)
    def _thread_url(self, thread_id) -> None:
        try:
            result = self.session.thread_url(thread_id)
        except Exception as exc:
            self.post_message(WorkFailed(0, "url", "No thread URL", exc,
                                         self.session.sources.resolve(_op("thread_url"))))
            return
        self.post_message(ThreadUrlReady(str(result.value), result.resolution))

    def on_thread_url_ready(self, message: ThreadUrlReady) -> None:
        main = self.main
        text = inert(message.url)
        if main is not None:
            main.reader.show_status(f"URL: {text} · via {message.resolution.summary()}")
        self.copy_to_clipboard(message.url)
        self.notify(f"{text}\n(copied to the clipboard; not opened)", title="Thread URL", markup=False)

    # -- tracker ---------------------------------------------------------------
    def load_tracker(self) -> None:
        main = self.main
        if main is None or not self.session.is_open:
            return
        from mailtriage.tui.panes.tracker import TrackerPane, tracker_support

        pane = main.query_one(TrackerPane)
        if tracker_support():
            return
        pane.show_loading()
        self._tracker_list(self._new_request("tracker"))

    @work(thread=True, exclusive=True, group="tracker", exit_on_error=False)
    def _tracker_list(self, request: int) -> None:
        from mailtriage.core.projectconfig import ConfigError

        try:
            issues, problems = self.session.tracker_issues()
        except ConfigError as exc:
            # No usable tracker configuration: the pane says so; this is not an app error.
            self.post_message(TrackerLoaded(request, [], f"no tracker: {exc}", available=False))
            return
        except Exception as exc:
            self.post_message(WorkFailed(request, "tracker", "Listing the tracker failed", exc))
            return
        self.post_message(TrackerLoaded(request, issues, self.session.tracker_description, problems))

    def on_tracker_loaded(self, message: TrackerLoaded) -> None:
        if not self._is_current("tracker", message.request) or self.main is None:
            return
        from mailtriage.tui.panes.tracker import TrackerPane

        pane = self.main.query_one(TrackerPane)
        if not message.available:
            pane.show_unavailable(message.description)
            return
        pane.show_issues(message.issues, message.description, message.problems)

    def open_issue(self, issue_id: str) -> None:
        self._tracker_view(self._new_request("issue"), issue_id)

    @work(thread=True, exclusive=True, group="issue", exit_on_error=False)
    def _tracker_view(self, request: int, issue_id: str) -> None:
        try:
            issue = self.session.tracker_issue(issue_id)
        except Exception as exc:
            self.post_message(WorkFailed(request, "issue", f"Reading {issue_id} failed", exc))
            return
        self.post_message(TrackerIssueLoaded(request, issue))

    def on_tracker_issue_loaded(self, message: TrackerIssueLoaded) -> None:
        if not self._is_current("issue", message.request) or self.main is None:
            return
        from mailtriage.tui.panes.tracker import TrackerPane

        self.main.query_one(TrackerPane).show_issue(message.issue)

    # -- failures ------------------------------------------------------------
    def on_work_failed(self, message: WorkFailed) -> None:
        if self._defer(self.on_work_failed, message):
            return
        from mailtriage.backends.errors import MandatoryBackendUnavailable

        kind = {"threads": "threads", "reader": "reader", "reply": "reply", "tracker": "tracker",
                "issue": "issue", "folders": "folders"}.get(message.where)
        if kind and message.request and not self._is_current(kind, message.request):
            return
        from mailtriage.core.secrets import scrub

        error = message.error
        text = scrub(message.details or str(error))
        reconnect = is_connection_problem(error)
        main = self.main
        if main is not None:
            if message.where == "threads":
                main.threads.show_failure(text, retry_hint=not isinstance(error, LookupError))
            elif message.where == "reply":
                main.reader.restore_status()
            elif message.where == "folders":
                main.folders.show_account_failure(text)
            elif message.where in ("tracker", "issue"):
                from mailtriage.tui.panes.tracker import TrackerPane

                main.query_one(TrackerPane).show_failure(text)
            elif message.where == "reader":
                main.reader.show_status(("⚠ press R to reconnect — " if reconnect else "⚠ ") + text, error=True)
        if isinstance(error, MandatoryBackendUnavailable) or isinstance(error, LookupError):
            severity = "error" if isinstance(error, MandatoryBackendUnavailable) else "warning"
            self.report_error(message.title, error, where=message.where, resolution=message.resolution,
                              severity=severity)
            return
        if reconnect:
            # The backend went away: refresh availability so the sources pane shows it.
            self.session.forget_availability()
            self._recheck()
        self.report_error(message.title, error, where=message.where, resolution=message.resolution)

    def report_error(self, title: str, error: BaseException, *, where: str = "", resolution=None, details: str = "",
                     severity: str = "error") -> None:
        from mailtriage.core.secrets import scrub
        from mailtriage.tui.dialogs.error import ErrorRecord

        # The error list keeps tracebacks: every field is scrubbed of the session's secrets.
        technical = ""
        if error.__traceback__ is not None and not _is_expected(error):
            technical = scrub("".join(traceback.format_exception(error)))
        record = ErrorRecord(title, scrub(f"{type(error).__name__}: {error}" if not _is_expected(error) else str(error)),
                             where, scrub(resolution.summary()) if resolution is not None
                             and hasattr(resolution, "summary") else "", scrub(details), technical)
        self.errors.append(record)
        self.notify(f"{inert(scrub(str(error)))}\n(press ! for details)", title=title, severity=severity,
                    markup=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.report_error(f"Unexpected error in {event.worker.name or 'a background task'}", event.worker.error)

    @work(thread=True, exclusive=True, group="check", exit_on_error=False)
    def _recheck(self) -> None:
        matrix, resolutions, problem = self.session.check_sources()
        self.post_message(SourcesChecked(matrix, resolutions, str(problem) if problem else None))

    # -- app actions ---------------------------------------------------------
    def action_help(self) -> None:
        from mailtriage.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_console(self) -> None:
        self.open_console(None)

    def open_console(self, backend: str | None) -> None:
        from mailtriage.tui.screens.console import ConsoleScreen

        if isinstance(self.screen, ConsoleScreen):
            return
        self.push_screen(ConsoleScreen(focus_backend=backend, cursor_blink=self.cursor_blink))

    def action_pick_theme(self) -> None:
        from textual.command import CommandPalette

        from mailtriage.tui.commands import ThemeCommands

        self.push_screen(CommandPalette(providers=[ThemeCommands], placeholder="Theme …"))

    def action_show_errors(self) -> None:
        from mailtriage.tui.dialogs.error import ErrorDialog

        self.push_screen(ErrorDialog(self.errors))

    def action_refresh(self) -> None:
        if not self.session.is_open:
            self.reopen()
            return
        self.session.forget_availability()
        self.load_threads(self._current_list)
        main = self.main
        if main is not None and main.reader.thread is not None and self._open_summary is not None:
            self.open_thread(self._open_summary)
        if main is not None and main.has_class("-tracker"):
            self.load_tracker()

    def action_toggle_tracker(self) -> None:
        main = self.main
        if main is not None and self.screen is main:
            main.toggle_tracker()

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
        self.exit(0)

    def on_unmount(self) -> None:
        self.stop_alerts()
        self.session.close()

    # -- personal accounts: folders, messages, flag and move (every write via a proposal) --
    def open_account(self, account_id: str) -> None:
        """List the account's folders in the folders pane (in a worker)."""
        main = self.main
        if main is not None:
            main.folders.show_account_loading(account_id)
        self._account_folders(self._new_request("folders"), account_id)

    @work(thread=True, exclusive=True, group="folders", exit_on_error=False)
    def _account_folders(self, request: int, account_id: str) -> None:
        from mailtriage.tui.messages import AccountFoldersLoaded

        try:
            folders = self.session.account_folders(account_id)
        except Exception as exc:
            self.post_message(WorkFailed(request, "folders", f"Listing the folders of {account_id} failed", exc))
            return
        self.post_message(AccountFoldersLoaded(request, account_id, folders))

    def on_account_folders_loaded(self, message) -> None:
        if not self._is_current("folders", message.request) or self.main is None:
            return
        self.main.folders.show_folders(message.account_id, message.folders)

    def open_folder(self, account_id: str, folder_id: str, name: str | None = None, *, keep: bool = False) -> None:
        """Page a folder, newest first, into the thread list (``list(MailQuery)`` pages).

        ``keep``: a refresh after a write — the rows stay until the new ones arrive and
        the cursor stays on the same position."""
        self._open_folder = (account_id, folder_id, name or folder_id)
        label = f"{account_id} · {name or folder_id}"
        main = self.main
        cursor = 0
        if main is not None:
            if keep:
                cursor = main.threads.thread_list.cursor
            else:
                main.threads.show_loading(label)
        self._list_folder(self._new_request("threads"), account_id, folder_id, label, cursor)

    def on_folder_listed(self, message) -> None:
        if not self._is_current("threads", message.request) or self.main is None:
            return
        threads = self.main.threads
        threads.show_rows(message.rows, None, message.label)
        if message.cursor and len(message.rows):
            threads.thread_list.cursor = min(message.cursor, len(message.rows) - 1)

    @work(thread=True, exclusive=True, group="threads", exit_on_error=False)
    def _list_folder(self, request: int, account_id: str, folder_id: str, label: str, cursor: int = 0) -> None:
        from mailtriage.tui.mailbox_rows import FOLDER_PAGE, FolderRows

        session = self.session
        try:
            first = session.account_page(account_id, folder_id, 0, FOLDER_PAGE)
        except Exception as exc:
            self.post_message(WorkFailed(request, "threads", f"Listing {label} failed", exc))
            return
        rows = FolderRows(account_id, folder_id, first,
                          lambda page, size: session.account_page(account_id, folder_id, page, size))
        from mailtriage.tui.messages import FolderListed

        self.post_message(FolderListed(request, label, rows, cursor))

    def open_mailbox_message(self, summary) -> None:
        """Read one message of a personal account; \\Seen is left as it is (BODY.PEEK)."""
        main = self.main
        if main is not None:
            main.reader.show_loading(summary.subject)
        self._read_mailbox(self._new_request("reader"), summary.account_id, summary.header.id)

    @work(thread=True, exclusive=True, group="reader", exit_on_error=False)
    def _read_mailbox(self, request: int, account_id: str, message_id: str) -> None:
        from mailtriage.backends.contract import Thread, ThreadId
        from mailtriage.tui.mailbox_rows import MAILBOX_KIND

        try:
            message = self.session.account_message(account_id, message_id)
        except Exception as exc:
            self.post_message(WorkFailed(request, "reader", "Reading the message failed", exc))
            return
        thread = Thread(ThreadId(MAILBOX_KIND, message_id), message.header.subject, (message.content,),
                        notes=tuple(message.header.notes))
        if not get_current_worker().is_cancelled:
            self.post_message(ThreadLoaded(request, thread, None))

    def organize(self, summary, action: str) -> None:
        """m/f/a/d: build the flag or move proposal for the row; nothing is written before confirm."""
        header = getattr(summary, "header", None)
        if header is None:
            self.notify("Mark, flag, archive and trash work on a personal account's messages: open an account "
                        "in the sources pane first.", severity="warning", markup=False)
            return
        if action == "toggle_read":
            action = "unread" if header.read else "read"
        elif action == "toggle_flag":
            action = "unflag" if header.flagged else "flag"
        self._propose_organize(self._new_request("reply"), summary.account_id, header, action)

    @work(thread=True, exclusive=True, group="reply", exit_on_error=False)
    def _propose_organize(self, request: int, account_id: str, header, action: str) -> None:
        try:
            proposal = self.session.propose_organize(account_id, [header], action)
        except Exception as exc:
            self.post_message(WorkFailed(request, "reply", "Preparing the change failed", exc))
            return
        self.post_message(ProposalReady(request, proposal, "organize"))

    def _after_organize(self) -> None:
        """After a flag or move: list the folder again (a move changes IMAP IDs) and its counts."""
        current = getattr(self, "_open_folder", None)
        if current is None:
            return
        account_id, folder_id, name = current
        self.open_folder(account_id, folder_id, name, keep=True)
        main = self.main
        if main is not None and main.folders.account_id == account_id:
            self._account_folders(self._new_request("folders"), account_id)

    # -- new-report alerts ---------------------------------------------------
    def start_alerts(self) -> None:
        """Start the poll worker of this session (once; a silent baseline comes first)."""
        from mailtriage.core.projectconfig import ConfigError

        if not self.alerts_enabled or self._alert_loop is not None or not self.session.is_open:
            return
        try:
            loop = self.session.alert_loop()
        except ConfigError as exc:
            self.notify(f"new-report alerts are off: {inert(str(exc))}", title="Alerts", severity="warning",
                        markup=False)
            return
        if loop is None:
            return
        self._alert_loop = loop
        self._poll_alerts(loop)

    def stop_alerts(self) -> None:
        """Stop the poll worker (quit, or the session is replaced); news not announced yet is
        dropped unacknowledged, so the next run reports it again."""
        loop, self._alert_loop = self._alert_loop, None
        if loop is not None:
            loop.stop()
        self.workers.cancel_group(self, "alerts")
        if self._alert_timer is not None:
            self._alert_timer.stop()
            self._alert_timer = None
        self._alert_new, self._alert_updated, self._alert_unacked = {}, {}, []
        self._alert_marks = set()
        self._alert_live = {}

    @work(thread=True, exclusive=True, group="alerts", exit_on_error=False)
    def _poll_alerts(self, loop) -> None:
        list_name = loop.poller.list_name

        def on_news(outcome) -> None:
            if not loop.stopped.is_set():
                self.post_message(AlertsFound(outcome, list_name, loop))

        def on_error(error: Exception) -> None:
            if not loop.stopped.is_set():
                self.post_message(AlertsFailed(error))

        loop.run(on_news, on_error)

    def action_poll_now(self) -> None:
        if self._alert_loop is None:
            self.notify("new-report alerts are off (no security_list, or [alerts] poll_seconds = 0)",
                        title="Alerts", markup=False)
            return
        self._alert_loop.poll_now()

    def _alert_list(self) -> str | None:
        loop = self._alert_loop
        return loop.poller.list_name if loop is not None else None

    def on_alerts_found(self, message: AlertsFound) -> None:
        """News from one poll: applied to the list at once, announced coalesced (at most one
        notification every ``alert_notice_seconds``), acknowledged when announced."""
        if self._defer(self.on_alerts_found, message):
            return
        loop = self._alert_loop
        if loop is None or message.loop is not loop:  # from a stopped loop
            return
        outcome = loop.poller.fresh(message.outcome)  # less what an announcement acknowledged meanwhile
        self._alert_unacked.append(outcome)
        for t in outcome.new_threads:
            key = str(t.thread_id)
            self._alert_new[key] = t
            self._alert_updated.pop(key, None)
        for t in outcome.updated_threads:
            key = str(t.thread_id)
            if key not in self._alert_new:
                self._alert_updated[key] = t
        news = list(outcome.new_threads) + list(outcome.updated_threads)
        self._alert_marks |= {str(t.thread_id) for t in news}
        if news and _same_name(message.list_name, self._current_list):
            for t in news:
                self._alert_live[str(t.thread_id)] = t
            self._apply_news(news)
        import time

        wait = self._alert_last_notice + self.alert_notice_seconds - time.monotonic()
        if wait <= 0:
            self._announce_alerts()
        elif self._alert_timer is None:
            self._alert_timer = self.set_timer(wait, self._announce_alerts)

    def _apply_news(self, news: list) -> None:
        """Insert, move and update the rows the news is about, keeping the user's place."""
        main = self.main
        if main is None:
            return
        from mailtriage.tui.rows import ListRows, merge_news, plain_rows

        pane = main.threads
        items = plain_rows(pane.base_rows) if pane.base_rows is not None else None
        if items is None:
            return  # nothing listed yet, or rows not all at hand: the listing on its way brings them
        pane.update_rows(self._mark_alerted(ListRows(merge_news(items, news))))

    def _announce_alerts(self) -> None:
        """One notification for everything since the last one; its news is acknowledged now."""
        import time

        from textual.notifications import Notification, Notify

        self._alert_timer = None
        loop = self._alert_loop
        new, updated, outcomes = self._alert_new, self._alert_updated, self._alert_unacked
        self._alert_new, self._alert_updated, self._alert_unacked = {}, {}, []
        if loop is None or not outcomes:
            return
        if new or updated:
            lines = [inert(t.subject or "(no subject)") for t in list(new.values())[:5]]
            if len(new) > 5:
                lines.append(f"… and {len(new) - 5} more")
            if updated:
                lines.append(f"{len(updated)} thread(s) with new mail")
            count = len(new)
            title = f"{count} new report{'s' if count != 1 else ''}" if count else "New mail"
            # One alert notification on screen at a time: the new one replaces the last.
            if self._alert_notice is not None and self._alert_notice in self._notifications:
                self._unnotify(self._alert_notice, refresh=False)
            self._alert_notice = Notification("\n".join(lines), title, "information", 15, markup=False)
            self.post_message(Notify(self._alert_notice))
            self._alert_last_notice = time.monotonic()
        for outcome in outcomes:
            loop.poller.acknowledge(outcome, save=False)  # in memory now: the next poll builds on it
        self._save_alert_cursor(loop)

    def on_alerts_failed(self, message: AlertsFailed) -> None:
        if self._alert_loop is None:
            return
        from mailtriage.tui.dialogs.error import ErrorRecord

        error = message.error
        self.errors.append(ErrorRecord("Checking for new reports failed", str(error), "alerts", "", "", ""))

    def _mark_alerted(self, rows):
        if not self._alert_marks:
            return rows
        from mailtriage.tui.alerts import MarkedRows

        return MarkedRows(rows, set(self._alert_marks))

    @work(thread=True, group="alerts-ack", exit_on_error=False)
    def _save_alert_cursor(self, loop) -> None:
        if loop.stopped.is_set():
            return
        loop.poller.save()

    # -- MAS case of the thread being read ----------------------------------
    @work(thread=True, exclusive=True, group="case", exit_on_error=False)
    def _load_case(self, request: int, thread) -> None:
        from mailtriage.tui.case import case_record, modes_database

        try:
            record = case_record(modes_database(self.settings), thread)
        except Exception as exc:  # an unreadable record is said in the pane; the thread stays readable
            self.post_message(CaseLoaded(request, thread, error=f"{type(exc).__name__}: {exc}"))
            return
        if record is not None:
            self.post_message(CaseLoaded(request, thread, record))

    def on_case_loaded(self, message: CaseLoaded) -> None:
        main = self.main
        if main is None or not self._is_current("reader", message.request) or main.reader.thread is not message.thread:
            return
        from mailtriage.tui.case import case_text
        from mailtriage.tui.sanitize import inert_text

        if message.error:
            main.reader.show_case(Text.assemble(("⚠ the modes record could not be read: ", "bold"),
                                                inert_text(message.error)))
            return
        main.reader.show_case(case_text(message.record))


def is_connection_problem(error: BaseException) -> bool:
    """A backend that went away (unavailable, or a connection lost mid-call): retrying may help.

    Backends raise their own BackendFailure subclass for a dropped connection (IMAP's
    ``ConnectionLost``); it is recognised by name so the UI never imports a backend.
    """
    from mailtriage.backends.errors import Unavailable

    if isinstance(error, (Unavailable, ConnectionError)):
        return True
    return any(cls.__name__ == "ConnectionLost" for cls in type(error).__mro__)


def _same_name(a: str | None, b: str | None) -> bool:
    return (a or "").lower() == (b or "").lower()


def _op(name: str):
    from mailtriage.backends.contract import Op

    return Op(name)


def _accounts(settings) -> dict:
    try:
        return settings.accounts()
    except Exception:  # a broken accounts table is reported at start-up, not here
        return {}


def _is_expected(error: BaseException) -> bool:
    """Errors of the backend/config layers are explained by their message; no traceback needed."""
    from mailtriage.backends.errors import MailError
    from mailtriage.core.projectconfig import ConfigError

    expected: tuple = (MailError, ConfigError, LookupError)
    try:
        from mailtriage.trackers.contract import TrackerError

        expected += (TrackerError,)
    except ImportError:
        pass
    return isinstance(error, expected)


def run_app(project_dir: Path, demo: bool = False) -> int:
    """Run the app on a terminal; returns the exit code."""
    app = MailTriageApp(Path(project_dir), demo=demo)
    app.freeze_gc_after_start = True
    result = app.run()
    return int(result or 0) if app.return_code in (None, 0) else int(app.return_code)
