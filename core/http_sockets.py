"""The transport of :class:`mailtriage.core.http.HttpClient`: httpx over httpcore's pool, with
sockets a quit can end.

httpx cannot cancel a request in flight, and closing its client from another thread does not
wake a read blocked on the server, so a quit during an HTTP call waited for the call's timeout.
Here httpcore's pool runs over a network backend (httpcore's documented hook) that keeps a copy
of each connection's socket from before its connect until it closes: :meth:`Sockets.abort`
shuts them down, which wakes a blocked connect, TLS handshake or read (the call then fails).
Loaded with httpx, by the first client made (core/http.py keeps httpx out of start-up).
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
from typing import Any, Iterator

import httpcore
import httpx

from mailtriage.core.lookups import Lookups


class Sockets(httpcore.NetworkBackend):
    """Connects as httpcore's SyncBackend does, and keeps each socket for :meth:`abort`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[socket.socket, bool] = {}  # a copy of each socket: is it still being opened
        self.ended = False
        self.lookups = Lookups()  # a quit does not wait for a name lookup either

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        last: OSError | None = None
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            for family, kind, proto, _name, address in self.lookups.getaddrinfo(host, port):
                sock = socket.socket(family, kind, proto)
                kept = self._keep(sock)
                try:
                    sock.settimeout(timeout)
                    if local_address is not None:
                        sock.bind((local_address, 0))
                    for option in socket_options or ():
                        sock.setsockopt(*option)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    sock.connect(address)
                except OSError as exc:  # this address failed (or the quit ended it): the next one
                    sock.close()
                    self.forget(kept)
                    last = exc
                    if self.ended:
                        break
                    continue
                self.opened(kept, opening=False)
                return _Stream(sock, kept, self)
            raise last or OSError(f"no address for {host}")

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None):
        raise httpcore.ConnectError("no unix sockets here")  # HttpClient never passes uds

    def sleep(self, seconds: float) -> None:
        threading.Event().wait(seconds)  # httpcore's own retries, which HttpClient turns off (retries=0)

    def _keep(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            if self.ended:
                sock.close()
                raise OSError("ended (the app quits)")
            kept = sock.dup()  # a copy of the descriptor: TLS takes the socket's own over
            self._kept[kept] = True
        return kept

    def opened(self, kept: socket.socket, *, opening: bool) -> None:
        with self._lock:
            if kept in self._kept:
                self._kept[kept] = opening

    def forget(self, kept: socket.socket) -> None:
        with self._lock:
            if self._kept.pop(kept, None) is not None:
                kept.close()

    def abort(self, opening_only: bool = False) -> None:
        """From another thread: shut down the sockets (``opening_only``: those being opened, in
        their connect or TLS handshake), so a call waiting on one fails now. None opens after."""
        self.lookups.abort()
        with self._lock:
            self.ended = True
            for kept, opening in self._kept.items():
                if opening or not opening_only:
                    with contextlib.suppress(OSError):
                        kept.shutdown(socket.SHUT_RDWR)


class _Stream(httpcore.NetworkStream):
    """One connection's socket (plain, or TLS after :meth:`start_tls`), as httpcore's SyncStream."""

    def __init__(self, sock: socket.socket, kept: socket.socket, sockets: Sockets) -> None:
        self.sock, self.kept, self.sockets = sock, kept, sockets

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _mapped(httpcore.ReadTimeout, httpcore.ReadError):
            self.sock.settimeout(timeout)
            return self.sock.recv(max_bytes)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        with _mapped(httpcore.WriteTimeout, httpcore.WriteError):
            while buffer:
                self.sock.settimeout(timeout)
                buffer = buffer[self.sock.send(buffer):]

    def close(self) -> None:
        self.sock.close()
        self.sockets.forget(self.kept)

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        self.sockets.opened(self.kept, opening=True)
        try:
            with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
                self.sock.settimeout(timeout)
                tls = ssl_context.wrap_socket(self.sock, server_hostname=server_hostname)
        except BaseException:
            self.close()
            raise
        self.sockets.opened(self.kept, opening=False)
        return _Stream(tls, self.kept, self.sockets)

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":  # httpcore asks it for the ALPN protocol, which an SSLSocket answers
            return self.sock if isinstance(self.sock, ssl.SSLSocket) else None
        if info == "client_addr":
            return self.sock.getsockname()
        if info == "server_addr":
            return self.sock.getpeername()
        if info == "socket":
            return self.sock
        if info == "is_readable":  # a kept-alive connection the server closed: not used again
            if self.sock.fileno() < 0:
                return True
            poll = select.poll()
            poll.register(self.sock, select.POLLIN)
            return bool(poll.poll(0))
        return None


@contextlib.contextmanager
def _mapped(timeout: type[Exception], failure: type[Exception]) -> Iterator[None]:
    try:
        yield
    except socket.timeout as exc:
        raise timeout(str(exc)) from exc
    except OSError as exc:
        raise failure(str(exc)) from exc


class AbortableTransport(httpx.BaseTransport):
    """What ``httpx.HTTPTransport`` does (HTTP/1.1, no proxy), over :class:`Sockets`."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        self.sockets = Sockets()
        self.pool = httpcore.ConnectionPool(ssl_context=ssl_context, network_backend=self.sockets,
                                            max_connections=100, max_keepalive_connections=20,
                                            keepalive_expiry=5.0)  # httpx's default limits

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        sent = httpcore.Request(method=request.method,
                                url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port,
                                                 target=url.raw_path),
                                headers=request.headers.raw, content=request.stream, extensions=request.extensions)
        with _as_httpx():
            response = self.pool.handle_request(sent)
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=_Body(response.stream), extensions=response.extensions)

    def close(self) -> None:
        self.pool.close()


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx():
            yield from self.stream

    def close(self) -> None:
        with _as_httpx():
            self.stream.close()


@contextlib.contextmanager
def _as_httpx() -> Iterator[None]:
    """httpcore's errors as httpx's of the same name (what HttpClient and the backends catch)."""
    try:
        yield
    except Exception as exc:
        for kind in type(exc).__mro__:
            if kind.__module__.startswith("httpcore"):
                mapped = getattr(httpx, kind.__name__, None)
                if isinstance(mapped, type) and issubclass(mapped, httpx.HTTPError):
                    raise mapped(str(exc)) from exc
        if type(exc).__module__.startswith("httpcore"):
            raise httpx.TransportError(str(exc)) from exc
        raise
