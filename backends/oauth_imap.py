"""OAuth token providers for IMAP accounts that sign in with Google or Microsoft.

An IMAP account with ``auth = "xoauth2"`` (or ``"oauthbearer"``) and ``oauth = "google"``
or ``oauth = "microsoft"`` in its ``[accounts.<id>]`` table gets its access token from
that provider's sign-in (saved by ``mailtriage account login <id>``), fresh at every
login. :func:`provider_for` builds the provider from the user settings; the IMAP
connection asks it when no provider was registered for the account explicitly.
"""

from __future__ import annotations

from typing import Callable

from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.settings import load_settings

PROVIDERS = ("google", "microsoft")


def provider_for(account_id: str, settings=None) -> Callable[[object], str] | None:
    """A token provider for ``account_id``, or None when its settings name no OAuth provider.

    Raises ConfigError when the account names a provider but its settings are invalid.
    """
    try:
        settings = settings or load_settings()
        body = settings.accounts().get(account_id)
    except ConfigError:
        return None
    if not body or body.get("oauth") is None:
        return None
    provider = body.get("oauth")
    if provider not in PROVIDERS:
        raise ConfigError(settings.path, f"accounts.{account_id}.oauth", f"unknown provider {provider!r}",
                          " | ".join(PROVIDERS))
    # Lazy: every IMAP connection imports this module, and the two sign-ins (with the OAuth
    # HTTP transports) add about 45 ms; an account loads only the provider it names.
    if provider == "google":
        # lazy, as above: the Google sign-in loads only for a Google account
        from mailtriage.backends.gmail.account import GoogleAccount
        from mailtriage.backends.gmail.auth import GoogleSignIn

        google = GoogleSignIn(GoogleAccount.from_settings(account_id, body, settings.path))
        return lambda _account: google.access_token()
    # lazy, as above: the Microsoft sign-in loads only for a Microsoft account
    from mailtriage.backends.microsoft.account import MicrosoftAccount
    from mailtriage.backends.microsoft.auth import MicrosoftSignIn

    microsoft = MicrosoftSignIn(MicrosoftAccount.from_settings(account_id, body, settings.path))
    return lambda _account: microsoft.access_token()
