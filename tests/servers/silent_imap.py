"""A loopback server that answers IMAP up to a point and then says nothing (a slow or
silent server): what a quit while a connection is being opened meets."""

from __future__ import annotations

import socket
import threading


class SilentServer:
    """Accepts connections on loopback and answers only what ``script`` says (lines to send
    after each line read), then nothing. ``reached`` is set when the script has run out."""

    def __init__(self, greeting: bytes | None = None, script: tuple[tuple[bytes, bytes], ...] = ()) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.greeting, self.script = greeting, script
        self.reached = threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            conn, _addr = self.listener.accept()
        except OSError:
            return
        self.conns.append(conn)
        if self.greeting is not None:
            conn.sendall(self.greeting)
        reader = conn.makefile("rb")
        for expected, answer in self.script:  # expected: the command after the tag
            line = reader.readline()
            tag, _, command = line.partition(b" ")
            assert command.strip().upper() == expected, line
            conn.sendall(answer.replace(b"TAG", tag))
        self.reached.set()

    def close(self) -> None:
        self.listener.close()
        for conn in self.conns:
            conn.close()
