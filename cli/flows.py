"""The triage-flow commands of ``mailtriage``: import, sync, publish, poll and sweep.

    mailtriage import THREAD_ID [--yes] [--publish]     import a report (issue, Import entry, receipt draft)
    mailtriage sync [--issue ID]… [--add-label ID=L]… [--yes] [--publish]
    mailtriage publish [--yes] [--message-file F]       review and publish local-files tracker changes
    mailtriage poll [--watch] [--interval S]            new threads on the security list since the last poll
    mailtriage sweep --source S --cursor ISO --entry ID [--cap N]   read-only feedback sweep

Every command prints the proposal (what would be written) on stderr and one JSON document
on stdout. A write happens only after a confirmation: ``--yes``, or ``y`` answered to the
prompt on the terminal (read from stdin; anything else, or end of input, is no). The
publish review that follows a flow on a local-files tracker is confirmed separately:
interactively, or with ``--publish`` next to ``--yes``.

Exit codes: 0 ok (also when not confirmed), 2 usage or configuration, 3 declined
(nothing to dispatch to; a tracker issue not found), 4 failure (a backend or tracker
error, a mandatory backend down, a write that failed part-way: the JSON says exactly what
was written and what was not).

Each command asks the application service for its proposal (the one the app calls, issue 36
§1: never a flow object of its own); this module reads the arguments, shows, confirms and prints.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

import mailtriage.application as application
from mailtriage.application.errors import UsageError
from mailtriage.cli.exit_codes import ExitCode
from mailtriage.cli.output import ask_line, dumps, emit, err, read_file_arg
from mailtriage.cli.service import open_service, unopened_service
from mailtriage.core.inert import terminal_line

COMMANDS = ("import", "sync", "publish", "poll", "sweep")


def register(sub, common: Callable[[argparse.ArgumentParser, bool], None]) -> None:
    """Add the flow subcommands to ``mailtriage``'s subparsers."""
    p = sub.add_parser("import", help="import a report: tracker issue, Import rollup entry, receipt draft",
                       description="Propose the import of a thread on the security list: a tracker issue with the "
                                   "declared fields, a status-rollup entry Import and a receipt-of-confirmation "
                                   "draft (security CC resolved). Applied on confirmation; a second run completes "
                                   "an import that failed part-way, without duplicates.")
    common(p, False)
    p.add_argument("thread_id", help="KIND:VALUE (e.g. mbox:<root@example.org>); a bare Message-ID takes the kind "
                                     "of the backend that reads threads")
    p.add_argument("--yes", action="store_true", help="confirm without asking (the proposal is still printed)")
    p.add_argument("--publish", action="store_true", help="with --yes: also publish the local-files tracker changes")
    p.add_argument("--sender-name", help="the name that signs the receipt (default: name in the user settings)")

    p = sub.add_parser("sync", help="propose Sync rollup entries for tracker issues whose threads have new mail",
                       description="For tracker issues linked to threads, read each thread for messages newer than "
                                   "the last rollup entry and propose Sync entries summarising who wrote what. "
                                   "Signals (credit, CVE, status) are shown, never decided; label and state changes "
                                   "are only the ones you pick.")
    common(p, False)
    p.add_argument("--issue", action="append", default=[], metavar="ID", help="only these issues (repeatable)")
    p.add_argument("--add-label", action="append", default=[], metavar="ID=LABEL", help="add a declared label")
    p.add_argument("--remove-label", action="append", default=[], metavar="ID=LABEL", help="remove a label")
    p.add_argument("--close", action="append", default=[], metavar="ID=REASON",
                   help="close an issue (completed or not-planned)")
    p.add_argument("--reopen", action="append", default=[], metavar="ID", help="reopen an issue")
    p.add_argument("--yes", action="store_true", help="confirm without asking")
    p.add_argument("--publish", action="store_true", help="with --yes: also publish the local-files tracker changes")

    p = sub.add_parser("publish", help="review and publish pending local-files tracker changes",
                       description="Show the changed tracker files, the diff and the proposed commit message (with "
                                   "tracker.commit_attribution), then commit (and push) on confirmation.")
    common(p, False)
    p.add_argument("--message-file", help="file with the commit message (- for stdin) instead of the proposed one")
    p.add_argument("--yes", action="store_true", help="confirm without asking")

    p = sub.add_parser("poll", help="new threads on the security list since the last acknowledged poll",
                       description="Poll the configured security list: the first poll sets a silent baseline; "
                                   "later polls print the threads that are new since the cursor, which is saved "
                                   "only after they were printed.")
    common(p, False)
    p.add_argument("--watch", action="store_true",
                   help="keep polling ([alerts] poll_seconds of the user settings, else alerts.poll_seconds, "
                        "default 120; IDLE where the backend has it) and print one JSON document per line when new "
                        "threads arrive; stop with Ctrl-C")
    p.add_argument("--interval", type=float, help="seconds between polls (overrides both poll_seconds settings)")
    p.add_argument("--list", dest="list_name", help="list address (default: security_list)")

    p = sub.add_parser("sweep", help="read-only feedback sweep of one mailbox or query since a cursor",
                       description="Map every feedback email received at or after --cursor in --source to the "
                                   "sweep's item schema; bounces, auto-replies and system notifications are "
                                   "skipped. Never writes mail, never moves the cursor.")
    common(p, False)
    p.add_argument("--source", required=True,
                   help="ACCOUNT/FOLDER of the user settings (e.g. work/INBOX), optionally with a query "
                        "(work/INBOX?from=example.com&text=feedback), or mbox:PATH / maildir:PATH for an archive")
    p.add_argument("--cursor", required=True, help="ISO 8601 received-date instant to fetch from (inclusive), or "
                                                   "a truncated run's resume_cursor (ISO#<message-id>)")
    p.add_argument("--entry", required=True, help="the sweep's source config-entry id (copied into each item)")
    p.add_argument("--cap", type=int, help="stop after N items and mark the result truncated")
    p.add_argument("--ack-keyword", help="IMAP keyword that marks a message acknowledged (default $MailtriageAck)")
    p.add_argument("--closeout-keyword",
                   help="IMAP keyword that marks a message closed out (default $MailtriageCloseout)")


def run(args: argparse.Namespace) -> int:
    """Run one flow command; errors go up to ``cli.main``, which maps them to exit codes."""
    return {"import": _import, "sync": _sync, "publish": _publish, "poll": _poll,
            "sweep": _sweep}[args.command](args)


# -- confirmation -----------------------------------------------------------------------------



def _confirm(proposal, yes: bool) -> bool:
    return application.confirm_interactively(proposal, yes=yes, ask=ask_line)


def _show(proposal) -> None:
    sys.stderr.write(proposal.render_text() + "\n")


def _written_values(report) -> list:
    out = []
    for _, value in report.written:
        out.append(value.to_json() if hasattr(value, "to_json") else value)
    return out


REVIEW_ROUNDS = 5  # a working copy that keeps changing under the review: stop asking after this many


def _outdated(proposal) -> bool:
    return bool(proposal.facts.get("review_outdated"))


def _review_again(service: application.Service, proposal, report, args, again: Callable[[], Any]):
    """A publish refused because the working copy changed since its review: nothing was
    committed. Interactively, the new review is shown and asked again; with ``--yes`` nobody
    has seen it, so the run stops (exit 4) and says so. Returns (proposal, report)."""
    rounds = 1
    while not report.ok and _outdated(proposal):
        if args.yes:
            err("the tracker changed since the review, so nothing was published; run 'mailtriage publish' "
                "to review the changes as they are now")
            return proposal, report
        if rounds >= REVIEW_ROUNDS:
            err(f"the tracker kept changing during {rounds} reviews; nothing was published")
            return proposal, report
        rounds += 1
        err("the tracker changed since the review (nothing was committed); here is the review as it is now")
        proposal = again()
        _show(proposal)
        if proposal.empty or not _confirm(proposal, args.yes):
            err("not published: the tracker changes stay in the working copy ('mailtriage publish' later)")
            return proposal, None
        report = service.apply(proposal)
        sys.stderr.write(report.describe() + "\n")  # describe() is inert
    return proposal, report


def _apply_flow(name: str, proposal, args, service: application.Service, *, publish: bool = False,
                extra: dict | None = None, again: Callable[[], Any] | None = None) -> int:
    """Show, confirm, apply (through ``service``, as the app); then, with ``publish``, offer the
    publish review of the tracker. One JSON document on stdout. ``again`` rebuilds a publish
    review that turned out outdated."""
    doc: dict[str, Any] = {"command": name, **(extra or {})}
    _show(proposal)
    code = ExitCode.OK
    if proposal.blocked:
        err(f"nothing written: {proposal.blocked.text}")
        doc.update(written=False, proposal=proposal.to_json())
        # A guard's refusal known before the confirmation keeps the exit code of a refused write (4).
        refused = proposal.blocked.reason in (application.BlockedBy.MANDATORY,
                                              application.BlockedBy.TRACKER_RESTRICTION)
        code = ExitCode.FAILED if refused else ExitCode.DECLINED
        emit(doc)
        return code
    if proposal.empty:
        doc.update(written=False, proposal=proposal.to_json())
    elif not _confirm(proposal, args.yes):
        err("not confirmed: nothing written")
        doc.update(written=False, proposal=proposal.to_json())
        emit(doc)
        return ExitCode.OK
    else:
        report = service.apply(proposal)
        sys.stderr.write(report.describe() + "\n")  # describe() is inert
        if again is not None:
            proposal, report = _review_again(service, proposal, report, args, again)
            if report is None:
                doc.update(written=False, proposal=proposal.to_json())
                emit(doc)
                return ExitCode.OK
        doc.update(written=bool(report.written), report=report.to_json(), results=_written_values(report),
                   proposal=proposal.to_json())
        if not report.ok:
            if not _outdated(proposal):
                err("the run stopped part-way; run the same command again to complete it")
            code = ExitCode.FAILED
    if code == ExitCode.OK and publish:
        doc["publish"] = _offer_publish(service, args)
        if doc["publish"].get("report", {}).get("ok") is False:
            code = ExitCode.FAILED  # the flow was written, its confirmed publish was not
    emit(doc)
    return code


def _offer_publish(service: application.Service, args) -> dict:
    """The publish review after a flow: of the files this run wrote only, so a concurrent
    run's (perhaps half-written) import is never committed under this run's message."""
    why_not = service.publish_offer()
    if why_not is not None:
        return {"offered": False, "why": why_not}

    def again():
        return service.propose_publish(written_only=True)

    proposal = again()
    if proposal.empty:
        return {"offered": False, "why": "; ".join(proposal.notes)}
    _show(proposal)
    if args.yes and not getattr(args, "publish", False):
        err("tracker changes are pending; publish them with 'mailtriage publish' (or --yes --publish)")
        return {"offered": True, "published": False, "proposal": proposal.to_json()}
    if not _confirm(proposal, args.yes):
        err("not published: the tracker changes stay in the working copy ('mailtriage publish' later)")
        return {"offered": True, "published": False, "proposal": proposal.to_json()}
    report = service.apply(proposal)
    sys.stderr.write(report.describe() + "\n")  # describe() is inert
    proposal, report = _review_again(service, proposal, report, args, again)
    if report is None:
        return {"offered": True, "published": False, "proposal": proposal.to_json()}
    # the review it confirmed beside what it committed: a reader can check the commit holds exactly it
    return {"offered": True, "published": report.ok, "report": report.to_json(), "results": _written_values(report),
            "proposal": proposal.to_json()}


def _project_dir(args):
    # --demo-reset remakes the demo workspace once per run, then reads as --demo.
    reset = bool(getattr(args, "demo_reset", False))
    if reset:
        args.demo, args.demo_reset = True, False
    return application.project_dir(getattr(args, "project", None), demo=bool(getattr(args, "demo", False)),
                                   demo_reset=reset)


def _service(args):
    """The application service on the project of ``args``, opened (close it when done)."""
    directory = _project_dir(args)  # first: --demo-reset means --demo
    return open_service(directory, demo=bool(getattr(args, "demo", False)))


def _open(args):
    """The service with its tracker opened, for one flow command (close it when done): a tracker
    that cannot be opened stops the command before anything is read."""
    service = _service(args)
    try:
        service.open_tracker()
    except BaseException:
        service.close()
        raise
    return service


# -- commands ---------------------------------------------------------------------------------

def _import(args) -> int:
    service = _open(args)
    try:
        thread_id = service.thread_id_for(args.thread_id, application.Op.READ_THREAD)
        proposal = service.propose_import(thread_id, sender_name=args.sender_name)
        return _apply_flow("import", proposal, args, service, publish=True, extra={"thread_id": str(thread_id)})
    finally:
        service.close()


def _publish(args) -> int:
    service = _open(args)
    try:
        message = read_file_arg(args.message_file) if args.message_file else None
        return _apply_flow("publish", service.propose_publish(message), args, service,
                           again=lambda: service.propose_publish(message))
    finally:
        service.close()


def _pairs(values: list[str], option: str) -> list[tuple[str, str]]:
    out = []
    for value in values:
        issue, sep, what = value.partition("=")
        if not sep or not issue.strip() or not what.strip():
            raise UsageError(f"{option} {value!r}: write ISSUE=VALUE, e.g. SEC-0003=valid")
        out.append((issue.strip(), what.strip()))
    return out


def _sync(args) -> int:
    service = _open(args)
    try:
        proposal = service.propose_sync(args.issue, add_labels=_pairs(args.add_label, "--add-label"),
                                        remove_labels=_pairs(args.remove_label, "--remove-label"),
                                        close=_pairs(args.close, "--close"), reopen=args.reopen)
        return _apply_flow("sync", proposal, args, service, publish=True)
    finally:
        service.close()


def _poll(args) -> int:
    service = _service(args)
    try:
        missing = service.unconfigured_list(args.list_name)
        if missing is not None:  # never the whole folder as if it were the list
            err(missing.warning)
            return ExitCode.USAGE if missing.stop else ExitCode.DECLINED
        if not args.watch:
            outcome = service.poll(args.list_name)
            emit({"command": "poll", **outcome.to_json()})
            sys.stdout.flush()
            try:
                service.acknowledge_poll(outcome, args.list_name)  # printed = shown: only now the cursor moves
            except OSError as exc:  # a full or read-only data folder: said, not a traceback
                err(f"poll: the alert cursor could not be saved ({exc.strerror or exc}); what was printed "
                    "will be printed again by the next poll")
                return ExitCode.FAILED
            return ExitCode.OK
        interval = service.poll_interval(args.interval)  # the app's setting too: [alerts] poll_seconds
        if not interval:
            err(f"poll --watch: new-report polling is off ([alerts] poll_seconds = 0 in "
                f"{terminal_line(str(service.settings.path))}); "
                "give --interval to watch anyway")
            return ExitCode.DECLINED

        def on_news(outcome) -> None:
            sys.stdout.write(dumps({"command": "poll", **outcome.to_json()}) + "\n")
            sys.stdout.flush()
            service.acknowledge_poll(outcome, args.list_name)

        def on_error(exc: Exception, retry_in: float) -> None:  # during an outage sooner than the interval
            err(f"poll failed (trying again in {retry_in:g}s): {exc}")

        def on_recovered(outage) -> None:
            err(f"polling works again after {outage.failures} failed poll{'s' if outage.failures != 1 else ''} "
                f"({outage.seconds:.0f}s); mail that arrived meanwhile is reported now")

        sys.stderr.write(f"watching {terminal_line(service.polled_list(args.list_name) or '(no list)')} every "
                         f"{interval:g}s; Ctrl-C stops\n")
        try:
            service.watch_polls(on_news, interval=interval, list_name=args.list_name, on_error=on_error,
                                on_recovered=on_recovered)
        except KeyboardInterrupt:
            pass
        return ExitCode.OK
    finally:
        service.close()


def _sweep(args) -> int:
    service = unopened_service(_project_dir(args), demo=bool(getattr(args, "demo", False)))  # a project is optional
    try:
        result = service.sweep(args.source, args.cursor, args.entry, cap=args.cap, ack_keyword=args.ack_keyword,
                               closeout_keyword=args.closeout_keyword)
    finally:
        service.close()
    for notice in result.notices:
        sys.stderr.write(terminal_line(notice) + "\n")  # the spec's exact sentences, one per line
    emit({"command": "sweep", **result.to_json()})
    return ExitCode.OK
