"""A quit during a Gmail or Graph call: ``abort()`` on the mailbox ends the API request waiting
on a silent server at once (it waited for the account's timeout: httpx cannot cancel a request).
The API is a real loopback server that reads the request and never answers (Graph's over TLS,
trusted through the account's ca_file); the sign-in is the emulator's, done before."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from mailtriage.backends.gmail.adapter import GmailMailbox
from mailtriage.backends.microsoft.adapter import GraphMailbox
from tests.archives.fakehttp import FakeHttpServer, Reply
from tests.servers.silent_http import SilentHttpServer


def _ended_at_once(mailbox, path: str, what: str, server) -> None:
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(mailbox.api.get(path, what))
        except Exception as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    try:
        thread.start()
        assert server.reached.wait(10)  # the request is sent; the account waits 60 s for its answer (or 30 s)
        mailbox.abort()
        thread.join(10)
        assert not thread.is_alive(), "abort() did not reach the request waiting on the server"
        [error] = outcome
        assert "the app quits" in str(error), error
    finally:
        mailbox.close()
        server.close()


def test_abort_ends_a_gmail_request_in_flight(gmail_account):
    server = SilentHttpServer()
    mailbox = GmailMailbox(replace(gmail_account, api_base=server.url, timeout=60.0))
    _ended_at_once(mailbox, "gmail/v1/users/me/profile", "getProfile", server)


def test_abort_ends_a_graph_request_in_flight(graph_account, oauth_certificate):
    server = SilentHttpServer(oauth_certificate.server_context())
    mailbox = GraphMailbox(replace(graph_account, graph_base=server.url + "/v1.0", timeout=60.0))
    _ended_at_once(mailbox, "/me/mailFolders/inbox", "inbox", server)


class Throttling(FakeHttpServer):
    """Answers every request 429 with Retry-After: 30 (under the 60-s backoff deadline, so the
    API waits it); ``reached`` is set at the first."""

    def __init__(self, **kwargs) -> None:
        self.reached = threading.Event()
        super().__init__(self._throttle, **kwargs)
        self.start()

    def _throttle(self, request) -> Reply:
        self.reached.set()
        return Reply.json({"error": {"code": 429, "message": "slow down"}}, 429, **{"Retry-After": "30"})

    def close(self) -> None:
        self.stop()


@pytest.mark.parametrize("kind", ["gmail", "graph"])
def test_abort_ends_a_backoff_the_server_asked_for(kind, request, oauth_certificate):
    if kind == "gmail":
        server = Throttling()
        account = request.getfixturevalue("gmail_account")
        mailbox = GmailMailbox(replace(account, api_base=server.base_url))
        _ended_at_once(mailbox, "gmail/v1/users/me/profile", "getProfile", server)
    else:
        server = Throttling(ssl_context=oauth_certificate.server_context())
        account = request.getfixturevalue("graph_account")
        mailbox = GraphMailbox(replace(account, graph_base=server.base_url + "/v1.0"))
        _ended_at_once(mailbox, "/me/mailFolders/inbox", "inbox", server)
