"""``mailtriage account …``: sign in to Google and Microsoft accounts, check and forget sign-ins.

    mailtriage account login ACCOUNT [--no-browser] [--interactive] [--timeout S]
    mailtriage account status ACCOUNT
    mailtriage account logout ACCOUNT
    mailtriage account set-password ACCOUNT [--smtp]

``status`` checks an account with a real call: an IMAP account logs in with its password
(from ``password_command`` or the keyring), an OAuth account asks its provider.
``set-password`` keeps an IMAP or SMTP password in the system keyring; on a machine
without a keyring service it says what the options are (``password_command`` in the
account's table, a Secret Service, another keyring backend) instead of failing.

``login`` runs the provider's flow for an ``[accounts.ACCOUNT]`` table of the user settings:
Google (``kind = "gmail"``, or an IMAP account with ``oauth = "google"``) prints a sign-in
URL, opens it in a browser unless ``--no-browser``, and waits for the loopback redirect;
Microsoft (``kind = "microsoft"``, or ``oauth = "microsoft"``) prints a device code to
enter at Microsoft's page (``--interactive`` uses a browser and a loopback redirect
instead). Tokens go to keyring only; stdout gets one JSON document without any token.

Exit codes: 0 ok, 2 usage or configuration (no keyring service included), 4 sign-in refused
or provider unavailable.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Sequence

from mailtriage.application import accounts
from mailtriage.application.errors import ConfigError
from mailtriage.cli.exit_codes import ACCOUNT, ExitCode, exit_code, handled
from mailtriage.core.inert import json_dumps, terminal_text
from mailtriage.core.secrets import scrub, scrub_json


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mailtriage account", description="Sign in to mail accounts (OAuth) or store a password.")
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    login = sub.add_parser("login", help="sign in (Google: browser; Microsoft: device code)")
    login.add_argument("account", help="the id of an [accounts.<id>] table")
    login.add_argument("--no-browser", action="store_true", help="only print the sign-in URL")
    login.add_argument("--interactive", action="store_true",
                       help="Microsoft: browser and loopback redirect instead of a device code")
    login.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the sign-in (default 300)")
    setpw = sub.add_parser("set-password", help="store an IMAP (or SMTP) password in the system keyring",
                           description="Read a password (prompted without echo, or one line from stdin) and "
                                       "store it in the system keyring; it never goes to a file.")
    setpw.add_argument("account", help="the id of an [accounts.<id>] table")
    setpw.add_argument("--smtp", action="store_true", help="the SMTP password (default: the IMAP password)")
    for name, text in (("status", "check the saved sign-in with a real call"),
                       ("logout", "forget the saved sign-in (keyring)")):
        p = sub.add_parser(name, help=text)
        p.add_argument("account")
    return parser


def _say(text: str) -> None:
    sys.stderr.write(terminal_text(scrub(text)) + "\n")  # server and provider text is untrusted
    sys.stderr.flush()


def login(args: argparse.Namespace) -> dict:
    return accounts.login(args.account, announce=_say, open_browser=not args.no_browser,
                          interactive=args.interactive, timeout=args.timeout)


def status(args: argparse.Namespace) -> dict:
    return accounts.status(args.account)


def logout(args: argparse.Namespace) -> dict:
    return accounts.logout(args.account)


def set_password(args: argparse.Namespace) -> dict:
    accounts.check_account(args.account)  # a ConfigError naming the valid accounts when unknown
    if sys.stdin.isatty():
        secret = getpass.getpass(f"{'SMTP' if args.smtp else 'IMAP'} password for {args.account}: ")
    else:
        secret = sys.stdin.readline().rstrip("\r\n")
    return accounts.set_password(args.account, secret, smtp=args.smtp)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        actions = {"login": login, "status": status, "logout": logout, "set-password": set_password}
        result = actions[args.action](args)
    except handled(ACCOUNT) as exc:
        prefix = "configuration error: " if isinstance(exc, ConfigError) else ""
        _say(f"mailtriage: {prefix}{exc}")
        return exit_code(exc, ACCOUNT)
    sys.stdout.write(scrub(json_dumps(scrub_json(result))) + "\n")
    return ExitCode.OK
