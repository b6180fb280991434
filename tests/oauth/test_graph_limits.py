"""Graph under its documented limits (learn.microsoft.com/graph/throttling and
/graph/json-batching): throttling answered with and without Retry-After, 502/503/504,
a long Retry-After, failures part-way through a bulk write. The emulator answers as
Graph does; the sleeper is recorded, so no test waits real seconds."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from mailtriage.backends.errors import Unavailable
from mailtriage.backends.mailbox_contract import MailQuery
from mailtriage.backends.microsoft.adapter import GraphMailbox
from mailtriage.backends.microsoft.api import Backoff, GraphApi
from tests.oauth.mail import BASE
from tests.oauth.test_graph_mailbox import conversation, deliver, source  # noqa: F401  (fixtures)


@pytest.fixture
def waits():
    return []


@pytest.fixture
def mailbox(graph_account, waits):
    api = GraphApi(graph_account, sleep=waits.append, rng=random.Random(7))
    mb = GraphMailbox(graph_account, api=api)
    yield mb
    mb.close()


def graph_calls(emulator, part: str) -> int:
    return sum(part in r.path for r in emulator.server.requests)


def test_a_429_without_retry_after_backs_off_exponentially(microsoft_emulator, mailbox, waits):
    deliver(microsoft_emulator, 1)
    microsoft_emulator.throttle(4, match="/mailFolders/inbox/messages")
    page = mailbox.list(MailQuery(folder="inbox"))
    assert [m.subject for m in page.messages] == ["Message 1"]
    assert len(waits) == 4
    # base 1 s doubling, each with up to 1 s of jitter
    for n, wait in enumerate(waits):
        assert 2 ** n <= wait <= 2 ** n + 1
    assert graph_calls(microsoft_emulator, "/mailFolders/inbox/messages") == 5


@pytest.mark.parametrize("status", [502, 503, 504])
def test_a_gateway_or_unavailable_answer_to_a_read_is_retried(microsoft_emulator, mailbox, waits, status):
    deliver(microsoft_emulator, 1)
    microsoft_emulator.throttle(2, status=status, match="/mailFolders/inbox/messages")
    assert mailbox.list(MailQuery(folder="inbox")).total == 1
    assert len(waits) == 2


def test_a_504_to_a_move_is_not_repeated(microsoft_emulator, mailbox, waits):
    # A gateway timeout may have reached the mailbox: a POST is not sent twice.
    gid = deliver(microsoft_emulator, 1)
    microsoft_emulator.throttle(1, status=504, match="/move")
    with pytest.raises(Unavailable) as failure:
        mailbox.move([mailbox.mid(gid)], "archive")
    assert "504" in str(failure.value) and waits == []
    assert graph_calls(microsoft_emulator, "/move") == 1


def test_retry_after_is_honoured(microsoft_emulator, mailbox, waits):
    deliver(microsoft_emulator, 1)
    microsoft_emulator.throttle(1, retry_after="7", match="/mailFolders/inbox/messages")
    assert mailbox.list(MailQuery(folder="inbox")).total == 1
    assert waits == [7.0]


def test_a_long_retry_after_fails_at_once_naming_the_wait(microsoft_emulator, mailbox, waits):
    microsoft_emulator.throttle(1, retry_after="300", match="/mailFolders/inbox/messages")
    with pytest.raises(Unavailable) as failure:
        mailbox.list(MailQuery(folder="inbox"))
    assert "wait 300s" in str(failure.value) and "429" in str(failure.value)
    assert waits == [] and graph_calls(microsoft_emulator, "/mailFolders/inbox/messages") == 1


def test_throttling_that_never_ends_gives_up_within_the_deadline(microsoft_emulator, graph_account, waits):
    api = GraphApi(graph_account, sleep=waits.append, rng=random.Random(7),
                   backoff=Backoff(base=1.0, cap=4.0, deadline=20.0))
    microsoft_emulator.throttle(None, match="/mailFolders/inbox/messages")
    with pytest.raises(Unavailable) as failure:
        api.get("/me/mailFolders/inbox/messages", "messages.list")
    assert f"gave up after {len(waits) + 1} tries" in str(failure.value)
    assert 4 <= len(waits) and sum(waits) <= 20.0 and max(waits) <= 4.0
    api.close()


# --- bulk writes that meet an outage part-way -------------------------------------------------

def four_in_the_inbox(emulator, mailbox):
    gids = [deliver(emulator, n) for n in range(1, 5)]
    headers = sorted(mailbox.list(MailQuery(folder="inbox")).messages, key=lambda h: h.subject)
    return gids, headers


def test_a_throttled_archive_part_way_reports_what_changed(microsoft_emulator, mailbox, waits):
    from mailtriage.application.flows.organize import outcome_lines, propose_organize

    gids, headers = four_in_the_inbox(microsoft_emulator, mailbox)
    # Graph throttles from the third message on, asking for a wait longer than we keep.
    microsoft_emulator.throttle(None, retry_after="300", match=lambda r: r.path.endswith(f"{gids[2]}/move"))
    proposal = propose_organize(mailbox, headers, "archive", access="draft", folders=mailbox.list_folders())
    report = proposal.apply(confirmed=True)
    archive = microsoft_emulator.folder_id("archive")
    moved = [g for g in gids if microsoft_emulator.messages[g].folder == archive]
    assert moved == gids[:2]  # what the server did
    outcome = proposal.facts["outcome"]
    assert not report.ok
    assert sorted(outcome["done"]) == sorted(h.id for h in headers[:2])
    assert outcome["failed"][headers[2].id].startswith("not changed: Graph messages.move: 429")
    assert outcome["failed"][headers[3].id].startswith("not attempted")
    lines = outcome_lines(proposal)
    assert lines[0] == "done: 2 of 4 messages"
    assert [line.split(":")[0] for line in lines[1:]] == ["FAILED", "FAILED", "changed", "changed"]
    assert "Message 1" in lines[3] and "Message 2" in lines[4]
    assert graph_calls(microsoft_emulator, f"{gids[3]}/move") == 0


def test_no_answer_part_way_says_the_message_may_have_changed(microsoft_emulator, mailbox):
    from tests.archives.fakehttp import Reply

    gids, headers = four_in_the_inbox(microsoft_emulator, mailbox)
    # The answer to the second PATCH is cut off: Graph may or may not have applied it.
    microsoft_emulator.server.fail(lambda r: r.method == "PATCH" and r.path.endswith(gids[1]),
                                   Reply.json({"id": gids[1]}, truncate_at=3), times=None)
    from mailtriage.backends.mailbox_contract import PartialFailure

    with pytest.raises(PartialFailure) as failure:
        mailbox.set_flags([h.id for h in headers], flagged=True)
    assert failure.value.done == [headers[0].id]
    assert failure.value.failed[headers[1].id].startswith("perhaps changed")
    assert all(failure.value.failed[h.id].startswith("not attempted") for h in headers[2:])
    assert failure.value.stopped_by is not None


# --- read-thread ----------------------------------------------------------------------------------

def test_a_message_deleted_between_list_and_get_is_skipped_with_a_note(microsoft_emulator, conversation, source):
    from mailtriage.backends.contract import ThreadId

    second = next(m.id for m in microsoft_emulator.messages.values() if m.message_id == "<m2@example.net>")
    microsoft_emulator.delete_after_listing.add(second)  # deleted in Outlook once listed
    thread = source.read_thread(ThreadId("graph", conversation))
    assert [m.message_id for m in thread.messages] == ["<m1@example.net>", "<m3@example.net>"]
    assert thread.notes == ("1 message of the conversation was deleted while it was read; it is left out",)


def long_conversation(emulator, count: int) -> str:
    for n in range(1, count + 1):
        refs = "<m1@example.net>" + (f" <m{n - 1}@example.net>" if n > 2 else "")
        deliver(emulator, n, subject="Heap overflow" if n == 1 else "Re: Heap overflow",
                references=refs if n > 1 else None, in_reply_to=f"<m{n - 1}@example.net>" if n > 1 else None)
    return next(m.conversation_id for m in emulator.messages.values() if m.message_id == "<m1@example.net>")


def test_a_long_thread_is_read_in_batches_of_20_within_4_concurrent_requests(microsoft_emulator, graph_account):
    from mailtriage.backends.contract import ThreadId
    from mailtriage.backends.microsoft.source import GraphSource

    conversation = long_conversation(microsoft_emulator, 95)
    microsoft_emulator.graph_delay = 0.05  # Graph's time per request, so batches overlap
    microsoft_emulator.batch_overlap = 2  # the first batch answered once a second is in flight (at load too)
    source = GraphSource("m365", {}, account=graph_account)
    microsoft_emulator.graph_requests.clear()
    thread = source.read_thread(ThreadId("graph", conversation))
    source.close()
    assert [m.message_id for m in thread.messages] == [f"<m{n}@example.net>" for n in range(1, 96)]
    batches = [r for r in microsoft_emulator.graph_requests if r.path == "/v1.0/$batch"]
    assert len(batches) == 5  # 95 messages: 20 a batch, not 95 requests
    assert len(microsoft_emulator.batched_requests) == 95
    assert len([r for r in microsoft_emulator.graph_requests if r.path.endswith("/$value")]) == 0
    assert microsoft_emulator.over_concurrency == 0 and 2 <= microsoft_emulator.max_in_flight <= 4


def test_the_emulator_keeps_graphs_batch_and_concurrency_limits(microsoft_emulator, graph_account):
    gids = [deliver(microsoft_emulator, n) for n in range(1, 7)]
    api = GraphApi(graph_account)
    try:
        too_many = [{"id": str(n), "method": "GET", "url": f"/me/messages/{gids[0]}"} for n in range(21)]
        with pytest.raises(Exception, match="limit of 20"):
            api.post("/$batch", {"requests": too_many}, "batch")
        # Six requests with no dependsOn run at once on the mailbox: two are over its 4.
        independent = [{"id": str(n), "method": "GET", "url": f"/me/messages/{gid}"} for n, gid in enumerate(gids)]
        statuses = [r["status"] for r in api.post("/$batch", {"requests": independent}, "batch")["responses"]]
        assert sorted(statuses) == [200, 200, 200, 200, 429, 429]
        # Chained, they run one after the other; after a failure the rest answer 424.
        chained = [dict(r, **({"dependsOn": [str(n - 1)]} if n else {})) for n, r in enumerate(independent)]
        chained[2]["url"] = "/me/messages/AAkALMgone"
        statuses = [r["status"] for r in api.post("/$batch", {"requests": chained}, "batch")["responses"]]
        assert statuses == [200, 200, 404, 424, 424, 424]
    finally:
        api.close()


def test_a_thread_read_past_the_mailbox_concurrency_backs_off_and_completes(microsoft_emulator, graph_account,
                                                                             waits):
    from mailtriage.backends.contract import ThreadId
    from mailtriage.backends.microsoft.source import GraphSource

    conversation = long_conversation(microsoft_emulator, 60)
    microsoft_emulator.concurrency_limit = 1  # a mailbox already busy with other clients
    microsoft_emulator.graph_delay = 0.05
    microsoft_emulator.batch_overlap = 2  # the first batch answered once a second came (refused), at load too
    api = GraphApi(graph_account, sleep=waits.append, rng=random.Random(7))
    source = GraphSource("m365", {}, mailbox=GraphMailbox(graph_account, api=api))
    thread = source.read_thread(ThreadId("graph", conversation))
    source.close()
    assert len(thread.messages) == 60
    assert microsoft_emulator.over_concurrency >= 1 and waits  # throttled, waited, then read every message


# --- the source's folder ------------------------------------------------------------------------

def test_a_folder_named_by_its_display_name_or_path_is_found(microsoft_emulator, graph_account):
    from mailtriage.backends.microsoft.source import GraphSource

    inbox = microsoft_emulator.folder_id("inbox")
    embargoed = microsoft_emulator._folder(None, "Embargoed", inbox)
    deliver(microsoft_emulator, 1, folder=embargoed, subject="Embargoed report")
    deliver(microsoft_emulator, 2, subject="Inbox report")
    for setting in ("Embargoed", "Inbox/Embargoed", embargoed):
        source = GraphSource("m365", {"folder": setting}, account=graph_account)
        source.check_available()
        rows = source.list_recent_threads(None, BASE - timedelta(days=1))
        source.close()
        assert [r.subject for r in rows] == ["Embargoed report"], setting


def test_an_unknown_folder_lists_the_folders_there_are(microsoft_emulator, graph_account):
    from mailtriage.backends.microsoft.source import GraphSource

    microsoft_emulator._folder(None, "Embargoed", microsoft_emulator.folder_id("inbox"))
    source = GraphSource("m365", {"folder": "Embargo"}, account=graph_account)
    with pytest.raises(Unavailable) as failure:
        source.check_available()
    source.close()
    text = str(failure.value)
    assert "no folder 'Embargo'" in text and "Inbox/Embargoed" in text and "Sent Items" in text
    assert "well-known name" in text


def test_the_mailbox_thread_view_reads_in_batches_too(microsoft_emulator, mailbox):
    long_conversation(microsoft_emulator, 25)
    first = next(m.id for m in microsoft_emulator.messages.values() if m.message_id == "<m1@example.net>")
    microsoft_emulator.graph_requests.clear()
    thread = mailbox.thread(mailbox.mid(first))
    assert [m.header.message_id for m in thread.messages] == [f"<m{n}@example.net>" for n in range(1, 26)]
    assert sum(r.path == "/v1.0/$batch" for r in microsoft_emulator.graph_requests) == 2
    assert not any(r.path.endswith("/$value") for r in microsoft_emulator.graph_requests)


def test_the_emulator_refuses_an_orderby_that_does_not_lead_the_filter(microsoft_emulator, graph_account):
    """Graph answers 400 InefficientFilter when a $orderby property does not lead the $filter
    (Microsoft Graph docs, "Use $filter and $orderby in the same query"): the emulator says
    so too, so a listing that orders a filtered query the wrong way fails here as it would there."""
    from mailtriage.backends.errors import BackendFailure

    deliver(microsoft_emulator, 1)
    api = GraphApi(graph_account, sleep=lambda _s: None)
    with pytest.raises(BackendFailure, match="InefficientFilter|too complex"):
        api.get("/me/mailFolders/inbox/messages", "messages.list",
                **{"$filter": "isRead eq false", "$orderby": "receivedDateTime desc"})


def test_filtered_listings_order_by_a_property_that_leads_their_filter(microsoft_emulator, mailbox):
    """Our listings combine $filter and $orderby the way Graph accepts (receivedDateTime first)."""
    deliver(microsoft_emulator, 1)
    deliver(microsoft_emulator, 2, read=True, flag="flagged")
    assert [m.subject for m in mailbox.list(MailQuery(folder="inbox", unread=True)).messages] == ["Message 1"]
    assert [m.subject for m in mailbox.list(MailQuery(folder="inbox", flagged=True)).messages] == ["Message 2"]
