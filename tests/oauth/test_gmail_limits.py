"""Gmail's usage limits as the real service reports them: 403 rateLimitExceeded /
userRateLimitExceeded and 429 without Retry-After, 500 backendError. Calls back off
exponentially with jitter within a total deadline, with the state in the console's op log
and trace; thread metadata is fetched with bounded concurrency."""

from __future__ import annotations

import time

import pytest

from mailtriage.backends.errors import Unavailable
from mailtriage.backends.gmail.api import USER, Backoff, GmailApi
from mailtriage.backends.gmail.adapter import GmailMailbox
from mailtriage.backends.gmail.source import FETCH_CONCURRENCY, GmailSource
from mailtriage.backends.mailbox_contract import MailQuery
from mailtriage.core.trace import OPLOG
from tests.archives.fakehttp import Reply
from tests.oauth.mail import BASE, make_mail

QUICK = Backoff(base=0.05, cap=0.4, deadline=3.0)


def gmail_error(status, reason, message):
    # The error body of Gmail's "Resolve errors" page: no Retry-After header.
    return Reply.json({"error": {"code": status, "message": message, "status": "RESOURCE_EXHAUSTED",
                                 "errors": [{"message": message, "domain": "usageLimits", "reason": reason}]}},
                      status)


@pytest.fixture
def oplog():
    records = []
    unsubscribe = OPLOG.subscribe(records.append)
    yield records
    unsubscribe()


@pytest.mark.parametrize("status, reason", [(403, "rateLimitExceeded"), (403, "userRateLimitExceeded"),
                                            (429, "rateLimitExceeded"), (500, "backendError")])
def test_rate_limits_and_backend_errors_back_off_and_recover(google_emulator, gmail_account, trace_lines, oplog,
                                                             status, reason):
    google_emulator.server.fail("/profile", gmail_error(status, reason, "Rate Limit Exceeded"), times=3)
    api = GmailApi(gmail_account, backoff=QUICK)
    assert api.get(f"{USER}/profile", "getProfile")["emailAddress"]
    assert len([r for r in google_emulator.server.requests if r.path.endswith("/profile")]) == 4
    waits = [line.text for line in trace_lines if "backing off" in line.text]
    assert len(waits) == 3 and all(f"{status} {reason}" in w for w in waits)
    backoffs = [r for r in oplog if r.op == "backoff"]
    assert len(backoffs) == 3 and all(r.backend == "gmail:me" and reason in r.detail for r in backoffs)


def test_backoff_grows_with_jitter_and_stops_at_the_deadline(google_emulator, gmail_account, trace_lines):
    google_emulator.server.fail("/profile", gmail_error(429, "rateLimitExceeded", "Rate Limit Exceeded"),
                                times=None)
    api = GmailApi(gmail_account, backoff=Backoff(base=0.05, cap=0.3, deadline=1.0))
    started = time.monotonic()
    with pytest.raises(Unavailable) as caught:
        api.get(f"{USER}/profile", "getProfile")
    elapsed = time.monotonic() - started
    assert elapsed < 10  # it gave up (429s come for ever); how soon is the waits' sum, below
    waits = [float(line.text.split("backing off ")[1].split("s")[0]) for line in trace_lines
             if "backing off" in line.text]
    # The deadline holds: no wait begun that would end past it (the trace rounds each to 0.01).
    # Told from the trace, not the wall clock: on a loaded machine the requests alone can pass 0.5 s.
    assert sum(waits) <= 1.0 + 0.005 * len(waits), waits
    # The trace prints two decimals and the jitter is up to ``base``, so the first two waits
    # (0.05-0.10 and 0.10-0.15) may print alike; from the third on they must have grown.
    assert len(waits) >= 3 and waits[1] >= waits[0] and waits[2] > waits[0] and max(waits) <= 0.3 + 0.05
    assert "gave up after" in str(caught.value) and "429" in str(caught.value)


def test_thread_metadata_is_fetched_with_bounded_concurrency_under_the_quota(google_emulator, gmail_account):
    for n in range(40):
        google_emulator.add_message(make_mail(n, subject=f"Report {n}"), date=(BASE.timestamp() + 60 * n))
    google_emulator.latency = 0.03
    google_emulator.max_concurrent = 10
    google_emulator.quota = (400, 1.0)  # quota units per second; threads.get costs 10
    api = GmailApi(gmail_account, backoff=QUICK)
    source = GmailSource("gmail", {"list": "security@example.org"}, mailbox=GmailMailbox(gmail_account, api=api))
    threads = source.list_recent_threads(None, BASE)
    assert len(threads) == 40
    assert 2 <= google_emulator.max_in_flight <= FETCH_CONCURRENCY


def test_mailbox_list_fetches_metadata_concurrently(google_emulator, gmail_account):
    for n in range(20):
        google_emulator.add_message(make_mail(n), date=(BASE.timestamp() + 60 * n))
    google_emulator.latency = 0.03
    mailbox = GmailMailbox(gmail_account, api=GmailApi(gmail_account, backoff=QUICK))
    page = mailbox.list(MailQuery(folder="INBOX", page_size=20))
    assert [m.subject for m in page.messages] == [f"Message {n}" for n in reversed(range(20))]
    assert 2 <= google_emulator.max_in_flight <= FETCH_CONCURRENCY


def test_a_long_thread_is_read_with_bounded_concurrency(google_emulator, gmail_account):
    from mailtriage.backends.contract import ThreadId

    root = google_emulator.add_message(make_mail(0, subject="Heap overflow"), date=BASE.timestamp())
    for n in range(1, 12):
        google_emulator.add_message(make_mail(n, subject="Re: Heap overflow", in_reply_to=f"<m{n - 1}@example.net>",
                                              references="<m0@example.net>"), date=BASE.timestamp() + 60 * n)
    google_emulator.latency = 0.03
    source = GmailSource("gmail", {}, mailbox=GmailMailbox(gmail_account, api=GmailApi(gmail_account, backoff=QUICK)))
    thread = source.read_thread(ThreadId("gmail", google_emulator.messages[root].thread_id))
    assert [m.message_id for m in thread.messages] == [f"<m{n}@example.net>" for n in range(12)]  # still in order
    assert 2 <= google_emulator.max_in_flight <= FETCH_CONCURRENCY
