"""Issue 39: the alert poller over a connection the server drops between polls (a killed
session, a restarted Dovecot): the poll after it announces a report that came meanwhile once,
none twice, and misses none (a real Dovecot; the poller's source window-only, as the app
runs it). The listing side: tests/imap/test_poll_edges.py."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mailtriage.application.flows.alerts import NewReportPoller
from tests.application.flows.test_alerts_incremental import _report
from tests.application.flows.test_e2e_imap import NOW, _sources, imap_env  # noqa: F401  (the fixture)


def _drop(env, how: str) -> None:
    if how == "session killed":
        assert env.dovecot.kill_user_connections(env.user) >= 1
    else:
        env.dovecot.kill_master()
        env.dovecot.start()


@pytest.mark.parametrize("how", ["session killed", "server restarted"])
def test_a_report_that_came_while_the_connection_was_lost_is_announced_once(imap_env, how):
    for n in range(4):
        _report(imap_env, f"<r{n}@reporter.example>", f"Report {n}", when=NOW - timedelta(hours=20 - n))
    sources = _sources(imap_env)
    for backend in sources.backends.values():
        backend.hold_window_only()
    try:
        poller = NewReportPoller(sources, clock=lambda: datetime.now(timezone.utc))
        poller.acknowledge(poller.poll())  # the silent baseline
        poller.acknowledge(poller.poll())  # (from here on the listing continues from what changed)
        _drop(imap_env, how)
        _report(imap_env, "<news@reporter.example>", "Fresh report")
        news = poller.poll()
        assert [t.root_message_id for t in news.new_threads] == ["<news@reporter.example>"]
        assert not news.updated_threads
        poller.acknowledge(news)
        _drop(imap_env, how)
        assert not poller.poll().has_news  # nothing came: nothing announced again
        _drop(imap_env, how)
        _report(imap_env, "<reply@reporter.example>", "Re: Report 1", parent="<r1@reporter.example>")
        _report(imap_env, "<second@reporter.example>", "Second report",
                when=datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=1))
        later = poller.poll()
        assert [t.root_message_id for t in later.new_threads] == ["<second@reporter.example>"]
        assert [t.root_message_id for t in later.updated_threads] == ["<r1@reporter.example>"]
        poller.acknowledge(later)
        assert not poller.poll().has_news
    finally:
        sources.close()
