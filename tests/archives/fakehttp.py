"""A real HTTP server on loopback for emulating a public web API in tests.

``ThreadingHTTPServer`` on 127.0.0.1 with a free port, served from a background thread.
An *app* (a callable taking a :class:`Request` and returning a :class:`Reply`) answers
with the API's documented shapes. Every request is recorded so tests can assert what
was sent (``limit`` always present, how many requests a listing took). Faults are
injected per request by a predicate: a status with a body, a Retry-After, or a body
cut off mid-way (the connection closes before Content-Length is reached).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    host: str

    def param(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[0] if values else default

    @property
    def cookies(self) -> dict[str, str]:
        jar: dict[str, str] = {}
        for part in self.headers.get("cookie", "").split(";"):
            key, sep, value = part.strip().partition("=")
            if sep:
                jar[key] = value
        return jar


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    truncate_at: int | None = None  # send only this many body bytes, then close

    @classmethod
    def json(cls, data: Any, status: int = 200, *, indent: int | None = None, truncate_at: int | None = None,
             **headers: str) -> "Reply":
        body = json.dumps(data, indent=indent).encode("utf-8")
        return cls(status, body, {"Content-Type": "application/json", **headers}, truncate_at)

    @classmethod
    def text(cls, text: str | bytes, status: int = 200, content_type: str = "text/plain; charset=utf-8",
             *, truncate_at: int | None = None, **headers: str) -> "Reply":
        body = text.encode("utf-8") if isinstance(text, str) else text
        return cls(status, body, {"Content-Type": content_type, **headers}, truncate_at)


@dataclass
class Fault:
    match: Callable[[Request], bool]
    reply: Reply
    times: int | None  # None: for ever
    used: int = 0


class FakeHttpServer:
    """Serve ``app`` on loopback. Use as a context manager or call start()/stop()."""

    def __init__(self, app: Callable[[Request], Reply], *, ssl_context: Any = None) -> None:
        self.app = app
        self.ssl_context = ssl_context  # an ssl.SSLContext for a server that speaks HTTPS
        self.requests: list[Request] = []
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------
    def start(self) -> "FakeHttpServer":
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in two writes

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if len(body) < length:  # the request was cut short: a server acts on no part of it
                    self.close_connection = True
                    return
                parts = urlsplit(self.path)
                request = Request(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query, keep_blank_values=True),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    host=self.headers.get("Host", ""),
                )
                reply = owner._answer(request)
                payload = reply.body
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                if reply.truncate_at is not None:
                    self.send_header("Connection", "close")
                self.end_headers()
                if reply.truncate_at is not None:
                    self.wfile.write(payload[: reply.truncate_at])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(payload)

            do_GET = _serve
            do_POST = _serve
            do_PUT = _serve
            do_PATCH = _serve
            do_DELETE = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if self.ssl_context is not None:
            self._server.socket = self.ssl_context.wrap_socket(self._server.socket, server_side=True)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeHttpServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"{'https' if self.ssl_context is not None else 'http'}://{host}:{port}"

    # -- faults and records -----------------------------------------------------
    def fail(self, match: Callable[[Request], bool] | str, reply: Reply, times: int | None = 1) -> Fault:
        """Answer ``reply`` instead of the app for requests matching ``match``
        (a predicate, or a substring of the path), ``times`` times (None: always)."""
        predicate = match if callable(match) else (lambda req, part=match: part in req.path)
        fault = Fault(predicate, reply, times)
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self.faults.clear()

    def paths(self) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests]

    def _answer(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            for fault in self.faults:
                if (fault.times is None or fault.used < fault.times) and fault.match(request):
                    fault.used += 1
                    return fault.reply
        try:
            return self.app(request)
        except Exception as exc:  # a bug in the fake shows as a 500 with the reason
            return Reply.text(f"fake server error: {type(exc).__name__}: {exc}", 500)
