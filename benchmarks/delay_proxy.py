"""A loopback TCP proxy that delays each direction by half a round trip: a server across a network,
for the benchmarks that start on a Dovecot of this machine (trace_startup.py ``--round-trip``,
bench_read_newest.py ``--round-trip``). Bytes keep their order; each chunk is sent on once its
half round trip has passed since it was read (so a stream is delayed, not slowed)."""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time


class DelayProxy:
    """Forwards 127.0.0.1:``port`` to 127.0.0.1:``upstream_port``, ``round_trip / 2`` seconds each way."""

    def __init__(self, upstream_port: int, round_trip: float) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self.delay = round_trip / 2
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):  # the listener closed
            while True:
                self._connect(self._listener.accept()[0])

    def _connect(self, client: socket.socket) -> None:
        server = socket.create_connection(self.upstream)
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for source, sink in ((client, server), (server, client)):
            chunks: queue.Queue = queue.Queue()
            threading.Thread(target=self._read, args=(source, chunks), daemon=True).start()
            threading.Thread(target=self._write, args=(sink, chunks), daemon=True).start()

    def _read(self, source: socket.socket, chunks: queue.Queue) -> None:
        try:
            while data := source.recv(1 << 16):
                chunks.put((time.monotonic() + self.delay, data))
        except OSError:
            pass
        chunks.put((time.monotonic() + self.delay, b""))

    def _write(self, sink: socket.socket, chunks: queue.Queue) -> None:
        while True:
            due, data = chunks.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                if not data:
                    sink.shutdown(socket.SHUT_WR)
                    return
                sink.sendall(data)
            except OSError:
                return
