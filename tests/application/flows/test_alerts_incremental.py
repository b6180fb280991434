"""Issue 39: the alert poller judges only the threads whose summaries changed since its last
poll (a real Dovecot; the poller's source window-only, as the app runs it), with the alerts it
gave before: news once, again until acknowledged, nothing after."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from mailtriage.application.flows.alerts import FULL_POLL_SECONDS, CursorStore, NewReportPoller
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


def _expunge(env, message_id: str) -> None:
    with env.dovecot.client(env.user) as other:
        other.select_folder("INBOX")
        other.delete_messages(other.search(["HEADER", "Message-ID", message_id]))
        other.expunge()


def _roots(threads) -> list[str]:
    return sorted(t.root_message_id for t in threads)


def _window_only(env):
    sources = _sources(env)
    for backend in sources.backends.values():
        backend.hold_window_only()
    return sources


def test_the_change_feed_poll_writes_the_journal_and_a_new_process_reads_it(imap_env, tmp_path):
    # Issue 39: a poll answered by the change feed keeps its cursor changes apart and its
    # acknowledgement appends them to the cursor's journal, not the whole cursor again.
    for n in range(5):
        _report(imap_env, f"<r{n}@reporter.example>", f"Report {n}", when=NOW - timedelta(hours=20 - n))
    sources = _window_only(imap_env)
    store = CursorStore(tmp_path / "alerts" / "c.json")
    try:
        poller = NewReportPoller(sources, store=store)
        for _ in range(3):  # the baseline, then the memo's components
            poller.acknowledge(poller.poll())
        written = store.path.read_bytes()
        _report(imap_env, "<news@reporter.example>", "Fresh report")
        news = poller.poll()
        assert news.seen_delta and list(news.cursor["seen"]) == ["msgid:<news@reporter.example>"]
        poller.acknowledge(news)
        assert store.path.read_bytes() == written  # the cursor file as it was ...
        lines = store.journal.read_text().splitlines()
        assert "msgid:<news@reporter.example>" in lines[-1]  # ... and the change in its journal
        _expunge(imap_env, "<r3@reporter.example>")  # a thread leaves the window
        _report(imap_env, "<reply@reporter.example>", "Re: Report 4", parent="<r4@reporter.example>",
                when=datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=2))
        update = poller.poll()
        assert _roots(update.updated_threads) == ["<r4@reporter.example>"] and not update.new_threads
    finally:
        sources.close()
    # Another process (the CLI's poll, the app started again) reads the file and the journal.
    other = _window_only(imap_env)
    try:
        fresh = NewReportPoller(other, store=CursorStore(store.path))
        again = fresh.poll()
        assert not again.new_threads  # the news acknowledged above is in the journal: no false "new"
        assert _roots(again.updated_threads) == ["<r4@reporter.example>"]  # not acknowledged: again
    finally:
        other.close()


def test_a_torn_journal_line_is_skipped_and_the_others_apply(tmp_path):
    store = CursorStore(tmp_path / "alerts" / "c.json")
    store.save({"v": 2, "backend": "imap", "kind": "msgid", "list": LIST, "checked": "2026-12-01T10:00:00Z",
                "seen": {"msgid:<a@x>": "2026-12-01T09:00:00Z"}})
    cursor = store.load()
    assert store.append({**cursor, "checked": "2026-12-01T11:00:00Z"}, {"msgid:<b@x>": "2026-12-01T10:30:00Z"})
    with open(store.journal, "ab") as journal:
        journal.write(b'\n{"backend":"imap","list":"' + LIST.encode() + b'","seen":{"msgid:<c@x>":"2026-')  # a kill
    assert store.append({**cursor, "checked": "2026-12-01T12:00:00Z"}, {"msgid:<a@x>": "2026-12-01T11:30:00Z"})
    loaded = CursorStore(store.path).load()
    assert loaded["seen"] == {"msgid:<a@x>": "2026-12-01T11:30:00Z", "msgid:<b@x>": "2026-12-01T10:30:00Z"}
    assert loaded["checked"] == "2026-12-01T12:00:00Z"  # (the line after the torn one is whole)
    store.save(loaded)  # written whole: the journal is folded in and gone
    assert not store.journal.exists() and CursorStore(store.path).load()["seen"] == loaded["seen"]


def test_a_cursor_another_process_wrote_makes_the_next_poll_judge_every_thread(imap_env, tmp_path):
    for n in range(3):
        _report(imap_env, f"<r{n}@reporter.example>", f"Report {n}", when=NOW - timedelta(hours=20 - n))
    sources = _window_only(imap_env)
    store = CursorStore(tmp_path / "alerts" / "c.json")
    try:
        poller = NewReportPoller(sources, store=store)
        for _ in range(3):
            poller.acknowledge(poller.poll())
        assert poller.last_judged == 0
        _report(imap_env, "<news@reporter.example>", "Fresh report")
        other = NewReportPoller(_window_only(imap_env), store=CursorStore(store.path))
        try:
            other.acknowledge(other.poll())  # another process announced it and wrote the cursor
        finally:
            other.sources.close()
        quiet = poller.poll()
        assert not quiet.has_news and poller.last_judged == 5  # read again: every thread judged (not 1)
    finally:
        sources.close()


_stores = iter(range(10 ** 6))


def test_a_change_feed_poll_reports_what_a_fresh_full_poll_of_the_same_cursor_reports(imap_env, tmp_path):
    """The model: whatever the order of new reports, replies, expunges, flag changes and polls
    acknowledged or not, each poll of the poller that judges only what the feed says changed
    reports the new and updated threads a fresh poller (a whole listing, every thread judged)
    reports from the same acknowledged cursor (read from the file and its journal)."""
    made = iter(range(10 ** 6))

    class AlertMachine(RuleBasedStateMachine):
        @initialize()
        def start(self) -> None:
            self.store = CursorStore(tmp_path / "alerts" / f"m{next(_stores)}.json")
            self.sources = _window_only(imap_env)
            self.poller = NewReportPoller(self.sources, store=self.store)
            for _ in range(3):  # the baseline, then the listing's memo in its steady state
                self.poller.acknowledge(self.poller.poll())
            self.ids = [REPORT]

        def teardown(self) -> None:
            self.sources.close()

        # A change polls after it (acknowledged or not) unless it ``holds`` (more in the same interval).
        @rule(reply=st.booleans(), pick=st.integers(0, 10 ** 6), then=st.sampled_from(["show", "ack", "hold"]))
        def arrive(self, reply: bool, pick: int, then: str) -> None:
            n = next(made)
            parent = self.ids[pick % len(self.ids)] if reply and self.ids else None
            _report(imap_env, f"<m{n}@reporter.example>", f"Made {n}", parent=parent,
                    when=datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=n % 7))
            self.ids.append(f"<m{n}@reporter.example>")
            self.then(then)

        @rule(pick=st.integers(0, 10 ** 6), then=st.sampled_from(["show", "ack", "hold"]))
        def expunge(self, pick: int, then: str) -> None:
            if len(self.ids) > 1:
                gone = self.ids.pop(1 + (len(self.ids) // 2 + pick) % (len(self.ids) - 1))
                _expunge(imap_env, gone)
            self.then(then)

        @rule(pick=st.integers(0, 10 ** 6), then=st.sampled_from(["show", "ack", "hold"]))
        def flag(self, pick: int, then: str) -> None:
            with imap_env.dovecot.client(imap_env.user) as other:
                other.select_folder("INBOX")
                uids = other.search(["HEADER", "Message-ID", self.ids[pick % len(self.ids)]])
                other.add_flags(uids, [b"\\Seen"])
            self.then(then)

        def then(self, what: str) -> None:
            if what != "hold":
                self.poll(what == "ack")

        @rule(ack=st.booleans())
        def poll(self, ack: bool) -> None:
            outcome = self.poller.poll()
            reference = NewReportPoller(_window_only(imap_env), store=CursorStore(self.store.path))
            try:
                expected = reference.poll()
            finally:
                reference.sources.close()
            assert _roots(outcome.new_threads) == _roots(expected.new_threads)
            assert _roots(outcome.updated_threads) == _roots(expected.updated_threads)
            if ack:
                self.poller.acknowledge(outcome)

    run_state_machine_as_test(AlertMachine, settings=settings(
        max_examples=4, stateful_step_count=12, deadline=None, database=None, derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]))
