"""``mailtriage tracker [--project DIR] <subcommand> …``: the tracker contract as a CLI.

One JSON document on stdout (``body`` prints raw markdown), errors on stderr, exit codes
0 ok, 2 usage, 3 tracker/issue/section not found, 4 refused, 5 backend error. Bodies,
titles, values and messages arrive through ``--*-file`` (``-`` is stdin); ``--title`` takes
one validated line. Mount it with :func:`register` under a parent parser, or call
:func:`main` with the arguments after ``tracker``.

The tracker is opened and called through the application service (``Service.tracker_call``,
the contract's calls by name), from project.md alone: no mail source is built. Start-up stays
small: the tracker contract and the chosen backend module load when the command runs
(``mailtriage.application`` loads names on first use).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Sequence

import mailtriage.application as application
from mailtriage.application import CLOSE_REASONS, REFUSED_OPS, STATES
from mailtriage.application.errors import ConfigError, Refused, SecretMissing, TrackerError
from mailtriage.application.errors import TrackerUsageError as UsageError
from mailtriage.cli.exit_codes import TRACKER, ExitCode, exit_code
from mailtriage.cli.service import tracker_service
from mailtriage.core.inert import json_dumps, terminal_text
from mailtriage.core.secrets import scrub

PROG = "mailtriage tracker"


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as exit 2 without killing the caller's process."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        raise _UsageExit(f"{self.prog}: error: {message}")


class _UsageExit(Exception):
    pass


def _project_option(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument("--project", metavar="DIR", default=default,
                        help="folder holding project.md (default: $MAILTRIAGE_PROJECT or the current folder)")


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The whole surface; fills ``parser`` when given (see :func:`register`)."""
    p = parser or _Parser(prog=PROG, description="Tracker operations of the tracker backend contract.")
    _project_option(p, None)
    sub = p.add_subparsers(dest="tracker_command", metavar="<subcommand>", parser_class=type(p))
    sub.required = True

    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=help)
        _project_option(sp, argparse.SUPPRESS)
        return sp

    def text_file(sp: argparse.ArgumentParser, flag: str, help: str, required: bool = False) -> None:
        sp.add_argument(flag, metavar="F", required=required, help=help + " (- for stdin)")

    sp = cmd("view", "show one issue")
    sp.add_argument("id")
    sp.add_argument("--comments", action="store_true", help="include comments; the status rollup comes first")

    sp = cmd("list", "list issues, most recently updated first")
    sp.add_argument("--state", choices=STATES, default="open")
    sp.add_argument("--label", action="append", default=[], metavar="L", help="repeatable; all must match")
    sp.add_argument("--search", metavar="TEXT", help="plain words; all must occur")
    sp.add_argument("--limit", type=int, metavar="N")

    cmd("labels", "labels in use")

    sp = cmd("field-get", "the text of one ### section")
    sp.add_argument("id")
    sp.add_argument("heading")

    sp = cmd("create", "create an issue")
    title = sp.add_mutually_exclusive_group(required=True)
    title.add_argument("--title", metavar="T", help="one validated line")
    title.add_argument("--title-file", metavar="F", help="file holding the title (- for stdin)")
    text_file(sp, "--body-file", "the body", required=True)
    sp.add_argument("--label", action="append", default=[], metavar="L")

    sp = cmd("edit", "change labels, assignees, milestone, title or body")
    sp.add_argument("id")
    sp.add_argument("--add-label", action="append", default=[], metavar="L")
    sp.add_argument("--remove-label", action="append", default=[], metavar="L")
    sp.add_argument("--add-assignee", action="append", default=[], metavar="U")
    sp.add_argument("--remove-assignee", action="append", default=[], metavar="U")
    ms = sp.add_mutually_exclusive_group()
    ms.add_argument("--milestone", metavar="M")
    ms.add_argument("--clear-milestone", action="store_true")
    title = sp.add_mutually_exclusive_group()
    title.add_argument("--title", metavar="T")
    title.add_argument("--title-file", metavar="F")
    text_file(sp, "--body-file", "the new body")

    sp = cmd("field-set", "set one ### section (appended when missing)")
    sp.add_argument("id")
    sp.add_argument("heading")
    text_file(sp, "--value-file", "the section text", required=True)

    sp = cmd("comment", "add a comment")
    sp.add_argument("id")
    text_file(sp, "--body-file", "the comment", required=True)
    sp.add_argument("--author", metavar="A", help="local-files: who wrote it (servers use the token's account)")

    sp = cmd("close", "close an issue")
    sp.add_argument("id")
    sp.add_argument("--reason", choices=CLOSE_REASONS, required=True)

    sp = cmd("reopen", "reopen an issue")
    sp.add_argument("id")

    sp = cmd("rollup-append", "append an entry to the status rollup")
    sp.add_argument("id")
    sp.add_argument("--action", required=True, metavar="A")
    text_file(sp, "--entry-body-file", "the entry body", required=True)
    sp.add_argument("--user", metavar="U")
    sp.add_argument("--now", metavar="ISO8601")

    sp = cmd("rollup-amend-latest", "replace the latest rollup entry's body (same action only)")
    sp.add_argument("id")
    sp.add_argument("--action", required=True, metavar="A")
    text_file(sp, "--entry-body-file", "the entry body", required=True)

    sp = cmd("attach", "attach a file")
    sp.add_argument("id")
    sp.add_argument("file", help="- for stdin")
    sp.add_argument("--name", metavar="N", help="required when the file is -")

    sp = cmd("body", "the body as raw markdown with ### sections (not JSON)")
    sp.add_argument("id")

    cmd("pending", "local-files: changed files under the tracker root and unpushed commits, and the review "
                   "(each path's state) that publish --review-file commits exactly")

    sp = cmd("publish", "local-files: commit the tracker root (and push)")
    text_file(sp, "--message-file", "the commit message", required=True)
    sp.add_argument("--review-file", metavar="F",
                    help="the JSON 'tracker pending' printed (the review the user saw): commit exactly its paths, "
                         "or nothing (exit 4) when the tracker changed since")
    sp.add_argument("--trailer", action="append", default=[], metavar="T", help="'Key: value', repeatable")
    sp.add_argument("--push", action="store_true")

    cmd("doctor", "check the tracker is reachable and access-restricted")

    sp = cmd("init", "local-files: create the tracker folder and format descriptor")
    sp.add_argument("--prefix", help=f"the issue-ID prefix (default: tracker.prefix in project.md, else "
                                     f"{DEFAULT_PREFIX})")
    sp.add_argument("--digits", type=int, default=4)
    sp.add_argument("--access-restricted", action="store_true",
                    help="record that a person confirmed who can read this repository")

    sp = cmd("detect", "local-files: infer the format of an existing tracker folder")
    sp.add_argument("--write", action="store_true", help="write the format descriptor")
    sp.add_argument("--access-restricted", action="store_true",
                    help="with --write: record that a person confirmed who can read this repository")

    for name in REFUSED_OPS:
        if name.endswith("*"):
            continue
        sp = cmd(name, f"refused: {REFUSED_OPS[name]}")
        sp.add_argument("args", nargs=argparse.REMAINDER)
    sp = cmd("board-*", f"refused: {REFUSED_OPS['board-*']}")
    sp.add_argument("args", nargs=argparse.REMAINDER)
    return p


def register(subparsers: Any, name: str = "tracker") -> argparse.ArgumentParser:
    """Mount the surface as ``<name>`` under a parent's subparsers; dispatch with :func:`run_args`."""
    parser = subparsers.add_parser(name, help="tracker operations (JSON on stdout)")
    build_parser(parser)
    parser.set_defaults(_tracker_main=run_args)
    return parser


# -- reading inputs ------------------------------------------------------------------


class _Inputs:
    """Reads --*-file arguments; stdin may be read once per command."""

    def __init__(self, stdin: Any) -> None:
        self.stdin = stdin
        self.stdin_used_by: str | None = None

    def read_bytes(self, path: str, flag: str) -> bytes:
        if path == "-":
            if self.stdin_used_by:
                raise UsageError(f"{flag} - and {self.stdin_used_by} - both read stdin; give one a file")
            self.stdin_used_by = flag
            stream = getattr(self.stdin, "buffer", self.stdin)
            data = stream.read()
            return data.encode("utf-8") if isinstance(data, str) else data
        try:
            with open(path, "rb") as fh:
                return fh.read()
        except OSError as exc:
            raise UsageError(f"{flag} {path}: {exc.strerror}") from exc

    def read_text(self, path: str | None, flag: str) -> str | None:
        if path is None:
            return None
        data = self.read_bytes(path, flag)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"{flag}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
        return text[1:] if text.startswith("\ufeff") else text

    def read_title(self, title: str | None, title_file: str | None) -> str | None:
        if title_file is not None:
            text = self.read_text(title_file, "--title-file") or ""
            if text.endswith("\n"):
                text = text[:-1]
            if text.endswith("\r"):
                text = text[:-1]
            return text
        return title


# -- running -------------------------------------------------------------------------


def _project_dir(args: argparse.Namespace) -> str:
    return getattr(args, "project", None) or os.environ.get("MAILTRIAGE_PROJECT") or os.getcwd()


def _dispatch(args: argparse.Namespace, inputs: _Inputs, out: Any, err: Any) -> int:
    command = args.tracker_command
    service = tracker_service(_project_dir(args))
    try:
        if command in REFUSED_OPS or command.startswith("board-"):
            raise application.refused_op(command, _platform_name(service))
        facts = service.tracker_kind()  # the tracker opens before any input is read
        try:
            return _run_command(service, facts, command, args, inputs, out, err)
        finally:
            # what the backend noticed on the way (e.g. a repository that moved): stderr, never stdout
            for notice in service.tracker_notices():
                print(terminal_text(f"{PROG} {command}: note: {scrub(notice)}"), file=err)  # server text
    finally:
        service.close()


#: The issue-ID prefix of a tracker whose project names none (SEC-0001, as the docs and the demo).
DEFAULT_PREFIX = "SEC"


def _platform_name(service: application.Service) -> str:
    try:
        return str(service.project_setting("tracker.platform") or "github")
    except Exception:
        return "configured"


def _run_command(service: application.Service, facts: tuple[str, bool], command: str, args: argparse.Namespace,
                 inputs: _Inputs, out: Any, err: Any) -> int:
    call = service.tracker_call
    result: Any
    if command == "view":
        result = call("view", args.id, comments=args.comments)
    elif command == "list":
        listed = call("list", state=args.state, labels=args.label, search=args.search, limit=args.limit)
        for problem in listed.problems:
            print(terminal_text(f"{PROG} list: skipped {problem}"), file=err)
        result = listed.items
    elif command == "labels":
        result = call("labels")
    elif command == "field-get":
        result = call("field_get", args.id, args.heading)
    elif command == "create":
        title = inputs.read_title(args.title, args.title_file)
        body = inputs.read_text(args.body_file, "--body-file")
        result = call("create", title, body or "", args.label)
    elif command == "edit":
        change = application.EditRequest(
            add_labels=args.add_label, remove_labels=args.remove_label, add_assignees=args.add_assignee,
            remove_assignees=args.remove_assignee, milestone=args.milestone, clear_milestone=args.clear_milestone,
            title=inputs.read_title(args.title, args.title_file),
            body=inputs.read_text(args.body_file, "--body-file"))
        result = call("edit", args.id, change)
    elif command == "field-set":
        result = call("field_set", args.id, args.heading, inputs.read_text(args.value_file, "--value-file") or "")
    elif command == "comment":
        result = call("comment", args.id, inputs.read_text(args.body_file, "--body-file") or "", author=args.author)
    elif command == "close":
        result = call("close", args.id, args.reason)
    elif command == "reopen":
        result = call("reopen", args.id)
    elif command == "rollup-append":
        body = inputs.read_text(args.entry_body_file, "--entry-body-file") or ""
        result = call("rollup_append", args.id, args.action, body, user=args.user, now=args.now)
    elif command == "rollup-amend-latest":
        body = inputs.read_text(args.entry_body_file, "--entry-body-file") or ""
        result = call("rollup_amend_latest", args.id, args.action, body)
    elif command == "attach":
        if args.file == "-" and not args.name:
            raise UsageError("--name is required when the file is - (stdin)")
        name = args.name or os.path.basename(args.file)
        result = call("attach", args.id, inputs.read_bytes(args.file, "<file>"), name)
    elif command == "body":
        text = call("body", args.id)
        out.write(text if text.endswith("\n") or not text else text + "\n")
        return 0
    elif command == "pending":
        result = call("review_state")
    elif command == "publish":
        message = inputs.read_text(args.message_file, "--message-file") or ""
        review = _review(inputs.read_text(args.review_file, "--review-file"))
        result = call("publish", message, args.trailer, push=args.push, review=review)
    elif command == "doctor":
        result = call("doctor")
        _print(result, out)
        return ExitCode.OK if result.get("ok") else ExitCode.FAILED
    elif command in ("init", "detect"):
        kind, set_up_locally = facts
        if not set_up_locally:
            raise Refused(f"{command} is local-files only; the {kind} tracker is set up on its server")
        if command == "init":
            # without --prefix: the project's tracker.prefix, else DEFAULT_PREFIX
            prefix = args.prefix or str(service.project_setting("tracker.prefix") or DEFAULT_PREFIX)
            result = call("init", prefix, digits=args.digits, access_restricted=args.access_restricted)
        else:
            result = call("detect", write=args.write, access_restricted=args.access_restricted)
    else:  # pragma: no cover - argparse only lets known commands through
        raise UsageError(f"unknown subcommand {command}")
    _print(result, out)
    return 0


def _print(result: Any, out: Any) -> None:
    # Titles and bodies come from the tracker and the mail: neutralized characters escaped.
    out.write(json_dumps(result) + "\n")


def run_args(args: argparse.Namespace, *, stdin: Any = None, stdout: Any = None, stderr: Any = None) -> int:
    """Run parsed arguments; returns the exit code. Never raises for expected failures."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    inputs = _Inputs(stdin or sys.stdin)
    command = getattr(args, "tracker_command", "?")
    try:
        return _dispatch(args, inputs, out, err)
    except Exception as exc:  # config, keyring and anything unforeseen too: a message, never a traceback
        if not isinstance(exc, _EXPECTED) and os.environ.get("MAILTRIAGE_DEBUG"):
            raise
        if isinstance(exc, TrackerError) and exc.partial is not None:
            _print(exc.partial, out)
        print(terminal_text(f"{PROG} {command}: {_message(exc)}"), file=err)
        return exit_code(exc, TRACKER)


# Errors the tracker CLI explains by their message; anything else is "unexpected".
_EXPECTED = (TrackerError, ConfigError, SecretMissing)


def _message(error: BaseException) -> str:
    """The message for ``error``; library errors (HTTP, keyring) may quote a token: none of the
    session's secrets is printed."""
    if isinstance(error, TrackerError):
        return scrub(error.message)
    if isinstance(error, ConfigError):
        return str(error)
    if isinstance(error, SecretMissing):
        return f"{error} (store it with keyring first)"
    return f"unexpected {type(error).__name__}: {scrub(error)}"


def main(argv: Sequence[str] | None = None, *, stdin: Any = None, stdout: Any = None, stderr: Any = None) -> int:
    """Entry point for the arguments after ``mailtriage tracker``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    err = stderr or sys.stderr
    # board-* is a family of names argparse cannot list; refuse any of them by name
    positional = _first_positional(argv)
    if positional and positional.startswith("board-"):
        argv[argv.index(positional)] = "board-*"
        argv = argv[: argv.index("board-*") + 1]
        argv.append(positional)
    parser = build_parser()
    old_err = sys.stderr
    sys.stderr = err
    try:
        args = parser.parse_args(argv)
    except _UsageExit as exc:
        print(terminal_text(exc), file=err)
        return ExitCode.USAGE
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    finally:
        sys.stderr = old_err
    if args.tracker_command == "board-*":
        args.tracker_command = positional or "board-*"
    return run_args(args, stdin=stdin, stdout=stdout, stderr=err)


def _first_positional(argv: list[str]) -> str | None:
    skip = False
    for item in argv:
        if skip:
            skip = False
            continue
        if item == "--project":
            skip = True
            continue
        if item.startswith("-"):
            continue
        return item
    return None


def _review(text: str | None) -> dict[str, str] | None:
    """The review in ``tracker pending``'s JSON (the whole document or its ``review``), or None."""
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--review-file: not JSON ({exc})") from exc
    review = doc.get("review", doc) if isinstance(doc, dict) else None
    if not isinstance(review, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in review.items()):
        raise UsageError("--review-file: expected the JSON 'tracker pending' printed (its \"review\" object)")
    return review


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
