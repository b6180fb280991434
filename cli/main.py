"""The ``mailtriage`` command.

    mailtriage [--project DIR | --demo]                 open the app (a listing when not on a terminal)
    mailtriage [--project DIR | --demo] sources         capability matrix, availability, resolution
    mailtriage [--project DIR | --demo] mail <op> …     one mail-source contract operation, JSON out
    mailtriage [--project DIR | --demo] tracker <sub> … the tracker CLI (see docs/trackers.md)
    mailtriage [--project DIR | --demo] import|sync|publish|poll|sweep …  the triage flows (docs/workflows.md)
    mailtriage [--project DIR | --demo] account login|status|logout ACCOUNT   OAuth sign-in (docs/gmail.md, docs/microsoft.md)

Exit codes (see cli/exit_codes.py): 0 ok, 2 usage or configuration, 3 declined
(NotSupported, or no configured backend offers the op), 4 backend failure
(unavailable, mandatory backend down, an error mid-call).

Everything below the command line is reached through ``mailtriage.application``, whose
names load on first use: ``mailtriage tracker …`` and ``mailtriage mail …`` never load
Textual, and ``mailtriage --version`` loads no backend.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from datetime import datetime, timezone
from typing import Any, NoReturn, Sequence

import mailtriage.application as application
from mailtriage.application.errors import ConfigError, TrackerError, UsageError
from mailtriage.cli import attachments, flows
from mailtriage.cli import queue as queue_command
from mailtriage.cli.exit_codes import MAIN, ExitCode, exit_code, handled
from mailtriage.cli.output import emit as _emit
from mailtriage.cli.output import err as _err
from mailtriage.cli.output import jsonable as _jsonable
from mailtriage.cli.output import capped_line
from mailtriage.cli.output import line as _line
from mailtriage.cli.output import read_file_arg as _read_file_arg
from mailtriage.cli import search as search_command
from mailtriage.cli import service as cli_service
from mailtriage.core.inert import terminal_line

MAIL_OPS = ("list-recent-threads", "read-thread", "list-drafts", "list-sent-since", "create-draft", "thread-url")


# -- argument parsing -----------------------------------------------------------

def installed_version() -> str:
    """The version of the installed distribution (wheel, sdist or editable alike)."""
    # Lazy: importlib.metadata costs about as much as the rest of the command line's start
    # (python -X importtime), and only --version asks for it.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mailtriage")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """``--version``: the version is looked up only when asked for, not on every start."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(f"mailtriage {installed_version()}")
        parser.exit(ExitCode.OK)


def _common(parser: argparse.ArgumentParser, top: bool) -> None:
    default = None if top else argparse.SUPPRESS
    # Taken off the command line before parsing (see _take_trace), so every command,
    # the tracker, account and modes CLIs included, accepts it anywhere; listed for --help.
    parser.add_argument("--trace", metavar="FILE", default=argparse.SUPPRESS,
                        help="write the redacted protocol trace (IMAP, SMTP, HTTP) to FILE, - for stderr")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--project", metavar="DIR", default=default,
                       help="project configuration folder holding project.md (default: $MAILTRIAGE_PROJECT or .)")
    group.add_argument("--demo", action="store_true", default=False if top else argparse.SUPPRESS,
                       help="use the bundled demo project (no account needed)")
    group.add_argument("--demo-reset", action="store_true", default=False if top else argparse.SUPPRESS,
                       help="like --demo, on a fresh copy of the demo workspace (the command line's copy is "
                            "otherwise kept between commands; the app gets a fresh one each run)")


class _NotTheApp(Exception):
    """The global options alone could not parse the command line (see :func:`_app_args`)."""


class _GlobalOptionsParser(argparse.ArgumentParser):
    """The global options only, raising instead of printing usage: the full parser then parses
    (and explains) the command line."""

    def error(self, message: str) -> NoReturn:
        raise _NotTheApp(message)


def _app_args(argv: list[str]) -> argparse.Namespace | None:
    """The app's command line (no command word, no help) parsed by the global options alone, or
    None: the full parser's namespace, without building its ~30 subcommands (11-17 ms of the
    app's start-up before start-up's child is forked, issue 33). Anything the global options
    do not take (a command, ``-h``, an unknown option, a conflict) goes to the full parser."""
    if _command_index(argv) is not None:
        return None
    parser = _GlobalOptionsParser(prog="mailtriage", add_help=False)
    _global_options(parser)
    parser.set_defaults(command=None)  # what the full parser's subcommands leave without one
    try:
        return parser.parse_args(argv)
    except _NotTheApp:
        return None


def _global_options(parser: argparse.ArgumentParser) -> None:
    _common(parser, top=True)
    parser.add_argument("--version", action=_VersionAction, help="print the installed version and exit")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mailtriage",
        description="Terminal mail and triage client for security teams.",
        epilog="Run 'mailtriage COMMAND --help' for the arguments of each command. "
               "Exit codes: 0 ok, 2 usage/configuration, 3 declined, 4 backend failure "
               "(tracker: see 'mailtriage tracker --help').",
    )
    _global_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("sources", help="show configured mail backends, capabilities, availability and resolution",
                       description="Print the capability matrix of the configured mail backends, whether each is "
                                   "available (and why not), and which backend the resolution rule picks per op.")
    _common(p, top=False)
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")

    p = sub.add_parser("list", help="print a readable listing of recent threads",
                       description="Readable listing of recent threads on the security list (newest first).")
    _common(p, top=False)
    p.add_argument("--since", help="ISO date/instant or Nd (days); default from project.md import.since")
    p.add_argument("--list", dest="list_name", help="list address (default: security_list)")

    mail = sub.add_parser("mail", help="run one mail-source contract operation (JSON on stdout)",
                          description="Run one operation of the mail-source contract through the resolution rule "
                                      "and print one JSON document: the result and which backend served it.")
    _common(mail, top=False)
    ops = mail.add_subparsers(dest="op", metavar="OPERATION")
    ops.required = True

    def op_parser(name: str, help_text: str) -> argparse.ArgumentParser:
        q = ops.add_parser(name, help=help_text, description=help_text)
        _common(q, top=False)
        q.add_argument("--backend", help="run on this configured backend instead of the resolved one")
        return q

    search_command.add_parser(op_parser)  # not a contract op: cli/search.py
    q = op_parser("list-recent-threads", "threads on LIST newer than SINCE")
    q.add_argument("--list", dest="list_name", help="list address (default: security_list from project.md)")
    q.add_argument("--since", help="ISO date/instant or Nd (days); default from project.md import.since")
    q = op_parser("read-thread", "full message history of a thread")
    q.add_argument("thread_id", help="KIND:VALUE, e.g. mbox:<root@example.org>")
    q.add_argument("--no-decrypt", action="store_true",
                   help="do not decrypt OpenPGP messages (each message's crypto field still says it is encrypted)")
    q = op_parser("list-drafts", "draft replies already attached to a thread")
    q.add_argument("thread_id")
    q = op_parser("list-sent-since", "outbound replies sent on a thread since a date")
    q.add_argument("thread_id")
    q.add_argument("--since", required=True, help="ISO date/instant or Nd (days)")
    q = op_parser("create-draft", "propose a reply draft on a thread (security CC resolved) and write it on confirm")
    q.add_argument("thread_id")
    q.add_argument("--body-file", required=True, help="file with the reply body, - for stdin")
    q.add_argument("--yes", action="store_true", help="confirm without asking (the proposal is still printed)")
    q.add_argument("--allow-clear", action="store_true",
                   help="draft in clear a reply to an encrypted report when the reporter's key is missing")
    q.add_argument("--second-draft", action="store_true",
                   help="allow a second pending draft on the same thread (otherwise refused)")
    q = op_parser("thread-url", "a human-clickable URL for a thread")
    q.add_argument("thread_id")
    attachments.register(op_parser)

    flows.register(sub, _common)
    queue_command.register(sub, _common)

    tracker = sub.add_parser("tracker", help="tracker operations (see 'mailtriage tracker --help')", add_help=False)
    tracker.add_argument("rest", nargs=argparse.REMAINDER)

    account = sub.add_parser("account", help="sign in to Google / Microsoft accounts (see 'mailtriage account --help')",
                             add_help=False)
    account.add_argument("rest", nargs=argparse.REMAINDER)

    modes = sub.add_parser("modes", help="MAS modes endpoint (see 'mailtriage modes --help')", add_help=False)
    modes.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


# -- helpers ----------------------------------------------------------------------

def project_dir(args: argparse.Namespace, *, session: bool = False):
    """The project folder of ``--demo``, ``--project``, ``$MAILTRIAGE_PROJECT`` or the current folder.

    ``--demo-reset`` remakes the command line's demo workspace once per run (and means
    ``--demo``); ``session``: the app's fresh demo workspace of this run."""
    reset = bool(getattr(args, "demo_reset", False))
    if reset:
        args.demo, args.demo_reset = True, False
    demo = bool(getattr(args, "demo", False))
    return application.project_dir(getattr(args, "project", None), demo=demo, demo_reset=reset,
                                   demo_session=session and demo)


def open_service(args: argparse.Namespace, *, opened: bool = True) -> application.Service:
    """The service on the project of ``args``, opened unless not ``opened`` (cli/service.py; close it when done)."""
    make = cli_service.open_service if opened else cli_service.unopened_service
    return make(project_dir(args), demo=bool(getattr(args, "demo", False)))


# -- commands ---------------------------------------------------------------------

def cmd_sources(args: argparse.Namespace) -> int:
    service = open_service(args)
    try:
        all_ops = application.ALL_OPS
        # The matrix is shown whole; a mandatory backend that its configuration breaks
        # still makes this a configuration error (exit 2), as for every other command.
        report = service.sources_report()
        matrix, resolutions, abort, cc = report.matrix, report.resolutions, report.abort, report.security_cc
        config_error = report.config_error
        if args.json:
            _emit({
                "project": str(report.file),
                "backends": matrix,
                "resolution": {op: r.to_json() for op, r in resolutions.items()},
                # A run would be refused while this is set (the mandatory rule); this
                # command is the diagnosis, so it still shows everything.
                "run_aborted": abort.aborted if abort else None,
                "security_cc": cc.to_json(),
                # The user settings file that could not be read (the run goes on its defaults), or None.
                "settings_problem": str(service.settings.problem) if service.settings.problem else None,
            })
            if config_error is not None:
                raise config_error
            return ExitCode.OK
        print(f"Project: {_line(report.title)} ({_line(report.file)})")
        if not matrix:
            print("No mail sources configured (add a '## Mail sources' table to project.md).")
        header = ["backend", "role", "mand.", *[op.value for op in all_ops], "available"]
        rows = []
        for row in matrix:
            caps = ["yes" if row["capabilities"][op.value] else "-" for op in all_ops]
            avail = "yes" if row["available"] else f"NO: {row['reason']}"
            rows.append([_line(f"{row['backend']} ({row['kind']})"), _line(row["role"]),
                         "yes" if row["mandatory"] else "no", *caps, _line(avail)])
        _print_table(header, rows)
        if abort is not None:
            print()
            print(f"Runs are refused: {abort.aborted}")
        print()
        print("Resolution:")
        for op, res in resolutions.items():
            print(f"  {_line(res.summary())}")
        print()
        print(f"Security CC: {_line(cc.security_cc or '(none)')}" + (" (fallback)" if cc.cc_fallback else ""))
        for warning in cc.warnings:
            print(f"  !! {_line(warning)}")
        if service.settings.problem is not None:
            print()
            print(f"User settings: NOT LOADED, the defaults are used: {_line(service.settings.problem)}")
        if config_error is not None:
            raise config_error
        return ExitCode.OK
    finally:
        service.close()


def _print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))


def cmd_list(args: argparse.Namespace) -> int:
    service = open_service(args)
    try:
        service.preflight()  # the mandatory rule, at the start of the run
        missing = service.unconfigured_list(args.list_name)
        if missing is not None:  # never the whole folder as if it were the list
            _err(missing.warning)
            return ExitCode.USAGE if missing.stop else ExitCode.DECLINED
        since = service.since_arg(args.since)
        list_name = service.list_name(args.list_name)
        result = service.list_threads(list_name, since=since)
        threads = result.value
        print(f"{_line(service.project_title)}: {len(threads)} threads on {_line(list_name or '(no list)')} "
              f"since {since.date().isoformat()} (via {_line(result.resolution.chosen)})")
        column = service.settings.date_column  # the app's date column: the sender's Date: by default
        print(f"{application.DATE_HEADINGS[column]:<17} {'#':>3}  {'from':<24}  subject")
        for t in threads:
            shown = application.shown_date(t, column)
            when = shown.strftime("%Y-%m-%d %H:%M") if shown else "????-??-?? ??:??"
            who = _line(application.sender_label(t.sender.name, t.sender.email))[:40 if t.sender.name else 24]
            print(f"{when}{t.date_mark} {t.message_count:>3}  {who:<24}  {capped_line(t.subject)}")
        for note in getattr(threads, "notes", ()):  # pages or rows a backend could not read
            _err(f"note: {_line(note)}")
        return ExitCode.OK
    finally:
        service.close()


def _op_args(op, args: argparse.Namespace, service: application.Service):
    """The arguments of one ``mail`` operation, read from the command line."""
    typed = {"list": getattr(args, "list_name", None), "since": getattr(args, "since", None),
             "thread_id": getattr(args, "thread_id", None)}
    return service.op_args(op, typed, args.backend, label="--since")


def cmd_mail(args: argparse.Namespace) -> int:
    if args.op == "search":  # not one of the contract's six ops: cli/search.py
        return search_command.run(args, open_service)
    service = open_service(args)
    try:
        if args.op == attachments.OP:  # not a contract op: reads the thread, then saves after confirmation
            return attachments.run(args, service)
        op = application.Op.parse(args.op)
        # The mandatory rule, checked once at the start of the run: nothing runs, nothing is proposed.
        abort = service.mandatory_abort(op)
        if abort is not None:
            _err(abort.aborted or "")
            _emit({"op": op.value, "backend": None, "aborted": abort.aborted, "resolution": abort.to_json(),
                   "result": None})
            return ExitCode.FAILED
        if op is application.Op.CREATE_DRAFT:
            return _create_draft(args, service, service.thread_id(args.thread_id, args.backend))
        missing = service.unconfigured_list(args.list_name) if op is application.Op.LIST_RECENT_THREADS else None
        if missing is not None:  # never the whole folder as if it were the list
            _err(missing.warning)
            _emit({"op": op.value, "backend": None, ("aborted" if missing.stop else "skipped"): missing.warning,
                   "result": None})
            return ExitCode.USAGE if missing.stop else ExitCode.DECLINED
        op_args = _op_args(op, args, service)
        if getattr(args, "no_decrypt", False):
            service.keep_encrypted()
        try:
            result = service.run(op, op_args, backend=args.backend)
        except application.NoBackendAvailable as exc:
            # Skipped: the JSON carries the resolution that says why, not only stderr.
            _err(str(exc))
            _emit({"op": op.value, "backend": None, "skipped": str(exc),
                   "resolution": service.resolution(op).to_json(), "result": None})
            return exit_code(exc, MAIN)
        doc = {
            "op": op.value,
            "backend": result.resolution.chosen,
            "resolution": result.resolution.to_json(),
            "result": _jsonable(result.value),
        }
        if isinstance(result.value, list) and hasattr(result.value, "notes"):
            # A listing that could not read everything says what it skipped.
            doc["notes"] = list(result.value.notes)
            doc["complete"] = bool(getattr(result.value, "complete", True))
        _emit(doc)
        return ExitCode.OK
    finally:
        service.close()


def _create_draft(args, service: application.Service, tid) -> int:
    body = _read_file_arg(args.body_file)
    try:
        read = service.read_thread(tid, backend=args.backend)
    except application.NoBackendAvailable as exc:
        _err(f"nothing written: {exc}")
        _emit({"op": "create_draft", "written": False, "skipped": str(exc),
               "resolution": service.resolution(application.Op.READ_THREAD).to_json()})
        return exit_code(exc, MAIN)
    proposal = service.propose_reply(read.value, body, allow_second_draft=args.second_draft,
                                     allow_clear=args.allow_clear)
    sys.stderr.write(proposal.render_text() + "\n")
    if proposal.blocked:
        _err(f"nothing written: {proposal.blocked.text}")
        _emit({"op": "create_draft", "written": False, "proposal": proposal.to_json()})
        return ExitCode.FAILED if proposal.blocked.reason is application.BlockedBy.MANDATORY else ExitCode.DECLINED
    if proposal.facts.get("already_written"):  # a rerun: its own draft is there (written before)
        _err("already written: " + "; ".join(proposal.notes))
        _emit({"op": "create_draft", "written": True, "already_written": True, "proposal": proposal.to_json()})
        return ExitCode.OK
    if proposal.empty:
        _err("nothing written: " + "; ".join(proposal.notes))
        _emit({"op": "create_draft", "written": False, "proposal": proposal.to_json()})
        return ExitCode.DECLINED
    ask = None if sys.stdin.isatty() or args.body_file != "-" else (lambda _p: "n")
    if not application.confirm_interactively(proposal, yes=args.yes, ask=ask):
        _err("not confirmed: nothing written")
        _emit({"op": "create_draft", "written": False, "proposal": proposal.to_json()})
        return ExitCode.OK
    report = service.apply(proposal)
    drafts = [_jsonable(value) for _, value in report.written]
    _emit({"op": "create_draft", "written": report.ok, "report": report.to_json(), "drafts": drafts,
           "proposal": proposal.to_json()})
    return ExitCode.OK if report.ok else ExitCode.FAILED


def cmd_app(args: argparse.Namespace) -> int:
    """Open the TUI on a terminal; print the readable listing otherwise or before the TUI exists."""
    if sys.stdout.isatty() and sys.stdin.isatty():
        try:  # the app's start-up, without Textual: every other command starts without it
            from mailtriage.tui.startup import launch
        except ImportError as exc:
            if not (exc.name or "").startswith("mailtriage.tui"):
                raise
        else:
            # The app's demo: a fresh workspace each run.
            return launch(project_dir(args, session=True), demo=bool(args.demo))
    args.since = None
    args.list_name = None
    return cmd_list(args)


def _take_trace(argv: list[str]) -> tuple[list[str], str | None]:
    """``--trace FILE`` / ``--trace=FILE`` removed from ``argv`` (up to a ``--``)."""
    out: list[str] = []
    target = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out += argv[i:]
            break
        if arg == "--trace" and i + 1 < len(argv):
            target = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--trace="):
            target = arg[len("--trace="):]
        else:
            out.append(arg)
        i += 1
    return out, target


class _TraceWriter:
    """Writes each protocol-trace line (already redacted by core.trace) and each backend
    operation to a file or stderr. Server text is untrusted: one inert line each."""

    def __init__(self, target: str) -> None:
        # Lazy: the trace module loads only with --trace (a quarter of the command line's own
        # import time otherwise, python -X importtime).
        from mailtriage.core import trace

        self.trace = trace
        if target == "-":
            self.stream, self.owned = sys.stderr, False
        else:
            try:  # a trace can hold mail text: private to the user, appended to
                fd = trace.open_trace_file(target)
            except ConfigError as exc:  # a folder or file another user could have planted
                raise UsageError(f"cannot write the trace to {exc}; or use --trace - for stderr") from exc
            except OSError as exc:
                raise UsageError(f"cannot write the trace to {target}: {exc.strerror or exc}") from exc
            self.stream, self.owned = os.fdopen(fd, "a", encoding="utf-8"), True
        self._was_enabled = trace.TRACE.enabled
        trace.TRACE.enabled = True
        self._stops = [trace.TRACE.subscribe(self._line), trace.OPLOG.subscribe(self._op)]

    def _write(self, text: str) -> None:
        try:
            self.stream.write(terminal_line(text) + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a full disk or closed stream never breaks a backend call
            pass

    def _line(self, line) -> None:
        when = datetime.fromtimestamp(line.at, timezone.utc).strftime("%H:%M:%S.%f")[:-3]
        self._write(f"{when} {line.channel} {line.direction} {line.text}")

    def _op(self, rec) -> None:
        outcome = f"error {self.trace.redact(rec.error)}" if rec.error else "ok"
        by = f" by {rec.caller}" if rec.caller != "you" else ""  # the poller, the app's start-up
        self._write(f"op {rec.backend} {rec.op} {rec.duration_ms:.1f}ms {outcome}{by}")

    def close(self) -> None:
        for stop in self._stops:
            stop()
        self.trace.TRACE.enabled = self._was_enabled
        if self.owned:
            self.stream.close()


def _main(argv: Sequence[str] | None = None) -> int:
    argv, trace = _take_trace(list(sys.argv[1:] if argv is None else argv))
    if trace is None:
        return _dispatch(argv)
    try:
        writer = _TraceWriter(trace)
    except UsageError as exc:
        _err(str(exc))
        return ExitCode.USAGE
    try:
        return _dispatch(argv)
    finally:
        writer.close()


def _dispatch(argv: list[str]) -> int:
    app_args = _app_args(argv)
    if app_args is not None:  # the app: the subcommands' parsers are not built
        return _run(app_args)
    # `mailtriage account …` (OAuth sign-in) owns its own arguments too.
    if argv[:1] == ["account"]:
        from mailtriage.cli.accounts import main as accounts_main  # the sign-in modules load only for this

        return accounts_main(argv[1:])
    # The modes CLI (mailtriage.cli.modes) owns its own arguments, like the tracker CLI below.
    if argv[:1] == ["modes"]:
        from mailtriage.cli.modes import main as modes_main  # asyncio and the server load only for modes

        return modes_main(argv[1:])
    # The tracker CLI owns its own arguments; hand them over untouched. Only the command word
    # routes: "tracker" as an option's value (`list --list tracker`) is not the command.
    idx = _command_index(argv)
    if idx is not None and argv[idx] == "tracker":
        head = argv[:idx]
        pre = build_parser().parse_args(head) if head else argparse.Namespace(project=None, demo=False, demo_reset=False)
        rest = argv[idx + 1 :]
        if pre.demo or pre.demo_reset:
            rest = ["--project", str(project_dir(pre)), *rest]
        elif pre.project:
            rest = ["--project", pre.project, *rest]
        try:  # the trackers load only for this command (and may not be part of the build)
            from mailtriage.cli.tracker import main as tracker_main
        except ImportError as exc:
            if not (exc.name or "").startswith("mailtriage.trackers"):
                raise
            _err("the tracker CLI is not part of this build")
            return ExitCode.USAGE
        return tracker_main(rest)
    args = build_parser().parse_args(argv)
    if args.command in _BACKEND_COMMANDS or args.command in flows.COMMANDS or args.command == queue_command.COMMAND:
        with _backoff_notes():
            return _run(args)
    return _run(args)


def _command_index(argv: list[str]) -> int | None:
    """Where the command word is: the first argument that is neither a global option nor the
    value of one (``--project DIR``)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--project":
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        return i
    return None


# Commands that call mail backends (the app has its own console; account/tracker/modes their CLIs).
_BACKEND_COMMANDS = ("sources", "mail", "list")
_PROVIDERS = {"gmail": "Gmail", "graph": "Microsoft Graph", "microsoft": "Microsoft Graph"}


@contextlib.contextmanager
def _backoff_notes():
    """One stderr line per backoff wait a backend starts (an op-log ``backoff`` record), so a
    throttled command does not sit silent: "Gmail asked us to slow down; retrying in 4 s";
    and the one line that says the caches cannot be written (a full disk: the command works
    without them)."""
    from mailtriage.core.cache_file import UNWRITABLE  # why: loaded by every backend anyway
    from mailtriage.core.trace import OPLOG  # loaded by every backend anyway

    def note(rec) -> None:
        if rec.op == UNWRITABLE:
            _err(terminal_line(f"note: {rec.detail}"))
            return
        if rec.op != "backoff":
            return
        found = re.search(r"backing off (\d+(?:\.\d+)?)s", rec.detail or "")
        wait = float(found.group(1)) if found else None
        provider = _PROVIDERS.get(rec.backend.partition(":")[0], rec.backend)
        when = "" if wait is None else f" in {wait:.0f} s" if wait >= 1 else f" in {wait:.1f} s"
        _err(terminal_line(f"{provider} asked us to slow down; retrying{when}"))

    stop = OPLOG.subscribe(note)
    try:
        yield
    finally:
        stop()


def _run(args: argparse.Namespace) -> int:
    if args.command == "account":
        # After global options (`--project DIR account login ID`): sign-in reads the user
        # settings, not a project, so those options change nothing; never the app.
        from mailtriage.cli.accounts import main as accounts_main

        return accounts_main(args.rest)
    if args.command == "modes":
        # After global options likewise (`--project DIR modes serve`): the modes CLI reads its
        # own configuration (modes.toml); never the app.
        from mailtriage.cli.modes import main as modes_main

        return modes_main(args.rest)
    try:
        if args.command == "sources":
            return cmd_sources(args)
        if args.command == "mail":
            return cmd_mail(args)
        if args.command == "list":
            return cmd_list(args)
        if args.command in flows.COMMANDS:
            return flows.run(args)
        if args.command == queue_command.COMMAND:
            return queue_command.run(args)
        return cmd_app(args)
    except handled(MAIN) as exc:
        _err(_message(exc))
        return exit_code(exc, MAIN)


def _message(error: BaseException) -> str:
    """What the user reads for an error the command line expects (the exit code says the rest)."""
    if isinstance(error, ConfigError):
        return f"configuration error: {error}"
    if isinstance(error, TrackerError):
        return f"tracker: {error}"
    return str(error)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error of ours; silence the flush at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return ExitCode.OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
