"""A loopback TCP proxy that injects network faults between a client and a real server.

It forwards bytes unchanged until armed. Every fault is one-shot (it fires on the next
connection that meets it, then the proxy forwards plainly again), except ``delay``:

* ``cut_when_server_sends(b"...")``: when a chunk from the server contains those bytes, both
  sides are closed *without* forwarding that chunk, so the server did the work but the client
  never hears about it (a lost response).
* ``cut_when_client_sends(b"...", after=N)``: once the client's stream shows those bytes, N
  more client bytes are forwarded and both sides are closed: an upload reset part-way (an
  APPEND literal, SMTP DATA, an HTTP request body).
* ``delay(seconds)``: every server chunk is held that long before it is forwarded (a slow
  server); ``delay(0)`` ends it.
* ``stall_when_server_sends(b"...", nth=1)``: the (nth) chunk holding those bytes is
  forwarded up to them, then nothing more from the server reaches the client (a stall
  mid-response) until the connection ends; the server side is left open.
* ``hold()`` / ``release()``: from ``hold()`` on, nothing from any server reaches its client
  until ``release()`` (a server that is slow right now, e.g. while keys arrive); the held
  bytes are forwarded then, in order. Not one-shot.

Counters (``cuts``, ``stalls``, ``client_bytes``) say what fired. Plain TCP only.
"""

from __future__ import annotations

import select
import socket
import threading
import time

from tests.servers.ports import free_port


class FaultProxy:
    host = "127.0.0.1"

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = free_port()
        self._cut_pattern: bytes | None = None
        self._client_cut: tuple[bytes, int] | None = None
        self._stall_pattern: bytes | None = None
        self._stall_skip = 0  # chunks holding the stall pattern still to forward before the stall
        self._delay = 0.0
        self._flowing = threading.Event()
        self._flowing.set()
        self._lock = threading.Lock()
        self.cuts = 0
        self.stalls = 0
        self.client_bytes = 0  # bytes forwarded from clients to the server, all connections
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

    def cut_when_client_sends(self, pattern: bytes, after: int = 0) -> None:
        """Cut the next connection whose client sends ``pattern``, ``after`` bytes past it (once)."""
        self._client_cut = (pattern, after)

    def stall_when_server_sends(self, pattern: bytes, nth: int = 1) -> None:
        """Forward the server's bytes up to ``pattern`` (in the ``nth`` chunk that holds it),
        then nothing more on that connection (once)."""
        self._stall_skip = nth - 1
        self._stall_pattern = pattern

    def delay(self, seconds: float) -> None:
        """Hold every server chunk ``seconds`` before forwarding it (0: no delay)."""
        self._delay = seconds

    def hold(self) -> None:
        """Keep every server's answers from their clients until :meth:`release`."""
        self._flowing.clear()

    def release(self) -> None:
        self._flowing.set()

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._pump, args=(client,), daemon=True).start()

    def _take(self, name: str):
        with self._lock:
            value = getattr(self, name)
            setattr(self, name, None)
            return value

    def _pump(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            client.close()
            return
        sockets = [client, server]
        stalled = False
        client_cut: tuple[bytes, int] | None = None  # armed on this connection: (pattern, bytes left)
        seen = b""  # the client's last bytes, so a pattern split across chunks is found
        try:
            while not self._stop.is_set():
                readable, _, _ = select.select(sockets, [], [], 0.2)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is server:
                        if stalled:
                            continue  # swallowed: the client waits for an answer that never comes
                        pattern = self._cut_pattern
                        if pattern is not None and pattern in data and self._take("_cut_pattern") is not None:
                            self.cuts += 1
                            return
                        pattern = self._stall_pattern
                        if pattern is not None and pattern in data and self._stall_skip > 0:
                            self._stall_skip -= 1
                        elif pattern is not None and pattern in data and self._take("_stall_pattern") is not None:
                            self.stalls += 1
                            stalled = True
                            data = data[:data.index(pattern)]
                        if self._delay:
                            time.sleep(self._delay)  # the injected slowness itself
                        while not self._flowing.wait(0.2):  # held: wait for release (or close)
                            if self._stop.is_set():
                                return
                        if data:
                            client.sendall(data)
                    else:
                        if client_cut is None and self._client_cut is not None:
                            pattern, after = self._client_cut
                            window = seen + data
                            at = window.find(pattern)
                            if at >= 0 and self._take("_client_cut") is not None:
                                # bytes of ``data`` up to the pattern's end, plus ``after`` more
                                end = at + len(pattern) - len(seen)
                                client_cut = (pattern, after + max(end, 0))
                            seen = window[-len(pattern):]
                        if client_cut is not None:
                            left = client_cut[1]
                            if len(data) >= left:
                                server.sendall(data[:left])
                                self.client_bytes += left
                                self.cuts += 1
                                return
                            client_cut = (client_cut[0], left - len(data))
                        server.sendall(data)
                        self.client_bytes += len(data)
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
        self._flowing.set()
        self._stop.set()
        self._listener.close()
