"""New-report alerts across a server outage, on a real Dovecot of the test's own that is
killed and started again on the same port: the watch reports the outage, then announces
exactly the reports delivered meanwhile, once, and says the outage ended."""

from __future__ import annotations

import os
import threading
import time
from datetime import datetime, timezone
from email import policy
from pathlib import Path

import pytest

from mailtriage.backends.registry import SourceSet
from mailtriage.application.flows.alerts import NewReportPoller, run_poll_loop
from tests.servers.dovecot import DovecotServer
from tests.application.flows.conftest import imap_primary, mail

LIST = "security@frobnicator.example.org"
BOUND = 90.0  # seconds: generous, a loaded machine may be slow; a passing run takes a few


def wait_until(condition, what: str, bound: float = BOUND) -> None:
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {bound:g} s waiting for {what}")
        time.sleep(0.05)


def report(n: int, folder_list: str = LIST) -> bytes:
    now = datetime.now(timezone.utc)
    msg = mail(f"<outage-{n}@reporter.example>", "Nina <nina@reporter.example>", f"Report {n}", "x\n",
               now.strftime("%a, %d %b %Y %H:%M:%S +0000"), to=folder_list)
    return msg.as_bytes(policy=policy.SMTP)


@pytest.fixture
def own_dovecot():
    server = DovecotServer().start()  # our own: the session's server stays up for other tests
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def outage_env(env, own_dovecot, memory_keyring):
    """The workflow env with the ``work`` account on a Dovecot of this test's own as the
    mandatory primary source (the list in INBOX)."""
    user = own_dovecot.add_user()
    imap_primary(env, own_dovecot.port, user.name, user.password, 'access = "draft"\ntimeout = 10')
    own_dovecot.append(user, "INBOX", report(0))
    env.server, env.user = own_dovecot, user
    return env


class Watch:
    """``run_poll_loop`` on a thread, as ``mailtriage poll --watch`` and the app's worker run it."""

    def __init__(self, env, interval: float) -> None:
        self.sources = SourceSet(env.config())
        self.poller = NewReportPoller(self.sources)
        self.stop = threading.Event()
        self.news: list[list[str]] = []
        self.errors: list[str] = []
        self.recovered: list = []

        def on_news(outcome):
            self.news.append(sorted(t.subject for t in outcome.new_threads))
            self.poller.acknowledge(outcome)

        self.thread = threading.Thread(target=run_poll_loop, args=(self.poller, on_news), daemon=True,
                                       kwargs={"stop": self.stop, "interval": interval,
                                               "on_error": lambda exc: self.errors.append(str(exc)),
                                               "on_recovered": self.recovered.append})
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.sources.abort()  # an IDLE slice ends at once
        self.thread.join(timeout=60)
        self.sources.close()


def test_alerts_resume_after_the_server_was_down_and_came_back_on_the_same_port(outage_env):
    server, user = outage_env.server, outage_env.user
    watch = Watch(outage_env, interval=3)
    try:
        wait_until(lambda: watch.poller.store.path.exists(), "the silent baseline")
        server.kill_master()
        # Down long enough for polls to fail on the availability check itself (refused).
        wait_until(lambda: sum("refused the connection" in e for e in watch.errors) >= 2, "two refused polls")
        assert all("run aborted" in e or "lost" in e or "refused" in e for e in watch.errors), watch.errors
        server.start()
        server.append(user, "INBOX", report(1))
        server.append(user, "INBOX", report(2))
        wait_until(lambda: watch.news, "the reports delivered after the restart")
        wait_until(lambda: watch.recovered, "the end of the outage")
    finally:
        watch.close()
    assert watch.news == [["Report 1", "Report 2"]]
    assert len(watch.recovered) == 1
    outage = watch.recovered[0]
    assert outage.failures >= 2 and "refused the connection" in outage.last_error
    again = NewReportPoller(SourceSet(outage_env.config()))
    try:
        assert not again.poll().has_news  # announced once, and acknowledged
    finally:
        again.sources.close()


def test_a_backend_found_down_is_checked_again_after_a_growing_backoff_until_a_check_works(outage_env):
    from mailtriage.backends.resolution import AvailabilityCache
    from mailtriage.core.trace import TRACE

    server = outage_env.server
    now = [0.0]
    sources = SourceSet(outage_env.config())
    connects: list[float] = []
    mine = f"connect 127.0.0.1:{server.port} "  # this test's server: no other test's thread counts
    unsubscribe = TRACE.subscribe(lambda line: connects.append(now[0]) if line.direction == "!"
                                  and line.text.startswith(mine) else None)
    try:
        once = AvailabilityCache(sources.backends, clock=lambda: now[0])  # a one-shot run's: kept for the run
        retried = AvailabilityCache(sources.backends, clock=lambda: now[0])
        retried.retry_outages(10)
        server.kill_master()
        for cache in (once, retried):
            assert cache.reason("imap") is not None  # down (refused; a dying server may time out)
        checked = []
        for step in range(1, 300):  # 29.9 s of the caches' clock, a tenth at a time
            now[0] = step / 10
            before = len(connects)
            assert once.reason("imap") is not None
            assert retried.reason("imap") is not None
            if len(connects) > before:
                checked.append(now[0])
        # 2, 4, 8 s after each failed check, then at most the cap (10 s); never by the one-shot cache.
        assert checked == [2.0, 6.0, 14.0, 24.0]
        assert retried.retry_in("imap") == pytest.approx(4.1)  # the next check at 34 s
        server.start()
        now[0] = 34.0
        assert retried.reason("imap") is None and retried.retry_in("imap") is None
        assert once.reason("imap") is not None  # a one-shot run's answer stands
        server.kill_master()
        retried.forget("imap")  # a dispatch found it down again: the check that worked reset the backoff
        assert retried.reason("imap") is not None  # its open connection lost, or refused
        assert retried.retry_in("imap") == pytest.approx(2.0)
        server.start()
    finally:
        unsubscribe()
        sources.close()


def test_the_cli_watch_resumes_after_the_outage_and_says_so(outage_env, tmp_path):
    """The issue's own steps: ``mailtriage poll --watch --interval 3``, the server killed and
    started again on the same port, two reports delivered meanwhile."""
    import json
    import stat
    import subprocess
    import sys

    server, user = outage_env.server, outage_env.user
    script = tmp_path / "password.sh"  # the child process has no keyring of ours
    script.write_text(f"#!/bin/sh\necho '{user.password}'\n", encoding="utf-8")
    script.chmod(stat.S_IRWXU)
    config = Path(os.environ["MAILTRIAGE_CONFIG_DIR"]) / "config.toml"
    config.write_text(config.read_text(encoding="utf-8") + f'password_command = "{script}"\n', encoding="utf-8")
    data = Path(os.environ["MAILTRIAGE_DATA_DIR"])
    proc = subprocess.Popen([sys.executable, "-m", "mailtriage.cli.main", "--project", str(outage_env.project),
                             "poll", "--watch", "--interval", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda s=s, into=into: into.extend(iter(s.readline, "")), daemon=True)
               for s, into in ((proc.stdout, out), (proc.stderr, err))]
    for reader in readers:
        reader.start()
    try:
        wait_until(lambda: list(data.glob("alerts/*.json")), "the silent baseline")
        server.kill_master()
        wait_until(lambda: sum("refused the connection" in line for line in err) >= 2, "two refused polls")
        server.start()
        server.append(user, "INBOX", report(1))
        server.append(user, "INBOX", report(2))
        # (one poll, or two when the watch's poll after the restart fell between the appends)
        wait_until(lambda: sum(len(json.loads(line)["new_threads"]) for line in list(out)) >= 2,
                   "the reports delivered after the restart")
        wait_until(lambda: any("polling works again" in line for line in err), "the end of the outage")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for reader in readers:
            reader.join(timeout=10)
    assert sorted(t["subject"] for line in out for t in json.loads(line)["new_threads"]) == ["Report 1", "Report 2"]
    failed = [line for line in err if "poll failed" in line]
    assert failed and all("trying again in" in line for line in failed)
    assert user.password not in "".join(err)
