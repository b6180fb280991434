"""The one HTTP client of the project (httpx), with mailtriage's manners.

Every HTTP backend (archives, trackers, Gmail, Graph) goes through :class:`HttpClient`:
timeouts on every call, a User-Agent naming mailtriage, Retry-After honoured on 429 and
503 (bounded, so a throttled call fails clearly instead of hanging), and each exchange
written to the redacted protocol trace.
"""

from __future__ import annotations

import email.utils
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from mailtriage.core.errors import CoreError
from mailtriage.core.trace import TRACE

USER_AGENT = "mailtriage/0.1 (+terminal triage client)"
DEFAULT_TIMEOUT = 20.0
RETRY_STATUSES = (429, 503)
# The URLs of archives come from project.md (team data): a server there may answer without end.
# No answer we read is near these (a Gmail raw message is at most ~35 MB as base64).
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
MAX_RESPONSE_SECONDS = 900.0  # the timeout above is per read: a slow drip would never trip it


class HttpError(CoreError):
    """Transport failure (connect, timeout, TLS) or a retry budget exhausted."""

    def __init__(self, url: str, detail: str, status: int | None = None) -> None:
        self.url = url
        self.detail = detail
        self.status = status
        super().__init__(f"{detail} ({url})")


@dataclass
class RetryPolicy:
    attempts: int = 3  # total tries for 429/503
    max_wait: float = 30.0  # never sleep longer than this for one Retry-After


def retry_after_seconds(value: str | None, now: Callable[[], float] = time.time) -> float | None:
    """Parse Retry-After: delta-seconds or an HTTP date. None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now())


_CREDENTIAL_HEADERS = ("authorization", "cookie", "proxy-authorization")


def _refuse_credentials_in_clear(request, url: str) -> None:
    """A request that carries a credential goes over https, or plain http to loopback only."""
    if not any(name in request.headers for name in _CREDENTIAL_HEADERS):
        return
    # lazy: origins loads ipaddress; only a request that carries a credential pays for it
    from mailtriage.core.origins import OriginRefused, secret_origin

    try:
        secret_origin(url)
    except OriginRefused as exc:
        raise HttpError(url, f"a credential is not sent: {exc}") from None


_TLS_CONTEXTS: dict[tuple[str, str], Any] = {}
_TLS_LOCK = threading.Lock()


def verifying_context() -> Any:
    """The verifying ``ssl.SSLContext`` for the CAs the environment names (SSL_CERT_FILE, else
    SSL_CERT_DIR, else certifi's bundle, as httpx decides), made once per process and setting.

    httpx builds one per client by default, loading the CA bundle each time (~46 ms of CPU).
    Sharing is safe: a context only configures sockets, and httpcore sets the same ALPN
    protocols on it at every connection.
    """
    import httpx  # lazy: see HttpClient.__init__

    key = (os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", ""))
    with _TLS_LOCK:
        context = _TLS_CONTEXTS.get(key)
        if context is None:
            context = _TLS_CONTEXTS[key] = httpx.create_ssl_context(verify=True, trust_env=True)
        return context


class HttpEnded(HttpError):
    """The call's connection was ended under it by :meth:`HttpClient.abort` (the app quits)."""


def _ended(method: str) -> str:
    if method.upper() in ("GET", "HEAD", "OPTIONS"):
        return "the connection was ended (the app quits)"
    # a request already sent may have been carried out: never said to be not done
    return "the connection was ended (the app quits); the server may have done it already"


class HttpClient:
    """A thin wrapper over ``httpx.Client``; returns ``httpx.Response`` objects.

    Status codes other than the retried 429/503 are returned to the caller, which
    maps them to its own errors (403 private archive, 404 missing list, …).
    """

    def __init__(
        self,
        channel: str,
        base_url: str = "",
        *,
        headers: dict[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        cookies: dict[str, str] | None = None,
        sleep: Callable[[float], None] | None = None,
        verify: Any = None,
    ) -> None:
        # lazy: httpx costs about 0.15 s at import; only a backend that makes a request pays it
        import httpx

        from mailtriage.core.http_sockets import AbortableTransport  # why: it loads httpcore, as httpx above

        self.channel = channel
        self.retry = retry or RetryPolicy()
        self._ended = threading.Event()  # set by abort(): a Retry-After wait ends with it
        self.sleep = sleep or self._ended.wait  # a backend's own waits (GitHub's rate limit) end with abort() too
        all_headers = {"User-Agent": USER_AGENT}
        all_headers.update(headers or {})
        # verify: an ssl.SSLContext trusting more CAs (oauth_http.make_client's ca_file)
        self.tls_context = verify or verifying_context()
        self._transport = AbortableTransport(self.tls_context)
        self._client = httpx.Client(
            verify=self.tls_context,
            base_url=base_url,
            headers=all_headers,
            timeout=httpx.Timeout(timeout),
            cookies=cookies,
            follow_redirects=False,
            transport=self._transport,
        )
        self.requests_sent = 0

    def request(self, method: str, url: str, **kwargs: Any):
        # lazy: httpx costs about 0.15 s at import; only a backend that makes a request pays it
        import httpx

        attempt = 0
        while True:
            attempt += 1
            self.requests_sent += 1
            built = self._client.build_request(method, url, params=kwargs.get("params"), headers=kwargs.get("headers"))
            full = str(built.url)
            _refuse_credentials_in_clear(built, full)
            TRACE.log(f"http:{self.channel}", ">", f"{method} {full}")
            t0 = time.perf_counter()
            try:
                response = self._bounded(method, url, full, kwargs)
            except httpx.HTTPError as exc:
                if self._transport.sockets.ended:  # abort() shut its socket down
                    TRACE.log(f"http:{self.channel}", "!", f"ended (the app quits): {type(exc).__name__}")
                    raise HttpEnded(full, _ended(method)) from exc
                if isinstance(exc, httpx.TimeoutException):
                    TRACE.log(f"http:{self.channel}", "!", f"timeout: {exc}")
                    raise HttpError(full, f"timed out: {exc}") from exc
                TRACE.log(f"http:{self.channel}", "!", f"{type(exc).__name__}: {exc}")
                raise HttpError(full, f"{type(exc).__name__}: {exc}") from exc
            ms = (time.perf_counter() - t0) * 1000
            TRACE.log(f"http:{self.channel}", "<",
                      f"{response.status_code} {response.headers.get('content-type', '')} "
                      f"{len(response.content)}B {ms:.0f}ms")
            if response.status_code not in RETRY_STATUSES:
                return response
            wait = retry_after_seconds(response.headers.get("Retry-After"))
            if attempt >= self.retry.attempts or wait is None and response.status_code == 503:
                return response
            wait = 1.0 if wait is None else wait
            if wait > self.retry.max_wait:
                raise HttpError(full, f"server asked to retry after {wait:.0f}s (over {self.retry.max_wait:.0f}s)",
                                response.status_code)
            TRACE.log(f"http:{self.channel}", "!", f"{response.status_code}: retrying after {wait:.1f}s")
            self.sleep(wait)
            if self._ended.is_set():
                raise HttpEnded(full, _ended(method))

    def _bounded(self, method: str, url: str, full: str, kwargs: dict):
        """The response, its body read whole, within MAX_RESPONSE_BYTES and MAX_RESPONSE_SECONDS."""
        deadline = time.monotonic() + MAX_RESPONSE_SECONDS
        with self._client.stream(method, url, **kwargs) as response:
            chunks, size = [], 0
            for chunk in response.iter_bytes():  # decoded: a compression bomb counts as what it becomes
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    TRACE.log(f"http:{self.channel}", "!", f"answer over {MAX_RESPONSE_BYTES} bytes: stopped")
                    raise HttpError(full, f"the answer is larger than {MAX_RESPONSE_BYTES:,} bytes; not read further")
                if time.monotonic() > deadline:
                    TRACE.log(f"http:{self.channel}", "!", f"answer still coming after {MAX_RESPONSE_SECONDS:.0f}s")
                    raise HttpError(full, f"the answer was still coming after {MAX_RESPONSE_SECONDS:.0f}s; not read further")
                chunks.append(chunk)
            response._content = b"".join(chunks)  # what Response.read() sets: .content/.json() work after close
        return response

    def get(self, url: str, **kwargs: Any):
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any):
        return self.request("POST", url, **kwargs)

    def abort(self, opening_only: bool = False) -> None:
        """From another thread (the app quits): shut down the sockets under a call waiting on
        the server, which then fails at once instead of at its timeout (``opening_only``: only
        those still being opened; a request already sent is left to finish). Either way no
        connection opens after, and a Retry-After wait ends. Never raises; :meth:`close` follows."""
        self._transport.sockets.abort(opening_only)
        self._ended.set()

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "HttpClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
