"""The Graph mailbox adapter and GraphSource against the emulator: folders with counts and
children, $filter/$search paging, conversations, immutable IDs across moves, categories and
colours, flags, drafts through createReply, delta polling, attachments, send."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailtriage.backends.contract import DraftRequest, Op, ThreadId
from mailtriage.backends.errors import DraftAlreadyPending, NotSupported
from mailtriage.backends.imap.smtp import SendNotConfirmed
from mailtriage.backends.mailbox_contract import Compose, ForeignMessageId, MailQuery
from mailtriage.backends.microsoft.adapter import GraphMailbox, preset_color
from mailtriage.backends.microsoft.source import GraphSource
from mailtriage.backends.send_policy import SendRefused
from mailtriage.backends.send_ledger import SendLedger
from tests.oauth.fixtures import microsoft_account, sign_in_microsoft
from tests.oauth.mail import BASE, make_mail


@pytest.fixture
def mailbox(graph_account):
    mb = GraphMailbox(graph_account)
    yield mb
    mb.close()


def deliver(emulator, n, folder="inbox", **kwargs):
    read = kwargs.pop("read", False)
    categories = kwargs.pop("categories", ())
    flag = kwargs.pop("flag", "notFlagged")
    return emulator.add_message(make_mail(n, **kwargs), folder=folder, read=read, categories=categories, flag=flag,
                                received=(BASE + timedelta(minutes=n)).timestamp())


def test_folders_have_roles_counts_and_child_folders(microsoft_emulator, mailbox):
    deliver(microsoft_emulator, 1)
    deliver(microsoft_emulator, 2, read=True)
    inbox = microsoft_emulator.folder_id("inbox")
    child = mailbox.create_folder("Embargoed", inbox)
    folders = {f.id: f for f in mailbox.list_folders()}
    assert (folders[inbox].role, folders[inbox].unread, folders[inbox].total) == ("inbox", 1, 2)
    assert folders[inbox].parent_id is None
    assert folders[child.id].parent_id == inbox and folders[child.id].name == "Embargoed"
    assert {f.role for f in folders.values()} >= {"inbox", "drafts", "sent", "trash", "junk", "archive"}
    with pytest.raises(NotSupported):
        mailbox.rename_folder(inbox, "Mine")
    assert mailbox.rename_folder(child.id, "Embargo").name == "Embargo"
    mailbox.delete_folder(child.id)
    assert child.id not in microsoft_emulator.folders


def test_list_pages_with_filters_and_a_total(microsoft_emulator, mailbox):
    for n in range(5):
        deliver(microsoft_emulator, n, read=n % 2 == 0, sender=f"R{n} <r{n}@example.net>")
    deliver(microsoft_emulator, 9, flag="flagged", subject="Urgent heap overflow")
    page = mailbox.list(MailQuery(folder="inbox", page=1, page_size=2))
    assert [m.subject for m in page.messages] == ["Message 3", "Message 2"] and page.total == 6
    unread = mailbox.list(MailQuery(folder="inbox", unread=True))
    assert {m.subject for m in unread.messages} == {"Message 1", "Message 3", "Urgent heap overflow"}
    assert [m.subject for m in mailbox.list(MailQuery(folder="inbox", flagged=True)).messages] == \
        ["Urgent heap overflow"]
    assert [m.subject for m in mailbox.list(MailQuery(folder="inbox", from_="r4@example.net")).messages] == \
        ["Message 4"]
    since = mailbox.list(MailQuery(folder="inbox", since=BASE + timedelta(minutes=3, seconds=30)))
    assert {m.subject for m in since.messages} == {"Message 4", "Urgent heap overflow"}
    found = mailbox.list(MailQuery(folder="inbox", text="heap"))
    assert [m.subject for m in found.messages] == ["Urgent heap overflow"] and found.search_limit == 1000
    filters = [r.query.get("$filter", [""])[0] for r in microsoft_emulator.graph_requests if "$filter" in r.query]
    assert all(f.startswith("receivedDateTime ge ") for f in filters if "isRead" in f or "flag" in f)


def test_get_thread_and_attachments_keep_read_state(microsoft_emulator, mailbox):
    root = deliver(microsoft_emulator, 1, subject="Report", attachment=("poc.bin", b"\x00payload"))
    deliver(microsoft_emulator, 2, subject="Re: Report", in_reply_to="<m1@example.net>", references="<m1@example.net>")
    message = mailbox.get(mailbox.mid(root))
    assert message.header.message_id == "<m1@example.net>" and not message.header.read
    assert [a.filename for a in message.attachments] == ["poc.bin"]
    assert mailbox.attachment(mailbox.mid(root), 0) == b"\x00payload"
    thread = mailbox.thread(mailbox.mid(root))
    assert [m.header.message_id for m in thread.messages] == ["<m1@example.net>", "<m2@example.net>"]
    assert thread.thread_key == microsoft_emulator.messages[root].conversation_id
    assert not microsoft_emulator.messages[root].is_read


def test_immutable_ids_survive_a_move_and_foreign_ids_are_refused(microsoft_emulator, mailbox):
    gid = deliver(microsoft_emulator, 1)
    message_id = mailbox.mid(gid)
    mailbox.archive([message_id])
    assert microsoft_emulator.messages[gid].folder == microsoft_emulator.folder_id("archive")
    assert mailbox.get(message_id).header.folder_id == microsoft_emulator.folder_id("archive")
    before = len(microsoft_emulator.server.requests)
    for bad in ("other:graph:AAkALM1", "work:gmail:18e0", "work:graph:a b"):
        with pytest.raises(ForeignMessageId):
            mailbox.get(bad)
    assert len(microsoft_emulator.server.requests) == before


def test_categories_are_labels_with_colours(microsoft_emulator, mailbox):
    red = microsoft_emulator.add_category("Embargo", "preset0")
    microsoft_emulator.add_category("Triage", "preset7")
    gid = deliver(microsoft_emulator, 1, categories=("Embargo",))
    labels = mailbox.list_labels()
    assert not labels.folder_backed and labels.supported
    assert [(label.name, label.color) for label in labels.labels] == [("Embargo", "red"), ("Triage", "blue")]
    assert mailbox.get(mailbox.mid(gid)).header.labels == (red,)
    with pytest.raises(NotSupported):
        mailbox.rename_label(red, "Embargoed")  # Graph rejects renames
    assert mailbox.recolor_label(red, "green").color == "green"
    assert microsoft_emulator.categories[red]["color"] == "preset4"
    created = mailbox.create_label("CVE")
    mailbox.set_labels([mailbox.mid(gid)], [created.id], [red])
    assert microsoft_emulator.messages[gid].categories == ["CVE"]
    assert [m.id for m in mailbox.list(MailQuery(label=created.id)).messages] == [mailbox.mid(gid)]
    mailbox.delete_label(created.id)
    assert created.id not in microsoft_emulator.categories


@pytest.mark.parametrize("preset, name", [("preset0", "red"), ("preset4", "green"), ("preset7", "blue"),
                                          ("preset12", "gray"), ("preset24", "pink"), ("none", None)])
def test_category_presets_map_to_canonical_colours(preset, name):
    assert preset_color(preset) == name


def test_flags_moves_and_trash_only_deletion(microsoft_emulator, mailbox):
    a, b = deliver(microsoft_emulator, 1), deliver(microsoft_emulator, 2)
    ids = [mailbox.mid(a), mailbox.mid(b)]
    mailbox.set_flags(ids, read=True, flagged=True)
    assert all(microsoft_emulator.messages[g].is_read and microsoft_emulator.messages[g].flag == "flagged"
               for g in (a, b))
    with pytest.raises(NotSupported):
        mailbox.delete_permanently(ids[:1])  # not in Deleted Items yet
    assert a in microsoft_emulator.messages
    mailbox.trash(ids[:1])
    mailbox.delete_permanently(ids[:1])
    assert a not in microsoft_emulator.messages and b in microsoft_emulator.messages


def test_writes_need_organize(microsoft_emulator, memory_keyring):
    account = microsoft_account(microsoft_emulator, access="draft")
    sign_in_microsoft(microsoft_emulator, account)
    gid = deliver(microsoft_emulator, 1)
    mb = GraphMailbox(account)
    with pytest.raises(NotSupported):
        mb.set_flags([mb.mid(gid)], read=True)
    assert not microsoft_emulator.messages[gid].is_read


def test_delta_polling_baseline_then_new_mail(microsoft_emulator, mailbox):
    deliver(microsoft_emulator, 1)
    baseline = mailbox.poll(None)
    assert baseline.baseline and baseline.messages == ()
    import time

    new = microsoft_emulator.add_message(make_mail(5, subject="New report"), received=time.time() + 1)
    microsoft_emulator.add_message(make_mail(6), folder="sentitems", received=time.time() + 1)
    result = mailbox.poll(baseline.cursor)
    assert [h.id for h in result.messages] == [mailbox.mid(new)] and not result.baseline
    assert mailbox.poll(result.cursor).messages == ()
    microsoft_emulator.forget_deltas()  # Graph answers 410 for a forgotten token
    reset = mailbox.poll(result.cursor)
    assert reset.baseline and reset.messages == ()
    assert mailbox.poll("https://evil.example/steal").baseline  # a foreign link never gets the token
    assert not any("evil" in r.host for r in microsoft_emulator.server.requests)


def test_save_draft_uses_create_reply_all_and_forward(microsoft_emulator, mailbox):
    root = deliver(microsoft_emulator, 1, subject="Report", cc="Other <other@example.net>")
    reply_all = mailbox.save_draft(Compose("reply_all", body="Thanks all", source_id=mailbox.mid(root)))
    stored = microsoft_emulator.messages[mailbox.gid(reply_all)]
    assert stored.is_draft and stored.conversation_id == microsoft_emulator.messages[root].conversation_id
    assert stored.body == "Thanks all" and stored.subject == "Re: Report"
    assert [a for _n, a in stored.cc] == ["security@example.org", "other@example.net"]  # To and Cc, not me
    forward = mailbox.save_draft(Compose("forward", to=("cert@example.org",), body="FYI",
                                         source_id=mailbox.mid(root)))
    assert [a for _n, a in microsoft_emulator.messages[mailbox.gid(forward)].to] == ["cert@example.org"]
    assert any(r.path.endswith("/createReplyAll") for r in microsoft_emulator.server.requests)
    assert any(r.path.endswith("/createForward") for r in microsoft_emulator.server.requests)


def test_send_is_confirmed_guarded_and_counted(microsoft_emulator, memory_keyring, tmp_path):
    account = microsoft_account(microsoft_emulator, access="send", authserv_id="mx.example.org")
    sign_in_microsoft(microsoft_emulator, account)
    mb = GraphMailbox(account)
    ledger = SendLedger(tmp_path / "ledger.json")
    trusted = deliver(microsoft_emulator, 1, extra="Authentication-Results: mx.example.org; dmarc=pass header.from=example.net")
    bounce = deliver(microsoft_emulator, 2, extra="Auto-Submitted: auto-replied")
    with pytest.raises(SendNotConfirmed):
        mb.send(Compose("reply", body="x", source_id=mb.mid(trusted)), confirmed=False, ledger=ledger)
    with pytest.raises(SendRefused):
        mb.send(Compose("reply", body="x", source_id=mb.mid(bounce)), confirmed=True, ledger=ledger)
    assert not any(m.is_draft or m.folder == microsoft_emulator.folder_id("sentitems")
                   for m in microsoft_emulator.messages.values())
    sent = mb.send(Compose("reply", body="Thanks", source_id=mb.mid(trusted)), confirmed=True, ledger=ledger)
    stored = microsoft_emulator.messages[mb.gid(sent)]
    assert stored.folder == microsoft_emulator.folder_id("sentitems") and not stored.is_draft
    assert ledger.count(account.id) == 1


# --- GraphSource -----------------------------------------------------------------------------


@pytest.fixture
def conversation(microsoft_emulator):
    root = deliver(microsoft_emulator, 1, subject="Heap overflow")
    microsoft_emulator.add_message(make_mail(2, subject="Re: Heap overflow", sender="Me <me@contoso.com>",
                                             in_reply_to="<m1@example.net>", references="<m1@example.net>"),
                                   folder="sentitems", read=True, received=(BASE + timedelta(minutes=2)).timestamp())
    deliver(microsoft_emulator, 3, subject="Re: Heap overflow", in_reply_to="<m2@example.net>",
            references="<m1@example.net> <m2@example.net>")
    return microsoft_emulator.messages[root].conversation_id


@pytest.fixture
def source(graph_account):
    src = GraphSource("m365", {"list": "security@example.org"}, account=graph_account)
    yield src
    src.close()


def test_read_thread_spans_inbox_and_sent(conversation, source):
    thread = source.read_thread(ThreadId("graph", conversation))
    assert [m.message_id for m in thread.messages] == ["<m1@example.net>", "<m2@example.net>", "<m3@example.net>"]
    assert [m.message_id for m in source.list_sent_since(ThreadId("graph", conversation), BASE)] == \
        ["<m2@example.net>"]
    assert source.list_sent_since(ThreadId("graph", conversation), BASE + timedelta(minutes=5)) == []


def test_create_draft_replies_with_create_reply_and_is_never_doubled(microsoft_emulator, conversation, source):
    thread = ThreadId("graph", conversation)
    request = DraftRequest(thread, "Thanks, confirmed.", ("reporter@example.net",), cc=("security@example.org",))
    draft = source.create_draft(request)
    assert draft.subject == "Re: Heap overflow" and draft.in_reply_to == "<m3@example.net>"
    assert draft.cc == ("security@example.org",)
    assert source.create_draft(request).draft_ref == draft.draft_ref  # a retry
    with pytest.raises(DraftAlreadyPending):
        source.create_draft(DraftRequest(thread, "Other text", ("reporter@example.net",)))
    assert [d.draft_ref for d in source.list_drafts(thread)] == [draft.draft_ref]
    second = source.create_draft(DraftRequest(thread, "Other text", ("reporter@example.net",),
                                              allow_second_draft=True))
    assert second.draft_ref != draft.draft_ref
    assert not any(r.path.endswith("/send") for r in microsoft_emulator.server.requests)


def test_read_access_declines_drafts(microsoft_emulator, conversation, memory_keyring):
    account = microsoft_account(microsoft_emulator, access="read")
    sign_in_microsoft(microsoft_emulator, account)
    source = GraphSource("m365", {}, account=account)
    assert Op.CREATE_DRAFT not in source.capabilities
    with pytest.raises(NotSupported):
        source.create_draft(DraftRequest(ThreadId("graph", conversation), "x", ("a@example.net",)))


def test_thread_url_is_the_outlook_web_link(conversation, source):
    url = source.thread_url(ThreadId("graph", conversation))
    assert url.startswith("https://outlook.office365.com/owa/?ItemID=")


PROJECT = """# Project

## Mail sources

| Backend | Role | Mandatory | Notes |
|---|---|---|---|
| `m365` | primary | yes | Exchange Online |

## Configuration

```yaml
security_list: security@example.org
mail_sources:
  m365:
    kind: graph
    account: work
    list: security@example.org
```
"""


def test_a_configured_graph_source_joins_the_matrix(microsoft_emulator, graph_account, tmp_path, monkeypatch,
                                                      capsys):
    import json

    import tomli_w

    from mailtriage.cli.main import main

    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text(tomli_w.dumps({"accounts": {"work": microsoft_emulator.account_settings(
        access="draft", organize=True)}}))
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config))
    (tmp_path / "project.md").write_text(PROJECT)
    assert main(["--project", str(tmp_path), "sources", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["backends"]
    assert (row["kind"], row["thread_id_kind"], row["available"]) == ("graph", "graph", True)
    assert all(row["capabilities"].values()) and doc["resolution"]["create_draft"]["chosen"] == "m365"
    microsoft_emulator.revoke_refresh_tokens()
    microsoft_emulator.expire_access_tokens()
    assert main(["--project", str(tmp_path), "sources", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["backends"]
    assert row["available"] is False and "sign-in needed" in row["reason"] and "'work'" in row["reason"]


def test_an_attachment_of_3_mb_or_more_goes_through_an_upload_session(microsoft_emulator, mailbox, trace_lines):
    from mailtriage.backends.mailbox_contract import OutgoingAttachment

    root = deliver(microsoft_emulator, 1, subject="Report")
    big = bytes(range(256)) * (5 * 4096 + 7)  # 5 MB and a bit: over the 3 MB of a plain POST
    small = b"small proof of concept"
    draft = mailbox.save_draft(Compose("reply", body="Logs attached", source_id=mailbox.mid(root), attachments=(
        OutgoingAttachment("capture.pcap", "application/vnd.tcpdump.pcap", big),
        OutgoingAttachment("poc.txt", "text/plain", small))))
    stored = microsoft_emulator.messages[mailbox.gid(draft)]
    assert [a["name"] for a in stored.attachments] == ["capture.pcap", "poc.txt"]
    assert mailbox.attachment(draft, 0) == big and mailbox.attachment(draft, 1) == small
    puts = [r for r in microsoft_emulator.server.requests if r.method == "PUT"]
    assert len(puts) >= 2 and all(len(r.body) <= 4 * 1024 * 1024 for r in puts)
    assert all("authorization" not in r.headers for r in puts)  # the upload URL carries its own token
    text = "\n".join(line.text for line in trace_lines)
    assert "AttachmentSessions" in text
    assert not any(secret in text for secret in microsoft_emulator.secrets_issued)


def test_a_failed_attachment_removes_the_half_made_draft(microsoft_emulator, mailbox):
    from mailtriage.backends.errors import BackendFailure, Unavailable
    from mailtriage.backends.mailbox_contract import OutgoingAttachment
    from tests.archives.fakehttp import Reply

    root = deliver(microsoft_emulator, 1, subject="Report")
    before = set(microsoft_emulator.messages)
    microsoft_emulator.server.fail("/AttachmentSessions(", Reply.json(
        {"error": {"code": "ErrorInternalServerError", "message": "boom"}}, 500), times=None)
    with pytest.raises((BackendFailure, Unavailable)) as caught:
        mailbox.save_draft(Compose("reply", body="x", source_id=mailbox.mid(root), attachments=(
            OutgoingAttachment("capture.pcap", "application/octet-stream", b"\0" * (3 * 1024 * 1024)),)))
    assert set(microsoft_emulator.messages) == before  # nothing left behind
    assert "capture.pcap" in str(caught.value) and "removed" in str(caught.value)


def test_the_list_is_matched_as_on_gmail(microsoft_emulator, graph_account):
    deliver(microsoft_emulator, 1, subject="Via the list", to="other@example.net",
            extra="List-Id: Security <security.example.org>")
    deliver(microsoft_emulator, 2, subject="To the alias")
    deliver(microsoft_emulator, 3, subject="Cc the list", to="x@example.net", cc="security@example.org")
    deliver(microsoft_emulator, 4, subject="Forwarded", to="me@contoso.com", extra="Delivered-To: security@example.org")
    deliver(microsoft_emulator, 5, subject="Elsewhere", to="sales@example.org")
    source = GraphSource("m365", {"list": "security@example.org"}, account=graph_account)
    from tests.oauth.mail import BASE as base

    assert {t.subject for t in source.list_recent_threads(None, base)} == {"Via the list", "To the alias",
                                                                            "Cc the list", "Forwarded"}


def test_a_fresh_token_graph_still_rejects_asks_for_a_new_sign_in(microsoft_emulator, mailbox):
    """Graph answers 401 to the token msal just refreshed (a revoked session, a Conditional
    Access policy): the account needs a new sign-in, said with Graph's reason and no token."""
    from mailtriage.backends.errors import SignInNeeded

    deliver(microsoft_emulator, 1, subject="Report")
    microsoft_emulator.token_lifetime = -60  # every token it issues is already expired
    microsoft_emulator.expire_access_tokens()
    with pytest.raises(SignInNeeded) as caught:
        mailbox.list(MailQuery(folder="inbox"))
    text = str(caught.value)
    assert "rejected the fresh access token" in text and "InvalidAuthenticationToken" in text
    assert "mailtriage account login" in text
    assert not any(token in text for token in microsoft_emulator.secrets_issued)


def test_raw_is_the_messages_bytes_by_our_message_id(microsoft_emulator, mailbox):
    # The raw view and `|` call the contract's raw(message_id); Graph's raw took Graph's own id.
    gid = deliver(microsoft_emulator, 1, subject="Report")
    raw = mailbox.raw(mailbox.mid(gid))
    assert isinstance(raw, bytes) and b"Subject: Report" in raw and b"<m1@example.net>" in raw
