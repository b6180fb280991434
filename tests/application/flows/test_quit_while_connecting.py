"""Quitting (``Service.close``) while the project's IMAP source is still connecting to a
server that never greets: a connect has nothing to finish, so the quit ends it at once,
without waiting ``CLOSE_WAIT`` for it (nor ``CLOSE_WAIT + ABORT_WAIT``, 4 s, with the
connect still hanging, as it did when abort() could not reach a socket being opened)."""

from __future__ import annotations

import threading
import time

from mailtriage.application.service import Service
from mailtriage.application.service_lock import CLOSE_WAIT
from mailtriage.core.settings import load_settings
from tests.application.flows.conftest import imap_primary
from tests.servers.silent_imap import SilentServer


def test_a_quit_while_the_source_connects_ends_the_connect(env, memory_keyring):
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
        assert took < CLOSE_WAIT, f"the quit took {took:.2f} s: it waited for a connect to finish"
        [error] = outcome
        assert error is not None and "the app quits" in str(error), error
    finally:
        server.close()
