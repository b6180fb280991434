"""Microsoft Graph (v1.0) mail calls over our HTTP client, with the account's msal token.

Every request carries ``Authorization: Bearer`` (redacted in the trace) and
``Prefer: IdType="ImmutableId"``, so message IDs survive moves between folders. A 401
asks msal for a fresh token once and retries once; 429 and 503 are retried by
:class:`HttpClient` as ``Retry-After`` says. Errors:

* 401 after the refresh -> :class:`SignInNeeded`; 403 ``ErrorAccessDenied`` ->
  :class:`SignInNeeded` when the grant lacks a scope is the likely cause (named);
* 429 / 5xx after the retries, transport failures -> :class:`Unavailable`;
* 404 -> :class:`GraphNotFound`; 410 -> :class:`GraphGone` (an expired delta token);
  other 4xx -> :class:`BackendFailure` with Graph's code and message.

``next`` links (``@odata.nextLink``, ``@odata.deltaLink``) are followed only when they
point below the configured ``graph_base``, so a token never goes to another host.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Mapping

from mailtriage.backends.errors import BackendFailure, SignInNeeded, Unavailable
from mailtriage.backends.microsoft.account import MicrosoftAccount
from mailtriage.backends.microsoft.auth import MicrosoftSignIn
from mailtriage.backends.oauth_http import make_client
from mailtriage.core.http import HttpClient, HttpError

IMMUTABLE = 'IdType="ImmutableId"'


class GraphNotFound(BackendFailure):
    """The message, folder or category does not exist (any more)."""


class GraphGone(BackendFailure):
    """410: a delta token Graph no longer knows."""


class GraphApi:
    def __init__(self, account: MicrosoftAccount, *, signin: MicrosoftSignIn | None = None,
                 http: HttpClient | None = None) -> None:
        self.account = account
        self.signin = signin or MicrosoftSignIn(account)
        self.base = account.graph_base.rstrip("/")
        self.http = http or make_client(f"graph:{account.id}", timeout=account.timeout, ca_file=account.ca_file)

    def url(self, path: str) -> str:
        return path if path.startswith(("https://", "http://")) else f"{self.base}{path}"

    def owns(self, url: str) -> bool:
        return url.startswith(self.base + "/")

    def call(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None,
             what: str, raw: bool = False, headers: Mapping[str, str] | None = None) -> Any:
        """One Graph call: decoded JSON (None for 202/204), or bytes with ``raw``."""
        url = self.url(path)
        if not self.owns(url):
            raise BackendFailure(self.account.id, f"Graph {what}: refusing to send the token to {url!r} "
                                                  f"(not under {self.base})")
        token = self.signin.access_token()
        response = self._send(method, url, params, body, token, what, headers)
        if response.status_code == 401:
            token = self.signin.access_token(rejected=token)
            response = self._send(method, url, params, body, token, what, headers)
            if response.status_code == 401:
                code, message = _error(response)
                raise SignInNeeded(self.account.id, f"Graph rejected the fresh access token of account "
                                                    f"{self.account.id!r} ({code}: {message}); run "
                                                    f"`mailtriage account login {self.account.id}`")
        return self._decode(response, what, raw)

    def _send(self, method, url, params, body, token, what, extra):
        headers = {"Authorization": f"Bearer {token}", "Prefer": IMMUTABLE, "Accept": "application/json"}
        headers.update(extra or {})
        kwargs: dict[str, Any] = {"params": {k: v for k, v in (params or {}).items() if v is not None} or None,
                                  "headers": headers}
        if body is not None:
            kwargs["content"] = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        try:
            return self.http.request(method, url, **kwargs)
        except HttpError as exc:
            raise Unavailable(self.account.id, f"Graph {what}: {exc.detail}") from None

    def _decode(self, response, what: str, raw: bool) -> Any:
        status = response.status_code
        if 200 <= status < 300:
            if raw:
                return response.content
            if status in (202, 204) or not response.content:
                return None
            try:
                return response.json()
            except ValueError:
                raise BackendFailure(self.account.id, f"Graph {what}: the answer is not JSON") from None
        code, message = _error(response)
        text = f"Graph {what}: {status} {code}: {message}".rstrip(": ")
        if status == 404:
            raise GraphNotFound(self.account.id, text)
        if status == 410:
            raise GraphGone(self.account.id, text)
        if status == 403 and code == "ErrorAccessDenied":
            raise SignInNeeded(self.account.id, f"{text}; the sign-in of account {self.account.id!r} may lack a "
                                                f"scope for this: run `mailtriage account login {self.account.id}`")
        if status == 429 or status >= 500:
            raise Unavailable(self.account.id, text)
        raise BackendFailure(self.account.id, text)

    def get(self, path: str, what: str, **params: Any) -> Any:
        return self.call("GET", path, params=params, what=what)

    def post(self, path: str, body: Any, what: str) -> Any:
        return self.call("POST", path, body=body, what=what)

    def patch(self, path: str, body: Any, what: str) -> Any:
        return self.call("PATCH", path, body=body, what=what)

    def pages(self, path: str, what: str, *, limit: int | None = None, **params: Any) -> Iterator[dict]:
        """The ``value`` items of a collection, following ``@odata.nextLink``."""
        page = self.get(path, what, **params) or {}
        seen = 0
        while True:
            for item in page.get("value") or ():
                yield item
                seen += 1
                if limit is not None and seen >= limit:
                    return
            link = page.get("@odata.nextLink")
            if not link:
                return
            page = self.get(link, what) or {}

    def close(self) -> None:
        self.http.close()
        self.signin.close()


def _error(response) -> tuple[str, str]:
    try:
        body = response.json()
    except ValueError:
        return "", response.reason_phrase or ""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("code") or ""), str(error.get("message") or "")[:300]
    return "", str(error or "")[:300]
