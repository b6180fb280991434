"""A loopback HTTP server that reads a request and answers nothing until told (a slow or silent
web API): what a quit during an HTTP call meets (tests/core/test_http_abort.py)."""

from __future__ import annotations

import socket
import ssl
import threading


class SilentHttpServer:
    """Accepts one connection (over TLS with ``tls``, or ``handshake=False``: never answering
    the ClientHello), reads one request's head, sets ``reached`` and says nothing: ``answer()``
    sends a reply then. ``reached`` is set at the accept when the handshake never comes."""

    def __init__(self, tls: ssl.SSLContext | None = None, *, handshake: bool = True) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.tls, self.handshake = tls, handshake
        self.reached = threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            conn, _addr = self.listener.accept()
            self.conns.append(conn)
            if self.tls is not None and self.handshake:
                conn = self.tls.wrap_socket(conn, server_side=True)
                self.conns.append(conn)
            head = b""
            while self.handshake and b"\r\n\r\n" not in head:
                got = conn.recv(65536)
                if not got:
                    return
                head += got
        except OSError:
            return
        self.reached.set()

    def answer(self, body: bytes = b"late", length: int | None = None) -> None:
        """Send a 200 with ``body``; a ``length`` beyond it leaves the rest of the body to come."""
        self.conns[-1].sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (length or len(body), body))

    def close(self) -> None:
        self.listener.close()
        for conn in self.conns:
            conn.close()
