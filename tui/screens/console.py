"""The backend console, for developers debugging backends live.

Four tabs: every configured backend with its capability matrix, availability and the
reason when unavailable, and the resolution of each op; a live log of each operation
(backend, op, duration, size, error) from :data:`OPLOG`; the redacted protocol trace
from :data:`TRACE`; and a form to run any contract operation by hand and read its JSON
result. Feed listeners run on backend threads, so they only post messages here.
"""

from __future__ import annotations

from pathlib import Path

import json
import time
from typing import Protocol, runtime_checkable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import (Button, DataTable, Header, Input, Label, Log, Select, Static, TabbedContent,
                             TabPane, TextArea)
from textual.worker import get_current_worker

from mailtriage.application import ALL_OPS, Op
from mailtriage.core.trace import OPLOG, TRACE, is_keepalive
from mailtriage.tui import bindings
from mailtriage.tui.app import MailTriageApp
from mailtriage.tui.errors import error_name
from mailtriage.tui.footer import KeyFooter
from mailtriage.tui.messages import ConsoleResult, OpRecorded, SourceRow, TraceRecorded
from mailtriage.tui.sanitize import inert, inert_text

OP_SHORT = {
    Op.LIST_RECENT_THREADS: "list",
    Op.READ_THREAD: "read",
    Op.LIST_DRAFTS: "drafts",
    Op.LIST_SENT_SINCE: "sent",
    Op.CREATE_DRAFT: "draft+",
    Op.THREAD_URL: "url",
}
RESOLVED = "(resolution rule)"
#: A run of at least this many keep-alive lines (NOOP, IDLE/DONE) shows as one line.
KEEPALIVE_FOLD = 2
#: Seconds a run of keep-alive lines waits before its folded line is written (it may go on).
KEEPALIVE_FLUSH_SECONDS = 5.0


def trace_text(line) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(line.at))
    return f"{stamp} {inert(line.channel)} {line.direction} {inert(line.text)}"


def folded(count: int, lines: list) -> list[str]:
    """A run of keep-alive lines: each line when short, else one "… N keep-alive lines"."""
    if count < KEEPALIVE_FOLD:
        return [trace_text(line) for line in lines]
    return [f"… {count} keep-alive lines ({inert(lines[0].channel)}, until "
            f"{time.strftime('%H:%M:%S', time.localtime(lines[-1].at))})"]


def trace_lines(lines, query: str = "") -> list[str]:
    """The trace as the console shows it: lines matching ``query`` (channel or text, any
    case), with each run of idle keep-alive lines folded into one."""
    needle = query.casefold().strip()
    out: list[str] = []
    run: list = []
    for line in lines:
        if needle and needle not in line.channel.casefold() and needle not in line.text.casefold():
            continue
        if is_keepalive(line):
            run.append(line)
            continue
        if run:
            out += folded(len(run), run)
            run = []
        out.append(trace_text(line))
    if run:
        out += folded(len(run), run)
    return out


@runtime_checkable
class JsonShaped(Protocol):
    """A contract value that says how it is written as JSON (threads, summaries, drafts …)."""

    def to_json(self) -> object: ...


def _json(value: object) -> object:
    """An op's result as the CLI prints it: contract values through their ``to_json``."""
    if isinstance(value, JsonShaped):
        return value.to_json()
    if isinstance(value, (list, tuple)):
        return [v.to_json() if isinstance(v, JsonShaped) else v for v in value]
    return value


def resolution_text(resolutions: dict) -> Text:
    text = Text()
    for op in ALL_OPS:
        res = resolutions.get(op)
        if res is None:
            continue
        text.append(f"{op.value:<20}", "bold")
        text.append_text(inert_text(res.summary()))
        text.append("\n")
    text.rstrip()
    return text


class ConsoleScreen(Screen, bindings.KeyContext):  # a SourcesView (tui/controllers/base.py)
    #: Read and parsed when the console first opens, not for the first frame.
    CSS_PATH = Path(__file__).resolve().parent.parent / "console.tcss"
    key_context = "ConsoleScreen"
    BINDINGS = bindings.CONSOLE

    @classmethod
    def open(cls, app: MailTriageApp, backend: str | None) -> None:
        """Open the console (on ``backend``'s row), unless it is the screen already."""
        if isinstance(app.screen, ConsoleScreen):
            return
        app.push_screen(ConsoleScreen(focus_backend=backend, cursor_blink=app.cursor_blink))

    def __init__(self, *, focus_backend: str | None = None, cursor_blink: bool = True) -> None:
        super().__init__()
        self.focus_backend = focus_backend
        self._cursor_blink = cursor_blink
        self._unsubscribe: list = []
        self._request = 0
        self._op_rows = 0
        self._trace_filter = ""
        self._idle_run: list = []  # live keep-alive lines not written yet (folded when the run ends)

    def compose(self) -> ComposeResult:
        yield Header(icon="✉")
        with TabbedContent(id="console-tabs", initial="backends"):
            with TabPane("Backends", id="backends"):
                with VerticalScroll():
                    yield DataTable(id="matrix", cursor_type="row", zebra_stripes=True)
                    yield Static(id="resolutions", classes="console-section")
                    yield Static(id="cc-resolution", classes="console-section")
            with TabPane("Operations", id="operations"):
                yield DataTable(id="oplog", cursor_type="row", zebra_stripes=True)
            with TabPane("Trace", id="trace"):
                yield Static(Text("Protocol lines (IMAP, HTTP …), secrets redacted, kept since start-up (the last "
                                  "5000); runs of keep-alive lines are folded.", "italic"), classes="console-hint")
                yield Input(placeholder="filter: channel or text (e.g. imap, SEARCH, 401)", id="trace-filter")
                yield Log(id="trace-log", max_lines=5000)
            with TabPane("Run", id="run"):
                with Vertical(id="run-form"):
                    with Horizontal(classes="run-row"):
                        yield Label("operation", classes="run-label")
                        yield Select([(op.value, op.value) for op in ALL_OPS if op is not Op.CREATE_DRAFT],
                                     value=Op.LIST_RECENT_THREADS.value, allow_blank=False, id="run-op")
                        yield Label("backend", classes="run-label")
                        yield Select([(RESOLVED, RESOLVED)], value=RESOLVED, allow_blank=False, id="run-backend")
                    with Horizontal(classes="run-row"):
                        yield Label("thread id", classes="run-label")
                        yield Input(placeholder="KIND:VALUE, e.g. mbox:<root@example.org>", id="run-thread")
                    with Horizontal(classes="run-row"):
                        yield Label("list / since", classes="run-label")
                        yield Input(placeholder="list address (default: security_list)", id="run-list")
                        yield Input(placeholder="since: ISO date or Nd", id="run-since")
                    with Horizontal(classes="run-row"):
                        yield Button(Text("Run (ctrl+r)"), id="run-button", variant="primary")
                        yield Static(Text("create_draft is proposed from a thread (r) and confirmed, never run blind.",
                                          "italic"), classes="console-hint")
                    area = TextArea("", read_only=True, id="run-result", soft_wrap=True)
                    area.cursor_blink = self._cursor_blink
                    yield area
        yield KeyFooter()  # compact where its keys do not fit (80x24 cut ^l Clear logs, issue 35)

    def on_mount(self) -> None:
        self.title = "Backend console"
        matrix = self.query_one("#matrix", DataTable)
        matrix.add_columns("backend", "kind", "role", "mand.", *(OP_SHORT[op] for op in ALL_OPS),
                           "available", "reason")
        oplog = self.query_one("#oplog", DataTable)
        oplog.add_columns("#", "time", "by", "backend", "op", "ms", "size", "error")
        for record in OPLOG.items():
            self._add_op(record)
        TRACE.enabled = True
        self._show_trace()
        self.set_interval(KEEPALIVE_FLUSH_SECONDS, self._flush_idle_run)
        self._unsubscribe = [
            OPLOG.subscribe(lambda rec: self.post_message(OpRecorded(rec))),
            TRACE.subscribe(lambda line: self.post_message(TraceRecorded(line))),
        ]
        app = self.app
        main = app.main if isinstance(app, MailTriageApp) else None
        if main is not None and main.listing.last_matrix is not None:
            self.show_sources(main.listing.last_matrix, main.listing.last_resolutions, app.session.cc)
        self.query_one("#matrix", DataTable).focus()

    def on_unmount(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []

    # -- backends tab --------------------------------------------------------
    def show_sources(self, matrix: list[SourceRow], resolutions: dict, cc) -> None:
        table = self.query_one("#matrix", DataTable)
        table.clear()
        focus_row = None
        for i, row in enumerate(matrix):
            caps = [Text("✓", "bold") if row["capabilities"][op.value] else Text("·", "dim") for op in ALL_OPS]
            table.add_row(
                inert_text(row["backend"]), inert_text(str(row["kind"])), inert_text(row["role"]),
                "yes" if row["mandatory"] else "no", *caps,
                Text("yes", "bold") if row["available"] else Text("NO", "bold reverse"),
                inert_text(row["reason"] or ""),
                key=row["backend"],
            )
            if row["backend"] == self.focus_backend:
                focus_row = i
        if focus_row is not None:
            table.move_cursor(row=focus_row)
        self.query_one("#resolutions", Static).update(
            Text.assemble(("Resolution per operation\n", "bold"), resolution_text(resolutions)))
        backend_select = self.query_one("#run-backend", Select)
        backend_select.set_options([(RESOLVED, RESOLVED)] + [(row["backend"], row["backend"]) for row in matrix])
        if cc is not None:
            text = Text("Security CC\n", "bold")
            text.append_text(inert_text(cc.security_cc or "(none: drafts blocked)"))
            if cc.cc_fallback:
                text.append("  (fallback)", "bold")
            for warning in cc.warnings:
                text.append("\n⚠ ", "bold")
                text.append_text(inert_text(warning))
            self.query_one("#cc-resolution", Static).update(text)

    # -- live feeds ----------------------------------------------------------
    def _add_op(self, record) -> None:
        self._op_rows += 1
        table = self.query_one("#oplog", DataTable)
        table.add_row(
            str(self._op_rows), time.strftime("%H:%M:%S", time.localtime(record.started)),
            inert_text(record.caller), inert_text(record.backend), inert_text(record.op),
            f"{record.duration_ms:.1f}", "" if record.size is None else str(record.size),
            inert_text(record.error or ""),
        )
        if table.cursor_row >= self._op_rows - 2:
            table.move_cursor(row=self._op_rows - 1)

    def on_op_recorded(self, message: OpRecorded) -> None:
        self._add_op(message.record)

    def _show_trace(self) -> None:
        """The whole ring buffer again, through the filter (on open and when it changes)."""
        log = self.query_one("#trace-log", Log)
        log.clear()
        self._idle_run = []
        log.write_lines(trace_lines(TRACE.items(), self._trace_filter))

    def _flush_idle_run(self) -> None:
        if self._idle_run:
            run, self._idle_run = self._idle_run, []
            self.query_one("#trace-log", Log).write_lines(folded(len(run), run))

    def on_trace_recorded(self, message: TraceRecorded) -> None:
        line = message.line
        needle = self._trace_filter.casefold().strip()
        if needle and needle not in line.channel.casefold() and needle not in line.text.casefold():
            return
        if is_keepalive(line):
            self._idle_run.append(line)
            return
        self._flush_idle_run()
        self.query_one("#trace-log", Log).write_line(trace_text(line))

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "trace-filter":
            event.stop()
            self._trace_filter = event.value
            self._show_trace()

    # -- actions -------------------------------------------------------------
    def action_back(self) -> None:
        self.app.pop_screen()

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def action_clear_logs(self) -> None:
        OPLOG.clear()
        TRACE.clear()
        self.query_one("#oplog", DataTable).clear()
        self._op_rows = 0
        self.query_one("#trace-log", Log).clear()
        self._idle_run = []

    def action_run_op(self) -> None:
        self.query_one(TabbedContent).active = "run"
        op = Op.parse(str(self.query_one("#run-op", Select).value))
        backend = str(self.query_one("#run-backend", Select).value)
        args = {
            "thread_id": self.query_one("#run-thread", Input).value,
            "list": self.query_one("#run-list", Input).value.strip(),
            "since": self.query_one("#run-since", Input).value.strip(),
        }
        self._request += 1
        self.query_one("#run-result", TextArea).load_text(f"running {op.value} …")
        self._run(self._request, op, None if backend == RESOLVED else backend, args)

    @work(thread=True, exclusive=True, group="console-run", exit_on_error=False)
    def _run(self, request: int, op: Op, backend: str | None, args: dict) -> None:
        worker = get_current_worker()
        session = self.app.session
        try:
            if not session.is_open:
                raise RuntimeError("no project is open")
            result = session.run_op(op, backend, args)
            value = result.value
            document = {
                "op": op.value,
                "backend": result.resolution.chosen,
                "resolution": result.resolution.to_json(),
                "result": _json(value),
            }
            ok = True
        except Exception as exc:  # shown as the JSON result, like the CLI prints it
            document = {"op": op.value, "error": error_name(exc), "message": str(exc)}
            ok = False
        if not worker.is_cancelled:
            self.post_message(ConsoleResult(request, document, ok))

    def on_console_result(self, message: ConsoleResult) -> None:
        if message.request != self._request:
            return
        text = json.dumps(message.document, indent=2, ensure_ascii=False, default=str)
        self.query_one("#run-result", TextArea).load_text(inert(text, multiline=True))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "run-button":
            event.stop()
            self.action_run_op()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id != "trace-filter":
            self.action_run_op()
