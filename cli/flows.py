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

This module imports only argparse at load time; each command loads what it needs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from mailtriage.core.inert import terminal_line

EXIT_OK, EXIT_USAGE, EXIT_DECLINED, EXIT_FAILED = 0, 2, 3, 4
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
                   help="keep polling (alerts.poll_seconds, default 120; IDLE where the backend has it) and print "
                        "one JSON document per line when new threads arrive; stop with Ctrl-C")
    p.add_argument("--interval", type=float, help="seconds between polls (overrides alerts.poll_seconds)")
    p.add_argument("--list", dest="list_name", help="list address (default: security_list)")

    p = sub.add_parser("sweep", help="read-only feedback sweep of one mailbox or query since a cursor",
                       description="Map every feedback email received at or after --cursor in --source to the "
                                   "sweep's item schema; bounces, auto-replies and system notifications are "
                                   "skipped. Never writes mail, never moves the cursor.")
    common(p, False)
    p.add_argument("--source", required=True,
                   help="ACCOUNT/FOLDER of the user settings (e.g. work/INBOX), optionally with a query "
                        "(work/INBOX?from=example.com&text=feedback), or mbox:PATH / maildir:PATH for an archive")
    p.add_argument("--cursor", required=True, help="ISO 8601 received-date instant to fetch from (inclusive)")
    p.add_argument("--entry", required=True, help="the sweep's source config-entry id (copied into each item)")
    p.add_argument("--cap", type=int, help="stop after N items and mark the result truncated")
    p.add_argument("--ack-keyword", help="IMAP keyword that marks a message acknowledged (default $MailtriageAck)")
    p.add_argument("--closeout-keyword",
                   help="IMAP keyword that marks a message closed out (default $MailtriageCloseout)")


def run(args: argparse.Namespace, helpers) -> int:
    """Run one flow command. ``helpers`` is the ``cli.main`` module (project_dir, _emit, …)."""
    from mailtriage.trackers.contract import NotFound, TrackerError
    from mailtriage.trackers.contract import UsageError as TrackerUsage

    try:
        return {"import": _import, "sync": _sync, "publish": _publish, "poll": _poll,
                "sweep": _sweep}[args.command](args, helpers)
    except TrackerUsage as exc:
        helpers._err(f"tracker: {exc}")
        return EXIT_USAGE
    except NotFound as exc:
        helpers._err(f"tracker: {exc}")
        return EXIT_DECLINED
    except TrackerError as exc:
        helpers._err(f"tracker: {exc}")
        return EXIT_FAILED


# -- confirmation -----------------------------------------------------------------------------

def _ask(prompt: str) -> str:
    """The prompt goes to stderr (stdout carries only the JSON); the answer is one line of stdin."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


def _confirm(proposal, yes: bool) -> bool:
    from mailtriage.workflows.proposals import confirm_interactively

    return confirm_interactively(proposal, yes=yes, ask=_ask)


def _show(proposal) -> None:
    sys.stderr.write(proposal.render_text() + "\n")


def _written_values(report) -> list:
    out = []
    for _, value in report.written:
        out.append(value.to_json() if hasattr(value, "to_json") else value)
    return out


def _apply_flow(name: str, proposal, args, helpers, extra: dict | None = None) -> int:
    """Show, confirm, apply; then offer the publish review. One JSON document on stdout."""
    doc: dict[str, Any] = {"command": name, **(extra or {})}
    _show(proposal)
    code = EXIT_OK
    if proposal.blocked:
        helpers._err(f"nothing written: {proposal.blocked}")
        doc.update(written=False, proposal=proposal.to_json())
        code = EXIT_FAILED if proposal.facts.get("blocked_by") == "mandatory" else EXIT_DECLINED
        helpers._emit(doc)
        return code
    if proposal.empty:
        doc.update(written=False, proposal=proposal.to_json())
    elif not _confirm(proposal, args.yes):
        helpers._err("not confirmed: nothing written")
        doc.update(written=False, proposal=proposal.to_json())
        helpers._emit(doc)
        return EXIT_OK
    else:
        report = proposal.apply(confirmed=True)
        sys.stderr.write(report.describe() + "\n")  # describe() is inert
        doc.update(written=bool(report.written), report=report.to_json(), results=_written_values(report),
                   proposal=proposal.to_json())
        if not report.ok:
            helpers._err("the run stopped part-way; run the same command again to complete it")
            code = EXIT_FAILED
    if code == EXIT_OK and getattr(args, "_tracker", None) is not None:
        doc["publish"] = _offer_publish(args._tracker, args._config, args, helpers)
    helpers._emit(doc)
    return code


def _offer_publish(tracker, config, args, helpers) -> dict:
    from mailtriage.workflows.publish import propose_publish

    if not tracker.features.publishes_changes:
        return {"offered": False, "why": f"the {tracker.kind} tracker writes straight to the server"}
    proposal = propose_publish(tracker, config)
    if proposal.empty:
        return {"offered": False, "why": "; ".join(proposal.notes)}
    _show(proposal)
    if args.yes and not getattr(args, "publish", False):
        helpers._err("tracker changes are pending; publish them with 'mailtriage publish' (or --yes --publish)")
        return {"offered": True, "published": False, "proposal": proposal.to_json()}
    if not _confirm(proposal, args.yes):
        helpers._err("not published: the tracker changes stay in the working copy ('mailtriage publish' later)")
        return {"offered": True, "published": False, "proposal": proposal.to_json()}
    report = proposal.apply(confirmed=True)
    sys.stderr.write(report.describe() + "\n")  # describe() is inert
    return {"offered": True, "published": report.ok, "report": report.to_json(), "results": _written_values(report)}


def _open(args, helpers):
    from mailtriage.trackers.registry import open_tracker

    sources = helpers.load_sources(args)
    tracker = open_tracker(sources.config)
    args._tracker, args._config = tracker, sources.config
    return sources, tracker


# -- commands ---------------------------------------------------------------------------------

def _import(args, helpers) -> int:
    from mailtriage.backends.contract import Op, ThreadId
    from mailtriage.workflows.importer import propose_import

    sources, tracker = _open(args, helpers)
    try:
        res = sources.resolve(Op.READ_THREAD)
        default_kind = sources.backends[res.chosen].thread_id_kind if res.chosen else None
        try:
            thread_id = ThreadId.parse(args.thread_id.strip(), default_kind)
        except ValueError as exc:
            raise helpers.UsageError(str(exc)) from None
        proposal = propose_import(sources, tracker, thread_id, sender_name=args.sender_name)
        return _apply_flow("import", proposal, args, helpers, {"thread_id": str(thread_id)})
    finally:
        sources.close()
        tracker.close_backend()


def _publish(args, helpers) -> int:
    from mailtriage.core.projectconfig import load_project
    from mailtriage.trackers.registry import open_tracker
    from mailtriage.workflows.publish import propose_publish

    config = load_project(helpers.project_dir(args))
    tracker = open_tracker(config)
    try:
        message = helpers._read_file_arg(args.message_file) if args.message_file else None
        proposal = propose_publish(tracker, config, message=message)
        return _apply_flow("publish", proposal, args, helpers)
    finally:
        tracker.close_backend()


def _pairs(values: list[str], option: str, helpers) -> list[tuple[str, str]]:
    out = []
    for value in values:
        issue, sep, what = value.partition("=")
        if not sep or not issue.strip() or not what.strip():
            raise helpers.UsageError(f"{option} {value!r}: write ISSUE=VALUE, e.g. SEC-0003=valid")
        out.append((issue.strip(), what.strip()))
    return out


def _sync(args, helpers) -> int:
    from mailtriage.workflows.sync import Picks, collect_sync, propose_sync

    sources, tracker = _open(args, helpers)
    try:
        picks: dict[str, Picks] = {}

        def pick(issue: str) -> Picks:
            canonical = tracker.view(issue)["id"]  # 3, SEC-3 and SEC-0003 name one issue
            return picks.setdefault(canonical, Picks())

        for issue, label in _pairs(args.add_label, "--add-label", helpers):
            pick(issue).add_labels.append(label)
        for issue, label in _pairs(args.remove_label, "--remove-label", helpers):
            pick(issue).remove_labels.append(label)
        for issue, reason in _pairs(args.close, "--close", helpers):
            pick(issue).close = reason
        for issue in args.reopen:
            pick(issue).reopen = True
        issue_ids = list(dict.fromkeys(args.issue)) or None
        if issue_ids is None and picks:
            # picked issues take part even when they are closed (a reopen, say)
            open_ids = [i["id"] for i in tracker.list(state="open").items]
            issue_ids = list(dict.fromkeys(open_ids + list(picks)))
        items = collect_sync(sources, tracker, issue_ids)
        proposal = propose_sync(tracker, items, picks)
        return _apply_flow("sync", proposal, args, helpers)
    finally:
        sources.close()
        tracker.close_backend()


def _poll(args, helpers) -> int:
    import threading

    from mailtriage.workflows.alerts import NewReportPoller, poll_seconds, run_poll_loop

    sources = helpers.load_sources(args)
    try:
        poller = NewReportPoller(sources, list_name=args.list_name)
        if not args.watch:
            outcome = poller.poll()
            helpers._emit({"command": "poll", **outcome.to_json()})
            sys.stdout.flush()
            poller.acknowledge(outcome)  # printed = shown: only now the cursor moves
            return EXIT_OK
        interval = args.interval if args.interval is not None else poll_seconds(sources.config)
        if interval < 0.01:
            raise helpers.UsageError("--interval must be a positive number of seconds")

        def on_news(outcome) -> None:
            sys.stdout.write(dumps({"command": "poll", **outcome.to_json()}) + "\n")
            sys.stdout.flush()
            poller.acknowledge(outcome)

        def on_error(exc: Exception) -> None:
            helpers._err(f"poll failed (trying again in {interval:g}s): {exc}")

        sys.stderr.write(f"watching {terminal_line(poller.list_name or '(no list)')} every {interval:g}s; "
                         "Ctrl-C stops\n")
        try:
            run_poll_loop(poller, on_news, stop=threading.Event(), interval=interval, on_error=on_error)
        except KeyboardInterrupt:
            pass
        return EXIT_OK
    finally:
        sources.close()


def _sweep(args, helpers) -> int:
    from mailtriage.workflows.sweep import (DEFAULT_ACK_KEYWORD, DEFAULT_CLOSEOUT_KEYWORD, SourceError,
                                            check_keyword, open_reader, parse_cursor, parse_source, run_sweep)

    try:
        source = parse_source(args.source)
        cursor = parse_cursor(args.cursor)
        ack = check_keyword(args.ack_keyword or DEFAULT_ACK_KEYWORD, "--ack-keyword")
        closeout = check_keyword(args.closeout_keyword or DEFAULT_CLOSEOUT_KEYWORD, "--closeout-keyword")
        if args.cap is not None and args.cap < 1:
            raise SourceError("--cap must be at least 1")
        if not args.entry.strip():
            raise SourceError("--entry is empty")
    except SourceError as exc:
        raise helpers.UsageError(str(exc)) from None
    domains = _internal_domains(args, helpers)
    result = run_sweep(open_reader(source), entry=args.entry.strip(), cursor=cursor, source=source.describe(),
                       cap=args.cap, ack_keyword=ack, closeout_keyword=closeout, internal_domains=domains)
    for notice in result.notices:
        sys.stderr.write(terminal_line(notice) + "\n")  # the spec's exact sentences, one per line
    helpers._emit({"command": "sweep", **result.to_json()})
    return EXIT_OK


def _internal_domains(args, helpers) -> frozenset[str]:
    """``sweep.internal_domains`` of project.md when there is one (optional for a sweep)."""
    from mailtriage.core.projectconfig import ConfigError, load_project

    try:
        config = load_project(helpers.project_dir(args))
    except ConfigError:
        return frozenset()
    value = config.get("sweep.internal_domains") or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ConfigError(config.file, "sweep.internal_domains", "must be a list of domains", "[example.org]")
    return frozenset(str(v).strip().lower().lstrip("@") for v in value if str(v).strip())


def dumps(doc: Any) -> str:
    """One JSON line (poll --watch); neutralized characters escaped (see core.inert), secrets masked."""
    from mailtriage.core.inert import json_dumps
    from mailtriage.core.secrets import scrub, scrub_json

    return scrub(json_dumps(scrub_json(doc), indent=None))
