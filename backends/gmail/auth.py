"""Google sign-in: the installed-app OAuth flow and token refresh (google-auth).

* :meth:`GoogleSignIn.login` runs the installed-app flow of RFC 8252: a loopback
  redirect (``http://127.0.0.1:<port>/``) with PKCE (S256) and a ``state`` check. The URL
  is printed (and opened in a browser when asked); the code is exchanged at the
  configured ``token_uri`` through our HTTP client.
* The saved tokens are kept in memory: keyring is read at the first call, when a refresh
  is due and on a 401, never once per request (a Secret Service read opens a D-Bus
  session; a 500-message thread was 500 of them).
* :meth:`GoogleSignIn.access_token` hands out a valid access token, refreshing it with
  google-auth's ``Credentials.refresh`` when it is about to expire. Refreshing happens
  under a per-account lock, and a worker that waited on the lock first re-reads keyring:
  when another worker refreshed meanwhile, it uses that token instead of refreshing
  again. A rotated refresh token (the token response carries a new one) replaces the
  old one in keyring.
* Tokens live in keyring only (``google-token:<account>``), never in a file, a log or
  the protocol trace.

Errors: :class:`SignInNeeded` only when Google says the grant is gone or never was
(``invalid_grant``: revoked, or 7 days old for an app in Testing status -- the saved
``signed_in`` time tells which to name --; asked once per refused grant, not once per
waiting worker), no saved sign-in,
scopes no longer cover the account's access, no client secret in keyring at login);
a token endpoint that is down, throttling or unreachable is :class:`Unavailable`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from datetime import datetime, timedelta, timezone
from typing import Callable, ClassVar
from urllib.parse import urlencode

from mailtriage.backends.errors import SignInNeeded, Unavailable
from mailtriage.backends.gmail.account import GoogleAccount, client_secret_key, token_key
from mailtriage.backends.oauth_http import GoogleTransport, LoopbackRedirect, make_client
from mailtriage.core.http import HttpClient, HttpError, RetryPolicy
from mailtriage.core.secrets import get_secret, set_secret
from mailtriage.core.trace import TRACE

# Refresh this long before the access token expires, so a call never starts with a token
# that dies in flight.
EXPIRY_MARGIN = timedelta(seconds=60)
# OAuth error codes that mean "the saved grant is no good: sign in again".
SIGN_IN_ERRORS = frozenset({"invalid_grant", "invalid_token", "unauthorized_client", "access_denied",
                            "consent_required", "interaction_required"})


class GoogleSignIn:
    """Tokens of one Google account. Thread-safe; share one per account or not, the lock is per account."""

    _locks: ClassVar[dict[tuple[str, str], threading.Lock]] = {}
    _locks_guard: ClassVar[threading.Lock] = threading.Lock()
    # (account, token URI) -> (digest of a refresh token Google refused, the error said): the
    # workers waiting on the lock, and later calls, get that answer without asking again.
    _refused: ClassVar[dict[tuple[str, str], tuple[str, str]]] = {}

    def __init__(self, account: GoogleAccount, *, http: HttpClient | None = None) -> None:
        self.account = account
        # google-auth retries the token endpoint itself; ours must not retry on top of it.
        self._http = http or make_client(f"google-token:{account.id}", timeout=account.timeout,
                                         ca_file=account.ca_file, retry=RetryPolicy(attempts=1))
        self.refreshes = 0  # how many refreshes this object made (tests, the console)
        self._data: dict | None = None  # the saved tokens as last read or saved (checked by _require)

    @property
    def channel(self) -> str:
        return f"google:{self.account.id}"

    def _lock(self) -> threading.Lock:
        key = (self.account.id, self.account.token_uri)
        with self._locks_guard:
            return self._locks.setdefault(key, threading.Lock())

    # -- stored tokens -----------------------------------------------------------------
    def stored(self) -> dict | None:
        """The saved tokens (a dict) or None when this account never signed in."""
        text = get_secret(token_key(self.account.id))
        if text is None:
            return None
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("refresh_token"), str):
            raise SignInNeeded(self.account.id, f"the saved Google sign-in of account {self.account.id!r} is "
                                                f"unreadable; run `mailtriage account login {self.account.id}`")
        return data

    def _save(self, data: dict) -> None:
        set_secret(token_key(self.account.id), json.dumps(data))
        self._data = data

    def _fresh(self, data: dict) -> bool:
        token, expiry = data.get("access_token"), data.get("expiry")
        if not token or not expiry:
            return False
        try:
            when = datetime.fromisoformat(expiry)
        except ValueError:
            return False
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return when - datetime.now(timezone.utc) > EXPIRY_MARGIN

    def _require(self) -> dict:
        data = self.stored()
        if data is None:
            raise SignInNeeded(self.account.id, f"account {self.account.id!r} has not signed in with Google; "
                                                f"run `mailtriage account login {self.account.id}`")
        granted = set(data.get("scopes") or ())
        missing = [s for s in self.account.scopes if s not in granted]
        if granted and missing:
            raise SignInNeeded(self.account.id, f"the Google sign-in of account {self.account.id!r} does not "
                                                f"grant {', '.join(missing)} (its access setting changed); run "
                                                f"`mailtriage account login {self.account.id}`")
        self._data = data
        return data

    def abort(self, opening_only: bool = False) -> None:
        """From another thread (the app quits): end a token request waiting on Google."""
        self._http.abort(opening_only)

    # -- access tokens -------------------------------------------------------------------
    def access_token(self) -> str:
        """A valid access token (refreshed under the lock when due).

        Raises SignInNeeded (no sign-in, revoked grant) or Unavailable (token endpoint down).
        """
        data = self._data or self._require()  # keyring only at the first call
        if self._fresh(data):
            return data["access_token"]
        with self._lock():
            data = self._require()  # another worker may have refreshed while we waited
            if self._fresh(data):
                return data["access_token"]
            return self._refresh(data)

    def refresh_after_rejection(self, rejected: str) -> str:
        """The API answered 401 to ``rejected``: refresh (once for all waiting workers)."""
        with self._lock():
            data = self._require()
            if data.get("access_token") != rejected and self._fresh(data):
                return data["access_token"]
            return self._refresh(data)

    def _refresh(self, data: dict) -> str:
        # Lazy: google-auth's credentials cost over 0.1 s to import; only a token refresh needs them.
        from google.auth import exceptions
        from google.oauth2.credentials import Credentials

        account = self.account
        key = (account.id, account.token_uri)
        digest = hashlib.sha256(data["refresh_token"].encode("utf-8")).hexdigest()
        refused = self._refused.get(key)
        if refused is not None and refused[0] == digest:
            raise SignInNeeded(account.id, refused[1])  # one attempt per refused grant, not one per worker
        TRACE.log(self.channel, "!", f"refreshing the access token at {account.token_uri}")
        creds = Credentials(token=None, refresh_token=data["refresh_token"], token_uri=account.token_uri,
                            client_id=account.client_id,
                            client_secret=get_secret(client_secret_key(account.id)) or "",
                            scopes=list(data.get("scopes") or account.scopes))
        try:
            creds.refresh(GoogleTransport(self._http))
        except exceptions.RefreshError as exc:
            failure = self._refresh_failure(exc, data)
            if isinstance(failure, SignInNeeded):
                self._refused[key] = (digest, failure.reason)
            raise failure from None
        except exceptions.TransportError as exc:
            raise Unavailable(account.id, f"cannot reach Google's token endpoint {account.token_uri}: {exc}") from None
        self.refreshes += 1
        expiry = creds.expiry or (datetime.now(timezone.utc) + timedelta(hours=1)).replace(tzinfo=None)
        granted = list(creds.granted_scopes or data.get("scopes") or account.scopes)
        self._save({
            "refresh_token": creds.refresh_token or data["refresh_token"],  # rotated when Google sent a new one
            "access_token": creds.token,
            "expiry": expiry.replace(tzinfo=timezone.utc).isoformat(),
            "scopes": granted,
            **({"signed_in": data["signed_in"]} if data.get("signed_in") else {}),
        })
        TRACE.log(self.channel, "!", "access token refreshed")
        return creds.token

    def _refresh_failure(self, exc: Exception, data: dict) -> Exception:
        account = self.account
        details = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], dict) else {}
        error = str(details.get("error") or "")
        summary = str(exc.args[0]) if exc.args else type(exc).__name__
        if getattr(exc, "retryable", False):
            return Unavailable(account.id, f"Google's token endpoint cannot refresh now ({summary})")
        if error == "invalid_grant":
            return SignInNeeded(account.id, _invalid_grant(account.id, summary, _age_days(data)))
        if error in SIGN_IN_ERRORS or "scopes" in summary.lower():
            return SignInNeeded(account.id, f"Google refused the saved sign-in of account {account.id!r} "
                                            f"({summary}); run `mailtriage account login {account.id}`")
        if error == "invalid_client":
            return Unavailable(account.id, f"Google rejected the OAuth client {account.client_id!r} ({summary}); "
                                           f"check client_id and the client secret in keyring "
                                           f"({client_secret_key(account.id)!r})")
        return Unavailable(account.id, f"refreshing the Google token of account {account.id!r} failed: {summary}")

    # -- sign-in -------------------------------------------------------------------------
    def login(self, *, announce: Callable[[str], None] = print, open_browser: bool = True,
              timeout: float = 300.0, port: int = 0) -> dict:
        """Run the installed-app flow and save the tokens. Returns what was granted (no tokens).

        ``announce`` receives the sign-in URL (also opened in a browser when
        ``open_browser``). Raises SignInNeeded when the user refuses, the state does not
        match, the flow times out or Google returns no refresh token; Unavailable when
        the token endpoint cannot be reached.
        """
        account = self.account
        if not get_secret(client_secret_key(account.id)):
            # Google's token endpoint would refuse the code with a bare "invalid_request"
            # after the user consented; say what is missing before the browser opens.
            raise SignInNeeded(account.id, f"no client secret for account {account.id!r} in keyring: store the "
                                           f"Desktop client's secret first (`keyring set mailtriage "
                                           f"{client_secret_key(account.id)}`, see docs/gmail.md)")
        verifier = secrets.token_urlsafe(72)[:96]
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).decode().rstrip("=")
        state = secrets.token_urlsafe(24)
        server = LoopbackRedirect(("127.0.0.1", port))
        try:
            redirect_uri = f"http://127.0.0.1:{server.server_address[1]}/"
            params = {
                "response_type": "code", "client_id": account.client_id, "redirect_uri": redirect_uri,
                "scope": " ".join(account.scopes), "state": state, "code_challenge": challenge,
                "code_challenge_method": "S256", "access_type": "offline", "prompt": "consent",
            }
            if account.address:
                params["login_hint"] = account.address
            url = f"{account.auth_uri}?{urlencode(params)}"
            announce(url)
            if open_browser:
                import webbrowser  # lazy: only an interactive sign-in opens a browser (~50 ms)

                webbrowser.open(url)
            result = server.wait(timeout)
        finally:
            server.server_close()
        if result is None:
            raise SignInNeeded(account.id, f"no answer from the browser within {timeout:g} s; sign-in abandoned")
        if result.get("state") != state:
            raise SignInNeeded(account.id, "the sign-in answer does not carry our state (a stale or forged "
                                           "redirect); nothing saved")
        if result.get("error") == "access_denied":
            raise SignInNeeded(account.id, "Google sign-in refused: access_denied (you declined, or the OAuth app "
                                           f"is in Testing status and {account.address or 'this account'} is not "
                                           "one of its test users: add it on the OAuth consent screen)")
        if result.get("error"):
            raise SignInNeeded(account.id, f"Google sign-in refused: {result['error']}")
        if not result.get("code"):
            raise SignInNeeded(account.id, "the redirect carried no authorization code")
        return self._exchange(result["code"], redirect_uri, verifier)

    def _exchange(self, code: str, redirect_uri: str, verifier: str) -> dict:
        account = self.account
        form = {"grant_type": "authorization_code", "code": code, "client_id": account.client_id,
                "redirect_uri": redirect_uri, "code_verifier": verifier}
        secret = get_secret(client_secret_key(account.id))
        if secret:
            form["client_secret"] = secret
        try:
            response = self._http.post(account.token_uri, data=form, headers={"Accept": "application/json"})
        except HttpError as exc:
            raise Unavailable(account.id, f"cannot reach Google's token endpoint: {exc.detail}") from None
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.status_code >= 500 or response.status_code == 429:
            raise Unavailable(account.id, f"Google's token endpoint answered {response.status_code}")
        if response.status_code != 200 or not isinstance(body, dict) or "access_token" not in body:
            error = body.get("error") if isinstance(body, dict) else None
            raise SignInNeeded(account.id, f"Google refused the authorization code ({error or response.status_code})")
        if not body.get("refresh_token"):
            raise SignInNeeded(account.id, "Google returned no refresh token (revoke mailtriage's access at "
                                           "myaccount.google.com/permissions and sign in again)")
        granted = str(body.get("scope") or " ".join(account.scopes)).split()
        expiry = datetime.now(timezone.utc) + timedelta(seconds=int(body.get("expires_in") or 3600))
        self._save({"refresh_token": body["refresh_token"], "access_token": body["access_token"],
                    "expiry": expiry.isoformat(), "scopes": granted,
                    "signed_in": datetime.now(timezone.utc).isoformat()})  # tells a revoke from the 7-day expiry
        missing = [s for s in account.scopes if s not in granted]
        return {"account": account.id, "provider": "google", "scopes": granted, "missing_scopes": missing,
                "expires": expiry.isoformat()}


def _age_days(data: dict) -> float | None:
    """Days since the saved sign-in was made (None when it predates the record)."""
    try:
        when = datetime.fromisoformat(str(data.get("signed_in")))
    except ValueError:
        return None
    when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    return (datetime.now(timezone.utc) - when).total_seconds() / 86400


def _invalid_grant(account_id: str, summary: str, age: float | None) -> str:
    """Why Google refused the refresh token (``invalid_grant``) and what to do."""
    again = f"sign in again with `mailtriage account login {account_id}`"
    summary = summary if "invalid_grant" in summary else f"invalid_grant: {summary}"
    if age is not None and age < 7:
        return (f"Google revoked the saved sign-in of account {account_id!r} ({summary}): the "
                f"access was removed in the Google account's security settings, the password changed, or an "
                f"administrator revoked it; {again}")
    # Refresh tokens of an OAuth app in "Testing" status expire 7 days after the sign-in
    # (Google Identity, "Using OAuth 2.0": refresh token expiration).
    aged = f"it is {age:.0f} days old, and" if age is not None else "it was revoked, or"
    return (f"Google no longer accepts the saved sign-in of account {account_id!r} ({summary}): "
            f"{aged} Testing-status apps expire every 7 days; {again}")
