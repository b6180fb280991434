"""An archive read ended by a quit in the middle of its answer is reported as ended (the
archive unavailable as the app quits), not as an answer the server cut off (a bad response).
A real loopback server sends the head and the first byte of a 100-byte body, then nothing."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from mailtriage.backends.archive_http import ArchiveHttp
from mailtriage.backends.errors import Unavailable
from tests.servers.silent_http import SilentHttpServer


def _read_all_sent(server: SilentHttpServer) -> bool:
    """The client's socket has nothing left unread (/proc/net/tcp's rx_queue): it is in the body."""
    client_port = server.conns[-1].getpeername()[1]
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return any(row.split()[1] == f"0100007F:{client_port:04X}" and row.split()[4].endswith(":00000000")
               for row in rows)


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's socket table")
def test_a_read_ended_mid_answer_is_unavailable_not_a_cut_off_answer():
    server = SilentHttpServer()
    http = ArchiveHttp("hyperkitty", server.url, timeout=60)
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(http.get_json(server.url + "/api/lists/", None, what="the lists"))
        except Exception as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    try:
        thread.start()
        assert server.reached.wait(10)
        server.answer(b"[", length=100)
        done = threading.Event()
        for _ in range(2000):  # the kernel's table, not the clock, says the client read what came
            if _read_all_sent(server):
                break
            done.wait(0.005)
        assert _read_all_sent(server)
        http.abort()
        thread.join(10)
        assert not thread.is_alive()
        [error] = outcome
        assert isinstance(error, Unavailable) and "the app quits" in str(error), repr(error)
    finally:
        http.close()
        server.close()
