"""Microsoft Graph (v1.0) mail calls over our HTTP client, with the account's msal token.

Every request carries ``Authorization: Bearer`` (redacted in the trace) and
``Prefer: IdType="ImmutableId"``, so message IDs survive moves between folders. A 401
asks msal for a fresh token once and retries once.

Throttling (learn.microsoft.com/graph/throttling): Graph answers 429, sometimes 503 or
504, with ``Retry-After`` when it has one; without it the client is to back off
exponentially. So 429 and 503 are retried for every method, and 502 and 504 (a gateway
that may have passed the request on) for the idempotent ones (GET, PATCH, PUT, DELETE):
the wait is ``Retry-After`` when given, else truncated exponential backoff with jitter
(:class:`Backoff`), all within a total deadline. A ``Retry-After`` longer than
:data:`MAX_RETRY_AFTER` is not slept through: the call fails at once, naming the wait
Graph asked for. Each wait is a trace line and an op-log ``backoff`` record. Errors:

* 401 after the refresh -> :class:`SignInNeeded`; 403 ``ErrorAccessDenied`` ->
  :class:`SignInNeeded` when the grant lacks a scope is the likely cause (named);
* 429 / 503 after the retries -> :class:`GraphThrottled` (not carried out); other 5xx and
  transport failures -> :class:`GraphNoAnswer` (perhaps carried out); both are
  :class:`Unavailable` and say how many tries over how long, or the wait Graph asked for;
* 404 -> :class:`GraphNotFound`; 410 -> :class:`GraphGone` (an expired delta token);
  other 4xx -> :class:`BackendFailure` with Graph's code and message.

``next`` links (``@odata.nextLink``, ``@odata.deltaLink``) are followed only when they
point below the configured ``graph_base``, so a token never goes to another host.

Many GETs at once (:meth:`GraphApi.get_many`, a long conversation's messages) go through
JSON batching (learn.microsoft.com/graph/json-batching): at most :data:`BATCH_LIMIT`
requests a ``$batch``. Outlook takes 4 concurrent requests per app and mailbox, and the
requests of a batch run at once unless chained with ``dependsOn``, so each batch is one
chain (one request at a time on the mailbox) and up to :data:`MAILBOX_CONCURRENCY`
batches are sent at once. In a chain a failed request fails the rest with 424: those are
sent again in the next round, the throttled ones after the backoff above.
"""

from __future__ import annotations

import base64
import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Mapping, Sequence

from mailtriage.backends.errors import BackendFailure, SignInNeeded, Unavailable
from mailtriage.backends.microsoft.account import MicrosoftAccount
from mailtriage.backends.microsoft.auth import MicrosoftSignIn
from mailtriage.backends.oauth_http import make_client
from mailtriage.core.http import HttpClient, HttpError, RetryPolicy, retry_after_seconds
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.trace import OPLOG, TRACE

IMMUTABLE = 'IdType="ImmutableId"'
THROTTLED = (429, 503)  # Graph's throttling answers: the request was not carried out
GATEWAY = (502, 504)  # may have reached the mailbox: retried for idempotent methods only
IDEMPOTENT = ("GET", "PATCH", "PUT", "DELETE")
MAX_RETRY_AFTER = 60.0  # a longer Retry-After fails at once (naming it) rather than hang the user
BATCH_LIMIT = 20  # JSON batching: at most 20 requests a $batch
MAILBOX_CONCURRENCY = 4  # Outlook: 4 concurrent requests per app and mailbox


@frozen_dataclass
class Backoff:
    """Truncated exponential backoff with jitter: ``base * 2**n`` plus up to ``base`` at
    random, at most ``cap`` a wait, and no wait that would end past ``deadline`` seconds
    from the first try."""

    base: float = 1.0
    cap: float = 16.0
    deadline: float = 60.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        return min(self.cap, self.base * 2 ** (attempt - 1) + rng.uniform(0, self.base))


DEFAULT_BACKOFF = Backoff()  # a module constant, so a test of a whole flow can make it short


class GraphNotFound(BackendFailure):
    """The message, folder or category does not exist (any more)."""


class GraphGone(BackendFailure):
    """410: a delta token Graph no longer knows."""


class GraphThrottled(Unavailable):
    """429 / 503 past the backoff: Graph did not carry the request out."""


class GraphNoAnswer(Unavailable):
    """No answer (timeout, connection cut) or another 5xx: the request may or may not have
    been carried out."""


class GraphApi:
    def __init__(self, account: MicrosoftAccount, *, signin: MicrosoftSignIn | None = None,
                 http: HttpClient | None = None, backoff: Backoff | None = None,
                 sleep: Callable[[float], None] | None = None, rng: random.Random | None = None) -> None:
        self.account = account
        self.signin = signin or MicrosoftSignIn(account)
        self.base = account.graph_base.rstrip("/")
        # Our client does not retry: the backoff below does, for every throttling answer.
        self.http = http or make_client(f"graph:{account.id}", timeout=account.timeout, ca_file=account.ca_file,
                                        retry=RetryPolicy(attempts=1))
        self.backoff = backoff or DEFAULT_BACKOFF
        self._sleep = sleep or self.http.sleep  # a backoff ends as the app quits (abort)
        self._rng = rng or random.Random()
        self._rng_lock = threading.Lock()

    @property
    def channel(self) -> str:
        return f"graph:{self.account.id}"

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
        started = time.monotonic()
        attempt, waited = 0, 0.0
        while True:
            attempt += 1
            response = self._authorized(method, url, params, body, what, headers)
            wait = self._wait(method, response.status_code, response.headers, attempt)
            if wait is None:
                return self._decode(response, what, raw)
            spent = max(time.monotonic() - started, waited)  # the waits count even when slept elsewhere
            if wait > MAX_RETRY_AFTER:
                return self._decode(response, what, raw, note=(
                    f"Graph asked to wait {wait:.0f}s before trying again, longer than the "
                    f"{MAX_RETRY_AFTER:g}s mailtriage waits; try again after that"))
            if spent + wait > self.backoff.deadline:
                return self._decode(response, what, raw, note=(
                    f"gave up after {attempt} tries in {spent:.1f}s; the backoff deadline is "
                    f"{self.backoff.deadline:g}s"))
            state = (f"{response.status_code}: backing off {wait:.2f}s (try {attempt}, "
                     f"{self.backoff.deadline - spent:.1f}s of {self.backoff.deadline:g}s left)")
            TRACE.log(self.channel, "!", f"{what}: {state}")
            with OPLOG.record(self.channel, "backoff", detail=f"{what}: {state}"):
                self._sleep(wait)
            waited += wait

    def _wait(self, method: str, status: int, headers: Mapping[str, str], attempt: int) -> float | None:
        """How long to wait before trying again, or None when the answer stands."""
        if not (status in THROTTLED or (status in GATEWAY and method in IDEMPOTENT)):
            return None
        after = retry_after_seconds(_header(headers, "Retry-After"))
        if after is not None:
            return after
        with self._rng_lock:  # one Random shared by the concurrent readers
            return self.backoff.delay(attempt, self._rng)

    def _authorized(self, method, url, params, body, what, headers):
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
        return response

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
            raise GraphNoAnswer(self.account.id, f"Graph {what}: {exc.detail}") from exc

    def _decode(self, response, what: str, raw: bool, note: str | None = None) -> Any:
        status = response.status_code
        if 200 <= status < 300:
            if raw:
                return response.content
            if status in (202, 204) or not response.content:
                return None
            try:
                return response.json()
            except ValueError as exc:
                raise BackendFailure(self.account.id, f"Graph {what}: the answer is not JSON") from exc
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
            error = GraphThrottled if status in THROTTLED else GraphNoAnswer
            raise error(self.account.id, f"{text} ({note})" if note else text)
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

    def get_many(self, paths: Sequence[str], what: str, *, raw: bool = False) -> dict[str, Any]:
        """GET each of ``paths`` (under ``/me``) through ``$batch``: path -> decoded JSON (bytes
        with ``raw``), or None for a 404 (deleted since it was listed). Other errors raise as
        :meth:`call` does; throttled requests are sent again after the backoff."""
        results: dict[str, Any] = {}
        pending = list(dict.fromkeys(paths))
        started, attempt, waited = time.monotonic(), 0, 0.0
        concurrency = MAILBOX_CONCURRENCY  # halved after a round that was throttled (a busy mailbox)
        while pending:
            chunks = [pending[i:i + BATCH_LIMIT] for i in range(0, len(pending), BATCH_LIMIT)]
            chunks = chunks[:concurrency]  # one round: at most this many batches at once
            sent = {path for chunk in chunks for path in chunk}
            rest = [path for path in pending if path not in sent]
            if len(chunks) == 1:
                answers = [self._batch(chunks[0], what)]
            else:
                with ThreadPoolExecutor(len(chunks), thread_name_prefix="graph") as pool:
                    answers = list(pool.map(lambda chunk: self._batch(chunk, what), chunks))
            again: list[str] = []
            waits: list[float] = []
            last = None
            for chunk, answer in zip(chunks, answers):
                for path, item in zip(chunk, answer):
                    status, headers = int(item.get("status") or 0), item.get("headers") or {}
                    if 200 <= status < 300:
                        results[path] = _batch_body(item, raw)
                    elif status == 404:
                        results[path] = None
                    elif status == 424:  # its dependency failed in the chain: send it again
                        again.append(path)
                    else:
                        wait = self._wait("GET", status, headers, attempt + 1)
                        if wait is None:
                            self._decode(_BatchAnswer(item), what, raw)  # raises the error it is
                        again.append(path)
                        waits.append(wait)
                        last = item
            pending = again + rest
            if not waits:
                continue
            concurrency = max(1, concurrency // 2)
            attempt += 1
            wait = max(waits)
            spent = max(time.monotonic() - started, waited)
            note = None
            if wait > MAX_RETRY_AFTER:
                note = (f"Graph asked to wait {wait:.0f}s before trying again, longer than the "
                        f"{MAX_RETRY_AFTER:g}s mailtriage waits; try again after that")
            elif spent + wait > self.backoff.deadline:
                note = (f"gave up after {attempt} tries in {spent:.1f}s; the backoff deadline is "
                        f"{self.backoff.deadline:g}s")
            if note:
                self._decode(_BatchAnswer(last), what, raw, note=note)
            state = (f"{len(waits)} of the batch throttled: backing off {wait:.2f}s (try {attempt}, "
                     f"{self.backoff.deadline - spent:.1f}s of {self.backoff.deadline:g}s left)")
            TRACE.log(self.channel, "!", f"{what}: {state}")
            with OPLOG.record(self.channel, "backoff", detail=f"{what}: {state}"):
                self._sleep(wait)
            waited += wait
        return results

    def _batch(self, paths: Sequence[str], what: str) -> list[dict]:
        """One ``$batch`` of GETs chained with ``dependsOn``; its answers in the order of ``paths``."""
        requests = [{"id": str(n), "method": "GET", "url": path, **({"dependsOn": [str(n - 1)]} if n else {})}
                    for n, path in enumerate(paths)]
        body = {"requests": requests}
        response = self._authorized("POST", self.url("/$batch"), None, body, f"{what} ($batch)", None)
        if response.status_code in THROTTLED or response.status_code in GATEWAY:
            # The batch as a whole was throttled: each of its requests is, for get_many's backoff.
            item = {"status": response.status_code, "headers": dict(response.headers), "body": _json_or_none(response)}
            return [dict(item, id=str(n)) for n in range(len(paths))]
        answer = self._decode(response, f"{what} ($batch)", False) or {}
        by_id = {str(item.get("id")): item for item in answer.get("responses") or () if isinstance(item, dict)}
        missing = [str(n) for n in range(len(paths)) if str(n) not in by_id]
        if missing:
            raise BackendFailure(self.account.id, f"Graph {what} ($batch): no answer for {len(missing)} of "
                                                  f"{len(paths)} requests")
        return [by_id[str(n)] for n in range(len(paths))]

    def abort(self, opening_only: bool = False) -> None:
        """From another thread (the app quits): end the API's and the sign-in's connections."""
        self.http.abort(opening_only)
        self.signin.abort(opening_only)

    def close(self) -> None:
        self.http.close()
        self.signin.close()


class _BatchAnswer:
    """One answer inside a ``$batch`` response, shaped as :meth:`GraphApi._decode` reads one."""

    def __init__(self, item: dict) -> None:
        self.status_code = int(item.get("status") or 0)
        self.headers = item.get("headers") or {}
        body = item.get("body")
        self.content = json.dumps(body).encode() if isinstance(body, (dict, list)) else b""
        self.reason_phrase = ""

    def json(self) -> Any:
        return json.loads(self.content) if self.content else {}


def _batch_body(item: dict, raw: bool) -> Any:
    body = item.get("body")
    if not raw:
        return body
    if isinstance(body, str):  # a non-JSON answer ($value) comes base64-encoded
        return base64.b64decode(body)
    return json.dumps(body).encode() if body is not None else b""


def _json_or_none(response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return None


def _error(response) -> tuple[str, str]:
    try:
        body = response.json()
    except ValueError:
        return "", response.reason_phrase or ""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("code") or ""), str(error.get("message") or "")[:300]
    return "", str(error or "")[:300]
