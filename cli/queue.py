"""``mailtriage queue``: the team's triage queue, and claims through the tracker.

    mailtriage queue [--json] [--state S] [--owner U] [--since W] [--now ISO]   the queue of the window
    mailtriage queue claim ISSUE [--as USER] [--yes]     make USER the issue's owner (assignee)
    mailtriage queue release ISSUE [--as USER] [--yes]   give it back
    mailtriage queue sync                                 bring a local-files tracker up to date (pull)

The queue is read from the list and the tracker through the application service (the methods
the app's queue screen calls: application/service_triage.py); a claim or release is a
proposal, printed on stderr and written after ``--yes`` or a ``y`` on the terminal. A claim
another triager holds, or wins in a race, is not written: the command says who holds it
(exit 3, ``holder`` in the JSON).

Exit codes: 0 ok (also when not confirmed), 2 usage or configuration, 3 held by someone else
(or the issue is not there), 4 a backend or tracker failure.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from typing import Any, Callable

import mailtriage.application as application
from mailtriage.application.errors import UsageError
from mailtriage.cli.exit_codes import ExitCode
from mailtriage.cli.output import ask_line, capped_line, emit, err
from mailtriage.cli.service import open_service

COMMAND = "queue"
STATES = ("new", "acknowledged", "imported", "in_progress", "fixed", "closed", "automated", "unknown")


def register(sub, common: Callable[[argparse.ArgumentParser, bool], None]) -> None:
    """Add ``queue`` (and its claim, release and sync actions) to ``mailtriage``'s subparsers."""
    p = sub.add_parser(COMMAND, help="the team's triage queue: state, age, owner and deadlines of every report",
                       description="Every report thread of the window with its state (new, acknowledged, imported, "
                                   "in_progress, fixed, closed; unknown when the tracker cannot be asked), age, owner (the tracker issue's assignee) and "
                                   "deadlines (queue.first_response_days, queue.disclosure_days), sorted by what "
                                   "needs a human first. 'claim' and 'release' write the assignee through the "
                                   "tracker after a confirmation. See docs/queue.md.")
    common(p, False)
    p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of a table "
                                                        "(a row a line)")
    p.add_argument("--state", choices=STATES, help="only reports in this state")
    p.add_argument("--owner", help="only reports this user holds ('' for nobody's)")
    p.add_argument("--since", help="ISO date/instant or Nd (days); default from project.md import.since")
    p.add_argument("--list", dest="list_name", help="the list to read (default: security_list)")
    p.add_argument("--now", help="the instant deadlines are judged at (ISO 8601; default: now; with --demo the demo's pinned now)")
    actions = p.add_subparsers(dest="queue_action", metavar="ACTION")
    for name, text in (("claim", "make a user the owner (assignee) of a tracker issue"),
                       ("release", "remove a user from the assignees of a tracker issue")):
        q = actions.add_parser(name, help=text, description=text + " (a proposal, written on confirmation)")
        common(q, False)
        q.add_argument("issue", help="the tracker issue's ID, e.g. SEC-0003")
        q.add_argument("--as", dest="who", help="the user (default: tracker.user, else the tracker's user)")
        q.add_argument("--yes", action="store_true", help="confirm without asking (the proposal is still printed)")
    q = actions.add_parser("sync", help="bring a local-files tracker's working copy up to date (fetch, fast-forward)")
    common(q, False)


def run(args: argparse.Namespace) -> int:
    """Run ``queue`` or one of its actions; errors go up to ``cli.main`` (exit codes)."""
    action = args.queue_action
    if action in ("claim", "release"):
        return _assignee(args, claim=action == "claim")
    if action == "sync":
        return _sync(args)
    return _show_queue(args)


def _service(args: argparse.Namespace) -> application.Service:
    """The service on the project of ``args``, opened (close it when done)."""
    directory = application.project_dir(getattr(args, "project", None), demo=bool(getattr(args, "demo", False)))
    return open_service(directory, demo=bool(getattr(args, "demo", False)))


def _now(text: str | None, demo: bool = False) -> datetime:
    if not text and demo:
        from mailtriage.demo import demo_now  # why: the demo's clock loads with a demo run only

        return demo_now()
    if not text:
        return datetime.now(timezone.utc)
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise UsageError(f"--now {text!r} is not an ISO 8601 date or instant") from exc
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _day(when: datetime | None) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d") if when else "-"


def _age(now: datetime, when: datetime | None) -> str:
    """As the app's queue shows it (whole hours under a day, else whole days, rounded down)."""
    return "-" if when is None else application.queue_span(now - when)


def _show_queue(args: argparse.Namespace) -> int:
    now = _now(args.now, demo=bool(getattr(args, "demo", False)))
    service = _service(args)
    try:
        since = service.since_arg(args.since) if args.since else None
        state = application.QueueState(args.state) if args.state else None
        queue = service.queue(now, list_name=args.list_name, since=since, state=state, owner=args.owner,
                              keep_records=False)  # one queue, then the process ends
    finally:
        service.close()
    for warning in queue.warnings:
        err(warning)
    if args.json:
        emit({"command": COMMAND, **queue.to_json()}, lines=True)  # a row a line
        return ExitCode.OK
    header = ["STATE", "AGE", "WAITING", "OWNER", "ISSUE", "RESPOND BY", "DISCLOSE BY", "!", "REPORTER", "SUBJECT"]
    rows = [[r.state.value, _age(now, r.opened), _age(now, r.unanswered_since), capped_line(r.owner or "-", 40),
             capped_line(r.issue or "-", 40), _day(r.first_response_due), _day(r.disclosure_due),
             "!" if r.breaches else "", capped_line(r.reporter, 60), capped_line(r.subject, 120)]
            for r in queue.rows]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]
    out = sys.stdout
    out.write("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip() + "\n")
    for row in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")
    if not rows:
        out.write("(no reports in the window)\n")
    return ExitCode.OK




def _assignee(args: argparse.Namespace, *, claim: bool) -> int:
    service = _service(args)
    name = "claim" if claim else "release"
    try:
        proposal = (service.propose_claim if claim else service.propose_release)(args.issue, args.who)
        sys.stderr.write(proposal.render_text() + "\n")  # render_text() is inert
        doc: dict[str, Any] = {"command": f"{COMMAND} {name}", "issue": proposal.facts.get("issue"),
                               "who": proposal.facts.get("who")}
        holder = proposal.facts.get("holder")
        if proposal.blocked:  # held by another triager: refused like every blocked proposal
            err(f"nothing written: {proposal.blocked.text}")
            emit({**doc, "written": False, **({"holder": holder} if holder else {}), "proposal": proposal.to_json()})
            return ExitCode.DECLINED
        if proposal.empty or not application.confirm_interactively(proposal, yes=args.yes, ask=ask_line):
            if not proposal.empty:
                err("not confirmed: nothing written")
            emit({**doc, "written": False, "proposal": proposal.to_json()})
            return ExitCode.OK
        report = service.apply(proposal)
        sys.stderr.write(report.describe() + "\n")  # describe() is inert
        doc.update(written=bool(report.written), report=report.to_json(), proposal=proposal.to_json())
        if report.ok:
            doc["result"] = report.written[-1][1] if report.written else None
            emit(doc)
            return ExitCode.OK
        lost = proposal.facts.get("lost_to")
        if lost:
            err(f"not claimed: another triager was first; {doc['issue']} is held by {lost}")
            emit({**doc, "holder": lost})
            return ExitCode.DECLINED
        emit(doc)
        return ExitCode.FAILED
    finally:
        service.close()


def _sync(args: argparse.Namespace) -> int:
    service = _service(args)
    try:
        result = service.pull_tracker()
    finally:
        service.close()
    emit({"command": f"{COMMAND} sync", **result})
    return ExitCode.OK
