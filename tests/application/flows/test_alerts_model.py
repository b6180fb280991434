"""Issue 39's invariant of the alerts, as the app keeps it in one process beside another (a
model; a real Dovecot): a thread announced as new is never announced as new again, a thread is
reported again only when it got mail after the acknowledgement that covered it, and every new
one is reported. The app's poller (the change feed, window-only sources) polls, its news waits
for the coalesced notice, the notice acknowledges in memory (``save=False``) and a worker writes
the cursor later; meanwhile another process (a second app, the CLI's ``poll``) polls and writes
the same cursor file, the 10-minute safety nets come round (a full judge, an IMAP walk) and the
journal is folded into the file.

The model holds, per thread, how many mails it has and how many of them each cursor covers (the
app's acknowledged cursor in memory, and the file): each poll must report as new exactly the
threads no cursor it reads covers, and as updated exactly those with mail the cursor does not
cover."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta, timezone

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from mailtriage.application.flows import alerts
from mailtriage.application.flows.alerts import FULL_POLL_SECONDS, LOOKBACK, LOOKUP_TRIES, CursorStore, NewReportPoller
from mailtriage.backends.imap import source as imap_source
from tests.application.flows.conftest import REPORT, mail
from tests.application.flows.test_alerts_faults import proxied  # noqa: F401  (the fixture)
from tests.application.flows.test_alerts_incremental import _window_only
from tests.application.flows.test_e2e_imap import LIST, imap_env  # noqa: F401  (the fixture)

_machines = iter(range(10 ** 6))


def _roots(threads) -> set[str]:
    return {t.root_message_id for t in threads}


def _covered(*cursors: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for cursor in cursors:
        for root, mails in cursor.items():
            out[root] = max(out.get(root, 0), mails)
    return out


def test_one_process_deferred_saves_beside_another_announce_each_thread_once(proxied, tmp_path, monkeypatch):
    imap_env = proxied  # (through the fault proxy: a root lookup of the app's poll can be cut)
    # The journal is folded into the file as soon as it is as large (not from 64 KB on): the
    # folds a 30-minute storm makes come in a few steps here.
    monkeypatch.setattr(alerts, "JOURNAL_MIN_BYTES", 0)
    first = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=2)
    made = iter(range(10 ** 6))

    class AppBesideAnother(RuleBasedStateMachine):
        @initialize()
        def start(self) -> None:
            path = tmp_path / "alerts" / f"m{next(_machines)}.json"
            self.clock = [datetime.now(timezone.utc)]
            # Threads from before the storm: two older than the poll's window (a reply to them
            # is an update: its root is on the list) and three the window's lower edge passes
            # as the clock moves on (full=True: 10 minutes at a time).
            m = next(_machines)
            edge = self.clock[0].replace(microsecond=0) - LOOKBACK
            old = [(f"<older{m}-{k}@reporter.example>", edge - timedelta(days=1, minutes=k)) for k in range(2)]
            old += [(f"<edge{m}-{k}@reporter.example>", edge + timedelta(minutes=4 + 9 * k)) for k in range(3)]
            for message_id, when in old:
                self._seed(message_id, when, None)
            self.app = NewReportPoller(_window_only(imap_env), store=CursorStore(path), clock=lambda: self.clock[0])
            self.other = NewReportPoller(_window_only(imap_env), store=CursorStore(path),
                                         clock=lambda: self.clock[0])
            for _ in range(3):  # the silent baseline, then the listing's memo in its steady state
                self.app.acknowledge(self.app.poll())
            self.mails = {REPORT: 1, **{message_id: 1 for message_id, _ in old}}  # root -> mails of its thread
            self.older = {message_id for message_id, _ in old[:2]}  # roots a first reply makes the poll look up
            self.tries = Counter[str]()  # polls in a row that failed to look an older root up
            self.memory = dict(self.mails)  # what the app's acknowledged cursor covers (in memory)
            self.disk = dict(self.mails)  # what the cursor file covers (with its journal)
            # The app's news not announced yet: the controller's coalescing (thread -> summary)
            # and the outcomes the notice acknowledges, each with the mails it covers.
            self.waiting: dict[str, object] = {}
            self.unacked: list[tuple[object, dict[str, int]]] = []
            self.announced: Counter[str] = Counter()  # threads the app's notices counted as new

        def teardown(self) -> None:
            self.app.sources.close()
            self.other.sources.close()

        @rule(reply=st.booleans(), pick=st.integers(0, 10 ** 6))
        def arrive(self, reply: bool, pick: int) -> None:
            n = next(made)
            roots = sorted(self.mails)
            root = roots[pick % len(roots)] if reply else None
            message_id = f"<m{n}@reporter.example>"
            self._seed(message_id, first + timedelta(seconds=n), root)  # each later than the last
            key = root or message_id
            self.mails[key] = self.mails.get(key, 0) + 1

        @rule(pick=st.integers(0, 1))
        def reply_to_an_older_thread(self, pick: int) -> None:
            """A reply to a thread older than the window (its first makes the poll look its root up)."""
            n = next(made)
            root = sorted(self.older)[pick]
            self._seed(f"<m{n}@reporter.example>", first + timedelta(seconds=n), root)
            self.mails[root] += 1

        def _seed(self, message_id: str, when: datetime, root: str | None) -> None:
            imap_env.seed(mail(message_id, "Nina <nina@reporter.example>", f"Made {message_id}", "x\n",
                               when.strftime("%a, %d %b %Y %H:%M:%S +0000"), to=LIST, in_reply_to=root,
                               references=root), when=when)

        def _check(self, outcome, covered: dict[str, int]) -> None:
            assert _roots(outcome.new_threads) == {r for r in self.mails if r not in covered}
            assert _roots(outcome.updated_threads) == {r for r, n in self.mails.items() if 0 < covered.get(r, n) < n}

        @rule(late=st.booleans(), full=st.booleans(), walk=st.booleans(), cut=st.booleans())
        def app_polls(self, late: bool, full: bool, walk: bool, cut: bool) -> None:
            """The app's poll (``full``: its 10-minute full judge is due; ``walk``: its source's
            10-minute walk; ``cut``: the connection drops if it looks a root up); ``late``: its
            news reaches the screen after a notice went out."""
            cuts = imap_env.proxy.cuts
            if cut:
                imap_env.proxy.cut_when_client_sends(b"HEADER Message-ID")
            if full:
                self.clock[0] += FULL_POLL_SECONDS
            if walk:
                monkeypatch.setattr(imap_source, "RELIST_SECONDS", -1.0)
            try:
                outcome = self.app.poll()
            finally:
                monkeypatch.setattr(imap_source, "RELIST_SECONDS", 600.0)
                imap_env.proxy._take("_client_cut")  # (not used: not armed for the other process)
            self.memory = _covered(self.memory, self.disk)  # (another process's write is read)
            at_poll = dict(self.mails)
            if imap_env.proxy.cuts > cuts:
                # The lookup failed: a first reply to an older thread is neither news nor in the
                # cursor now (judged again at the next poll), a new report once LOOKUP_TRIES polls
                # in a row failed to look its root up; everything else as ever.
                reported = _roots(outcome.updated_threads)
                looked_up = {r for r, n in self.mails.items() if 0 < self.memory.get(r, n) < n} - reported
                assert looked_up <= self.older
                for root in looked_up:
                    self.tries[root] += 1
                given_up = {r for r in looked_up if self.tries[r] >= LOOKUP_TRIES}
                assert _roots(outcome.new_threads) == {r for r in self.mails if r not in self.memory} | given_up
                for root in looked_up - given_up:
                    at_poll[root] = self.memory[root]
            else:
                self._check(outcome, self.memory)
                for root in _roots(outcome.updated_threads) & self.older:
                    self.tries[root] = 0
            if not outcome.has_news:  # run_poll_loop: acknowledged and written at once
                self.app.acknowledge(outcome)
                self.memory = _covered(self.memory, at_poll)
                self.disk = _covered(self.disk, self.memory)
                return
            if late:
                self.notice()
            shown = self.app.fresh(outcome)  # Alerts.on_alerts_found
            self.unacked.append((shown, at_poll))
            for t in shown.new_threads:
                self.waiting[t.root_message_id] = t

        @rule()
        def notice(self) -> None:
            """Alerts._announce_alerts: one notice, its outcomes acknowledged in memory."""
            unacked, self.unacked = self.unacked, []
            for root in self.waiting:
                self.announced[root] += 1
            self.waiting = {}
            for outcome, at_poll in unacked:
                self.app.acknowledge(outcome, save=False)
                self.memory = _covered(self.memory, at_poll)

        @rule()
        def app_writes(self) -> None:
            """The notice's worker writes the cursor (Alerts._save_alert_cursor)."""
            self.app.save()
            self.disk = _covered(self.disk, self.memory)

        @rule()
        def other_polls(self) -> None:
            """Another process polls, announces and writes at once (the CLI's poll, a second app)."""
            outcome = self.other.poll()
            self._check(outcome, self.disk)
            self.other.acknowledge(outcome)
            self.disk = _covered(self.disk, self.mails)

        @invariant()
        def announced_once(self) -> None:
            assert not [root for root, n in self.announced.items() if n > 1]

    run_state_machine_as_test(AppBesideAnother, settings=settings(
        max_examples=12, stateful_step_count=30, deadline=None, database=None, derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]))
