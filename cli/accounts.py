"""``mailtriage account …``: sign in to Google and Microsoft accounts, check and forget sign-ins.

    mailtriage account login ACCOUNT [--no-browser] [--interactive] [--timeout S]
    mailtriage account status ACCOUNT
    mailtriage account logout ACCOUNT
    mailtriage account set-password ACCOUNT [--smtp]
    mailtriage account store-secret {ponymail,github,jira} URL [--repo OWNER/NAME] [--from-old-key]

``status`` checks an account with a real call: an IMAP account logs in with its password
(from ``password_command`` or the keyring), an OAuth account asks its provider.
``set-password`` keeps an IMAP or SMTP password in the system keyring; on a machine
without a keyring service it says what the options are (``password_command`` in the
account's table, a Secret Service, another keyring backend) instead of failing.

``store-secret`` keeps a Pony Mail session cookie, a GitHub or a Jira token in the keyring
under the key of the exact origin it belongs to (``<purpose>:<scheme>://<host>:<port>``, plus
``/<owner>/<repo>`` for GitHub; see :mod:`mailtriage.core.origins`); ``--from-old-key`` moves
an entry stored under the old origin-less key (``ponymail:<host>``, ``jira:<host>``,
``github:<owner>/<repo>``) there. Plain http is refused except to loopback.

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
from mailtriage.core.origins import PURPOSES, secret_key
from mailtriage.core.secrets import scrub, scrub_json, store_for_origin


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
    store = sub.add_parser("store-secret", help="store a Pony Mail cookie, GitHub or Jira token for one origin",
                           description="Read a secret (prompted without echo, or one line from stdin) and keep it "
                                       "in the keyring under the key of URL's exact origin; only that origin gets it.")
    store.add_argument("purpose", choices=sorted(PURPOSES), help="what the secret is for")
    store.add_argument("url", help="Pony Mail base_url, GitHub API URL (https://api.github.com) or Jira base URL")
    store.add_argument("--repo", metavar="OWNER/NAME", help="GitHub: the repository the token is for")
    store.add_argument("--from-old-key", action="store_true",
                       help="move the entry stored under the old key (ponymail:<host>, jira:<host>, "
                            "github:<owner>/<repo>) instead of reading a new secret")
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


def store_origin_secret(args: argparse.Namespace) -> dict:
    try:
        secret_key(args.purpose, args.url, args.repo)  # refuse before asking for the secret
        if args.purpose == "github" and not args.repo:
            raise ValueError("a GitHub token belongs to one repository: give --repo OWNER/NAME")
        secret = None
        if not args.from_old_key:
            if sys.stdin.isatty():
                secret = getpass.getpass(f"{PURPOSES[args.purpose]} for {args.url}: ")
            else:
                secret = sys.stdin.readline().rstrip("\r\n")
        return store_for_origin(args.purpose, args.url, secret, args.repo, from_old_key=args.from_old_key)
    except ValueError as exc:  # OriginRefused included
        raise ConfigError("(command line)", "store-secret", str(exc),
                          "https URL (plain http to loopback only), --repo OWNER/NAME for github") from exc


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        actions = {"login": login, "status": status, "logout": logout, "set-password": set_password,
                   "store-secret": store_origin_secret}
        result = actions[args.action](args)
    except handled(ACCOUNT) as exc:
        prefix = "configuration error: " if isinstance(exc, ConfigError) else ""
        _say(f"mailtriage: {prefix}{exc}")
        return exit_code(exc, ACCOUNT)
    sys.stdout.write(scrub(json_dumps(scrub_json(result))) + "\n")
    return ExitCode.OK
