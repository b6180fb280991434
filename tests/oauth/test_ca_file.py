"""The extra CA an account trusts (``ca_file``: a self-hosted CA, a TLS-inspecting proxy, the
tests' servers) is loaded once a process for the same file (core/tls.py), not for every client:
each load read the system's CA store too (~22 ms of CPU; 223 of the 254 TLS contexts that
tests/oauth and tests/imap made were OAuth clients', issue 36 §7). A file whose content changed
is loaded again. Checked through the OAuth clients; IMAP connections and SMTP sends take their
contexts from the same function."""

from __future__ import annotations

import ssl

import pytest

from mailtriage.backends.oauth_http import make_client
from mailtriage.core.http import HttpError
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
