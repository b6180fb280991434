"""The HTTP plumbing of the OAuth backends (Gmail, Microsoft Graph) over the one client.

google-auth and msal each bring their own idea of an HTTP transport. Both are pointed
at :class:`mailtriage.core.http.HttpClient` here, so every token request, like every
API request, has our timeouts, our User-Agent and a line in the redacted protocol
trace, and no second HTTP stack runs beside httpx:

* :class:`GoogleTransport` implements ``google.auth.transport.Request``;
* :class:`MsalTransport` implements msal's ``http_client`` interface (``get``/``post``
  returning a requests-like response).

Token endpoint bodies are never traced (the client traces method, URL and status only),
and URLs pass through ``trace.redact`` (``code=``, ``access_token=`` … are hidden).
"""

from __future__ import annotations

import errno
import http.server
import json
import select
import socket
import time
from typing import Any, Mapping
from urllib.parse import parse_qs, urlencode, urlsplit

from google.auth import exceptions as google_exceptions
from google.auth.transport import Request as GoogleRequest

from mailtriage.backends.errors import MailError
from mailtriage.core.http import HttpClient, HttpError, RetryPolicy
from mailtriage.core.tls import trusting


def make_client(channel: str, base_url: str = "", *, timeout: float, ca_file: str | None = None,
                retry: RetryPolicy | None = None, headers: dict[str, str] | None = None) -> HttpClient:
    """An :class:`HttpClient` that also trusts ``ca_file`` (a self-hosted or test CA) when given.

    Raises OSError / ssl.SSLError when ``ca_file`` cannot be read (the TLS context is
    core.tls's, shared by every client of the same CAs).
    """
    verify = trusting(ca_file, use="http") if ca_file else None
    return HttpClient(channel, base_url, timeout=timeout, retry=retry, headers=headers, verify=verify)


# -- google-auth -------------------------------------------------------------------------------

class _GoogleResponse:
    def __init__(self, response) -> None:
        self.status = response.status_code
        self.headers = dict(response.headers)
        self.data = response.content


class GoogleTransport:
    """``google.auth.transport.Request`` over our HttpClient.

    google-auth retries the token endpoint itself (429/5xx with backoff), so the
    client given here should not retry as well (``RetryPolicy(attempts=1)``).
    """

    def __init__(self, client: HttpClient) -> None:
        self.client = client

    def __call__(self, url: str, method: str = "GET", body: bytes | None = None,
                 headers: Mapping[str, str] | None = None, timeout: float | None = None, **kwargs: Any):
        try:
            response = self.client.request(method, url, content=body, headers=dict(headers or {}))
        except HttpError as exc:
            raise google_exceptions.TransportError(str(exc)) from exc
        return _GoogleResponse(response)


# Registered as a virtual subclass so google-auth's isinstance checks (if any) accept it.
GoogleRequest.register(GoogleTransport)


# -- msal --------------------------------------------------------------------------------------

class HttpStatusError(MailError):
    """msal called ``raise_for_status()`` on an error response (an outage of the authority)."""

    def __init__(self, status: int, url: str) -> None:
        self.status = status
        super().__init__(f"HTTP {status} from {url}")


class _MsalResponse:
    def __init__(self, response) -> None:
        self.status_code = response.status_code
        self.text = response.text
        self.headers = response.headers
        self._url = str(response.request.url) if response.request is not None else "?"

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise HttpStatusError(self.status_code, self._url)


class MsalTransport:
    """msal's ``http_client`` (get/post returning a requests-like response) over HttpClient.

    Transport failures raise :class:`mailtriage.core.http.HttpError`, which the
    Microsoft sign-in turns into an outage (never into "sign-in needed").
    """

    def __init__(self, client: HttpClient) -> None:
        self.client = client

    def _body(self, data: Any, headers: dict[str, str]) -> bytes | None:
        if data is None:
            return None
        if isinstance(data, Mapping):
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
            return urlencode(data).encode("utf-8")
        if isinstance(data, str):
            return data.encode("utf-8")
        if isinstance(data, bytes):
            return data
        return json.dumps(data).encode("utf-8")

    def post(self, url: str, params: Mapping[str, Any] | None = None, data: Any = None,
             headers: Mapping[str, str] | None = None, **kwargs: Any) -> _MsalResponse:
        all_headers = dict(headers or {})
        body = self._body(data, all_headers)
        return _MsalResponse(self.client.request("POST", url, params=params, content=body, headers=all_headers))

    def get(self, url: str, params: Mapping[str, Any] | None = None, headers: Mapping[str, str] | None = None,
            **kwargs: Any) -> _MsalResponse:
        return _MsalResponse(self.client.request("GET", url, params=params, headers=dict(headers or {})))

    def abort(self, opening_only: bool = False) -> None:
        self.client.abort(opening_only)

    def close(self) -> None:
        self.client.close()


# -- the loopback redirect of installed-app sign-ins (RFC 8252) -------------------------------

_PAGE = b"<html><body><p>mailtriage: sign-in received. You can close this window.</p></body></html>"


class _Listener(http.server.HTTPServer):
    """One socket of the redirect listener (IPv4 or IPv6); answers go to ``owner``."""

    def __init__(self, address: tuple[str, int], family: int, owner: "LoopbackRedirect") -> None:
        self.address_family = family

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # the query holds the code: never logged
                pass

            def _answer(self, query: dict) -> None:
                if not ({"code", "error"} & set(query)):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                owner.result = query
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(_PAGE)))
                self.end_headers()
                self.wfile.write(_PAGE)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._answer({k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()})

            def do_POST(self) -> None:  # noqa: N802 - response_mode=form_post (OAuth 2.0 Form Post Response Mode)
                length = min(int(self.headers.get("Content-Length") or 0), 64 * 1024)
                body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
                form = parse_qs(body) if kind == "application/x-www-form-urlencoded" else {}
                self._answer({k: v[0] for k, v in form.items()})

        super().__init__(address, Handler)


class LoopbackRedirect:
    """A one-shot loopback HTTP listener that receives the OAuth redirect, as a GET with a
    query or as a ``form_post`` POST.

    ``address`` names the host the redirect URI will name: an IP literal is bound as it
    is; ``localhost`` is bound on 127.0.0.1 *and* ::1 on the same port (where the
    system has IPv6), because a browser may resolve it to either.
    """

    def __init__(self, address: tuple[str, int]) -> None:
        self.result: dict | None = None
        host, port = address
        if host == "localhost":
            families = [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")]
        else:
            families = [(socket.AF_INET6 if ":" in host else socket.AF_INET, host.strip("[]"))]
        for _attempt in range(20):
            self._listeners: list[_Listener] = []
            try:
                for family, literal in families:
                    chosen = self._listeners[0].server_address[1] if self._listeners else port
                    try:
                        self._listeners.append(_Listener((literal, chosen), family, self))
                    except OSError as exc:
                        if not self._listeners or exc.errno in (errno.EADDRINUSE,):
                            raise
                        # ::1 cannot be bound (no IPv6 on this system): IPv4 alone then.
                break
            except OSError as exc:
                for listener in self._listeners:
                    listener.server_close()
                if exc.errno != errno.EADDRINUSE or port:
                    raise
        else:
            raise OSError(errno.EADDRINUSE, "no free loopback port on both 127.0.0.1 and ::1")
        self.server_address = (host, self._listeners[0].server_address[1])

    def wait(self, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        while self.result is None and time.monotonic() < deadline:
            ready, _w, _x = select.select(self._listeners, [], [], 0.25)
            for listener in ready:
                listener.handle_request()
        return self.result

    def server_close(self) -> None:
        for listener in self._listeners:
            listener.server_close()
