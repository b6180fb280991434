"""A loopback server that answers IMAP up to a point and then says nothing (a slow or
silent server): what a quit while a connection is being opened meets."""

from __future__ import annotations

import socket
import threading


class SilentServer:
    """Accepts connections on loopback and answers only what ``script`` says (for each command
    read, its name, or ``*`` for any, and the lines to send back, TAG standing for its tag), then nothing.
    ``reached`` is set when the script has run out; ``tag`` is the last command's tag."""

    def __init__(self, greeting: bytes | None = None, script: tuple[tuple[bytes, bytes], ...] = ()) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.greeting, self.script = greeting, script
        self.reached = threading.Event()
        self.conns: list[socket.socket] = []
        self.tag = b""
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
        for expected, answer in self.script:
            line = reader.readline()
            self.tag, _, command = line.partition(b" ")
            assert expected == b"*" or command.split()[0].upper() == expected, line  # *: any command
            conn.sendall(answer.replace(b"TAG", self.tag))
        self.reached.set()

    def close(self) -> None:
        self.listener.close()
        for conn in self.conns:
            conn.close()
