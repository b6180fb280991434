"""Issue 39: the alert poller judges only the threads whose summaries changed since its last
poll (a real Dovecot; the poller's source window-only, as the app runs it), with the alerts it
gave before: news once, again until acknowledged, nothing after."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from mailtriage.application.flows.alerts import FULL_POLL_SECONDS, NewReportPoller
from tests.application.flows.conftest import REPORT, mail
from tests.application.flows.test_e2e_imap import LIST, NOW, _sources, imap_env  # noqa: F401  (the fixture)


def _date(when) -> str:
    return when.strftime("%a, %d %b %Y %H:%M:%S +0000")


def _report(env, message_id: str, subject: str, *, parent: str | None = None, when: datetime | None = None) -> None:
    when = when or datetime.now(timezone.utc).replace(microsecond=0)
    env.seed(mail(message_id, "Nina <nina@reporter.example>", subject, "x\n", _date(when), to=LIST,
                  in_reply_to=parent, references=parent), when=when)


def test_a_poll_judges_only_the_threads_that_changed(imap_env):
    for n in range(9):
        _report(imap_env, f"<r{n}@reporter.example>", f"Report {n}", when=NOW - timedelta(hours=20 - n))
    sources = _sources(imap_env)
    for backend in sources.backends.values():
        backend.hold_window_only()
    clock = [datetime.now(timezone.utc)]
    try:
        poller = NewReportPoller(sources, clock=lambda: clock[0])
        poller.acknowledge(poller.poll())  # the silent baseline: every thread judged
        assert poller.last_judged == 10
        poller.acknowledge(poller.poll())  # (the listing's memo threads every row twice, then what changed)
        poller.acknowledge(poller.poll())
        assert poller.last_judged == 0  # nothing changed: nothing judged (before issue 39: all 10)
        _report(imap_env, "<news@reporter.example>", "Fresh report")
        news = poller.poll()
        assert [t.root_message_id for t in news.new_threads] == ["<news@reporter.example>"]
        assert not news.updated_threads and poller.last_judged == 1
        again = poller.poll()  # not acknowledged (the screen is busy): the same news again
        assert [t.root_message_id for t in again.new_threads] == ["<news@reporter.example>"]
        poller.acknowledge(again)
        assert not poller.poll().has_news and poller.last_judged == 0
        _report(imap_env, "<reply@reporter.example>", "Re: Heap overflow", parent=REPORT,
                when=datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=2))
        update = poller.poll()
        assert [t.root_message_id for t in update.updated_threads] == [REPORT] and not update.new_threads
        assert poller.last_judged == 1
        poller.acknowledge(update)
        clock[0] += FULL_POLL_SECONDS  # the safety net: every thread judged again, nothing new
        assert not poller.poll().has_news and poller.last_judged == 11
    finally:
        sources.close()
