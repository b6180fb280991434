"""A loopback TCP proxy that can cut a connection at a chosen moment (fault injection).

It sits between a client and a real server and forwards bytes unchanged. Arm it with
``cut_when_server_sends(b"...")``: when a chunk from the server contains those bytes,
the proxy closes both sides *without* forwarding that chunk, so the server did the
work but the client never hears about it (a lost response). Plain TCP only.
"""

from __future__ import annotations

import select
import socket
import threading

from tests.servers.ports import free_port


class FaultProxy:
    host = "127.0.0.1"

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = free_port()
        self._cut_pattern: bytes | None = None
        self.cuts = 0
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((self.host, self.port))
        self._listener.listen(16)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    def cut_when_server_sends(self, pattern: bytes) -> None:
        """Cut the next connection whose server side sends ``pattern`` (once)."""
        self._cut_pattern = pattern

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._pump, args=(client,), daemon=True).start()

    def _pump(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            client.close()
            return
        sockets = [client, server]
        try:
            while not self._stop.is_set():
                readable, _, _ = select.select(sockets, [], [], 0.2)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is server:
                        pattern = self._cut_pattern
                        if pattern is not None and pattern in data:
                            self._cut_pattern = None
                            self.cuts += 1
                            return
                        client.sendall(data)
                    else:
                        server.sendall(data)
        except OSError:
            return
        finally:
            for sock in sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
