"""One IMAP connection serves one thread at a time: the service's backend lock (application/service.py).

A worker that talks to the project's server off that lock shares the connection with the one
holding it: one thread reads the other's tagged answer and a call waits for ever (reply11's
start-up hang, test_imap_drafts.py). Here, the paths locks11 found talking to the server off the
lock, and the calls of the service that reach the sources: each test records every protocol
line sent while it runs and whether the sending thread held the lock.
"""

import asyncio
from contextlib import contextmanager

import pytest

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


ROOT = "<overflow-1@example.com>"
#: The service's calls that reach the project's sources (locks11's audit: each holds the lock; the row
#: marks' are test_imap_drafts.py's, the failure's resolution the test above).
SERVICE_CALLS = {
    "check_sources": lambda s: s.check_sources(),
    "listing_can_be_limited": lambda s: s.listing_can_be_limited(),
    "list_threads": lambda s: s.list_threads(s.lists()[0].list_name),
    "read_thread": lambda s: s.read_thread(thread_id()),
    "thread_url": lambda s: s.thread_url(thread_id()),
    "pending_drafts": lambda s: s.pending_drafts(thread_id()),
    "prepare_next_read": lambda s: s.prepare_next_read(),
    "can_search_sources": lambda s: s.can_search_sources(),
    "search_sources": lambda s: s.search_sources("overflow", s.lists()[0].list_name),
    "run_op": lambda s: s.run_op(op("list_sent_since"), None, {"thread_id": ROOT}),
}


def thread_id():
    from mailtriage.backends.contract import ThreadId

    return ThreadId("msgid", ROOT)


def op(name: str):
    from mailtriage.backends.contract import Op

    return Op(name)


@pytest.mark.parametrize("call", sorted(SERVICE_CALLS))
def test_each_service_call_talks_to_the_server_only_under_the_backend_lock(imap_project, call):
    """The audit's "held" verdicts, kept: with the sources' availability forgotten (so each call
    logs in and checks the folder again), every protocol line a call sends is sent holding the lock."""
    from mailtriage.application.service import Service
    from mailtriage.core.settings import load_settings

    service = Service(imap_project, demo=False, settings=load_settings())
    service.open()
    try:
        service.forget_availability()
        with protocol_lines(service) as (sent, unlocked):
            SERVICE_CALLS[call](service)
    finally:
        service.close()
    assert sent and unlocked == []
