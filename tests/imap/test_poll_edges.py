"""Issue 39: the incremental poll (``recent_threads.summaries_of_changes`` over ``recent.reconcile``)
under the cases tests/imap/test_incremental_poll.py does not try, against a real Dovecot: an
expunge and an arrival in one interval (EXISTS unchanged), several of each (a reply into a
thread, a thread's root removed), a connection lost between polls, and a flag change on a
message expunged in the same interval. After each poll the poller's listing must equal a
fresh full listing of the same window (thread ids, message counts, unread state).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from mailtriage.backends.errors import MailError
from tests.imap.conftest import make_mail
from tests.imap.test_incremental_poll import LIST, NOW, WINDOW, _fresh, _seed_window, make_source, rows  # noqa: F401

pytest.importorskip("imapclient")


def _threads(listed) -> list[tuple]:
    """What a listing shows of each thread: its id, its message count and whether it is unread."""
    return [(str(t.thread_id), t.message_count, t.unread) for t in listed]


def _expunge(dovecot, user, folder: str, *message_ids: str) -> None:
    with dovecot.client(user) as other:
        other.select_folder(folder)
        uids = [u for m in message_ids for u in other.search(["HEADER", "Message-ID", m])]
        assert len(uids) == len(message_ids), message_ids
        other.delete_messages(uids)
        other.expunge()


def _seen(dovecot, user, folder: str, *message_ids: str) -> None:
    with dovecot.client(user) as other:
        other.select_folder(folder)
        uids = [u for m in message_ids for u in other.search(["HEADER", "Message-ID", m])]
        assert len(uids) == len(message_ids), message_ids
        other.add_flags(uids, [b"\\Seen"])


def _poll_equals_fresh(poller, make_source, trace=None, folder: str = "INBOX") -> list:
    """Poll; with ``trace``, check the poll continued from its cache (no walk of the window:
    no YOUNGER search); then compare it with fresh full listings."""
    if trace is not None:
        trace.clear()
    listed = poller.list_recent_threads(LIST, WINDOW)
    if trace is not None:
        assert not [t for d, t in trace if d == ">" and "YOUNGER" in t], trace
    assert rows(listed) == _fresh(make_source, folder)
    assert _threads(listed) == _threads(make_source(folder, poller=False, cached=False).list_recent_threads(LIST, WINDOW))
    return listed


def test_an_expunge_and_an_arrival_in_one_interval_on_a_selected_session(make_source, seed, dovecot, dovecot_user,
                                                                             trace):
    _seed_window(seed, count=9)
    poller = make_source()
    poller.list_recent_threads(LIST, WINDOW)
    poller.list_recent_threads(LIST, WINDOW)  # the memo continues from here on
    with dovecot.client(dovecot_user) as other:
        other.select_folder("INBOX")
        before = other.folder_status("INBOX", [b"MESSAGES"])[b"MESSAGES"]
    _expunge(dovecot, dovecot_user, "INBOX", "<w4@x>")  # a reply in thread w3
    seed("INBOX", make_mail(9, subject="Fresh report", message_id="<fresh@x>"), when=NOW - timedelta(minutes=5))
    with dovecot.client(dovecot_user) as other:
        assert other.folder_status("INBOX", [b"MESSAGES"])[b"MESSAGES"] == before  # EXISTS unchanged
    listed = _poll_equals_fresh(poller, make_source, trace)
    by_root = {t.root_message_id: t for t in listed}
    assert "<fresh@x>" in by_root and by_root["<w3@x>"].message_count == 2


def test_several_expunges_and_arrivals_with_a_reply_and_a_root_gone(make_source, seed, dovecot, dovecot_user, trace):
    _seed_window(seed, count=12)  # threads w0, w3, w6, w9 of three messages each
    poller = make_source()
    poller.list_recent_threads(LIST, WINDOW)
    poller.list_recent_threads(LIST, WINDOW)
    _expunge(dovecot, dovecot_user, "INBOX", "<w3@x>", "<w7@x>", "<w10@x>", "<w11@x>")  # w3's root, and replies
    for n, (mid, parent) in enumerate([("<a1@x>", "<w0@x>"), ("<a2@x>", None), ("<a3@x>", "<w3@x>"),
                                       ("<a4@x>", "<a2@x>")]):
        seed("INBOX", make_mail(200 + n, subject=f"Arrival {n}", message_id=mid, references=parent,
                                in_reply_to=parent), when=NOW - timedelta(minutes=30 - n))
    listed = _poll_equals_fresh(poller, make_source, trace)
    counts = {t.root_message_id: t.message_count for t in listed}
    # w3's root gone: its replies (and the new reply to it) are a thread without its root.
    assert "<w3@x>" in counts and counts["<w3@x>"] == 3 and [t.continued for t in listed
                                                             if t.root_message_id == "<w3@x>"] == [True]
    assert counts["<w0@x>"] == 4 and counts["<a2@x>"] == 2 and counts["<w9@x>"] == 1 and counts["<w6@x>"] == 2
    _expunge(dovecot, dovecot_user, "INBOX", "<w4@x>", "<w5@x>", "<a3@x>")  # the rootless thread leaves whole
    listed = _poll_equals_fresh(poller, make_source)
    assert "<w3@x>" not in {t.root_message_id for t in listed}


def test_a_flag_change_on_a_message_then_expunged_in_one_interval(make_source, seed, dovecot, dovecot_user, trace):
    _seed_window(seed, count=6)
    poller = make_source()
    poller.list_recent_threads(LIST, WINDOW)
    poller.list_recent_threads(LIST, WINDOW)
    _seen(dovecot, dovecot_user, "INBOX", "<w5@x>")
    _seen(dovecot, dovecot_user, "INBOX", "<w0@x>", "<w1@x>", "<w2@x>")  # thread w0 read in the same interval
    _expunge(dovecot, dovecot_user, "INBOX", "<w5@x>")
    listed = _poll_equals_fresh(poller, make_source, trace)
    assert {t.root_message_id: (t.message_count, t.unread) for t in listed} == {"<w0@x>": (3, False),
                                                                                "<w3@x>": (2, True)}
    # A flag change then an expunge of a whole thread's messages (the thread unread, then gone).
    _seen(dovecot, dovecot_user, "INBOX", "<w3@x>", "<w4@x>")
    _expunge(dovecot, dovecot_user, "INBOX", "<w3@x>", "<w4@x>")
    listed = _poll_equals_fresh(poller, make_source)
    assert [t.root_message_id for t in listed] == ["<w0@x>"]


@pytest.mark.parametrize("how", ["session killed", "server restarted"])
def test_a_poll_after_the_connection_was_lost_equals_a_full_listing(make_source, seed, dovecot, dovecot_user, how):
    _seed_window(seed, count=9)
    poller = make_source()
    poller.list_recent_threads(LIST, WINDOW)
    poller.list_recent_threads(LIST, WINDOW)
    if how == "session killed":
        assert dovecot.kill_user_connections(dovecot_user) >= 1
    else:
        dovecot.kill_master()
        dovecot.start()
    _expunge(dovecot, dovecot_user, "INBOX", "<w6@x>")  # a root: its replies stay
    _seen(dovecot, dovecot_user, "INBOX", "<w0@x>", "<w1@x>", "<w2@x>")
    seed("INBOX", make_mail(9, subject="Fresh report", message_id="<fresh@x>"), when=NOW - timedelta(minutes=5))
    try:
        listed = _poll_equals_fresh(poller, make_source)
    except MailError as exc:  # pragma: no cover - the defect this test was written for
        pytest.fail(f"the first poll after the connection was lost failed: {exc}")
    assert "<fresh@x>" in {t.root_message_id for t in listed}
    assert [t.unread for t in listed if t.root_message_id == "<w0@x>"] == [False]
    seed("INBOX", make_mail(10, subject="Later report", message_id="<later@x>"), when=NOW - timedelta(minutes=4))
    _poll_equals_fresh(poller, make_source)


# -- the model: any order of appends, expunges, flag changes, lost connections and polls -------------

_machine_folders = iter(range(10 ** 6))


def folder_changes_machine(prefix: str, seed, dovecot, dovecot_user) -> type:
    """A machine over a folder of its own in the real Dovecot: another client appends (a new
    report or a reply), expunges and flags, and after each change the subclass's ``poll(lost)``
    runs unless the rule ``holds`` (more changes in the same interval). The subclass makes its
    listing in ``start_polling`` (the folder is seeded by then). Shared by the poll model here
    and the change feed's (tests/imap/test_change_feed.py)."""

    class FolderChanges(RuleBasedStateMachine):
        # (Every rule draws something: a rule without arguments is what derandomized examples
        # repeat, a dozen times over.)
        @initialize()
        def start(self) -> None:
            self.folder = f"{prefix}{next(_machine_folders)}"
            _seed_window(seed, self.folder, count=6)
            self.ids = [f"<w{n}@x>" for n in range(6)]  # the Message-IDs in the folder
            self.made = 0
            self.start_polling()

        def start_polling(self) -> None:
            raise NotImplementedError

        def poll(self, lost: bool) -> None:
            raise NotImplementedError

        @rule(reply=st.booleans(), pick=st.integers(0, 10 ** 6), hold=st.booleans())
        def append(self, reply: bool, pick: int, hold: bool) -> None:
            self.made += 1
            mid = f"<m{self.made}@x>"
            parent = self.ids[pick % len(self.ids)] if reply and self.ids else None
            seed(self.folder, make_mail(300 + self.made, subject=f"Made {self.made}", message_id=mid,
                                        references=parent, in_reply_to=parent),
                 when=NOW - timedelta(minutes=50 - self.made % 50))
            self.ids.append(mid)
            self.poll_unless(hold)

        @rule(pick=st.integers(0, 10 ** 6), count=st.integers(1, 2), hold=st.booleans())
        def expunge(self, pick: int, count: int, hold: bool) -> None:
            gone = {self.ids[(pick + i) % len(self.ids)] for i in range(count)} if self.ids else set()
            if gone:
                _expunge(dovecot, dovecot_user, self.folder, *gone)
                self.ids = [m for m in self.ids if m not in gone]
            self.poll_unless(hold)

        @rule(pick=st.integers(0, 10 ** 6), unseen=st.booleans(), hold=st.booleans())
        def flag(self, pick: int, unseen: bool, hold: bool) -> None:
            if self.ids:
                with dovecot.client(dovecot_user) as other:
                    other.select_folder(self.folder)
                    uids = other.search(["HEADER", "Message-ID", self.ids[pick % len(self.ids)]])
                    (other.remove_flags if unseen else other.add_flags)(uids, [b"\\Seen"])
            self.poll_unless(hold)

        def poll_unless(self, hold: bool) -> None:
            if not hold:
                self.poll(False)

    return FolderChanges


def test_a_poll_after_any_changes_equals_a_fresh_listing_of_the_window(make_source, seed, dovecot, dovecot_user):
    """After every poll the poller's listing (continued from what changed) equals a fresh full
    listing of the same window: thread ids, message counts, unread state, and the rest of the rows.
    Six short examples (the suite's budget, docs/testing.md): ~2.5 s wall in all at load 20."""

    class PollMachine(folder_changes_machine("Edge", seed, dovecot, dovecot_user)):
        def start_polling(self) -> None:
            self.poller = make_source(self.folder)
            self.poller.list_recent_threads(LIST, WINDOW)

        @rule(lost=st.booleans())
        def poll(self, lost: bool) -> None:
            if lost:  # the server dropped the poller's session since its last poll
                dovecot.kill_user_connections(dovecot_user)
            listed = self.poller.list_recent_threads(LIST, WINDOW)
            fresh_source = make_source(self.folder, poller=False, cached=False)
            try:
                fresh = fresh_source.list_recent_threads(LIST, WINDOW)
            finally:
                fresh_source.close()
            assert _threads(listed) == _threads(fresh)
            assert rows(listed) == rows(fresh)

    run_state_machine_as_test(PollMachine, settings=settings(
        max_examples=6, stateful_step_count=10, deadline=None, database=None, derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]))
