"""The start of a fault suite for new-report alerts: the IMAP connection dropped by a loopback
proxy mid-IDLE (the server's announcement of the report is lost) and mid-FETCH (the poll's
listing breaks). The watch reconnects and announces what arrived meanwhile exactly once."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from datetime import timedelta

import pytest

from mailtriage.core.trace import TRACE
from mailtriage.application.flows.alerts import LOOKUP_TRIES, NewReportPoller, run_poll_loop
from tests.servers.faultproxy import FaultProxy
from tests.application.flows.conftest import mail
from tests.application.flows.test_e2e_imap import LIST, NOW, _sources, imap_env  # noqa: F401  (the fixture)
from tests.application.flows.test_alerts_imap import OLD_ROOT, _date, _seed_quiet_history

BOUND = 90.0  # seconds: generous, a loaded machine may be slow; a passing run takes a few


def wait_until(condition, what: str, bound: float = BOUND) -> None:
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {bound:g} s waiting for {what}")
        time.sleep(0.05)


def report(n: int):
    return mail(f"<fault-{n}@reporter.example>", "Nina <nina@reporter.example>", f"Report {n}", "x\n",
                NOW.strftime("%a, %d %b %Y %H:%M:%S +0000"), to=LIST)


@pytest.fixture
def proxied(imap_env):
    """The ``work`` account reaches Dovecot through a fault proxy."""
    proxy = FaultProxy(imap_env.dovecot.port)
    config = Path(os.environ["MAILTRIAGE_CONFIG_DIR"]) / "config.toml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace(f"port = {imap_env.dovecot.port}\n", f"port = {proxy.port}\n"), encoding="utf-8")
    imap_env.proxy = proxy
    try:
        yield imap_env
    finally:
        proxy.close()


class Watch:
    """``run_poll_loop`` on a thread with an hour between polls: only IDLE (and the retry
    after a failed poll) brings mail in during a test."""

    def __init__(self, env) -> None:
        self.sources = _sources(env)
        self.poller = NewReportPoller(self.sources)
        self.stop = threading.Event()
        self.news: list[list[str]] = []
        self.errors: list[str] = []
        self.idles = 0
        self.idles_at_news: list[int] = []  # IDLE commands sent before each announcement

        def on_news(outcome):
            self.idles_at_news.append(self.idles)
            self.news.append(sorted(t.subject for t in outcome.new_threads))
            self.poller.acknowledge(outcome)

        def count_idle(line) -> None:
            if line.direction == ">" and line.text.split()[1:2] == ["IDLE"]:
                self.idles += 1

        self.unsubscribe = TRACE.subscribe(count_idle)
        self.thread = threading.Thread(target=run_poll_loop, args=(self.poller, on_news), daemon=True,
                                       kwargs={"stop": self.stop, "interval": 3600,
                                               "on_error": lambda exc: self.errors.append(str(exc))})
        self.thread.start()

    def idling(self, after: int = 0) -> bool:
        return self.idles > after

    def close(self) -> None:
        self.unsubscribe()
        self.stop.set()
        self.sources.abort()  # an IDLE slice ends at once
        self.thread.join(timeout=60)
        self.sources.close()


def test_a_connection_dropped_mid_idle_reconnects_and_announces_the_report_once(proxied):
    watch = Watch(proxied)
    try:
        wait_until(lambda: watch.poller.store.path.exists() and watch.idling(), "the baseline, then IDLE")
        # The server's "* n EXISTS" for the report is the chunk the proxy drops, with the connection.
        proxied.proxy.cut_when_server_sends(b"EXISTS")
        proxied.seed(report(1), when=NOW)
        wait_until(lambda: watch.news, "the report whose announcement was lost")
        assert proxied.proxy.cuts == 1
        wait_until(lambda: watch.idling(after=watch.idles_at_news[0]), "IDLE again, on a new connection")
        proxied.seed(report(2), when=NOW)
        wait_until(lambda: len(watch.news) == 2, "the next report")
    finally:
        watch.close()
    assert watch.news == [["Report 1"], ["Report 2"]]  # each once


def test_a_connection_dropped_mid_fetch_is_retried_soon_and_announces_the_report_once(proxied):
    watch = Watch(proxied)
    try:
        wait_until(lambda: watch.poller.store.path.exists() and watch.idling(), "the baseline, then IDLE")
        # IDLE wakes the poll; the poll's listing loses its connection on its FETCH.
        proxied.proxy.cut_when_server_sends(b" FETCH (")
        proxied.seed(report(1), when=NOW)
        wait_until(lambda: watch.news, "the report, after the failed poll")
        assert proxied.proxy.cuts == 1 and len(watch.errors) == 1 and "lost during" in watch.errors[0]
        wait_until(lambda: watch.idling(after=watch.idles_at_news[0]), "IDLE again")
        proxied.seed(report(2), when=NOW)
        wait_until(lambda: len(watch.news) == 2, "the next report")
    finally:
        watch.close()
    assert watch.news == [["Report 1"], ["Report 2"]]  # each once


def test_one_folders_connection_dropped_mid_idle_ends_the_wait_on_every_folder(proxied):
    """The list in two folders (a primary and a fallback source), one IDLE connection each:
    when one drops, the wait ends at once for all (what came meanwhile is unknown), instead
    of the others idling out their slice."""
    env = proxied
    env.write_project([("imap", "primary", "yes"), ("imap2", "fallback", "no")], extra={
        "mail_sources.imap": {"account": "work", "list": LIST, "folder": "seclist"},
        "mail_sources.imap2": {"kind": "imap", "account": "work", "list": LIST, "folder": "seclist-old"}})
    for folder in ("seclist", "seclist-old"):
        env.seed(report(0), folder=folder, when=NOW)
    sources = _sources(env)
    idles: list[str] = []
    unsubscribe = TRACE.subscribe(lambda line: idles.append(line.text) if line.direction == ">"
                                  and line.text.split()[1:2] == ["IDLE"] else None)
    try:
        poller = NewReportPoller(sources)
        poller.acknowledge(poller.poll())

        def deliver() -> None:
            wait_until(lambda: len(idles) >= 2, "IDLE on both folders")
            env.proxy.cut_when_server_sends(b"EXISTS")  # the announcement is lost with its connection
            env.seed(report(1), folder="seclist", when=NOW)  # the listed folder; the other one idles on

        delivery = threading.Thread(target=deliver, daemon=True)
        delivery.start()
        started = time.monotonic()
        assert poller.wait(600, threading.Event(), slice_seconds=120) is True  # poll now
        took = time.monotonic() - started
        delivery.join(timeout=60)
        assert env.proxy.cuts == 1
        assert took < 60, took  # not the other folder's 120-second slice
        assert [t.subject for t in poller.poll().new_threads] == ["Report 1"]
    finally:
        unsubscribe()
        sources.close()


def test_an_idle_that_fails_again_after_its_poll_is_retried_soon_not_after_the_interval(imap_env):
    # Issue 39: IDLE failed, the poll it brought worked, IDLE failed again: the watch then
    # slept out the rest of the interval (an hour here) and announced nothing meanwhile.
    watch = Watch(imap_env)
    try:
        wait_until(lambda: watch.poller.store.path.exists() and watch.idling(), "the baseline, then IDLE")
        assert imap_env.dovecot.kill_user_connections(imap_env.user) >= 1  # the IDLE connection drops
        wait_until(lambda: watch.idling(after=1), "the poll, then IDLE again on a new connection")
        assert imap_env.dovecot.kill_user_connections(imap_env.user) >= 1  # and drops again
        imap_env.seed(report(1), when=NOW)
        wait_until(lambda: watch.news, "the report, through IDLE retried after a short backoff", bound=45)
    finally:
        watch.close()
    assert watch.news == [["Report 1"]] and watch.errors == []


def _reply_to_an_old_thread(env) -> None:
    now = NOW + timedelta(seconds=5)
    env.seed(mail("<old-reply@reporter.example>", "Olga <olga@reporter.example>", "Re: Old race in frobd", "y\n",
                  _date(now), to=LIST, in_reply_to=OLD_ROOT), when=now)


def test_a_root_lookup_cut_once_makes_no_reply_to_an_old_thread_a_new_report(proxied):
    # Issue 39 (storm9): a reply to a thread older than the window is an update once its root
    # is found on the list; a lookup that failed (a dropped connection, a timeout at load 28)
    # made it a new report at once: a false "new", announced for good. It is judged again at
    # the next poll instead, whose lookup finds the root.
    _seed_quiet_history(proxied)
    sources = _sources(proxied)
    try:
        poller = NewReportPoller(sources)
        poller.acknowledge(poller.poll())
        _reply_to_an_old_thread(proxied)
        proxied.proxy.cut_when_client_sends(b"HEADER Message-ID")
        first = poller.poll()
        assert proxied.proxy.cuts == 1  # (the lookup's SEARCH was cut)
        assert [t.subject for t in first.new_threads] == []
        poller.acknowledge(first)  # (what the app does with a poll without news)
        second = poller.poll()
        assert [t.subject for t in second.new_threads] == []
        assert [str(t.thread_id.value) for t in second.updated_threads] == [OLD_ROOT]
    finally:
        sources.close()


def test_a_root_lookup_that_keeps_failing_makes_the_reply_a_new_report_at_last(proxied):
    # A backend that cannot tell for good: the reply is a new report (a spare alert beats a
    # missed one), after LOOKUP_TRIES polls in a row.

    _seed_quiet_history(proxied)
    sources = _sources(proxied)
    try:
        poller = NewReportPoller(sources)
        poller.acknowledge(poller.poll())
        _reply_to_an_old_thread(proxied)
        news = []
        for n in range(LOOKUP_TRIES):
            proxied.proxy.cut_when_client_sends(b"HEADER Message-ID")
            outcome = poller.poll()
            assert proxied.proxy.cuts == n + 1
            news.append([t.subject for t in outcome.new_threads])
            if not outcome.has_news:
                poller.acknowledge(outcome)
        assert news == [[]] * (LOOKUP_TRIES - 1) + [["Re: Old race in frobd"]]
    finally:
        sources.close()
