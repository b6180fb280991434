"""``HttpClient.abort()`` ends a call waiting on a silent server at once (a quit during an HTTP
call waited for the call's timeout: httpx cannot cancel a request in flight). The servers are
real sockets on loopback that stop answering at one step; an event says when the client is at
that step, and the client's timeout (60 s) is far beyond the join's bound, so a join that
returns means the abort ended the call."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from mailtriage.core.http import HttpClient, HttpError
from tests.servers.ports import await_syn_sent, unanswered_port
from tests.servers.certs import make_certificate
from tests.servers.silent_http import SilentHttpServer

ENDED = "was ended (the app quits)"


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return make_certificate(tmp_path_factory.mktemp("http-abort"))


def _calling(client: HttpClient, method: str = "GET") -> tuple[threading.Thread, list]:
    """``client`` sends one request on a thread (as a worker does); its outcome lands in the list."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(client.request(method, "/x").text)
        except Exception as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _ended_in_time(thread: threading.Thread, outcome: list) -> HttpError:
    thread.join(10)  # the client waits 60 s: only the abort ends it within this
    assert not thread.is_alive(), "abort() did not reach the call waiting on the server"
    [error] = outcome
    assert isinstance(error, HttpError) and ENDED in str(error), error
    return error


@pytest.mark.parametrize("tls, handshake, opening_only", [
    (False, True, False),  # the request is sent; the answer never comes
    (True, True, False),  # the same over TLS
    (True, False, True),  # the server never answers the ClientHello: a connection being opened
])
def test_abort_ends_a_call_waiting_on_a_silent_server(cert, monkeypatch, tls, handshake, opening_only):
    monkeypatch.setenv("SSL_CERT_FILE", str(cert.cert))
    server = SilentHttpServer(cert.server_context() if tls else None, handshake=handshake)
    client = HttpClient("test", server.url, timeout=60)
    try:
        thread, outcome = _calling(client)
        assert server.reached.wait(10)  # the client now waits on the server
        client.abort(opening_only)
        _ended_in_time(thread, outcome)
        with pytest.raises(HttpError, match=re.escape(ENDED)):  # and no connection opens after
            client.request("GET", "/again")
    finally:
        client.close()
        server.close()


def test_abort_of_the_openings_only_leaves_a_sent_request_to_finish(cert, monkeypatch):
    """What a quit does first while a confirmed write runs (service_lock.take_or_abort): a
    request already sent is left its chance to be answered."""
    monkeypatch.setenv("SSL_CERT_FILE", str(cert.cert))
    server = SilentHttpServer(cert.server_context())
    client = HttpClient("test", server.url, timeout=60)
    try:
        thread, outcome = _calling(client, "POST")
        assert server.reached.wait(10)
        client.abort(opening_only=True)
        server.answer(b"done")
        thread.join(10)
        assert outcome == ["done"]
    finally:
        client.close()
        server.close()


def test_a_write_ended_is_never_said_to_be_not_done(cert, monkeypatch):
    """A POST already sent may have been carried out: its error says so."""
    server = SilentHttpServer()
    client = HttpClient("test", server.url, timeout=60)
    try:
        thread, outcome = _calling(client, "POST")
        assert server.reached.wait(10)
        client.abort()
        error = _ended_in_time(thread, outcome)
        assert "may have done it" in str(error)
    finally:
        client.close()
        server.close()


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's socket table")
def test_abort_ends_a_tcp_connect_the_server_does_not_answer():
    """A listener whose queue is full drops the SYN (Linux), as an unreachable host does."""
    with unanswered_port() as port:
        client = HttpClient("test", f"http://127.0.0.1:{port}", timeout=60)
        try:
            thread, outcome = _calling(client)
            await_syn_sent(port)
            client.abort(opening_only=True)
            _ended_in_time(thread, outcome)
        finally:
            client.close()
