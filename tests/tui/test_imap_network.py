"""Long work and lost connections, on a real Dovecot behind a loopback proxy we control.

The proxy forwards bytes unchanged; the tests can hold the server's answers (a slow
server), refuse new connections and cut the open ones (a network gone away).
"""

import re
import select
import socket
import threading
import time

import pytest

from mailtriage.application import MandatoryBackendUnavailable
from mailtriage.core.trace import OPLOG
from mailtriage.tui.panes.reader import ReaderPane
from mailtriage.tui.messages import ReaderFailed
from mailtriage.tui.panes.thread_list import ThreadList
from tests.servers.ports import free_port
from tests.tui.helpers import WAIT_BOUND, account_through, make_app, screen_text, settle, until
from tests.tui.test_imap_drafts import REPORT, WHEN, imap_project  # noqa: F401 (fixture)


class Proxy:
    """Loopback TCP proxy: ``hold()`` delays server answers, ``go_down()`` cuts and refuses."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self.port = free_port()
        self.flowing = threading.Event()
        self.flowing.set()
        self.up = True
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def hold(self) -> None:
        self.flowing.clear()

    def release(self) -> None:
        self.flowing.set()

    def go_down(self) -> None:
        self.up = False
        with self._lock:
            for conn in self._conns:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                conn.close()
            self._conns.clear()

    def come_back(self) -> None:
        self.up = True

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
            server = socket.create_connection(self.upstream)
            with self._lock:
                self._conns += [client, server]
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, from_server: bool) -> None:
        try:
            while True:
                ready, _, _ = select.select([source], [], [], 0.2)
                if not ready:
                    continue
                data = source.recv(65536)
                if not data:
                    break
                if from_server:
                    self.flowing.wait()
                sink.sendall(data)
        except (OSError, ValueError):  # the other direction closed the sockets (go_down)
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.close()
                except OSError:
                    pass

    def close(self) -> None:
        self.release()
        self.go_down()
        self._listener.close()


@pytest.fixture
def proxied_project(imap_project, user_config, dovecot, dovecot_user):
    """The IMAP project, its account reaching Dovecot through the proxy; two report threads."""
    dovecot.append(dovecot_user, "INBOX", REPORT.replace(b"overflow-1@", b"second@")
                   .replace(b"Heap overflow in the frob parser", b"Second report"), when=WHEN)
    proxy = Proxy(dovecot.port)
    with account_through(proxy, user_config, dovecot):
        yield imap_project, proxy


async def wait_until(pilot, predicate, timeout: float = WAIT_BOUND) -> None:
    """The shared wait (tests/tui/helpers.py); it fails showing the screen."""
    await until(pilot, predicate, "the condition", bound=timeout, step=0.05)


def reader_status(app) -> str:
    return str(app.screen.query_one("#reader-status").render())


async def test_esc_cancels_a_slow_read_and_its_late_answer_is_ignored(proxied_project):
    project, proxy = proxied_project
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        proxy.hold()
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert "loading thread" in reader_status(app)  # the UI answers while the server does not
        await pilot.press("j", "k")  # and keeps answering keys
        await pilot.press("escape")
        await pilot.pause()
        assert "loading cancelled" in reader_status(app)
        proxy.release()
        await settle(pilot)
        assert app.screen.query_one(ReaderPane).thread is None  # the late answer was dropped
        assert "loading cancelled" in reader_status(app)


async def test_opening_another_thread_supersedes_the_pending_one(proxied_project):
    project, proxy = proxied_project
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        first, second = (app.screen.query_one(ThreadList).rows.peek(i).subject for i in (0, 1))
        proxy.hold()
        await pilot.press("enter")
        app.screen.query_one(ThreadList).focus()  # back in the list (q would cancel the read)
        await pilot.press("j", "enter")
        await pilot.pause(0.2)
        proxy.release()
        await settle(pilot)
        shown = app.screen.query_one(ReaderPane).thread
        assert shown is not None and shown.subject == second != first


async def test_a_lost_connection_shows_a_reconnect_state_and_R_reconnects(proxied_project):
    project, proxy = proxied_project
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        proxy.go_down()
        await pilot.press("enter")
        await settle(pilot)
        assert "press R to reconnect" in reader_status(app)
        assert "✗ imap" in screen_text(app)  # the sources were checked again (a worker: settled)
        # The error names the server: "connection to 127.0.0.1:… lost", or, when the read first
        # tries to select the folder again on a new connection (the stale-ID check after a drop),
        # "connect to 127.0.0.1:… failed". Which one depends on when the drop is noticed.
        assert app.errors and re.search(r"connect(ion)? to 127\.0\.0\.1", app.errors[-1].message)
        proxy.come_back()
        await pilot.press("R")
        await settle(pilot)
        shown = screen_text(app)
        assert "✓ imap" in shown and "2 threads · via list_recent_threads → imap" in shown
        await pilot.press("q", "enter")  # back to the list (Enter went into the reader), open again
        await settle(pilot)
        assert app.screen.query_one(ReaderPane).thread is not None


async def test_a_read_that_finds_the_mandatory_backend_gone_when_reconnecting_shows_it_in_the_sources(proxied_project):
    """The read above fails as a lost connection or, when it reconnects first, as the mandatory
    backend unavailable (which one depends on when the drop is noticed): the second way too
    has the sources checked again, so the sources pane shows the backend down (it kept its ✓,
    and the test above failed so in a loaded run)."""
    project, proxy = proxied_project
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert "✓ imap" in screen_text(app)
        proxy.go_down()
        error = MandatoryBackendUnavailable("imap", f"connect to 127.0.0.1:{proxy.port} failed")
        app.screen.report_failure(ReaderFailed(request=0, title="read", error=error))  # what the read posts
        await settle(pilot)
        assert "✗ imap" in screen_text(app)


async def test_reporting_a_failure_never_waits_on_the_backend_lock(proxied_project):
    """report_failure runs on the UI thread: while a worker holds the service's backend lock (a
    connect to a silent server, say) it returns at once (it waited for the lock: the screen froze),
    and the sources are still checked again once the lock is free."""
    import threading

    project, proxy = proxied_project
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        proxy.go_down()
        held, release, in_time = threading.Event(), threading.Event(), []

        def worker() -> None:  # a backend call in progress, on the real lock
            with app.session._lock:
                held.set()
                in_time.append(release.wait(10))  # False only when report_failure waited for the lock

        holder = threading.Thread(target=worker, daemon=True)
        holder.start()
        assert held.wait(10)
        error = MandatoryBackendUnavailable("imap", f"connect to 127.0.0.1:{proxy.port} failed")
        app.screen.report_failure(ReaderFailed(request=0, title="read", error=error))
        release.set()
        holder.join(15)
        assert in_time == [True], "report_failure waited on the UI thread for the backend lock"
        await settle(pilot)
        assert "✗ imap" in screen_text(app)


def threads_status(app) -> str:
    return str(app.screen.query_one("#threads-status").render())


def listed_here(project) -> list:
    """The first list's whole window as this process lists it (the application layer's listing,
    without an app), the reference of the head start tests. It fills the summary cache as a run
    of the app does (the IMAP source writes it as the session closes): that the app's own
    listing fills it is test_a_second_launch_paints_the_cached_rows_before_the_server_answers's
    first run."""
    from mailtriage.application.service import Service
    from mailtriage.core.settings import load_settings

    session = Service(project, demo=False, settings=load_settings())
    try:
        session.open()
        return list(session.list_threads(session.lists()[0].list_name).value)
    finally:
        session.close()


async def test_a_second_launch_paints_the_cached_rows_before_the_server_answers(proxied_project):
    project, proxy = proxied_project
    first = make_app(project)
    async with first.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert "2 threads · via list_recent_threads → imap" in threads_status(first)  # lists and fills the cache
    proxy.hold()  # the server says nothing from now on: only the cache can fill the list
    OPLOG.clear()
    second = make_app(project)
    async with second.run_test(size=(140, 40)) as pilot:
        try:
            await wait_until(pilot, lambda: "from the cache" in threads_status(second))
            assert "2 threads from the cache, asking the server" in threads_status(second)
            shown = screen_text(second)
            assert "Heap overflow in the frob parser" in shown and "Second report" in shown
            assert [r.op for r in OPLOG.items() if r.backend == "imap"][:1] == ["cached_recent_threads"]
        finally:
            proxy.release()  # the server answers: its listing replaces the cached rows
        await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(second))
        assert "from the cache" not in threads_status(second)


async def test_with_the_server_gone_the_cached_rows_stay_marked_stale(proxied_project):
    project, proxy = proxied_project
    listed_here(project)
    proxy.go_down()
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: "press R to retry" in threads_status(app))
        thread_list = app.screen.query_one(ThreadList)
        assert len(thread_list.rows) == 2 and thread_list.has_class("-stale")
        assert "Second report" in screen_text(app)


async def test_without_the_summary_cache_nothing_is_painted_before_the_server_answers(proxied_project, user_config):
    project, proxy = proxied_project
    settings = user_config / "config.toml"
    settings.write_text(settings.read_text().replace("[accounts.", "[settings]\ncache_summaries = false\n\n[accounts.", 1))
    assert len(listed_here(project)) == 2  # a run that would have kept the cache
    proxy.hold()
    app = make_app(project)
    async with app.run_test(size=(140, 40)) as pilot:
        try:
            await pilot.pause(1.0)
            assert len(app.screen.query_one(ThreadList).rows) == 0
            assert "loading threads" in threads_status(app)
        finally:
            proxy.release()
        await wait_until(pilot, lambda: "2 threads · via" in threads_status(app))


async def test_head_start_reads_the_summary_cache_without_the_server(proxied_project):
    """Start-up's head start (before the first frame) opens the project and reads the cache;
    with the server gone it still has the rows, stale, and no connection was tried."""
    from mailtriage.core.settings import load_settings
    from mailtriage.core.trace import TRACE
    from mailtriage.tui.head_start import read_head_start
    from mailtriage.application.service import Service

    project, proxy = proxied_project
    listed_here(project)
    proxy.go_down()
    TRACE.clear()
    TRACE.enabled = True
    session = Service(project, demo=False, settings=load_settings())
    head = read_head_start(session, 200)
    assert head.stale and head.list_name == "security@frob.example"
    assert {t.subject for t in head.listing.value} == {"Heap overflow in the frob parser", "Second report"}
    assert TRACE.items() == []  # not a byte to or from the server
    session.close()


async def test_quitting_while_the_server_holds_an_answer_does_not_wait_for_its_timeout(proxied_project, monkeypatch):
    """The account's timeout is 30 s: a quit during a read the server does not answer ends
    that read's connection and is done in seconds, with the read reported as lost. The quit's
    own waits are made 30 s too: one that waited takes 30 s, a loaded machine cannot blur that."""
    from mailtriage.application import service_lock

    monkeypatch.setattr(service_lock, "CLOSE_WAIT", 30.0)
    monkeypatch.setattr(service_lock, "ABORT_WAIT", 30.0)
    project, proxy = proxied_project
    app = make_app(project)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            proxy.hold()
            await pilot.press("enter")  # the read now waits on the server, holding the backend lock
            await pilot.pause(0.3)
            assert "loading thread" in reader_status(app)
            started = time.monotonic()
        assert time.monotonic() - started < 30.0
        assert app.session.sources is not None  # closed through the lock, not given up on
    finally:
        proxy.release()
