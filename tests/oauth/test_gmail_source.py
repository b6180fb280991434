"""GmailSource: drafts on the thread (never doubled), sent replies, thread URLs, and the
source in a configured project (registry, capability matrix, resolution)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from mailtriage.backends.contract import DraftRequest, Op, ThreadId
from mailtriage.backends.errors import BackendFailure, DraftAlreadyPending, NotSupported
from mailtriage.backends.gmail.source import GmailSource
from tests.oauth.fixtures import google_account, save_google_sign_in
from tests.oauth.mail import BASE, make_mail


def at(minutes):
    return (BASE + timedelta(minutes=minutes)).timestamp()


@pytest.fixture
def report(google_emulator):
    """A report, our reply (SENT) and the reporter's answer: one Gmail thread."""
    emulator = google_emulator
    root = emulator.add_message(make_mail(1, subject="Heap overflow"), date=at(1))
    emulator.add_message(make_mail(2, subject="Re: Heap overflow", sender="Me <me@example.org>",
                                   in_reply_to="<m1@example.net>", references="<m1@example.net>"),
                         labels=("SENT",), date=at(2))
    emulator.add_message(make_mail(3, subject="Re: Heap overflow", in_reply_to="<m2@example.net>",
                                   references="<m1@example.net> <m2@example.net>"), date=at(3))
    return emulator.messages[root].thread_id


@pytest.fixture
def source(gmail_account):
    src = GmailSource("gmail", {"list": "security@example.org"}, account=gmail_account)
    yield src
    src.close()


def test_create_draft_replies_on_the_thread_and_is_listed(google_emulator, report, source):
    thread = ThreadId("gmail", report)
    draft = source.create_draft(DraftRequest(thread, "Thanks, we are on it.", ("reporter@example.net",),
                                             cc=("security@example.org",)))
    assert draft.subject == "Re: Heap overflow" and draft.in_reply_to == "<m3@example.net>"
    stored = [m for m in google_emulator.messages.values() if "DRAFT" in m.labels]
    assert len(stored) == 1 and stored[0].thread_id == report  # Gmail accepted it into the thread
    assert stored[0].header("References") == "<m1@example.net> <m2@example.net> <m3@example.net>"
    assert [d.draft_ref for d in source.list_drafts(thread)] == [draft.draft_ref]
    # The draft is not part of the thread's history, and nothing was sent.
    assert [m.message_id for m in source.read_thread(thread).messages] == ["<m1@example.net>", "<m2@example.net>",
                                                                          "<m3@example.net>"]
    assert sum("SENT" in m.labels for m in google_emulator.messages.values()) == 1


def test_create_draft_never_doubles_a_pending_draft(google_emulator, report, source):
    thread = ThreadId("gmail", report)
    request = DraftRequest(thread, "Thanks.", ("reporter@example.net",))
    first = source.create_draft(request)
    assert source.create_draft(request).draft_ref == first.draft_ref  # a retry finds its own draft
    with pytest.raises(DraftAlreadyPending) as caught:
        source.create_draft(DraftRequest(thread, "Another text.", ("reporter@example.net",)))
    assert caught.value.drafts == [first.draft_ref]
    second = source.create_draft(DraftRequest(thread, "Another text.", ("reporter@example.net",),
                                              allow_second_draft=True))
    assert second.draft_ref != first.draft_ref and len(google_emulator.drafts) == 2


def test_create_draft_reads_only_the_pending_draft_it_returns(google_emulator, report, source):
    # Idempotency checks each pending draft's Message-ID (metadata); the whole draft is
    # fetched only for the one returned, not for every pending draft of the thread.
    from mailtriage.core.trace import TRACE

    # (The request's draft is made first, so it sits in the slot its request probes first;
    # made after another draft, it may find that slot taken and then sit in the next one.)
    thread = ThreadId("gmail", report)
    request = DraftRequest(thread, "Thanks.", ("reporter@example.net",))
    first = source.create_draft(request)
    other = source.create_draft(DraftRequest(thread, "Another text.", ("reporter@example.net",),
                                             allow_second_draft=True))
    sent: list[str] = []
    unsubscribe = TRACE.subscribe(lambda line: sent.append(line.text) if line.direction == ">" else None)
    try:
        assert source.create_draft(request).draft_ref == first.draft_ref
    finally:
        unsubscribe()
    draft_reads = [t for t in sent if t.startswith("GET ") and "/drafts/" in t]
    assert len(draft_reads) == 1 and f"/drafts/{first.draft_ref}" in draft_reads[0], draft_reads
    assert other.draft_ref != first.draft_ref


def test_create_draft_answers_the_named_message(report, source):
    draft = source.create_draft(DraftRequest(ThreadId("gmail", report), "x", ("a@example.net",),
                                             in_reply_to="<m1@example.net>"))
    assert draft.in_reply_to == "<m1@example.net>"


def test_read_access_declines_create_draft(google_emulator, report, memory_keyring):
    account = google_account(google_emulator, access="read")
    save_google_sign_in(google_emulator, account)
    source = GmailSource("gmail", {}, account=account)
    assert Op.CREATE_DRAFT not in source.capabilities and Op.LIST_DRAFTS in source.capabilities
    with pytest.raises(NotSupported):
        source.create_draft(DraftRequest(ThreadId("gmail", report), "x", ("a@example.net",)))
    assert google_emulator.drafts == {}


def test_list_sent_since_reads_the_sent_label(report, source):
    thread = ThreadId("gmail", report)
    assert [m.message_id for m in source.list_sent_since(thread, BASE)] == ["<m2@example.net>"]
    assert source.list_sent_since(thread, BASE + timedelta(minutes=5)) == []


def test_thread_url_opens_the_gmail_web_ui(google_emulator, report, source):
    url = source.thread_url(ThreadId("gmail", report))
    assert url == f"{google_emulator.base_url}/mail/?authuser=me@example.org#all/{report}"


def test_an_unknown_thread_is_a_clear_failure(source):
    with pytest.raises(BackendFailure) as caught:
        source.read_thread(ThreadId("gmail", "18e0deadbeef"))
    assert "18e0deadbeef" in str(caught.value)


PROJECT = """# Project

## Mail sources

| Backend | Role | Mandatory | Notes |
|---|---|---|---|
| `gmail` | primary | yes | Triager Gmail account |

## Configuration

```yaml
security_list: security@example.org
mail_sources:
  gmail:
    account: me
    list: security@example.org
```
"""


def write_config(tmp_path, emulator, monkeypatch, **account):
    import tomli_w

    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text(tomli_w.dumps({"accounts": {"me": emulator.account_settings(**account)}}))
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config_dir))
    project = tmp_path / "project"
    project.mkdir()
    (project / "project.md").write_text(PROJECT)
    return project


def test_a_configured_gmail_source_joins_the_matrix_and_resolution(google_emulator, memory_keyring, tmp_path,
                                                                   monkeypatch, capsys):
    from mailtriage.cli.main import main

    project = write_config(tmp_path, google_emulator, monkeypatch, access="draft")
    save_google_sign_in(google_emulator, google_account(google_emulator, access="draft"))
    assert main(["--project", str(project), "sources", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["backends"]
    assert row["kind"] == "gmail" and row["thread_id_kind"] == "gmail" and row["available"] is True
    assert all(row["capabilities"].values())
    assert all(r["chosen"] == "gmail" for r in doc["resolution"].values())


def test_a_configured_gmail_source_without_sign_in_says_so(google_emulator, memory_keyring, tmp_path,
                                                            monkeypatch, capsys):
    from mailtriage.cli.main import main

    project = write_config(tmp_path, google_emulator, monkeypatch, access="read")
    assert main(["--project", str(project), "sources", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["backends"]
    assert row["available"] is False and "sign-in needed" in row["reason"] and "account login me" in row["reason"]
    assert row["capabilities"]["create_draft"] is False


def test_the_list_is_found_by_list_id_to_cc_or_delivered_to_as_on_graph(google_emulator, gmail_account):
    emulator = google_emulator
    by_list = emulator.add_message(make_mail(1, subject="Via the list", to="other@example.net",
                                             extra="List-Id: Security <security.example.org>"), date=at(1))
    by_alias = emulator.add_message(make_mail(2, subject="To the alias"), date=at(2))  # no List-Id
    by_cc = emulator.add_message(make_mail(3, subject="Cc the list", to="x@example.net", cc="security@example.org"),
                                 date=at(3))
    forwarded = emulator.add_message(make_mail(4, subject="Forwarded", to="me@example.org",
                                               extra="Delivered-To: security@example.org"), date=at(4))
    emulator.add_message(make_mail(5, subject="Elsewhere", to="sales@example.org"), date=at(5))
    source = GmailSource("gmail", {"list": "security@example.org"}, account=gmail_account)
    found = {t.subject for t in source.list_recent_threads(None, BASE)}
    assert found == {"Via the list", "To the alias", "Cc the list", "Forwarded"}
    assert {emulator.messages[i].thread_id for i in (by_list, by_alias, by_cc, forwarded)}
    queries = [r.query.get("q", [""])[0] for r in emulator.server.requests if r.path.endswith("/threads")]
    assert all("list:security@example.org" in q and "deliveredto:security@example.org" in q for q in queries)


def test_a_draft_with_its_own_subject_falls_out_of_the_thread_but_is_found(google_emulator, report, source):
    thread = ThreadId("gmail", report)
    request = DraftRequest(thread, "Can we talk about the embargo?", ("reporter@example.net",),
                           subject="Embargo for the heap overflow")
    draft = source.create_draft(request)
    stored = google_emulator.messages[google_emulator.drafts[draft.draft_ref]]
    assert stored.thread_id != report  # Gmail's rule: the subject differs, so a new thread
    assert [d.draft_ref for d in source.list_drafts(thread)] == [draft.draft_ref]
    assert source.create_draft(request).draft_ref == draft.draft_ref  # a retry finds it: no duplicate
    assert len(google_emulator.drafts) == 1
    with pytest.raises(DraftAlreadyPending):
        source.create_draft(DraftRequest(thread, "Other text", ("reporter@example.net",)))


def test_a_draft_answering_a_message_without_message_id_is_found(google_emulator, gmail_account):
    root = google_emulator.add_message(make_mail(1, subject="No id", message_id=None), date=at(1))
    thread = ThreadId("gmail-synthetic", google_emulator.messages[root].thread_id)
    source = GmailSource("gmail", {"list": "security@example.org"}, account=gmail_account)
    request = DraftRequest(thread, "Thanks.", ("reporter@example.net",))
    draft = source.create_draft(request)
    assert google_emulator.messages[google_emulator.drafts[draft.draft_ref]].thread_id != thread.value
    assert [d.draft_ref for d in source.list_drafts(thread)] == [draft.draft_ref]
    assert source.create_draft(request).draft_ref == draft.draft_ref and len(google_emulator.drafts) == 1


def test_drafts_are_found_by_thread_not_by_listing_every_draft(google_emulator, report, source):
    for n in range(120):  # the account's other drafts: more than one page of drafts.list
        google_emulator.add_draft(make_mail(100 + n, subject=f"Unrelated {n}", to="x@example.net"))
    human = google_emulator.add_draft(make_mail(99, subject="Re: Heap overflow", in_reply_to="<m3@example.net>",
                                                references="<m1@example.net> <m3@example.net>"), thread_id=report)
    thread = ThreadId("gmail", report)
    google_emulator.server.clear()
    assert [d.draft_ref for d in source.list_drafts(thread)] == [human]
    lists = [r for r in google_emulator.server.requests if r.path.endswith("/drafts")]
    assert lists and all(r.query.get("q") for r in lists)  # never the whole drafts list
    assert len(google_emulator.server.requests) <= 4
    with pytest.raises(DraftAlreadyPending) as caught:
        source.create_draft(DraftRequest(thread, "Thanks.", ("reporter@example.net",)))
    assert caught.value.drafts == [human]


def test_the_cli_says_on_stderr_when_gmail_asks_it_to_slow_down(google_emulator, memory_keyring, tmp_path,
                                                                 monkeypatch, capsys):
    # Gmail's backoff was silent on the command line (51 s without a word, then a failure).
    from mailtriage.cli.main import main
    from tests.archives.fakehttp import Reply

    project = write_config(tmp_path, google_emulator, monkeypatch, access="read")
    save_google_sign_in(google_emulator, google_account(google_emulator, access="read"))
    google_emulator.add_message(make_mail(1, subject="Report"), date=BASE.timestamp())
    throttled = Reply.json({"error": {"code": 429, "message": "User-rate limit exceeded.", "status": "RESOURCE_EXHAUSTED",
                                      "errors": [{"message": "User-rate limit exceeded.", "domain": "usageLimits",
                                                  "reason": "rateLimitExceeded"}]}}, 429, **{"Retry-After": "1"})
    google_emulator.server.fail("/threads", throttled, times=2)
    assert main(["--project", str(project), "mail", "list-recent-threads", "--since", "2026-01-01"]) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if "slow down" in line]
    assert notes == ["mailtriage: Gmail asked us to slow down; retrying in 1 s"] * 2
    assert "Report" in captured.out


def test_saving_an_attachment_of_a_read_thread_downloads_the_message_once(google_emulator, gmail_account):
    # save-attachments read the thread (each message raw), then downloaded the message again.
    poc = bytes(range(256)) * 64
    gid = google_emulator.add_message(make_mail(1, subject="PoC", attachment=("poc.bin", poc)), date=BASE.timestamp())
    source = GmailSource("gmail", {"list": "security@example.org"}, account=gmail_account)
    try:
        thread = source.read_thread(ThreadId("gmail", google_emulator.messages[gid].thread_id))
        (message,) = thread.messages
        assert source.attachment(message.backend_ref, 0) == poc
    finally:
        source.close()
    raw_gets = [r for r in google_emulator.server.requests
                if r.path.endswith(f"/messages/{gid}") and r.param("format") == "raw"]
    assert len(raw_gets) == 1
