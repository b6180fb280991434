"""One IMAP connection serves one thread at a time: the service's backend lock (application/service.py).

A worker that talks to the project's server off that lock shares the connection with the one
holding it: one thread reads the other's tagged answer and a call waits for ever (reply11's
start-up hang, test_imap_drafts.py). Here, the paths locks11 found talking to the server off the
lock: each test records every protocol line sent while it runs and on which thread's lock depth.
"""

import asyncio
from contextlib import contextmanager

from mailtriage.core.trace import TRACE
from tests.tui.helpers import make_app, settle
from tests.tui.test_imap_drafts import imap_project  # noqa: F401 (fixture)


@contextmanager
def protocol_lines(service):
    """The lines sent to a server while inside, and those of them sent by a thread that did
    not hold ``service``'s backend lock (the trace is published on the sending thread)."""
    sent: list[str] = []
    unlocked: list[str] = []

    def seen(line) -> None:
        if getattr(line, "direction", "") == ">":
            sent.append(line.text)
            if not service._lock._held.depth:
                unlocked.append(line.text)
    unsubscribe = TRACE.subscribe(seen)
    try:
        yield sent, unlocked
    finally:
        unsubscribe()


async def test_naming_a_failures_backend_talks_to_the_server_only_under_the_backend_lock(imap_project):
    """A worker whose call failed (the listing, a read, the thread URL, a proposal) names the backend
    that serves the op (ControllerBase.resolve). After a connection problem the sources' availability
    is forgotten (the dispatch's Unavailable, report_failure, R), so resolving checks the server
    again: it logged in and listed the folder off the lock, beside the sources check the failure's
    report starts and the read ahead, on the same connection."""
    app = make_app(imap_project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        app.session.forget_availability()  # what a connection problem's report does
        with protocol_lines(app.session) as (sent, unlocked):
            # On a thread, as the failed call's worker does.
            resolution = await asyncio.to_thread(app.screen.resolve, "read_thread")
        await settle(pilot)
    assert resolution.chosen == "imap"
    assert sent, "the availability was forgotten: resolving asks the server again"
    assert unlocked == []
