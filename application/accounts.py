"""Personal accounts: their mailboxes (browse, read, organize) and their sign-ins.

A mailbox adapter is opened once per account through the backends registry's table of
account kinds; sign-in runs the provider's flow for an ``[accounts.<id>]`` table of the
user settings and keeps tokens in the keyring only. Nothing here prints: the front end
passes ``announce`` for what the user must see (a URL, a device code).
"""

from __future__ import annotations

from typing import Any, Callable

from mailtriage.backends.imap.account import load_account, password_key, smtp_password_key
from mailtriage.backends.mailbox_contract import MailQuery
from mailtriage.backends.registry import open_mailbox
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.secrets import delete_secret, store_secret
from mailtriage.core.settings import UserSettings, load_settings


class Mailboxes:
    """The mailbox adapters of one run, one per account, opened on first use."""

    def __init__(self, settings: UserSettings) -> None:
        self.settings = settings
        self._boxes: dict[str, Any] = {}

    def get(self, account_id: str):
        """The account's mailbox adapter.

        Raises:
            ConfigError: the account's settings are invalid (names file and key).
            NotSupported: the account's kind has no mailbox adapter here.
        """
        if account_id not in self._boxes:
            self._boxes[account_id] = open_mailbox(account_id, self.settings)
        return self._boxes[account_id]

    def folders(self, account_id: str):
        """The account's folders (role, unread, total)."""
        return self.get(account_id).list_folders()

    def page(self, account_id: str, folder_id: str, page: int, page_size: int):
        """One page (newest first) of a folder: a MailPage."""
        return self.get(account_id).list(MailQuery(folder=folder_id, page=page, page_size=page_size))

    def order(self, account_id: str, folder_id: str, sort: str | None, reverse: bool, threads: bool):
        """Every message ID of a folder in the server's order (sort, threads): a FolderOrder."""
        return self.get(account_id).order(folder_id, sort, reverse, threads)

    def unread_ids(self, account_id: str, folder_id: str):
        """The IDs of a folder's unread messages (the server's search): a FolderOrder."""
        return self.get(account_id).unread_ids(folder_id)

    def headers(self, account_id: str, message_ids):
        """The headers of ``message_ids`` (one page of an order), in that order."""
        return self.get(account_id).headers(message_ids)

    def message(self, account_id: str, message_id: str):
        """One message, read without marking it seen."""
        return self.get(account_id).get(message_id)

    def sending_text(self) -> bool:
        return any(box.sending_text() for box in list(self._boxes.values()))

    def abort(self, opening_only: bool = False) -> None:
        """From another thread: end the open mailboxes' connections at once (the front end
        quits while a call waits on a server; see ``MailboxAdapter.abort``)."""
        for box in list(self._boxes.values()):
            box.abort(opening_only)

    def close(self) -> None:
        boxes, self._boxes = self._boxes, {}
        for box in boxes.values():
            try:
                box.close()
            except Exception:  # closing must never fail the front end's exit
                pass


# -- sign-in ------------------------------------------------------------------------------

_PROVIDERS = {"gmail": "google", "microsoft": "microsoft", "graph": "microsoft"}


def provider(account_id: str) -> tuple[str, Any]:
    """('google' | 'microsoft', account object) for an account of the user settings.

    Raises:
        ConfigError: unknown account, or an account that does not sign in with OAuth.
    """
    settings = load_settings()
    body = settings.account(account_id)
    kind = body.get("kind", "imap")
    name = _PROVIDERS.get(kind) or body.get("oauth")
    if name == "google":
        from mailtriage.backends.gmail.account import GoogleAccount  # only the provider asked for loads

        return name, GoogleAccount.from_settings(account_id, body, settings.path)
    if name == "microsoft":
        from mailtriage.backends.microsoft.account import MicrosoftAccount  # msal loads only when asked for

        return name, MicrosoftAccount.from_settings(account_id, body, settings.path)
    raise ConfigError(settings.path, f"accounts.{account_id}", f"kind {kind!r} does not sign in with OAuth",
                      "kind = \"gmail\" | \"microsoft\", or an IMAP account with oauth = \"google\" | \"microsoft\"")


def login(account_id: str, *, announce: Callable[[str], None], open_browser: bool = True,
          interactive: bool = False, timeout: float = 300.0) -> dict:
    """Run the provider's sign-in; the result is JSON-ready and holds no token."""
    name, account = provider(account_id)
    if name == "google":
        # lazy: google-auth (about 0.5 s) loads only for a Google account
        from mailtriage.backends.gmail.auth import GoogleSignIn

        return GoogleSignIn(account).login(
            announce=lambda url: announce(f"Sign in to Google as {account.address or account.id}: open\n{url}"),
            open_browser=open_browser, timeout=timeout)
    # lazy: msal (about 0.7 s) loads only for a Microsoft account
    from mailtriage.backends.microsoft.auth import MicrosoftSignIn

    signin = MicrosoftSignIn(account)
    try:
        if interactive:
            return signin.login_interactive(announce=lambda url: announce(f"Sign in to Microsoft: open\n{url}"),
                                            open_browser=open_browser, timeout=timeout)
        return signin.login_device_code(announce=announce, timeout=timeout)
    finally:
        signin.close()


def status(account_id: str) -> dict:
    """Check the saved sign-in with a real call: an IMAP account with a password logs in
    (and, for a send account, checks SMTP AUTH); an OAuth account asks its provider.

    Raises:
        ConfigError: unknown or invalid account.
        SignInNeeded: the server rejected the credentials, no password is stored, or the
            password command failed (the message never holds the password).
        Unavailable: the server cannot be reached.
    """
    settings = load_settings()
    body = settings.account(account_id)
    if body.get("kind", "imap") == "imap" and not body.get("oauth"):
        return _imap_status(account_id, settings)
    name, account = provider(account_id)
    if account.imap:
        if name == "google":
            # lazy: google-auth (about 0.5 s) loads only for a Google account
            from mailtriage.backends.gmail.auth import GoogleSignIn

            GoogleSignIn(account).access_token()
        else:
            # lazy: msal (about 0.7 s) loads only for a Microsoft account
            from mailtriage.backends.microsoft.auth import MicrosoftSignIn

            MicrosoftSignIn(account).access_token()
        return {"account": account.id, "provider": name, "signed_in": True, "scopes": list(account.scopes)}
    if name == "google":
        # lazy: google-auth or msal and their REST adapters cost 0.5–0.9 s; only this account's provider loads
        from mailtriage.backends.gmail.adapter import GmailMailbox as Mailbox
    else:
        from mailtriage.backends.microsoft.adapter import GraphMailbox as Mailbox  # type: ignore[assignment]
    mailbox = Mailbox(account)
    try:
        return {"provider": name, "signed_in": True, **mailbox.verify()}
    finally:
        mailbox.close()


def _imap_status(account_id: str, settings: UserSettings) -> dict:
    # imapclient and the IMAP adapter load only for this command, not for every account command.
    from mailtriage.backends.imap.adapter import ImapMailbox

    account = load_account(account_id, settings)
    checked = ImapMailbox(account).verify()  # a real LOGIN; always closes
    return {"provider": "imap", "signed_in": True, "host": account.host, "username": account.username,
            "password_from": "password_command" if account.password_command else "keyring", **checked}


def logout(account_id: str) -> dict:
    """Forget the saved sign-in (keyring)."""
    name, account = provider(account_id)
    if name == "google":
        # lazy: only the account's own provider is loaded
        from mailtriage.backends.gmail.account import token_key

        delete_secret(token_key(account.id))
    else:
        # lazy: msal (about 0.7 s) loads only for a Microsoft account
        from mailtriage.backends.microsoft.auth import forget_cache

        forget_cache(account.id)  # the msal cache is split across several keyring entries
    return {"account": account.id, "provider": name, "signed_in": False}


def set_password(account_id: str, secret: str, *, smtp: bool = False) -> dict:
    """Keep an IMAP (or SMTP) password in the keyring (check the account first: :func:`check_account`).

    Raises:
        ConfigError: an empty password.
        KeyringUnavailable: no usable keyring service; the message says what the options are
            (``password_command``, a Secret Service, another keyring backend).
    """
    if not secret:
        raise ConfigError("(stdin)", "password", "is empty", "a non-empty password")
    key = smtp_password_key(account_id) if smtp else password_key(account_id)
    store_secret(key, secret, account_id)  # KeyringUnavailable (with the options) on a headless machine
    return {"account": account_id, "stored": key}


def check_account(account_id: str) -> None:
    """Raises ConfigError naming the valid accounts when ``account_id`` is unknown."""
    load_settings().account(account_id)
