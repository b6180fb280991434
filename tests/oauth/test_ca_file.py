"""The extra CA an account trusts (``ca_file``: a self-hosted CA, a TLS-inspecting proxy, the
tests' servers) is loaded once a process for the same file (core/tls.py), not for every client:
each load read the system's CA store too (~22 ms of CPU; 223 of the 254 TLS contexts that
tests/oauth and tests/imap made were OAuth clients', issue 36 §7). A file whose content changed
is loaded again. Checked through the OAuth clients; IMAP connections and SMTP sends take their
contexts from the same function."""

from __future__ import annotations

import socket
import ssl
import threading

import pytest

from mailtriage.backends.oauth_http import make_client
from mailtriage.core.http import HttpError
from mailtriage.core.tls import trusting
from tests.archives.fakehttp import FakeHttpServer, Reply
from tests.servers.certs import make_certificate


def test_clients_of_one_ca_file_load_it_once_and_a_changed_file_again(tmp_path, monkeypatch):
    one, two = make_certificate(tmp_path / "one"), make_certificate(tmp_path / "two")
    ca = tmp_path / "ca.pem"
    ca.write_bytes(one.cert.read_bytes())
    make_client("test", timeout=5)  # the process's own verifying context (core/http.py) is made by now
    loads = []
    real = ssl.create_default_context
    monkeypatch.setattr(ssl, "create_default_context", lambda *a, **k: loads.append(a) or real(*a, **k))
    with FakeHttpServer(lambda request: Reply.text("ok"), ssl_context=one.server_context()) as first, \
            FakeHttpServer(lambda request: Reply.text("ok"), ssl_context=two.server_context()) as second:
        clients = [make_client("test", timeout=5, ca_file=str(ca)) for _ in range(5)]
        assert len(loads) == 1
        for client in clients:
            assert client.get(first.base_url + "/").status_code == 200
        with pytest.raises(HttpError):
            clients[0].get(second.base_url + "/")  # trusts what the file named, nothing else
        ca.write_bytes(two.cert.read_bytes())  # the CA was replaced
        renewed = make_client("test", timeout=5, ca_file=str(ca))
        assert len(loads) == 2
        assert renewed.get(second.base_url + "/").status_code == 200
        with pytest.raises(HttpError):
            renewed.get(first.base_url + "/")


def test_a_missing_ca_file_fails_each_client(tmp_path):
    for _ in range(2):
        with pytest.raises(OSError):
            make_client("test", timeout=5, ca_file=str(tmp_path / "missing.pem"))


def test_a_mail_connection_never_offers_the_alpn_an_http_client_set_on_its_context(tmp_path):
    """httpx sets "http/1.1" as the ALPN protocol on the context it is given; an IMAP or SMTP
    handshake trusting the same ca_file must not offer it (a server may refuse the handshake)."""
    cert = make_certificate(tmp_path / "one")
    with FakeHttpServer(lambda request: Reply.text("ok"), ssl_context=cert.server_context()) as server:
        assert make_client("test", timeout=5, ca_file=str(cert.cert)).get(server.base_url + "/").status_code == 200
    offered = []
    server_context = cert.server_context()
    server_context.set_alpn_protocols(["imap", "http/1.1"])
    with socket.create_server(("127.0.0.1", 0)) as listener:
        def serve() -> None:
            conn, _ = listener.accept()
            with server_context.wrap_socket(conn, server_side=True) as tls:
                offered.append(tls.selected_alpn_protocol())
        thread = threading.Thread(target=serve)
        thread.start()
        with socket.create_connection(listener.getsockname(), timeout=5) as raw, \
                trusting(str(cert.cert), use="mail").wrap_socket(raw, server_hostname="localhost"):
            pass
        thread.join(5)
    assert offered == [None]  # nothing offered: the server picked no protocol
