"""The Gmail REST API (v1) over our HTTP client, with the account's OAuth token.

One :class:`GmailApi` per account. Every call carries ``Authorization: Bearer`` (the
trace redacts it); a 401 refreshes the token once and retries once; 429 and 503 are
retried by :class:`HttpClient` as Retry-After says. Errors map to the backend errors:

* 401 after the refresh -> :class:`SignInNeeded` (naming the account);
* 403 ``insufficientPermissions`` -> :class:`SignInNeeded` (the grant lacks a scope);
  403 rate limits, 429 and 5xx after the retries, transport failures -> :class:`Unavailable`;
* 404 -> :class:`GmailNotFound`; other 4xx -> :class:`BackendFailure` with Google's message.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Mapping

from mailtriage.backends.errors import BackendFailure, SignInNeeded, Unavailable
from mailtriage.backends.gmail.account import GoogleAccount
from mailtriage.backends.gmail.auth import GoogleSignIn
from mailtriage.backends.oauth_http import make_client
from mailtriage.core.http import HttpClient, HttpError

USER = "/gmail/v1/users/me"
_RATE_REASONS = {"rateLimitExceeded", "userRateLimitExceeded", "quotaExceeded", "backendError"}


class GmailNotFound(BackendFailure):
    """The message, thread, draft or label does not exist (any more)."""


class GmailApi:
    def __init__(self, account: GoogleAccount, *, signin: GoogleSignIn | None = None,
                 http: HttpClient | None = None) -> None:
        self.account = account
        self.signin = signin or GoogleSignIn(account)
        self.http = http or make_client(f"gmail:{account.id}", account.api_base, timeout=account.timeout,
                                        ca_file=account.ca_file)

    @property
    def requests_sent(self) -> int:
        return self.http.requests_sent

    def call(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None,
             what: str) -> Any:
        """One API call; returns the decoded JSON (None for an empty 204). See the module doc for errors."""
        token = self.signin.access_token()
        response = self._send(method, path, params, body, token, what)
        if response.status_code == 401:
            token = self.signin.refresh_after_rejection(token)
            response = self._send(method, path, params, body, token, what)
            if response.status_code == 401:
                raise SignInNeeded(self.account.id, f"Gmail rejected the fresh access token of account "
                                                    f"{self.account.id!r} ({_message(response)}); run "
                                                    f"`mailtriage account login {self.account.id}`")
        return self._decode(response, what)

    def _send(self, method: str, path: str, params, body, token: str, what: str):
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        kwargs: dict[str, Any] = {"params": _params(params), "headers": headers}
        if body is not None:
            kwargs["content"] = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        try:
            return self.http.request(method, path, **kwargs)
        except HttpError as exc:
            raise Unavailable(self.account.id, f"Gmail {what}: {exc.detail}") from None

    def _decode(self, response, what: str) -> Any:
        status = response.status_code
        if 200 <= status < 300:
            if status == 204 or not response.content:
                return None
            try:
                return response.json()
            except ValueError:
                raise BackendFailure(self.account.id, f"Gmail {what}: the answer is not JSON") from None
        reason = _reason(response)
        text = f"Gmail {what}: {status} {_message(response)}"
        if status == 404:
            raise GmailNotFound(self.account.id, text)
        if status == 403 and reason == "insufficientPermissions":
            raise SignInNeeded(self.account.id, f"{text}; the sign-in of account {self.account.id!r} lacks a "
                                                f"scope for this: run `mailtriage account login {self.account.id}`")
        if status in (429, 503) or status >= 500 or (status == 403 and reason in _RATE_REASONS):
            raise Unavailable(self.account.id, text)
        raise BackendFailure(self.account.id, text)

    def get(self, path: str, what: str, **params: Any) -> Any:
        return self.call("GET", path, params=params, what=what)

    def post(self, path: str, body: Any, what: str, **params: Any) -> Any:
        return self.call("POST", path, params=params, body=body, what=what)

    def pages(self, path: str, key: str, what: str, *, limit: int | None = None, **params: Any) -> Iterator[dict]:
        """Items of a paged list (``nextPageToken``), stopping after ``limit`` items."""
        token = None
        seen = 0
        while True:
            page = self.get(path, what, **params, **({"pageToken": token} if token else {})) or {}
            for item in page.get(key) or ():
                yield item
                seen += 1
                if limit is not None and seen >= limit:
                    return
            token = page.get("nextPageToken")
            if not token:
                return

    def close(self) -> None:
        self.http.close()


def _params(params: Mapping[str, Any] | None) -> list[tuple[str, str]] | None:
    if not params:
        return None
    out: list[tuple[str, str]] = []
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            out.extend((key, str(v)) for v in value)
        elif isinstance(value, bool):
            out.append((key, "true" if value else "false"))
        else:
            out.append((key, str(value)))
    return out


def _error(response) -> dict:
    try:
        body = response.json()
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _message(response) -> str:
    error = _error(response)
    return str(error.get("message") or error.get("status") or response.reason_phrase or "")[:300]


def _reason(response) -> str:
    errors = _error(response).get("errors") or []
    if errors and isinstance(errors[0], dict):
        return str(errors[0].get("reason") or "")
    return ""
