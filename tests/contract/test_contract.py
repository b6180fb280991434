"""The mail-source contract, checked on every backend in HARNESSES (conftest.py).

Every test takes the parametrized ``source`` (or ``loaded``/``harness``) fixture,
so a backend that joins HARNESSES runs all of them. Tests of an op the backend
does not declare check that it declines; they never skip silently.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from mailtriage.backends.contract import (ALL_OPS, MESSAGE_ID_KIND, Draft, DraftRequest, MailSource, Message, Op,
                                          Thread, ThreadId, ThreadSummary)
from mailtriage.backends.errors import BackendFailure, NotSupported, ThreadNotFound
from mailtriage.backends.thread_reconstruction import synthetic_kind
from tests.contract.corpus import (
    EXPECTED_THREADS,
    EXPECTED_THREADS_ORPHAN_APART,
    FUTURE,
    LONG_AGO,
    NO_ID_SUBJECT,
    OLD_ROOTS,
    ORPHAN,
    RECENT_ROOTS,
    RECENT_SINCE,
    T1,
    T2,
    T3,
    T4,
)

READ_OPS = {Op.LIST_RECENT_THREADS, Op.READ_THREAD, Op.LIST_DRAFTS, Op.LIST_SENT_SINCE, Op.THREAD_URL}


def own_kinds(source: MailSource) -> set[str]:
    return {source.thread_id_kind, synthetic_kind(source.thread_id_kind)}


def call(source: MailSource, op: Op, thread_id: ThreadId, list_name: str | None):
    """Invoke ``op`` with plausible arguments."""
    if op is Op.LIST_RECENT_THREADS:
        return source.list_recent_threads(list_name, LONG_AGO)
    if op is Op.READ_THREAD:
        return source.read_thread(thread_id)
    if op is Op.LIST_DRAFTS:
        return source.list_drafts(thread_id)
    if op is Op.LIST_SENT_SINCE:
        return source.list_sent_since(thread_id, LONG_AGO)
    if op is Op.CREATE_DRAFT:
        return source.create_draft(DraftRequest(thread_id=thread_id, body="contract test", to=("x@example.org",)))
    if op is Op.THREAD_URL:
        return source.thread_url(thread_id)
    raise AssertionError(op)


def rows_by_root(source: MailSource, list_name: str | None, since: datetime = LONG_AGO) -> dict:
    return {row.root_message_id: row for row in source.list_recent_threads(list_name, since)}


def expected_threads(harness) -> dict:
    return EXPECTED_THREADS if harness.joins_replies_to_missing_parents else EXPECTED_THREADS_ORPHAN_APART


def t1_id(source: MailSource, list_name: str | None) -> ThreadId:
    return rows_by_root(source, list_name)[T1].thread_id


# --- capabilities ---------------------------------------------------------------


def test_capabilities_are_a_frozenset_of_ops(source):
    assert isinstance(source.capabilities, frozenset)
    assert source.capabilities and all(isinstance(op, Op) for op in source.capabilities)
    assert all(source.supports(op) == (op in source.capabilities) for op in ALL_OPS)
    assert isinstance(source.thread_id_kind, str) and source.thread_id_kind


def test_every_undeclared_op_declines_with_not_supported(source, harness):
    source.check_available()
    thread_id = ThreadId(source.thread_id_kind, T1)
    undeclared = [op for op in ALL_OPS if op not in source.capabilities]
    for op in undeclared:
        with pytest.raises(NotSupported) as caught:
            call(source, op, thread_id, harness.list_name)
        assert caught.value.op == op.value


def test_every_declared_read_op_answers(source, harness):
    thread_id = t1_id(source, harness.list_name) if Op.LIST_RECENT_THREADS in source.capabilities \
        else ThreadId(source.thread_id_kind, T1)
    answer_types = {Op.LIST_RECENT_THREADS: ThreadSummary, Op.READ_THREAD: Thread, Op.LIST_DRAFTS: Draft,
                    Op.LIST_SENT_SINCE: Message, Op.THREAD_URL: str}
    for op in sorted(source.capabilities & READ_OPS, key=lambda o: o.value):
        try:
            answer = call(source, op, thread_id, harness.list_name)
        except NotSupported:  # pragma: no cover - the failure message says it all
            pytest.fail(f"{harness.name} declares {op.value} but declined it")
        # An answer of the contract's type: one item, or a sequence of items (never None or a dict).
        wanted = answer_types[op]
        if wanted in (Thread, str):
            assert isinstance(answer, wanted), (op, answer)
        else:
            assert not isinstance(answer, (str, dict)) and all(isinstance(a, wanted) for a in answer), (op, answer)
    assert source.capabilities & READ_OPS, f"{harness.name} declares no read op"


# --- listing ----------------------------------------------------------------------


def listing(source, harness, since=LONG_AGO):
    if Op.LIST_RECENT_THREADS not in source.capabilities:
        pytest.skip(f"{harness.name} does not list threads (checked by the NotSupported test)")
    return source.list_recent_threads(harness.list_name, since)


def test_thread_ids_carry_the_backend_kind(source, harness):
    rows = listing(source, harness)
    assert rows
    for row in rows:
        assert isinstance(row.thread_id, ThreadId)
        assert row.thread_id.kind in own_kinds(source), row


def test_listing_holds_every_expected_thread_with_its_root_and_count(source, harness):
    rows = {r.root_message_id: r for r in listing(source, harness)}
    for root, (subject, members) in expected_threads(harness).items():
        assert root in rows, f"{harness.name}: thread {root} missing"
        assert rows[root].subject == subject
        assert rows[root].message_count == len(members)
        assert rows[root].thread_id.kind == source.thread_id_kind
        assert rows[root].root_message_id.startswith("<") and rows[root].root_message_id.endswith(">")


def test_message_without_id_is_listed_under_a_kind_of_its_own(source, harness):
    if not harness.keeps_messages_without_id:
        pytest.skip(f"{harness.name}'s store does not keep mail without a Message-ID")
    rows = [r for r in listing(source, harness) if r.subject == NO_ID_SUBJECT]
    assert len(rows) == 1
    assert rows[0].thread_id.kind == synthetic_kind(source.thread_id_kind)
    assert rows[0].thread_id != ThreadId(source.thread_id_kind, rows[0].thread_id.value)


def test_listing_honours_since(source, harness):
    recent = {r.root_message_id for r in listing(source, harness, RECENT_SINCE)}
    assert RECENT_ROOTS <= recent
    assert not (OLD_ROOTS & recent)
    everything = {r.root_message_id for r in listing(source, harness, LONG_AGO)}
    assert RECENT_ROOTS | OLD_ROOTS <= everything
    assert listing(source, harness, FUTURE) == []


def test_listing_is_newest_activity_first(source, harness):
    rows = listing(source, harness)
    stamps = [r.last_activity for r in rows if r.last_activity is not None]
    assert stamps == sorted(stamps, reverse=True)
    assert all(r.last_activity.tzinfo is not None for r in rows if r.last_activity is not None)


# --- reading ----------------------------------------------------------------------


def read(source, harness, root) -> Thread:
    if Op.READ_THREAD not in source.capabilities:
        pytest.skip(f"{harness.name} does not read threads (checked by the NotSupported test)")
    thread_id = rows_by_root(source, harness.list_name)[root].thread_id \
        if Op.LIST_RECENT_THREADS in source.capabilities else ThreadId(source.thread_id_kind, root)
    return source.read_thread(thread_id)


@pytest.mark.parametrize("root", sorted(EXPECTED_THREADS))
def test_read_thread_is_chronological_with_the_expected_messages(source, harness, root):
    thread = read(source, harness, root)
    assert all(isinstance(m, Message) for m in thread.messages)
    assert tuple(m.message_id for m in thread.messages) == expected_threads(harness)[root][1]
    dates = [m.date for m in thread.messages]
    assert None not in dates and dates == sorted(dates)


def test_reply_with_a_missing_parent_joins_its_thread(source, harness):
    if not harness.joins_replies_to_missing_parents:
        # The archive files it apart: it must still be listed and readable, nothing lost.
        thread = read(source, harness, ORPHAN)
        assert [m.message_id for m in thread.messages] == [ORPHAN]
        return
    thread = read(source, harness, T2)
    assert "<t2-orphan@reporter.example>" in [m.message_id for m in thread.messages]


def test_non_ascii_headers_and_body_are_decoded(source, harness):
    (message,) = read(source, harness, T3).messages
    assert message.subject == "脆弱性の報告 — Zürich"
    assert message.sender.name == "山田太郎"
    assert "脆弱性" in message.body_text


def test_html_only_mail_is_text(source, harness):
    (message,) = read(source, harness, T4).messages
    assert any(part.from_html for part in message.text_parts)
    assert "<p>" not in message.body_text and "proof" in message.body_text


def test_thread_id_of_another_kind_is_refused(source, harness):
    foreign = ThreadId("contract-foreign-kind", T1)
    for op in (Op.READ_THREAD, Op.THREAD_URL, Op.LIST_DRAFTS, Op.LIST_SENT_SINCE):
        if op in source.capabilities:
            with pytest.raises(BackendFailure):
                call(source, op, foreign, harness.list_name)


def test_a_message_id_the_source_does_not_hold_is_thread_not_found(source, harness):
    """A definite "no such thread", which the outgoing rule tells from a lookup that failed."""
    if Op.READ_THREAD not in source.capabilities:
        pytest.skip(f"{harness.name} reads no threads")
    with pytest.raises(ThreadNotFound):
        source.read_thread(ThreadId(MESSAGE_ID_KIND, "<never-sent-anywhere@contract.example>"))


def test_thread_url_is_a_string(source, harness):
    if Op.THREAD_URL not in source.capabilities:
        pytest.skip(f"{harness.name} has no thread URLs (checked by the NotSupported test)")
    url = source.thread_url(t1_id(source, harness.list_name) if Op.LIST_RECENT_THREADS in source.capabilities
                            else ThreadId(source.thread_id_kind, T1))
    assert isinstance(url, str) and url.strip() == url and "://" in url


def test_reads_leave_the_source_unchanged(loaded, harness):
    source = loaded.source
    before = loaded.snapshot()
    source.check_available()
    for row in source.list_recent_threads(harness.list_name, LONG_AGO) \
            if Op.LIST_RECENT_THREADS in source.capabilities else []:
        for op in (Op.READ_THREAD, Op.THREAD_URL, Op.LIST_DRAFTS, Op.LIST_SENT_SINCE):
            if op in source.capabilities:
                call(source, op, row.thread_id, harness.list_name)
    assert loaded.snapshot() == before


def test_a_replys_own_message_id_finds_the_thread_that_holds_it(source, harness):
    """read_thread on a reply's Message-ID reads the thread that holds it (not "no thread")."""
    if Op.READ_THREAD not in source.capabilities:
        pytest.skip(f"{harness.name} does not read threads (checked by the NotSupported test)")
    if not source.accepts(ThreadId("msgid", T1)):
        pytest.skip(f"{harness.name} does not resolve Message-IDs (MailSource.thread_for_message_id)")
    for mid in ("<t1-reply@example.org>", "<t1-nested@reporter.example>", T1):
        thread = source.read_thread(ThreadId("msgid", mid))
        assert tuple(m.message_id for m in thread.messages) == EXPECTED_THREADS[T1][1], mid
        assert thread.thread_id.root == T1


def test_many_message_ids_find_what_one_at_a_time_finds(source, harness):
    """threads_for_message_ids (a poll's roots at once, issue 39: one ORed search on IMAP, in
    batches) finds what thread_for_message_id finds one by one, and nothing it does not."""
    if not source.resolves_message_ids:
        pytest.skip(f"{harness.name} does not resolve Message-IDs (MailSource.thread_for_message_id)")
    wanted = [*EXPECTED_THREADS, "<t1-reply@example.org>", "<t1-nested@reporter.example>",
              *(f"<absent-{n}@example.org>" for n in range(50))]
    one_by_one = {mid: found for mid in wanted if (found := source.thread_for_message_id(mid)) is not None}
    assert T1 in one_by_one
    assert source.threads_for_message_ids(wanted) == one_by_one


def test_drafts_and_sent_of_many_threads_are_what_one_at_a_time_gives(source, harness):
    """list_drafts_of / list_sent_since_of (the row marks of a screen at once, issue 39: on
    IMAP one search per folder) answer for each thread what the per-thread call answers; a
    reference the backend cannot read is left out, not an error."""
    ops = source.capabilities & {Op.LIST_DRAFTS, Op.LIST_SENT_SINCE}
    if not ops or Op.LIST_RECENT_THREADS not in source.capabilities:
        pytest.skip(f"{harness.name} has no drafts or sent to list for listed threads")
    threads = [row.thread_id for row in source.list_recent_threads(harness.list_name, LONG_AGO)]
    foreign = ThreadId("contract-foreign-kind", T1)
    if Op.LIST_DRAFTS in ops:
        many = source.list_drafts_of([*threads, foreign])
        assert foreign not in many
        assert {t: [d.draft_ref for d in many[t]] for t in threads} == \
            {t: [d.draft_ref for d in source.list_drafts(t)] for t in threads}
    if Op.LIST_SENT_SINCE in ops:
        many = source.list_sent_since_of([*threads, foreign], LONG_AGO)
        assert foreign not in many
        assert {t: [m.message_id for m in many[t]] for t in threads} == \
            {t: [m.message_id for m in source.list_sent_since(t, LONG_AGO)] for t in threads}
