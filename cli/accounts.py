"""``mailtriage account …``: sign in to Google and Microsoft accounts, check and forget sign-ins.

    mailtriage account login ACCOUNT [--no-browser] [--interactive] [--timeout S]
    mailtriage account status ACCOUNT
    mailtriage account logout ACCOUNT

``login`` runs the provider's flow for an ``[accounts.ACCOUNT]`` table of the user settings:
Google (``kind = "gmail"``, or an IMAP account with ``oauth = "google"``) prints a sign-in
URL, opens it in a browser unless ``--no-browser``, and waits for the loopback redirect;
Microsoft (``kind = "microsoft"``, or ``oauth = "microsoft"``) prints a device code to
enter at Microsoft's page (``--interactive`` uses a browser and a loopback redirect
instead). Tokens go to keyring only; stdout gets one JSON document without any token.

Exit codes: 0 ok, 2 usage or configuration, 4 sign-in refused or provider unavailable.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

EXIT_OK, EXIT_USAGE, EXIT_FAILED = 0, 2, 4


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


def _provider(account_id: str):
    """('google' | 'microsoft', account object) for an account of the user settings."""
    from mailtriage.core.projectconfig import ConfigError
    from mailtriage.core.settings import load_settings

    settings = load_settings()
    body = settings.account(account_id)
    kind = body.get("kind", "imap")
    provider = {"gmail": "google", "microsoft": "microsoft", "graph": "microsoft"}.get(kind) or body.get("oauth")
    if provider == "google":
        from mailtriage.backends.gmail.account import GoogleAccount

        return provider, GoogleAccount.from_settings(account_id, body, settings.path)
    if provider == "microsoft":
        from mailtriage.backends.microsoft.account import MicrosoftAccount

        return provider, MicrosoftAccount.from_settings(account_id, body, settings.path)
    raise ConfigError(settings.path, f"accounts.{account_id}", f"kind {kind!r} does not sign in with OAuth",
                      "kind = \"gmail\" | \"microsoft\", or an IMAP account with oauth = \"google\" | \"microsoft\"")


def _say(text: str) -> None:
    from mailtriage.core.inert import terminal_text
    from mailtriage.core.secrets import scrub

    sys.stderr.write(terminal_text(scrub(text)) + "\n")  # server and provider text is untrusted
    sys.stderr.flush()


def login(args: argparse.Namespace) -> dict:
    provider, account = _provider(args.account)
    if provider == "google":
        from mailtriage.backends.gmail.auth import GoogleSignIn

        return GoogleSignIn(account).login(
            announce=lambda url: _say(f"Sign in to Google as {account.address or account.id}: open\n{url}"),
            open_browser=not args.no_browser, timeout=args.timeout)
    from mailtriage.backends.microsoft.auth import MicrosoftSignIn

    signin = MicrosoftSignIn(account)
    try:
        if args.interactive:
            return signin.login_interactive(announce=lambda url: _say(f"Sign in to Microsoft: open\n{url}"),
                                            open_browser=not args.no_browser, timeout=args.timeout)
        return signin.login_device_code(announce=_say, timeout=args.timeout)
    finally:
        signin.close()


def status(args: argparse.Namespace) -> dict:
    provider, account = _provider(args.account)
    if account.imap:
        if provider == "google":
            from mailtriage.backends.gmail.auth import GoogleSignIn

            GoogleSignIn(account).access_token()
        else:
            from mailtriage.backends.microsoft.auth import MicrosoftSignIn

            MicrosoftSignIn(account).access_token()
        return {"account": account.id, "provider": provider, "signed_in": True, "scopes": list(account.scopes)}
    if provider == "google":
        from mailtriage.backends.gmail.adapter import GmailMailbox as Mailbox
    else:
        from mailtriage.backends.microsoft.adapter import GraphMailbox as Mailbox  # type: ignore[assignment]
    mailbox = Mailbox(account)
    try:
        return {"provider": provider, "signed_in": True, **mailbox.verify()}
    finally:
        mailbox.close()


def logout(args: argparse.Namespace) -> dict:
    from mailtriage.core.secrets import delete_secret

    provider, account = _provider(args.account)
    if provider == "google":
        from mailtriage.backends.gmail.account import token_key

        delete_secret(token_key(account.id))
    else:
        from mailtriage.backends.microsoft.auth import forget_cache

        forget_cache(account.id)  # the msal cache is split across several keyring entries
    return {"account": account.id, "provider": provider, "signed_in": False}


def set_password(args: argparse.Namespace) -> dict:
    from mailtriage.backends.imap.account import password_key, smtp_password_key
    from mailtriage.core.projectconfig import ConfigError
    from mailtriage.core.secrets import set_secret
    from mailtriage.core.settings import load_settings

    settings = load_settings()
    settings.account(args.account)  # a ConfigError naming the valid accounts when unknown
    if sys.stdin.isatty():
        import getpass

        secret = getpass.getpass(f"{'SMTP' if args.smtp else 'IMAP'} password for {args.account}: ")
    else:
        secret = sys.stdin.readline().rstrip("\r\n")
    if not secret:
        raise ConfigError("(stdin)", "password", "is empty", "a non-empty password")
    key = smtp_password_key(args.account) if args.smtp else password_key(args.account)
    set_secret(key, secret)
    return {"account": args.account, "stored": key}


def main(argv: Sequence[str] | None = None) -> int:
    from mailtriage.backends.errors import MailError
    from mailtriage.core.projectconfig import ConfigError

    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        actions = {"login": login, "status": status, "logout": logout, "set-password": set_password}
        result = actions[args.action](args)
    except ConfigError as exc:
        _say(f"mailtriage: configuration error: {exc}")
        return EXIT_USAGE
    except MailError as exc:
        _say(f"mailtriage: {exc}")
        return EXIT_FAILED
    from mailtriage.core.inert import json_dumps
    from mailtriage.core.secrets import scrub, scrub_json

    sys.stdout.write(scrub(json_dumps(scrub_json(result))) + "\n")
    return EXIT_OK
