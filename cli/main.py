"""The ``mailtriage`` command.

    mailtriage [--project DIR | --demo]                 open the app (a listing when not on a terminal)
    mailtriage [--project DIR | --demo] sources         capability matrix, availability, resolution
    mailtriage [--project DIR | --demo] mail <op> …     one mail-source contract operation, JSON out
    mailtriage [--project DIR | --demo] tracker <sub> … the tracker CLI (see docs/trackers.md)
    mailtriage [--project DIR | --demo] import|sync|publish|poll|sweep …  the triage flows (docs/workflows.md)
    mailtriage account login|status|logout ACCOUNT      OAuth sign-in (see docs/gmail.md, docs/microsoft.md)

Exit codes of ``mail`` and ``sources``: 0 ok, 2 usage or configuration, 3 declined
(NotSupported, or no configured backend offers the op), 4 backend failure
(unavailable, mandatory backend down, an error mid-call).

Imports stay lazy: ``mailtriage tracker …`` and ``mailtriage mail …`` never load Textual.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_DECLINED = 3
EXIT_BACKEND = 4

MAIL_OPS = ("list-recent-threads", "read-thread", "list-drafts", "list-sent-since", "create-draft", "thread-url")


class UsageError(Exception):
    pass


# -- argument parsing -----------------------------------------------------------

def installed_version() -> str:
    """The version of the installed distribution (wheel, sdist or editable alike)."""
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
        parser.exit(EXIT_OK)


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mailtriage",
        description="Terminal mail and triage client for security teams.",
        epilog="Run 'mailtriage COMMAND --help' for the arguments of each command. "
               "Exit codes: 0 ok, 2 usage/configuration, 3 declined, 4 backend failure "
               "(tracker: see 'mailtriage tracker --help').",
    )
    _common(parser, top=True)
    parser.add_argument("--version", action=_VersionAction, help="print the installed version and exit")
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

    q = op_parser("list-recent-threads", "threads on LIST newer than SINCE")
    q.add_argument("--list", dest="list_name", help="list address (default: security_list from project.md)")
    q.add_argument("--since", help="ISO date/instant or Nd (days); default from project.md import.since")
    q = op_parser("read-thread", "full message history of a thread")
    q.add_argument("thread_id", help="KIND:VALUE, e.g. mbox:<root@example.org>")
    q = op_parser("list-drafts", "draft replies already attached to a thread")
    q.add_argument("thread_id")
    q = op_parser("list-sent-since", "outbound replies sent on a thread since a date")
    q.add_argument("thread_id")
    q.add_argument("--since", required=True, help="ISO date/instant or Nd (days)")
    q = op_parser("create-draft", "propose a reply draft on a thread (security CC resolved) and write it on confirm")
    q.add_argument("thread_id")
    q.add_argument("--body-file", required=True, help="file with the reply body, - for stdin")
    q.add_argument("--yes", action="store_true", help="confirm without asking (the proposal is still printed)")
    q.add_argument("--second-draft", action="store_true",
                   help="allow a second pending draft on the same thread (otherwise refused)")
    q = op_parser("thread-url", "a human-clickable URL for a thread")
    q.add_argument("thread_id")

    from mailtriage.cli import flows  # argparse only: import, sync, publish, poll, sweep

    flows.register(sub, _common)

    tracker = sub.add_parser("tracker", help="tracker operations (see 'mailtriage tracker --help')", add_help=False)
    tracker.add_argument("rest", nargs=argparse.REMAINDER)

    account = sub.add_parser("account", help="sign in to Google / Microsoft accounts (see 'mailtriage account --help')",
                             add_help=False)
    account.add_argument("rest", nargs=argparse.REMAINDER)

    modes = sub.add_parser("modes", help="MAS modes endpoint (see 'mailtriage modes --help')", add_help=False)
    modes.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


# -- helpers ----------------------------------------------------------------------

def project_dir(args: argparse.Namespace) -> Path:
    if getattr(args, "demo", False):
        from mailtriage.demo.workspace import ensure_demo_workspace

        return ensure_demo_workspace()
    if getattr(args, "project", None):
        return Path(args.project)
    env = os.environ.get("MAILTRIAGE_PROJECT")
    return Path(env) if env else Path.cwd()


def parse_since(text: str | None, config=None) -> datetime:
    if text is None and config is not None:
        configured = config.get("import.since")
        if configured:
            text = configured.isoformat() if isinstance(configured, (date, datetime)) else str(configured)
        else:
            text = f"{int(config.get('import.since_days', 30))}d"
    text = (text or "30d").strip()
    if text.endswith("d") and text[:-1].isdigit():
        return datetime.now(timezone.utc) - timedelta(days=int(text[:-1]))
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--since {text!r} is neither an ISO date/instant nor Nd (e.g. 30d)") from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _emit(doc: Any) -> None:
    """One JSON document on stdout; neutralized characters escaped (lossless, see core.inert).

    Scrubbed as a document (reasons, errors) and as text (a secret split across keys never is).
    """
    from mailtriage.core.inert import json_dumps
    from mailtriage.core.secrets import scrub, scrub_json

    sys.stdout.write(scrub(json_dumps(scrub_json(doc))) + "\n")


def _err(text: str) -> None:
    """One message on stderr. Errors quote subjects, IDs and server text: inert, lines kept, secrets masked."""
    from mailtriage.core.inert import terminal_text
    from mailtriage.core.secrets import scrub

    sys.stderr.write(f"mailtriage: {terminal_text(scrub(text))}\n")


def _line(text: Any) -> str:
    from mailtriage.core.inert import terminal_line

    return terminal_line(text)


def load_sources(args: argparse.Namespace):
    from mailtriage.backends.registry import SourceSet
    from mailtriage.core.projectconfig import load_project

    config = load_project(project_dir(args))
    return SourceSet(config)


# -- commands ---------------------------------------------------------------------

def cmd_sources(args: argparse.Namespace) -> int:
    sources = load_sources(args)
    try:
        from mailtriage.backends.contract import ALL_OPS
        from mailtriage.backends.security_cc import resolve_security_cc

        matrix = sources.matrix()
        resolutions = {op.value: sources.resolve(op) for op in ALL_OPS}
        abort = sources.mandatory_abort(ALL_OPS[0])
        cc = resolve_security_cc(sources.config)
        # The matrix is shown whole; a mandatory backend that its configuration breaks
        # still makes this a configuration error (exit 2), as for every other command.
        config_errors = [sources.availability.config_error(e.name) for e in sources.entries if e.mandatory]
        config_error = next((e for e in config_errors if e is not None), None)
        if args.json:
            _emit({
                "project": str(sources.config.file),
                "backends": matrix,
                "resolution": {op: r.to_json() for op, r in resolutions.items()},
                # A run would be refused while this is set (the mandatory rule); this
                # command is the diagnosis, so it still shows everything.
                "run_aborted": abort.aborted if abort else None,
                "security_cc": cc.to_json(),
            })
            if config_error is not None:
                raise config_error
            return EXIT_OK
        print(f"Project: {_line(sources.config.title)} ({_line(sources.config.file)})")
        if not matrix:
            print("No mail sources configured (add a '## Mail sources' table to project.md).")
        header = ["backend", "role", "mand.", *[op.value for op in ALL_OPS], "available"]
        rows = []
        for row in matrix:
            caps = ["yes" if row["capabilities"][op.value] else "-" for op in ALL_OPS]
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
        if config_error is not None:
            raise config_error
        return EXIT_OK
    finally:
        sources.close()


def _print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))


def cmd_list(args: argparse.Namespace) -> int:
    from mailtriage.backends.contract import Op
    from mailtriage.core.inert import sender_label

    sources = load_sources(args)
    try:
        sources.preflight()  # the mandatory rule, at the start of the run
        since = parse_since(args.since, sources.config)
        list_name = args.list_name or sources.config.get("security_list")
        result = sources.dispatch(Op.LIST_RECENT_THREADS, lambda b: b.list_recent_threads(list_name, since))
        threads = result.value
        print(f"{_line(sources.config.title)}: {len(threads)} threads on {_line(list_name or '(no list)')} "
              f"since {since.date().isoformat()} (via {_line(result.resolution.chosen)})")
        for t in threads:
            when = t.last_activity.strftime("%Y-%m-%d %H:%M") if t.last_activity else "????-??-?? ??:??"
            who = _line(sender_label(t.sender.name, t.sender.email))[:40 if t.sender.name else 24]
            print(f"{when}{t.date_mark} {t.message_count:>3}  {who:<24}  {_line(t.subject)}")
        for note in getattr(threads, "notes", ()):  # pages or rows a backend could not read
            _err(f"note: {_line(note)}")
        return EXIT_OK
    finally:
        sources.close()


def cmd_mail(args: argparse.Namespace) -> int:
    from mailtriage.backends.contract import Op, ThreadId

    from mailtriage.backends.errors import NoBackendAvailable

    sources = load_sources(args)
    try:
        op = Op.parse(args.op)
        # The mandatory rule, checked once at the start of the run: nothing runs, nothing is proposed.
        abort = sources.mandatory_abort(op)
        if abort is not None:
            _err(abort.aborted)
            _emit({"op": op.value, "backend": None, "aborted": abort.aborted, "resolution": abort.to_json(),
                   "result": None})
            return EXIT_BACKEND

        def thread_id() -> ThreadId:
            default_kind = None
            if args.backend and args.backend in sources.backends:
                default_kind = sources.backends[args.backend].thread_id_kind
            try:
                return ThreadId.parse(args.thread_id, default_kind)
            except ValueError as exc:
                raise UsageError(str(exc)) from None

        if op is Op.CREATE_DRAFT:
            return _create_draft(args, sources, thread_id())
        if op is Op.LIST_RECENT_THREADS:
            since = parse_since(args.since, sources.config)
            list_name = args.list_name or sources.config.get("security_list")
            call = lambda b: b.list_recent_threads(list_name, since)  # noqa: E731
        elif op is Op.READ_THREAD:
            tid = thread_id()
            call = lambda b: b.read_thread(tid)  # noqa: E731
        elif op is Op.LIST_DRAFTS:
            tid = thread_id()
            call = lambda b: b.list_drafts(tid)  # noqa: E731
        elif op is Op.LIST_SENT_SINCE:
            tid, since = thread_id(), parse_since(args.since)
            call = lambda b: b.list_sent_since(tid, since)  # noqa: E731
        else:
            tid = thread_id()
            call = lambda b: b.thread_url(tid)  # noqa: E731
        try:
            result = sources.dispatch(op, call, backend=args.backend)
        except NoBackendAvailable as exc:
            # Skipped: the JSON carries the resolution that says why, not only stderr.
            res = sources.resolve(op)
            _err(str(exc))
            _emit({"op": op.value, "backend": None, "skipped": str(exc), "resolution": res.to_json(),
                   "result": None})
            return EXIT_BACKEND if exc.some_unavailable else EXIT_DECLINED
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
        return EXIT_OK
    finally:
        sources.close()


def _create_draft(args, sources, tid) -> int:
    from mailtriage.backends.contract import Op
    from mailtriage.workflows.proposals import confirm_interactively
    from mailtriage.workflows.reply import propose_reply

    from mailtriage.backends.errors import NoBackendAvailable

    body = _read_file_arg(args.body_file)
    try:
        read = sources.dispatch(Op.READ_THREAD, lambda b: b.read_thread(tid), backend=args.backend)
    except NoBackendAvailable as exc:
        _err(f"nothing written: {exc}")
        _emit({"op": "create_draft", "written": False, "skipped": str(exc),
               "resolution": sources.resolve(Op.READ_THREAD).to_json()})
        return EXIT_BACKEND if exc.some_unavailable else EXIT_DECLINED
    proposal = propose_reply(sources, read.value, body, allow_second_draft=args.second_draft)
    sys.stderr.write(proposal.render_text() + "\n")
    if proposal.blocked:
        _err(f"nothing written: {proposal.blocked}")
        _emit({"op": "create_draft", "written": False, "proposal": proposal.to_json()})
        return EXIT_BACKEND if "mandatory backend" in proposal.blocked else EXIT_DECLINED
    if proposal.empty:
        _err("nothing written: " + "; ".join(proposal.notes))
        _emit({"op": "create_draft", "written": False, "proposal": proposal.to_json()})
        return EXIT_DECLINED
    ask = None if sys.stdin.isatty() or args.body_file != "-" else (lambda _p: "n")
    if not confirm_interactively(proposal, yes=args.yes, ask=ask):
        _err("not confirmed: nothing written")
        _emit({"op": "create_draft", "written": False, "proposal": proposal.to_json()})
        return EXIT_OK
    report = proposal.apply(confirmed=True)
    drafts = [_jsonable(value) for _, value in report.written]
    _emit({"op": "create_draft", "written": report.ok, "report": report.to_json(), "drafts": drafts,
           "proposal": proposal.to_json()})
    return EXIT_OK if report.ok else EXIT_BACKEND


def _read_file_arg(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    try:
        return Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{name} is not UTF-8 text") from None


def _jsonable(value: Any) -> Any:
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def cmd_app(args: argparse.Namespace) -> int:
    """Open the TUI on a terminal; print the readable listing otherwise or before the TUI exists."""
    if sys.stdout.isatty() and sys.stdin.isatty():
        try:
            from mailtriage.tui.app import run_app
        except ImportError as exc:
            if not (exc.name or "").startswith("mailtriage.tui"):
                raise
        else:
            return run_app(project_dir(args), demo=bool(args.demo))
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
        from mailtriage.core.trace import OPLOG, TRACE

        if target == "-":
            self.stream, self.owned = sys.stderr, False
        else:
            try:  # a trace can hold mail text: private to the user, appended to
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            except OSError as exc:
                raise UsageError(f"cannot write the trace to {target}: {exc.strerror}") from None
            self.stream, self.owned = os.fdopen(fd, "a", encoding="utf-8"), True
        self._was_enabled = TRACE.enabled
        TRACE.enabled = True
        self._stops = [TRACE.subscribe(self._line), OPLOG.subscribe(self._op)]

    def _write(self, text: str) -> None:
        from mailtriage.core.inert import terminal_line

        try:
            self.stream.write(terminal_line(text) + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a full disk or closed stream never breaks a backend call
            pass

    def _line(self, line) -> None:
        from datetime import datetime as _dt

        when = _dt.fromtimestamp(line.at, timezone.utc).strftime("%H:%M:%S.%f")[:-3]
        self._write(f"{when} {line.channel} {line.direction} {line.text}")

    def _op(self, rec) -> None:
        from mailtriage.core.trace import redact

        outcome = f"error {redact(rec.error)}" if rec.error else "ok"
        self._write(f"op {rec.backend} {rec.op} {rec.duration_ms:.1f}ms {outcome}")

    def close(self) -> None:
        from mailtriage.core.trace import TRACE

        for stop in self._stops:
            stop()
        TRACE.enabled = self._was_enabled
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
        return EXIT_USAGE
    try:
        return _dispatch(argv)
    finally:
        writer.close()


def _dispatch(argv: list[str]) -> int:
    parser = build_parser()
    # `mailtriage account …` (OAuth sign-in) owns its own arguments too.
    if argv[:1] == ["account"]:
        from mailtriage.cli.accounts import main as accounts_main

        return accounts_main(argv[1:])
    # The modes CLI (mailtriage.cli.modes) owns its own arguments, like the tracker CLI below.
    if argv[:1] == ["modes"]:
        from mailtriage.cli.modes import main as modes_main

        return modes_main(argv[1:])
    # The tracker CLI owns its own arguments; hand them over untouched.
    if "tracker" in argv:
        idx = argv.index("tracker")
        head = argv[:idx]
        pre = parser.parse_args(head) if head else argparse.Namespace(project=None, demo=False)
        rest = argv[idx + 1 :]
        if pre.demo:
            rest = ["--project", str(project_dir(pre)), *rest]
        elif pre.project:
            rest = ["--project", pre.project, *rest]
        try:
            from mailtriage.cli.tracker import main as tracker_main
        except ImportError as exc:
            if not (exc.name or "").startswith("mailtriage.trackers"):
                raise
            _err("the tracker CLI is not part of this build")
            return EXIT_USAGE
        return tracker_main(rest)
    args = parser.parse_args(argv)
    from mailtriage.backends.errors import (
        BackendFailure,
        MailError,
        MandatoryBackendUnavailable,
        NoBackendAvailable,
        NotSupported,
        Unavailable,
    )
    from mailtriage.core.projectconfig import ConfigError

    try:
        if args.command == "sources":
            return cmd_sources(args)
        if args.command == "mail":
            return cmd_mail(args)
        if args.command == "list":
            return cmd_list(args)
        if args.command in ("import", "sync", "publish", "poll", "sweep"):
            from mailtriage.cli import flows

            return flows.run(args, sys.modules[__name__])
        return cmd_app(args)
    except UsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    except ConfigError as exc:
        _err(f"configuration error: {exc}")
        return EXIT_USAGE
    except NotSupported as exc:
        _err(str(exc))
        return EXIT_DECLINED
    except NoBackendAvailable as exc:
        _err(str(exc))
        return EXIT_BACKEND if exc.some_unavailable else EXIT_DECLINED
    except MandatoryBackendUnavailable as exc:
        _err(str(exc))
        return EXIT_BACKEND
    except (Unavailable, BackendFailure, MailError) as exc:
        _err(str(exc))
        return EXIT_BACKEND


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error of ours; silence the flush at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
