"""Quitting (``Service.close``) while the project's IMAP source is still connecting to a
server that never greets: a connect has nothing to finish, so the quit ends it at once,
without waiting ``CLOSE_WAIT`` for it (nor ``CLOSE_WAIT + ABORT_WAIT``, 4 s, with the
connect still hanging, as it did when abort() could not reach a socket being opened)."""

from __future__ import annotations

import threading
import time

import pytest

from mailtriage.application.service import Service
from mailtriage.application import service_lock
from mailtriage.application.service_lock import CLOSE_WAIT
from mailtriage.core.origins import secret_key
from mailtriage.core.secrets import set_secret
from mailtriage.core.settings import load_settings
from tests.application.flows.conftest import imap_primary
from tests.servers.silent_http import SilentHttpServer
from tests.servers.silent_imap import SilentServer


#: The quit's own waits in the "at once" tests: a quit that waited for a call takes this long, one
#: that ended it takes milliseconds, and a loaded machine cannot blur the two (the real waits, 1 s
#: and 3 s, against a bound of 1 s could).
WAITS = 30.0


@pytest.fixture
def long_waits(monkeypatch):
    monkeypatch.setattr(service_lock, "CLOSE_WAIT", WAITS)
    monkeypatch.setattr(service_lock, "ABORT_WAIT", WAITS)


def test_a_quit_while_the_source_connects_ends_the_connect(env, memory_keyring, long_waits):
    server = SilentServer()  # accepts, never greets
    imap_primary(env, server.port, "sam", "pw", "timeout = 60")
    session = Service(env.project, demo=False, settings=load_settings())
    session.open()
    outcome: list = []
    checking = threading.Thread(target=lambda: outcome.append(session.check_sources()), daemon=True)
    try:
        checking.start()  # start-up's first call: it holds the backend lock while it connects
        assert server.reached.wait(10)  # connected; the greeting never comes (the account waits 60 s)
        started = time.monotonic()
        session.close()
        took = time.monotonic() - started
        # The checking call let go of the lock because its connect was ended, not the quit's
        # waits running out: it is over by now (else it waits for the 60-s timeout).
        checking.join(5)
        assert not checking.is_alive(), "the quit left the connect waiting on the server"
        # The close waited for the lock CLOSE_WAIT (taking at least that long) only when it did
        # not end the connect before.
        assert took < WAITS, f"the quit took {took:.2f} s: it waited for a connect to finish"
        [error] = outcome
        assert error is not None and "the app quits" in str(error), error
    finally:
        server.close()


LOGGED_IN = (  # then the next command waits: a call in flight on an open connection
    (b"CAPABILITY", b"* CAPABILITY IMAP4rev1\r\nTAG OK done\r\n"),
    (b"LOGIN", b"TAG OK [CAPABILITY IMAP4rev1] logged in\r\n"),
    (b"*", b""),
)


def _quit_during(env, call) -> tuple[float, list]:
    """Service.close() while ``call(session)`` waits on an open connection's answer: its
    seconds and the call's outcome."""
    server = SilentServer(b"* OK [CAPABILITY IMAP4rev1] hi\r\n", LOGGED_IN)
    imap_primary(env, server.port, "sam", "pw", "timeout = 60")
    session = Service(env.project, demo=False, settings=load_settings())
    session.open()
    return _quit_during_call(session, lambda: call(session), server)  # logged in; the command waits


def test_a_quit_ends_a_read_in_flight_at_once(env, memory_keyring, long_waits):
    """No write in flight: nothing to finish, so the quit waits no CLOSE_WAIT for the read."""
    took, [result] = _quit_during(env, lambda session: session.check_sources())
    assert took < WAITS, f"the quit took {took:.2f} s: it waited for a read to finish"
    assert "the app quits" in str(result)


def test_a_quit_gives_a_write_in_flight_its_chance_to_finish(env, memory_keyring):
    """A confirmed write (through Service.apply) waiting on the server is left CLOSE_WAIT to
    finish (here it does not: then its connection is ended too)."""
    class Proposal:  # confirmed, it talks to the project's IMAP source (as a draft's APPEND does)
        def __init__(self, session) -> None:
            self.session = session

        def apply(self, *, confirmed: bool):
            return self.session.check_sources()

    took, [result] = _quit_during(env, lambda session: session.apply(Proposal(session)))
    assert took >= CLOSE_WAIT, f"the quit ended a write after {took:.2f} s, without its chance"
    assert "the app quits" in str(result)


def _quit_during_call(session, call, server) -> tuple[float, list]:
    """Service.close() while ``call()`` waits on ``server`` (one that stops answering, and sets
    ``reached`` then): its seconds and the call's outcome."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    calling = threading.Thread(target=run, daemon=True)
    try:
        calling.start()
        assert server.reached.wait(10)  # the call now waits for an answer that never comes
        started = time.monotonic()
        session.close()
        took = time.monotonic() - started
        calling.join(5)
        assert not calling.is_alive(), "the quit left the call waiting on the server"
        return took, outcome
    finally:
        server.close()


def test_a_quit_ends_an_archive_read_in_flight_at_once(env, memory_keyring, long_waits):
    """The project's archive (HyperKitty over HTTP): httpx cannot cancel a request, so the quit
    waited CLOSE_WAIT + ABORT_WAIT and left the read waiting for its 60-s timeout."""
    server = SilentHttpServer()
    env.write_project([("archive", "primary", "yes")], extra={"mail_sources.archive": {
        "kind": "mailman3", "base_url": server.url, "list": "security@frobnicator.example.org", "timeout": 60}})
    session = Service(env.project, demo=False, settings=load_settings())
    session.open()
    took, [result] = _quit_during_call(session, session.check_sources, server)
    assert took < WAITS, f"the quit took {took:.2f} s: it waited for a read to finish"
    assert "the app quits" in str(result), result


def test_a_quit_ends_a_tracker_call_in_flight_at_once(env, memory_keyring, long_waits):
    """A GitHub tracker's call (who the user is, under the tracker's lock) on a silent API: the
    quit waited for the tracker's lock until the call's timeout (20 s, far beyond the join's 5 s)."""
    server = SilentHttpServer()
    set_secret(secret_key("github", server.url, "acme/security"), "ghp-token")
    env.write_project(extra={"tracker.user": None, "tracker.platform": "github",
                             "tracker.github": {"repo": "acme/security", "api_url": server.url}})
    session = Service(env.project, demo=False, settings=load_settings())
    session.open()
    session.open_tracker()  # opening a GitHub tracker sends nothing
    took, [result] = _quit_during_call(session, session.queue_user, server)
    assert took < WAITS, f"the quit took {took:.2f} s: it waited for the tracker's call"
    assert "the app quits" in str(result), result


def test_a_quit_gives_a_tracker_write_in_flight_its_chance_and_never_says_it_was_not_done(env, memory_keyring):
    """A confirmed write (apply) whose POST to the tracker is sent and not answered: it is left
    CLOSE_WAIT, then ended, and said to be perhaps done (a POST sent may have landed)."""
    server = SilentHttpServer()
    set_secret(secret_key("github", server.url, "acme/security"), "ghp-token")
    env.write_project(extra={"tracker.platform": "github",
                             "tracker.github": {"repo": "acme/security", "api_url": server.url}})
    session = Service(env.project, demo=False, settings=load_settings())
    session.open()
    tracker = session.open_tracker()

    class Proposal:  # confirmed, it writes to the tracker (as an import's new issue does)
        def apply(self, *, confirmed: bool):
            return tracker.http.post("/repos/acme/security/issues", json={"title": "t"})

    took, [result] = _quit_during_call(session, lambda: session.apply(Proposal()), server)
    assert took >= CLOSE_WAIT, f"the quit ended a write after {took:.2f} s, without its chance"
    assert "the app quits" in str(result) and "may have done it" in str(result), result
