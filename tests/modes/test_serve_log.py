"""`mailtriage modes serve` logs to stderr (a terminal, a journal). Server text in those lines
is untrusted (the threat model in docs/security.md): each line goes through core/inert.py's
terminal_text and the secret scrubber, as the command's own errors do."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202egnp.exe"


class HostileImap:
    """A loopback IMAP server whose greeting is a BYE carrying terminal escapes."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.sock.settimeout(0.2)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(f"* BYE {HOSTILE} going away\r\n".encode("utf-8"))

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(5)
        self.sock.close()


def test_a_hostile_mailbox_error_reaches_the_serve_log_inert(tmp_path):
    server = HostileImap()
    config = tmp_path / "modes.toml"
    config.write_text(f"""
domain = "d.test"
role = "slave"
database = "{tmp_path / 'data' / 'record.sqlite3'}"

[server]
token_env = "MT_TEST_MODES_TOKEN"
poll_seconds = 0.1
tick_seconds = 0.1

[mailbox]
host = "127.0.0.1"
port = {server.port}
security = "plain"
username = "modes"
password_env = "MT_TEST_MODES_IMAP"

[types.ticket]
""", encoding="utf-8")
    env = dict(os.environ, MAILTRIAGE_CONFIG_DIR=str(tmp_path / "config"), MAILTRIAGE_DATA_DIR=str(tmp_path / "data"),
               MT_TEST_MODES_TOKEN="serve-log-token-0123456789abcdef-0123", MT_TEST_MODES_IMAP="imap-pass-1234")
    proc = subprocess.Popen([sys.executable, "-m", "mailtriage.cli.main", "modes", "serve", "--config", str(config),
                             "--port", "0"], env=env, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("going away" in line for line in lines):
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(20)
        reader.join(5)
        server.close()
    logged = [line for line in lines if "going away" in line]
    assert logged, "".join(lines)
    assert all("\x1b" not in line and "\x07" not in line and "\u202e" not in line for line in logged), logged
    assert "\\x1b" in logged[0] and "U+202E" in logged[0]
