"""A cold start on a real Dovecot (no summary cache yet): the app paints a first page, then
the whole window, reading each message of the window once and selecting the list folder
once; the new-report poll waits for the whole window (it would compete with its walk)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from mailtriage.core.trace import OPLOG, TRACE
from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.helpers import cursor_files, make_app, screen_text, settle, until
from tests.tui.test_imap_drafts import REPORT, WHEN, imap_project  # noqa: F401 (fixture)
from tests.tui.test_imap_network import Proxy

MORE = 130  # with the fixture's report: more than a first page's walk reads (100 messages)


@pytest.fixture
def busy_list(imap_project, dovecot, dovecot_user, tmp_path, monkeypatch):
    monkeypatch.setenv("MAILTRIAGE_CACHE_DIR", str(tmp_path / "cold-cache"))  # no summary cache yet
    for n in range(MORE):
        dovecot.append(dovecot_user, "INBOX", REPORT.replace(b"overflow-1@", f"report-{n}@".encode())
                       .replace(b"Heap overflow", f"Report {n}:".encode()), when=WHEN + timedelta(minutes=n + 1))
    return imap_project


@pytest.fixture
def trace_lines():
    lines = []
    unsubscribe = TRACE.subscribe(lambda line: lines.append((line.direction, line.text)))
    yield lines
    unsubscribe()


def _fetched(lines) -> int:
    """FETCH responses received (the trace shows three of a bulk read, then counts the rest), but
    the idle app's one-byte read of the newest message (``BODY[]<0>``, issue 33: the list folder
    opened again after the row marks), which reads no header."""
    shown = sum(1 for d, t in lines if d == "<" and t.startswith("* ") and " FETCH (UID " in t
                and "BODY[]<0>" not in t)
    counted = sum(int(t[1:].split(" ", 1)[0].replace(",", "")) for d, t in lines
                  if d == "<" and t.startswith("[") and "more FETCH responses" in t)
    return shown + counted


async def test_a_cold_start_reads_each_message_of_the_window_once(busy_list, trace_lines):
    app = make_app(busy_list)
    app.first_page = 2
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert len(app.screen.query_one(ThreadList).rows) == MORE + 1
        assert f"{MORE + 1} threads · via list_recent_threads → imap (primary)" in screen_text(app)
    listings = [r.size for r in OPLOG.items() if r.op == "list_recent_threads"]
    assert listings == [2, MORE + 1]  # the newest two first (limit), then the whole window
    assert _fetched(trace_lines) == MORE + 1  # each message once: the whole window reads below the first page
    sent = [t for d, t in trace_lines if d == ">"]
    assert len([t for t in sent if 'SELECT "INBOX"' in t]) == 1, sent  # a NOOP showed nothing changed


class SlowWindowSearch(Proxy):
    """A proxy whose server takes a second to say where a listing's window starts (the
    whole window's ESEARCH, the poll's): a slow walk, as on a large folder."""

    def _pump(self, source, sink, from_server: bool) -> None:
        if from_server:
            return super()._pump(source, sink, from_server)
        original = sink.sendall

        def send(data: bytes) -> None:
            if b"YOUNGER" in data:
                time.sleep(1.0)
            original(data)

        class Slow:
            sendall = staticmethod(send)

            def __getattr__(self, name):
                return getattr(sink, name)

        return super()._pump(source, Slow(), from_server)


async def test_the_new_report_poll_starts_once_the_whole_window_is_listed(busy_list, dovecot, user_config, user_data):
    settings = user_config / "config.toml"
    proxy = SlowWindowSearch(dovecot.port)
    settings.write_text(settings.read_text().replace(f"port = {dovecot.port}", f"port = {proxy.port}")
                        + "\n[alerts]\npoll_seconds = 3600\n")
    app = make_app(busy_list, alerts=True)
    app.first_page = 2
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await until(pilot, lambda: bool(cursor_files(user_data)), "the poll's baseline")
    finally:
        proxy.close()
    ours = [r for r in OPLOG.items() if r.op == "list_recent_threads" and r.caller == "you"]
    polls = [r for r in OPLOG.items() if r.caller == "poller"]
    assert [r.size for r in ours] == [2, MORE + 1] and polls
    whole_done = ours[-1].started + ours[-1].duration_ms / 1000
    assert min(r.started for r in polls) >= whole_done  # not during the whole window's (slow) walk
