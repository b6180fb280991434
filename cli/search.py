"""``mailtriage mail search QUERY``: a server search, one JSON document on stdout.

    mailtriage mail search QUERY [--field text|body|from|subject] [--list L] [--since S]
                                 [--folder F | --all-folders] [--page N] [--page-size N]
                                 [--backend NAME | --account A]

Without ``--account`` the project's backend that lists the threads searches (or the one
named with ``--backend``); with ``--account`` the personal account's mailbox does. The
document is ``{"op": "search", "backend", "resolution", "result"}``, ``result`` being the
page (items newest first, total, more, the folders searched and those that failed and why).
Reads only: nothing is written. Exit codes as every ``mail`` command (3: the backend
declares no search; 4: it failed).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Callable

import mailtriage.application as application
from mailtriage.cli.exit_codes import ExitCode
from mailtriage.cli.output import emit, err

if TYPE_CHECKING:
    from mailtriage.application import Service

FIELDS = ("text", "body", "from", "subject")


def add_parser(op_parser: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """The ``search`` sub-command of ``mailtriage mail`` (``op_parser`` adds the common options)."""
    q = op_parser("search", "search the mail on its server (IMAP SEARCH, Gmail q, Graph $search, the archives' "
                            "search, the mbox index); JSON of one page, newest first")
    q.add_argument("query", help="the text to look for (one argument; quote it in the shell)")
    q.add_argument("--field", choices=FIELDS, default="text",
                   help="where to look: text (headers and body, default), body, from, subject")
    q.add_argument("--list", dest="list_name", help="list address (default: security_list from project.md)")
    q.add_argument("--since", help="only mail since: ISO date/instant or Nd (days); default: no limit")
    where = q.add_mutually_exclusive_group()
    where.add_argument("--folder", help="the folder to search (default: the source's list folder, or INBOX)")
    where.add_argument("--all-folders", action="store_true", help="search every folder of the account")
    q.add_argument("--page", type=int, default=0, help="zero-based page of results (default 0)")
    q.add_argument("--page-size", type=int, default=50, help="results per page, 1 to 200 (default 50)")
    q.add_argument("--account", help="search this personal account ([accounts.A] of the user settings) "
                                     "instead of the project's mail sources")


def run(args: argparse.Namespace, open_service: Callable[..., Service]) -> int:
    """``open_service(args, opened=False)``: a service that opens no project (an account's search needs none)."""
    if args.account:
        if args.backend:
            raise application.UsageError("--account and --backend cannot be combined")
        since = application.parse_since(args.since, None, label="--since") if args.since else None
        service = open_service(args, opened=False)
        try:
            result = service.search_account(args.account, args.folder, args.query, field=args.field, since=since,
                                            all_folders=args.all_folders, page=args.page, page_size=args.page_size)
        finally:
            service.close()
        emit({"op": "search", "account": args.account, "backend": result.backend, "resolution": None,
              "result": result.page.to_json()})
        return _done(result)
    service = open_service(args)
    try:
        abort = service.mandatory_abort(application.Op.LIST_RECENT_THREADS)
        if abort is not None:
            err(abort.aborted)
            emit({"op": "search", "backend": None, "aborted": abort.aborted, "resolution": abort.to_json(),
                  "result": None})
            return ExitCode.FAILED
        result = service.search_sources(args.query, service.list_name(args.list_name), field=args.field,
                                        since=service.since_arg(args.since) if args.since else None,
                                        folder=args.folder,
                                        all_folders=args.all_folders, backend=args.backend, page=args.page,
                                        page_size=args.page_size)
        emit({"op": "search", "backend": result.backend, "resolution": result.resolution.to_json(),
              "result": result.page.to_json()})
        return _done(result)
    finally:
        service.close()


def _done(result) -> int:
    for folder, why in result.page.failed:
        err(f"search: folder {folder} could not be searched: {why}")
    return ExitCode.OK
