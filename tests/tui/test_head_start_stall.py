"""A start-up helper process that stalls (issue 39 §3): the list does not stay "loading…" for
ten minutes. After LISTING_TIMEOUT without a part of its listing, the app ends the child,
says so, and lists itself. The stall is real: the child is stopped (SIGSTOP) once it has
said a listing follows; the server is a real Dovecot behind the loopback proxy."""

from __future__ import annotations

import os
import signal
import time

from mailtriage.core.trace import OPLOG
from mailtriage.tui import head_start
from mailtriage.tui.head_start import ForkedHeadStart
from tests.tui.helpers import WAIT_BOUND, make_app, settle
from tests.tui.test_imap_drafts import imap_project  # noqa: F401 (fixture)
from tests.tui.test_imap_network import proxied_project, threads_status, wait_until  # noqa: F401 (fixture)


def test_the_listing_timeout_is_bounded_well_below_ten_minutes():
    assert head_start.LISTING_TIMEOUT <= 120


async def test_a_stalled_child_is_ended_said_and_the_app_lists_itself(proxied_project, monkeypatch):
    project, _proxy = proxied_project
    monkeypatch.setattr(head_start, "LISTING_TIMEOUT", 1.5)
    child = ForkedHeadStart.start(project, demo=False)
    assert child.ready(WAIT_BOUND)  # its head start is written (a loaded machine: not left to the first frame's wait)
    app = make_app(project)
    app.prepare_first_screen(child)
    assert app.head_start is not None and app.head_start.listing_follows
    os.kill(child.pid, signal.SIGSTOP)  # stuck: alive, but it will never write again
    OPLOG.clear()
    started = time.monotonic()
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(app),
                         timeout=30)
        await settle(pilot)
        assert time.monotonic() - started < 30
        listings = [r for r in OPLOG.items() if r.op == "list_recent_threads"]
        assert listings and all(r.caller == "you" for r in listings)
        said = [n.message for n in app._notifications]
        assert any("stalled" in m and "1.5 s" in m and "listing here" in m for m in said), said
    deadline = time.monotonic() + WAIT_BOUND
    while True:  # ended and reaped (a stopped process is killed all the same)
        try:
            os.kill(child.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the stalled child still runs"
        time.sleep(0.05)
