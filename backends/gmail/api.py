"""The Gmail REST API (v1) over our HTTP client, with the account's OAuth token.

One :class:`GmailApi` per account. Every call carries ``Authorization: Bearer`` (the
trace redacts it); a 401 refreshes the token once and retries once.

Gmail reports its per-user limits as 403 ``rateLimitExceeded`` / ``userRateLimitExceeded``
and 429, and transient faults as 500 ``backendError`` (or 502/503/504), usually without
Retry-After. Those are retried with truncated exponential backoff and jitter, as the
Gmail API's "Resolve errors" guide asks (wait 2^n s plus a random fraction, up to a
maximum), within a total deadline (:class:`Backoff`); a Retry-After is honoured when
given. Each wait is shown in the backend console: an op-log record ``backoff`` (written
as the wait starts) and a trace line. 5xx answers are retried for reads only (a write may have happened).
Errors map to the backend errors:

* 401 after the refresh -> :class:`SignInNeeded` (naming the account);
* 403 ``insufficientPermissions`` -> :class:`SignInNeeded` (the grant lacks a scope);
  rate limits and 5xx past the deadline, transport failures -> :class:`Unavailable`;
* 404 -> :class:`GmailNotFound`; other 4xx -> :class:`BackendFailure` with Google's message.

Messages (drafts.create, messages.send) go to the media-upload endpoint as raw RFC 822
bytes (:meth:`GmailApi.upload_message`): the plain endpoint takes JSON with a base64url
``raw`` (about 1.37x the message, 1.83x an attachment's file) and refuses a body over a
small limit, while ``/upload`` takes up to 35 MB.
"""

from __future__ import annotations

import json
import random
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import urlsplit

from mailtriage.backends.errors import BackendFailure, SignInNeeded, Unavailable
from mailtriage.backends.gmail.account import GoogleAccount
from mailtriage.backends.gmail.auth import GoogleSignIn
from mailtriage.backends.oauth_http import make_client
from mailtriage.core.http import HttpClient, HttpError, RetryPolicy, retry_after_seconds
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.trace import OPLOG, TRACE

USER = "/gmail/v1/users/me"
UPLOAD = "/upload" + USER
# Gmail's media upload ("Uploading attachments"): one multipart request for a small message
# (the guide: "5 MB or less"), a resumable session above; 35 MB at most a message.
RESUMABLE_ABOVE = 5 * 1024 * 1024
MAX_MESSAGE_BYTES = 35 * 1024 * 1024
_RATE_REASONS = {"rateLimitExceeded", "userRateLimitExceeded", "quotaExceeded", "backendError"}
_BACK_OFF_REASONS = {"rateLimitExceeded", "userRateLimitExceeded"}  # 403s worth waiting for (not daily quotas)
# Metadata of a listing is fetched this many requests at a time: well under Gmail's limit of
# concurrent requests per user, and a listing of 50 threads is not 50 round trips in a row.
FETCH_CONCURRENCY = 6


@frozen_dataclass
class Backoff:
    """Truncated exponential backoff with jitter: wait ``base * 2**n`` plus up to ``base``
    at random, at most ``cap`` a wait, and give up once ``deadline`` seconds have passed."""

    base: float = 1.0
    cap: float = 16.0
    deadline: float = 60.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        return min(self.cap, self.base * 2 ** (attempt - 1) + rng.uniform(0, self.base))


class GmailNotFound(BackendFailure):
    """The message, thread, draft or label does not exist (any more)."""


class GmailApi:
    def __init__(self, account: GoogleAccount, *, signin: GoogleSignIn | None = None,
                 http: HttpClient | None = None, backoff: Backoff | None = None,
                 sleep: Callable[[float], None] | None = None, rng: random.Random | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.account = account
        self.signin = signin or GoogleSignIn(account)
        # Our client does not retry: the backoff below does, for every limit Gmail reports.
        self.http = http or make_client(f"gmail:{account.id}", account.api_base, timeout=account.timeout,
                                        ca_file=account.ca_file, retry=RetryPolicy(attempts=1))
        self.backoff = backoff or Backoff()
        self._sleep = sleep or self.http.sleep  # a backoff ends as the app quits (abort)
        self._clock = clock  # with ``sleep``, what the backoff's deadline is measured on (tests: one fake clock)
        self._rng = rng or random.Random()

    @property
    def channel(self) -> str:
        return f"gmail:{self.account.id}"

    @property
    def requests_sent(self) -> int:
        return self.http.requests_sent

    def call(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None,
             what: str, content: bytes | None = None, headers: Mapping[str, str] | None = None) -> Any:
        """One API call; returns the decoded JSON (None for an empty 204). See the module doc for errors.

        ``body`` is sent as JSON; ``content`` (with its Content-Type in ``headers``) as it is."""
        return self._decode(self.exchange(method, path, params=params, body=body, what=what, content=content,
                                          headers=headers), what)

    def exchange(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None,
                 what: str, content: bytes | None = None, headers: Mapping[str, str] | None = None):
        """One API call with the backoff; returns the successful response (errors as :meth:`call`)."""
        payload = _Payload(body, content, dict(headers or {}))
        started = self._clock()
        attempt = 0
        while True:
            attempt += 1
            response = self._authorized(method, path, params, payload, what)
            wait = self._wait(method, response, attempt)
            if wait is None:
                self._decode(response, what, check_only=True)
                return response
            spent = self._clock() - started
            if spent + wait > self.backoff.deadline:
                return self._decode(response, what, gave_up=(attempt, spent))
            state = (f"{response.status_code} {_reason(response) or _message(response)}: backing off {wait:.2f}s "
                     f"(try {attempt}, {self.backoff.deadline - spent:.1f}s of {self.backoff.deadline:g}s left)")
            TRACE.log(self.channel, "!", f"{what}: {state}")
            # Recorded as the wait starts (not when it ends), so that a front end can say so
            # now: the command line prints "Gmail asked us to slow down; retrying in N s".
            with OPLOG.record(self.channel, "backoff", detail=f"{what}: {state}"):
                pass
            self._sleep(wait)

    def _wait(self, method: str, response, attempt: int) -> float | None:
        """How long to wait before trying again, or None when the answer stands."""
        status = response.status_code
        limited = status == 429 or (status == 403 and _reason(response) in _BACK_OFF_REASONS)
        transient = status in (500, 502, 503, 504) and method == "GET"
        if not (limited or transient):
            return None
        after = retry_after_seconds(response.headers.get("Retry-After"))
        return after if after is not None else self.backoff.delay(attempt, self._rng)

    def _authorized(self, method: str, path: str, params, payload: "_Payload", what: str):
        token = self.signin.access_token()
        response = self._send(method, path, params, payload, token, what)
        if response.status_code == 401:
            token = self.signin.refresh_after_rejection(token)
            response = self._send(method, path, params, payload, token, what)
            if response.status_code == 401:
                raise SignInNeeded(self.account.id, f"Gmail rejected the fresh access token of account "
                                                    f"{self.account.id!r} ({_message(response)}); run "
                                                    f"`mailtriage account login {self.account.id}`")
        return response

    def _send(self, method: str, path: str, params, payload: "_Payload", token: str, what: str):
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json", **payload.headers}
        kwargs: dict[str, Any] = {"params": _params(params), "headers": headers}
        if payload.content is not None:
            kwargs["content"] = payload.content
        elif payload.body is not None:
            kwargs["content"] = json.dumps(payload.body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        try:
            return self.http.request(method, path, **kwargs)
        except HttpError as exc:
            raise Unavailable(self.account.id, f"Gmail {what}: {exc.detail}") from exc

    def _decode(self, response, what: str, gave_up: tuple[int, float] | None = None, check_only: bool = False) -> Any:
        status = response.status_code
        if 200 <= status < 300:
            if check_only:
                return None
            if status == 204 or not response.content:
                return None
            try:
                return response.json()
            except ValueError as exc:
                raise BackendFailure(self.account.id, f"Gmail {what}: the answer is not JSON") from exc
        reason = _reason(response)
        text = f"Gmail {what}: {status} {_message(response)}"
        if status == 404:
            raise GmailNotFound(self.account.id, text)
        if status == 403 and reason == "insufficientPermissions":
            raise SignInNeeded(self.account.id, f"{text}; the sign-in of account {self.account.id!r} lacks a "
                                                f"scope for this: run `mailtriage account login {self.account.id}`")
        if status in (429, 503) or status >= 500 or (status == 403 and reason in _RATE_REASONS):
            if gave_up is not None:
                text += (f" ({reason or status}; gave up after {gave_up[0]} tries in {gave_up[1]:.1f}s, the "
                         f"backoff deadline is {self.backoff.deadline:g}s)")
            raise Unavailable(self.account.id, text)
        raise BackendFailure(self.account.id, text)

    def get(self, path: str, what: str, **params: Any) -> Any:
        return self.call("GET", path, params=params, what=what)

    def post(self, path: str, body: Any, what: str, **params: Any) -> Any:
        return self.call("POST", path, params=params, body=body, what=what)

    def upload_message(self, resource: str, raw: bytes, metadata: dict, what: str) -> Any:
        """POST a message to ``/upload/gmail/v1/users/me/<resource>`` (``drafts`` or
        ``messages/send``) as raw RFC 822 bytes; ``metadata`` is the resource's JSON without
        ``raw`` (``{"message": {"threadId": …}}`` for a draft, ``{"threadId": …}`` for a send).
        Returns the created resource. Raises BackendFailure over 35 MB, before any request."""
        if len(raw) > MAX_MESSAGE_BYTES:
            raise BackendFailure(self.account.id, f"Gmail {what}: the message is {len(raw) / 2**20:.1f} MB "
                                                  f"(attachments are base64-encoded, about 1.37x their files); "
                                                  f"Gmail takes at most 35 MB a message")
        path = f"{UPLOAD}/{resource}"
        if len(raw) <= RESUMABLE_ABOVE:
            boundary = "mailtriage-" + secrets.token_hex(16)
            content = b"".join([f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".encode(),
                                json.dumps(metadata).encode("utf-8"),
                                f"\r\n--{boundary}\r\nContent-Type: message/rfc822\r\n\r\n".encode(), raw,
                                f"\r\n--{boundary}--\r\n".encode()])
            return self.call("POST", path, params={"uploadType": "multipart"}, content=content, what=what,
                             headers={"Content-Type": f"multipart/related; boundary={boundary}"})
        started = self.exchange("POST", path, params={"uploadType": "resumable"}, body=metadata, what=what,
                                headers={"X-Upload-Content-Type": "message/rfc822",
                                         "X-Upload-Content-Length": str(len(raw))})
        session = started.headers.get("Location") or ""
        if not self._same_origin(session):
            # The session URI gets our bearer token: only ever on the API's own host.
            raise BackendFailure(self.account.id, f"Gmail {what}: the upload session is not on the API host "
                                                  f"{self.account.api_base!r}")
        return self.call("PUT", session, content=raw, what=what, headers={"Content-Type": "message/rfc822"})

    def _same_origin(self, url: str) -> bool:
        there, here = urlsplit(url), urlsplit(self.account.api_base)
        return bool(there.netloc) and (there.scheme, there.netloc) == (here.scheme, here.netloc)

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

    def fetch_all(self, fetch: Callable[[Any], Any], items) -> list:
        """``fetch(item)`` for every item, FETCH_CONCURRENCY at a time, results in order."""
        items = list(items)
        if len(items) < 2:
            return [fetch(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(FETCH_CONCURRENCY, len(items)),
                                thread_name_prefix=f"gmail-{self.account.id}") as pool:
            return list(pool.map(fetch, items))

    def fetch_present(self, fetch: Callable[[Any], Any], items) -> tuple[list, int]:
        """Like :meth:`fetch_all`, leaving out each item whose fetch found nothing (404: deleted
        since it was listed). Returns (results in order, how many were left out)."""
        def present(item):
            try:
                return fetch(item)
            except GmailNotFound:
                return _GONE

        results = self.fetch_all(present, items)
        kept = [r for r in results if r is not _GONE]
        return kept, len(results) - len(kept)

    def abort(self, opening_only: bool = False) -> None:
        """From another thread (the app quits): end the API's and the sign-in's connections."""
        self.http.abort(opening_only)
        self.signin.abort(opening_only)

    def close(self) -> None:
        self.http.close()


_GONE = object()


class PageTokens:
    """The ``nextPageToken`` of each page of recent listings (Gmail has no offset): page N of a
    listing whose page N-1 was read costs one call, not N+1. ``keep`` listings are kept."""

    def __init__(self, keep: int = 32) -> None:
        self._keep = keep
        self._known: dict[tuple, dict[int, str]] = {}
        self._lock = threading.Lock()

    def page(self, api: "GmailApi", path: str, what: str, params: Mapping[str, Any],
             number: int) -> tuple[dict, bool, int]:
        """(page ``number``, empty past the end; whether more follow; Gmail's resultSizeEstimate)."""
        key = (path, tuple(sorted((k, str(v)) for k, v in params.items())))
        with self._lock:
            tokens = dict(self._known.get(key) or {0: ""})
        start = max(n for n in tokens if n <= number)
        token, estimate = tokens[start], 0
        for n in range(start, number + 1):
            page = api.get(path, what, **params, **({"pageToken": token} if token else {})) or {}
            estimate = int(page.get("resultSizeEstimate") or estimate)
            token = page.get("nextPageToken") or ""
            if token:
                self._remember(key, n + 1, token)
            if not token and n < number:
                return {}, False, estimate
        return page, bool(token), estimate

    def _remember(self, key: tuple, number: int, token: str) -> None:
        with self._lock:
            self._known.setdefault(key, {0: ""})[number] = token
            while len(self._known) > self._keep:
                self._known.pop(next(iter(self._known)))


def deleted_note(count: int) -> str:
    """The note of a listing that left out messages deleted between the list and the read."""
    one = count == 1
    return (f"{count} message{'' if one else 's'} {'was' if one else 'were'} deleted in Gmail between the listing "
            f"and the read; left out")


@frozen_dataclass
class _Payload:
    body: Any  # sent as JSON when content is None
    content: bytes | None
    headers: dict[str, str]


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
