"""core/http.py over TLS: every HttpClient verifies the server against the CAs the
environment names (SSL_CERT_FILE, else SSL_CERT_DIR, else certifi), and builds that
verifying context once per process and trust setting rather than once per client (loading
certifi's bundle cost ~46 ms of CPU per client: each tracker, archive or OAuth call paid it).
Served by a real HTTPS server on loopback with throw-away certificates."""

from __future__ import annotations

import pytest

from mailtriage.core.http import HttpClient, HttpError
from tests.archives.fakehttp import FakeHttpServer, Reply
from tests.servers.certs import make_certificate


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory):
    """Two HTTPS servers, each with its own self-signed certificate."""
    root = tmp_path_factory.mktemp("http-tls")
    certs = [make_certificate(root / name, name) for name in ("one", "two")]
    servers = [FakeHttpServer(lambda req, n=n: Reply.text(f"server {n}"), ssl_context=cert.server_context())
               for n, cert in enumerate(certs)]
    for server in servers:
        server.start()
    yield list(zip(certs, servers))
    for server in servers:
        server.stop()


def fetch(server) -> str:
    client = HttpClient("test", server.base_url)
    try:
        return client.request("GET", "/").text
    finally:
        client.close()


def test_a_client_trusts_the_ca_file_the_environment_names_and_follows_a_change_of_it(two_servers, monkeypatch):
    (cert_one, server_one), (cert_two, server_two) = two_servers
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_one.cert))
    assert fetch(server_one) == "server 0"
    with pytest.raises(HttpError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        fetch(server_two)
    # a context kept from the first setting would still refuse server two
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_two.cert))
    assert fetch(server_two) == "server 1"
    with pytest.raises(HttpError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        fetch(server_one)


def test_clients_made_under_one_trust_setting_share_one_verifying_context(two_servers, monkeypatch):
    (cert_one, _), (cert_two, _) = two_servers
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_one.cert))
    first, second = HttpClient("a"), HttpClient("b")
    assert first.tls_context is second.tls_context
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_two.cert))
    third = HttpClient("c")
    assert third.tls_context is not first.tls_context
    for client in (first, second, third):
        client.close()
