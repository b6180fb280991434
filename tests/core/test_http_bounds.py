"""core/http.py reads every answer within a byte cap and a total time. Archive URLs come from
project.md (team data; the threat model in docs/security.md), so the server behind one may
answer without end: more bytes than memory holds, or one byte at a time so that the per-read
timeout never trips. Served by a real HTTP server on loopback."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mailtriage.core import http
from mailtriage.core.http import HttpClient, HttpError

CHUNK = b"x" * 65536


class Endless(BaseHTTPRequestHandler):
    """/big: 8 MiB in 64 KiB pieces. /drip: one byte every 50 ms for 20 s. /small: 5 bytes."""

    def do_GET(self):  # noqa: N802 - the http.server name
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.path == "/small":
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b'{"a":')  # read whole, not parsed here
            return
        self.end_headers()  # no length: read until the server closes
        try:
            if self.path == "/big":
                for _ in range(128):
                    self.wfile.write(CHUNK)
            else:
                stop = time.monotonic() + 20
                while time.monotonic() < stop:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.05)
        except OSError:  # the client stopped reading: what the test wants
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_an_answer_over_the_byte_cap_is_refused(server, monkeypatch):
    monkeypatch.setattr(http, "MAX_RESPONSE_BYTES", 1024 * 1024)
    with HttpClient("test", server) as client, pytest.raises(HttpError) as info:
        client.get("/big")
    assert "larger than 1,048,576 bytes" in str(info.value)


def test_an_answer_that_drips_past_the_total_time_is_refused(server, monkeypatch):
    monkeypatch.setattr(http, "MAX_RESPONSE_SECONDS", 1.0)
    with HttpClient("test", server) as client, pytest.raises(HttpError) as info:
        client.get("/drip")
    assert "still coming after 1s" in str(info.value)


def test_an_answer_within_the_bounds_is_read_whole(server):
    with HttpClient("test", server) as client:
        response = client.get("/small")
    assert response.status_code == 200 and response.content == b'{"a":'
