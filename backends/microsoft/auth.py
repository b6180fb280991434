"""Microsoft sign-in with msal: a ``PublicClientApplication`` whose token cache lives in keyring.

The cache (4-7 KB) is split across keyring entries of at most 1,000 characters, so it fits
Windows Credential Manager (2,560 bytes of UTF-16 per entry); see :func:`save_cache`.

* :meth:`MicrosoftSignIn.login_device_code` — the device-code flow (a code to type at a
  Microsoft page; works over SSH).
* :meth:`MicrosoftSignIn.login_interactive` — the authorization-code flow with PKCE and
  a loopback redirect (``http://localhost:<port>``, listened on 127.0.0.1 and ::1, the
  answer a ``form_post`` POST or a GET), through msal's
  ``initiate_auth_code_flow`` / ``acquire_token_by_auth_code_flow`` (msal checks state,
  PKCE and the ID token's nonce).
* :meth:`MicrosoftSignIn.access_token` — the access token msal last gave, from memory,
  while it has more than :data:`REFRESH_MARGIN` to live; otherwise (at start, when a
  refresh is due, on a 401) msal's ``acquire_token_silent_with_error`` under a
  per-account lock with the cache reloaded from keyring first, so two workers never
  refresh at once and a refresh token another process rotated is used; the cache is
  written back to keyring when msal changed it (rotated refresh tokens included). So a
  Graph request reads no keyring entry (a Secret Service read opens a D-Bus session).

msal talks HTTP through our client (:class:`mailtriage.backends.oauth_http.MsalTransport`).
The authority is configuration; instance discovery is off (msal would otherwise ask
login.microsoftonline.com about any other host), and authority validation follows it.

"Sign-in needed" only for the errors that mean it (``invalid_grant``,
``interaction_required``, ``login_required``, ``consent_required``, no account in the
cache); a token endpoint that is down or throttling, or unreachable, is an outage.
"""

from __future__ import annotations

import secrets
import threading
import time
from typing import Callable, ClassVar

from mailtriage.backends.errors import SignInNeeded, Unavailable
from mailtriage.backends.microsoft.account import MicrosoftAccount, cache_key
from mailtriage.backends.oauth_http import HttpStatusError, LoopbackRedirect, MsalTransport, make_client
from mailtriage.core.http import HttpError, RetryPolicy
from mailtriage.core.secrets import delete_secret, get_secret, remember_secret, set_secret
from mailtriage.core.trace import TRACE

# msal itself refreshes an access token with 5 minutes or less to live; so do we.
REFRESH_MARGIN = 300.0

# AADSTS codes of a tenant that refuses the sign-in itself, not the saved one: a
# Conditional Access policy (53003 blocked, often the device-code flow; 53000/53001/53002
# device not compliant, not joined, app not approved) and consent the user cannot give
# (65001 not consented; 90094/90095 needs an administrator).
CONDITIONAL_ACCESS_CODES = frozenset({53000, 53001, 53002, 53003})
CONSENT_CODES = frozenset({65001, 90094, 90095})

SIGN_IN_ERRORS = frozenset({"invalid_grant", "interaction_required", "login_required", "consent_required",
                            "invalid_resource", "unauthorized_client", "access_denied", "expired_token",
                            "authorization_declined", "bad_verification_code"})


class MicrosoftSignIn:
    _locks: ClassVar[dict[str, threading.Lock]] = {}
    _locks_guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, account: MicrosoftAccount, *, transport: MsalTransport | None = None) -> None:
        self.account = account
        # msal throttles and retries on its own; our client must not retry on top of it.
        self.transport = transport or MsalTransport(make_client(f"msal:{account.id}", timeout=account.timeout,
                                                                ca_file=account.ca_file,
                                                                retry=RetryPolicy(attempts=1)))
        self._app = None
        self._cache = None
        self._token: tuple[str, float] | None = None  # the last access token msal gave, and when it expires

    @property
    def channel(self) -> str:
        return f"microsoft:{self.account.id}"

    def _lock(self) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(self.account.id, threading.Lock())

    # -- msal plumbing ----------------------------------------------------------------------
    def _application(self):
        """The PublicClientApplication, its cache (re)loaded from keyring. Raises Unavailable."""
        # Lazy here and below: msal costs over 0.1 s to import; only a signed-in Microsoft
        # account pays for it, not every start of the app.
        import msal

        cache = msal.SerializableTokenCache()
        saved = load_cache(self.account.id)
        if saved:
            try:
                cache.deserialize(saved)
            except ValueError:
                raise SignInNeeded(self.account.id, f"the saved Microsoft sign-in of account {self.account.id!r} "
                                                    f"is unreadable; run `mailtriage account login "
                                                    f"{self.account.id}`") from None
        self._cache = cache
        if self._app is None:
            try:
                self._app = msal.PublicClientApplication(
                    self.account.client_id, authority=self.account.authority, token_cache=cache,
                    http_client=self.transport, instance_discovery=False, validate_authority=False)
            except (HttpError, HttpStatusError) as exc:
                raise Unavailable(self.account.id, f"cannot reach the Microsoft authority "
                                                   f"{self.account.authority}: {exc}") from None
            except ValueError as exc:
                raise Unavailable(self.account.id, f"the Microsoft authority {self.account.authority} is not "
                                                   f"usable: {exc}") from None
        else:
            self._app.token_cache = cache
        return self._app

    def _save(self) -> None:
        if self._cache is not None and self._cache.has_state_changed:
            save_cache(self.account.id, self._cache.serialize())
            self._cache.has_state_changed = False

    def _result(self, result: dict | None, what: str) -> str:
        """The access token of an msal result, or the right error."""
        if result and "access_token" in result:
            self._save()
            lifetime = float(result.get("expires_in") or 0)
            self._token = (result["access_token"], _now() + lifetime) if lifetime > 0 else None
            return result["access_token"]
        error = str((result or {}).get("error") or "")
        description = str((result or {}).get("error_description") or "").split("\r\n")[0][:300]
        account = self.account.id
        if not result:
            raise SignInNeeded(account, f"no Microsoft sign-in saved for account {account!r}; run "
                                        f"`mailtriage account login {account}`")
        refusal = self._tenant_refusal(result, what, description)
        if refusal:
            raise SignInNeeded(account, refusal)
        if error in SIGN_IN_ERRORS:
            raise SignInNeeded(account, f"Microsoft refused the saved sign-in of account {account!r} ({error}: "
                                        f"{description}); run `mailtriage account login {account}`")
        raise Unavailable(account, f"Microsoft {what} failed ({error or 'no token'}: {description})")

    def _tenant_refusal(self, result: dict, what: str, description: str) -> str | None:
        """What to do when the tenant itself refuses (Conditional Access, consent), or None:
        signing in the same way again cannot help."""
        codes = {int(c) for c in result.get("error_codes") or () if str(c).isdigit()}
        account, client = self.account.id, self.account.client_id
        consent_url = f"{self.account.authority.rstrip('/')}/adminconsent?client_id={client}"
        if codes & CONDITIONAL_ACCESS_CODES:
            instead = (f"sign in with a browser on this machine instead: `mailtriage account login {account} "
                       f"--interactive`; if that is blocked too, " if what == "device-code sign-in" else "")
            return (f"Microsoft refused the {what} of account {account!r}: a Conditional Access policy of the "
                    f"tenant blocked it ({description}). Running the same command again will not help; "
                    f"{instead}ask your Microsoft 365 admin to allow mailtriage (app {client}) under the "
                    f"tenant's Conditional Access policies or to grant it admin consent ({consent_url})")
        if codes & CONSENT_CODES:
            return (f"Microsoft refused the {what} of account {account!r}: the app {client} needs admin consent "
                    f"for the scopes it asks ({description}). Ask your Microsoft 365 admin to grant it "
                    f"({consent_url}), then run `mailtriage account login {account}`"
                    + (" (or `--interactive`, where the tenant lets users consent)" if 65001 in codes else ""))
        return None

    def _call(self, what: str, fn):
        # msal (about 0.7 s) is loaded only once a sign-in runs; its exceptions with it
        from msal.exceptions import MsalServiceError

        try:
            return fn()
        except (HttpError, HttpStatusError, MsalServiceError) as exc:
            # Transport failures and 5xx answers (msal raises for those): an outage, never a sign-out.
            raise Unavailable(self.account.id, f"Microsoft {what}: {exc}") from None

    # -- tokens --------------------------------------------------------------------------------
    def access_token(self, *, force_refresh: bool = False, rejected: str | None = None) -> str:
        """A valid access token. ``rejected``: Graph answered 401 to this token, so refresh
        unless another worker already did. Raises SignInNeeded / Unavailable."""
        remembered = self._token
        if remembered is not None and not force_refresh and remembered[0] != rejected \
                and remembered[1] - _now() > REFRESH_MARGIN:
            return remembered[0]  # no keyring read, no msal call
        self._token = None
        with self._lock():
            app = self._application()
            accounts = self._call("account lookup", lambda: app.get_accounts(username=self.account.address or None)
                                  or app.get_accounts())
            if not accounts:
                self._result(None, "sign-in")
            silent = lambda force: app.acquire_token_silent_with_error(  # noqa: E731
                list(self.account.scopes), account=accounts[0], force_refresh=force)
            result = self._call("token refresh", lambda: silent(force_refresh))
            if rejected is not None and result and result.get("access_token") == rejected:
                TRACE.log(self.channel, "!", "the access token was rejected; refreshing")
                result = self._call("token refresh", lambda: silent(True))
            return self._result(result, "token refresh")

    # -- sign-in ----------------------------------------------------------------------------------
    def login_device_code(self, *, announce: Callable[[str], None] = print, timeout: float = 900.0) -> dict:
        """The device-code flow. ``announce`` gets Microsoft's message (URL and code)."""
        with self._lock():
            app = self._application()
            flow = self._call("device code", lambda: app.initiate_device_flow(scopes=list(self.account.scopes)))
            if "user_code" not in flow:
                raise Unavailable(self.account.id, f"Microsoft did not start the device-code sign-in "
                                                   f"({flow.get('error')}: {flow.get('error_description')})")
            announce(str(flow.get("message") or f"Open {flow.get('verification_uri')} and enter {flow['user_code']}"))
            flow["expires_at"] = min(float(flow.get("expires_at") or 0) or 1e18, _now() + timeout)
            result = self._call("device-code sign-in", lambda: app.acquire_token_by_device_flow(flow))
            self._result(result, "device-code sign-in")
            return self._summary(result)

    def login_interactive(self, *, announce: Callable[[str], None] = print, open_browser: bool = True,
                          timeout: float = 300.0, port: int = 0) -> dict:
        """The authorization-code flow with PKCE and a loopback redirect."""
        with self._lock():
            app = self._application()
            # The redirect names localhost (what an app registration's loopback URI names), so
            # listen where a browser may resolve it: 127.0.0.1 and ::1, on one port.
            server = LoopbackRedirect(("localhost", port))
            try:
                redirect_uri = f"http://localhost:{server.server_address[1]}"
                # form_post, as msal recommends: the code comes in a POST body, never in a URL
                # (browser history); a GET with a query is still taken.
                flow = app.initiate_auth_code_flow(list(self.account.scopes), redirect_uri=redirect_uri,
                                                   login_hint=self.account.address or None,
                                                   response_mode="form_post")
                announce(flow["auth_uri"])
                if open_browser:
                    import webbrowser  # lazy: only an interactive sign-in opens a browser (~50 ms)

                    webbrowser.open(flow["auth_uri"])
                answer = server.wait(timeout)
            finally:
                server.server_close()
            if answer is None:
                raise SignInNeeded(self.account.id, f"no answer from the browser within {timeout:g} s; "
                                                    "sign-in abandoned")
            try:
                result = self._call("sign-in", lambda: app.acquire_token_by_auth_code_flow(flow, answer))
            except ValueError as exc:  # msal: state mismatch and the like
                raise SignInNeeded(self.account.id, f"the sign-in answer was refused: {exc}") from None
            self._result(result, "sign-in")
            return self._summary(result)

    def _summary(self, result: dict) -> dict:
        claims = result.get("id_token_claims") or {}
        return {"account": self.account.id, "provider": "microsoft",
                "username": claims.get("preferred_username"), "scopes": str(result.get("scope") or "").split(),
                "expires_in": result.get("expires_in")}

    def abort(self, opening_only: bool = False) -> None:
        self.transport.abort(opening_only)

    def close(self) -> None:
        self.transport.close()


def _now() -> float:
    return time.time()



# -- the cache in keyring, split across entries ---------------------------------------------
# Windows Credential Manager caps one entry at 2,560 bytes (CRED_MAX_CREDENTIAL_BLOB_SIZE,
# wincred.h), and keyring's Windows backend stores UTF-16, so 1,280 characters; msal's cache
# is 4-7 KB. It is kept as pieces of CHUNK_CHARS under ``msal-cache:<id>:<generation>:<n>``,
# and ``msal-cache:<id>`` names the generation and count. Chosen over msal-extensions, whose
# persistence is an encrypted *file* (DPAPI, Keychain, libsecret): secrets stay in keyring.
CHUNK_CHARS = 1000  # the cache is ASCII JSON: 2,000 UTF-16 bytes, a margin under the cap
_SPLIT = "msal-split:"


def _chunk_key(account_id: str, generation: str, index: int) -> str:
    return f"{cache_key(account_id)}:{generation}:{index}"


LOAD_TRIES = 5  # reads of the index when a save by another process replaced the pieces mid-read


def _parse(head: str | None) -> tuple[str, int] | None:
    if head is None or not head.startswith(_SPLIT):
        return None
    generation, _, count = head[len(_SPLIT):].partition(":")
    return (generation, int(count)) if count.isdigit() else None


def _manifest(account_id: str) -> tuple[str, int] | None:
    return _parse(get_secret(cache_key(account_id)))


def load_cache(account_id: str) -> str | None:
    """The serialized msal cache of the account, or None when it never signed in.

    A cache saved whole by an earlier version (one entry) is read as it is. The index
    entry names one generation of pieces; a save (perhaps in another process) writes a
    new generation, flips the index, then removes the old pieces. So a piece missing
    while the index has moved on means a save happened mid-read: the new generation is
    read instead, and the reader sees the old or the new cache whole, never "no sign-in".
    Only a piece missing under an unchanged index reads as no cache (sign in again).
    """
    head = get_secret(cache_key(account_id))
    for _ in range(LOAD_TRIES):
        if head is None or not head.startswith(_SPLIT):
            return head
        manifest = _parse(head)
        if manifest is None:
            return None
        generation, count = manifest
        parts: list[str] = []
        for index in range(count):
            part = get_secret(_chunk_key(account_id, generation, index))
            if part is None:
                break
            parts.append(part)
        else:
            text = "".join(parts)
            remember_secret(text)  # the tokens span pieces: only the whole JSON names them to the scrubber
            return text
        now = get_secret(cache_key(account_id))
        if now == head:
            return None  # a piece is really missing
        head = now
    return None


def save_cache(account_id: str, text: str) -> None:
    """Store the cache in pieces: new pieces first under a new generation, then the index
    entry flips to it (one write), then the old pieces go. An interrupted save leaves the
    previous cache readable; a reader mid-way follows the flip (:func:`load_cache`)."""
    remember_secret(text)  # its tokens, whole (each piece alone masks no token)
    old = _manifest(account_id)
    generation = secrets.token_hex(4)
    pieces = [text[i:i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)] or [""]
    for index, piece in enumerate(pieces):
        set_secret(_chunk_key(account_id, generation, index), piece)
    set_secret(cache_key(account_id), f"{_SPLIT}{generation}:{len(pieces)}")
    if old is not None:
        _drop(account_id, *old)


def _drop(account_id: str, generation: str, count: int) -> None:
    for index in range(count):
        delete_secret(_chunk_key(account_id, generation, index))


def forget_cache(account_id: str) -> None:
    """Remove the cache and every piece of it (``account logout``)."""
    manifest = _manifest(account_id)
    delete_secret(cache_key(account_id))
    if manifest is not None:
        _drop(account_id, *manifest)
