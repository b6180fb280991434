"""The mail-source operations of ImapSource against a real Dovecot (and a watched SMTP server)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from mailtriage.backends.contract import DraftRequest, Op, ThreadId
from mailtriage.backends.errors import BackendFailure, DraftAlreadyPending, NotSupported, Unavailable
from mailtriage.backends.imap.account import password_key
from mailtriage.backends.imap.connection import ConnectionLost
from mailtriage.backends.imap.source import ImapSource
from mailtriage.backends.mailbox_contract import MailQuery
from mailtriage.core.secrets import set_secret
from tests.imap.conftest import BASE_TIME, account_for, make_mail, write_imap_project, write_work_account
from tests.servers.faultproxy import FaultProxy

LIST = "security@example.org"
NOW = datetime.now(timezone.utc).replace(microsecond=0)


def tid(root: str) -> ThreadId:
    return ThreadId("imap", root)


@pytest.fixture
def source(account):
    src = ImapSource("imap", {"folder": "INBOX", "list": LIST}, account=account)
    try:
        yield src
    finally:
        src.close()


@pytest.fixture
def report_thread(seed):
    """A report, our reply in Sent, and the reporter's answer; plus unrelated mail."""
    seed("INBOX", make_mail(1, subject="XSS in login", message_id="<r1@reporter.net>"), when=NOW - timedelta(hours=5))
    seed("Sent", make_mail(2, subject="Re: XSS in login", sender="Security <security@example.org>",
                           to="reporter@example.net", message_id="<ours@example.org>",
                           references="<r1@reporter.net>", in_reply_to="<r1@reporter.net>"),
         when=NOW - timedelta(hours=4))
    seed("INBOX", make_mail(3, subject="Re: XSS in login", message_id="<r2@reporter.net>",
                            references="<r1@reporter.net> <ours@example.org>", in_reply_to="<ours@example.org>"),
         when=NOW - timedelta(hours=3))
    seed("INBOX", make_mail(4, subject="Another report", message_id="<other@x.net>"), when=NOW - timedelta(hours=2))
    seed("INBOX", make_mail(5, subject="Not for the list", to="someone@else.org", message_id="<private@x>"),
         when=NOW - timedelta(hours=1))
    seed("INBOX", make_mail(6, subject="Old report", message_id="<old@x>"), when=NOW - timedelta(days=40))
    return tid("<r1@reporter.net>")


def test_list_recent_threads(source, report_thread):
    threads = source.list_recent_threads(LIST, NOW - timedelta(days=30))
    assert [t.root_message_id for t in threads] == ["<other@x.net>", "<r1@reporter.net>"]
    report = threads[1]
    assert report.thread_id == report_thread and str(report.thread_id) == "msgid:<r1@reporter.net>"
    assert report.subject == "XSS in login" and report.message_count == 2 and report.unread
    assert report.last_activity == NOW - timedelta(hours=3)
    assert [t.root_message_id for t in source.list_recent_threads(None, NOW - timedelta(days=30))] == [
        "<other@x.net>", "<r1@reporter.net>"]  # None: the configured list
    unfiltered = ImapSource("imap", {}, account=source.account)
    try:
        everything = unfiltered.list_recent_threads(None, NOW - timedelta(days=60))
    finally:
        unfiltered.close()
    assert [t.root_message_id for t in everything] == ["<private@x>", "<other@x.net>", "<r1@reporter.net>", "<old@x>"]
    limited = source.list_recent_threads(LIST, NOW - timedelta(days=30), limit=1)
    assert [t.root_message_id for t in limited] == ["<other@x.net>"]


def test_read_thread_is_chronological_across_sent_and_leaves_read_state(source, mailbox, report_thread):
    thread = source.read_thread(report_thread)
    assert [m.message_id for m in thread.messages] == ["<r1@reporter.net>", "<ours@example.org>", "<r2@reporter.net>"]
    assert thread.subject == "XSS in login" and thread.messages[0].body_text.strip() == "Hello"
    assert mailbox.list(MailQuery(folder="INBOX", unread=True)).total == 5  # nothing was marked \Seen
    with pytest.raises(BackendFailure):
        source.read_thread(tid("<nope@x>"))
    with pytest.raises(BackendFailure):
        source.read_thread(ThreadId("hyperkitty", "JJIGKPKB6CVDX6B2CUG4IHAJRIQIOUTP"))


def test_list_sent_since(source, report_thread):
    sent = source.list_sent_since(report_thread, NOW - timedelta(days=1))
    assert [m.message_id for m in sent] == ["<ours@example.org>"]
    assert source.list_sent_since(report_thread, NOW - timedelta(hours=1)) == []


def test_drafts_and_sent_of_many_threads_at_once(source, report_thread):
    # The row marks of a screen (issue 39): each thread's own drafts and sent replies, found by
    # one search of Drafts and one of Sent for all of them, and Sent's window still applied.
    other = tid("<other@x.net>")
    source.create_draft(DraftRequest(other, "Looking.\n", to=("x@x.net",)))
    drafts = source.list_drafts_of([report_thread, other, tid("<nope@x>")])
    assert {t: len(d) for t, d in drafts.items()} == {report_thread: 0, other: 1, tid("<nope@x>"): 0}
    assert drafts[other][0].thread_id == other
    sent = source.list_sent_since_of([report_thread, other], NOW - timedelta(days=1))
    assert {t: [m.message_id for m in s] for t, s in sent.items()} == {report_thread: ["<ours@example.org>"], other: []}
    assert source.list_sent_since_of([report_thread], NOW - timedelta(hours=1)) == {report_thread: []}


def test_a_root_the_server_refuses_leaves_only_its_own_row_untold(source, report_thread):
    # A root with NUL makes Dovecot answer BAD for the whole ORed search of its chunk: the chunk
    # is searched root by root, so only that thread is left out (its marks unknown).
    other = tid("<other@x.net>")
    source.create_draft(DraftRequest(other, "Looking.\n", to=("x@x.net",)))
    hostile = tid("<nul\x00@x.net>")
    drafts = source.list_drafts_of([report_thread, hostile, other])
    assert {t: len(d) for t, d in drafts.items()} == {report_thread: 0, other: 1}
    sent = source.list_sent_since_of([report_thread, hostile, other], NOW - timedelta(days=1))
    assert {t: [m.message_id for m in s] for t, s in sent.items()} == {report_thread: ["<ours@example.org>"], other: []}


def test_create_draft_appends_a_threaded_reply_once(source, mailbox, report_thread):
    assert source.supports(Op.CREATE_DRAFT) and source.list_drafts(report_thread) == []
    request = DraftRequest(report_thread, "Thanks, we are looking into it.\n", to=("reporter@example.net",),
                           cc=("security@example.org",))
    draft = source.create_draft(request)
    assert draft.subject == "Re: XSS in login"
    assert draft.in_reply_to == "<r2@reporter.net>"  # the reporter's latest message
    assert draft.cc == ("security@example.org",) and "looking into it" in draft.body
    stored = mailbox.list(MailQuery(folder="Drafts")).messages
    assert len(stored) == 1 and stored[0].draft
    assert stored[0].references == ("<r1@reporter.net>", "<ours@example.org>", "<r2@reporter.net>")
    # A retry of the same confirmed proposal returns the same draft instead of a second one.
    assert source.create_draft(request).draft_ref == draft.draft_ref
    assert mailbox.list(MailQuery(folder="Drafts")).total == 1
    # A different draft for the same thread is refused unless the proposal allows it.
    other = replace(request, body="Different text\n")
    with pytest.raises(DraftAlreadyPending) as err:
        source.create_draft(other)
    assert draft.draft_ref in str(err.value)
    second = source.create_draft(replace(other, allow_second_draft=True))
    assert second.draft_ref != draft.draft_ref
    assert len(source.list_drafts(report_thread)) == 2


def test_create_draft_declined_without_drafts_or_draft_access(dovecot, dovecot_user, memory_keyring, report_thread):
    read_only = account_for(dovecot, dovecot_user, access="read")
    set_secret(password_key(read_only.id), dovecot_user.password)
    src = ImapSource("imap", {"list": LIST}, account=read_only)
    try:
        assert not src.supports(Op.CREATE_DRAFT) and src.supports(Op.LIST_DRAFTS)
        with pytest.raises(NotSupported) as err:
            src.create_draft(DraftRequest(report_thread, "x", to=("a@b.c",)))
        assert "access" in str(err.value)
    finally:
        src.close()
    no_drafts = replace(read_only, access="draft", folder_roles={"drafts": "Missing"})
    src = ImapSource("imap", {"list": LIST}, account=no_drafts)
    try:
        assert not src.supports(Op.CREATE_DRAFT) and not src.supports(Op.LIST_DRAFTS)
        with pytest.raises(NotSupported) as err:
            src.create_draft(DraftRequest(report_thread, "x", to=("a@b.c",)))
        assert "Drafts" in str(err.value)
    finally:
        src.close()


def test_retried_create_draft_after_a_lost_append_response_does_not_duplicate(
        dovecot, dovecot_user, memory_keyring, report_thread):
    proxy = FaultProxy(dovecot.port)
    acct = account_for(dovecot, dovecot_user, port=proxy.port)
    set_secret(password_key(acct.id), dovecot_user.password)
    src = ImapSource("imap", {"list": LIST}, account=acct)
    try:
        request = DraftRequest(report_thread, "We confirm receipt.\n", to=("reporter@example.net",))
        proxy.cut_when_server_sends(b"Append completed")
        with pytest.raises(ConnectionLost):
            src.create_draft(request)
        assert proxy.cuts == 1  # the server stored the draft; the client never heard back
        draft = src.create_draft(request)
        assert len(src.list_drafts(report_thread)) == 1 and draft.subject == "Re: XSS in login"
    finally:
        src.close()
        proxy.close()


def test_thread_url_imap_and_archives(source, account, report_thread):
    url = source.thread_url(report_thread)
    assert url.startswith(f"imap://{account.username}@127.0.0.1:{account.port}/INBOX;UIDVALIDITY=")
    assert url.endswith(";UID=1")
    hk = ImapSource("imap", {"list": LIST, "archive": {"kind": "hyperkitty", "url": "https://lists.example.org/archives/"}},
                    account=account)
    # The DESIGN.md example hash.
    assert hk.thread_url(tid("<87myycy5eh.fsf@uwakimon.sk.tsukuba.ac.jp>")) == (
        "https://lists.example.org/archives/list/security@example.org/thread/JJIGKPKB6CVDX6B2CUG4IHAJRIQIOUTP/")
    pony = ImapSource("imap", {"list": LIST, "archive": {"kind": "ponymail", "url": "https://lists.example.org"}},
                      account=account)
    assert pony.thread_url(report_thread) == "https://lists.example.org/thread/%3Cr1%40reporter.net%3E?security@example.org"
    piper = ImapSource("imap", {"list": LIST, "archive": {"kind": "pipermail", "url": "https://mail.example.org/pipermail"}},
                       account=account)
    try:
        month = BASE_TIME.strftime("%Y-%B")  # the root's Date header, as Pipermail files it
        assert piper.thread_url(report_thread) == f"https://mail.example.org/pipermail/security/{month}/thread.html"
    finally:
        piper.close()


def test_triage_operations_never_send_mail(dovecot, dovecot_user, memory_keyring, smtp_server, report_thread):
    acct = account_for(dovecot, dovecot_user, access="send")
    from mailtriage.backends.imap.account import SmtpSettings

    acct = replace(acct, smtp=SmtpSettings("127.0.0.1", smtp_server.port, "starttls", dovecot_user.name))
    smtp_server.add_user(dovecot_user.name, dovecot_user.password)
    set_secret(password_key(acct.id), dovecot_user.password)
    src = ImapSource("imap", {"list": LIST}, account=acct)
    try:
        src.check_available()
        threads = src.list_recent_threads(LIST, NOW - timedelta(days=30))
        src.read_thread(threads[1].thread_id)
        src.list_sent_since(report_thread, NOW - timedelta(days=1))
        src.list_drafts(report_thread)
        src.create_draft(DraftRequest(report_thread, "Draft only.\n", to=("reporter@example.net",)))
        src.thread_url(report_thread)
    finally:
        src.close()
    assert smtp_server.log.connections == 0 and smtp_server.log.messages == []


def test_registry_builds_the_source_from_project_and_user_settings(tmp_path, monkeypatch, dovecot, dovecot_user,
                                                                  memory_keyring, report_thread):
    from mailtriage.backends.registry import SourceSet
    from mailtriage.core.projectconfig import ConfigError, load_project

    config_dir = write_work_account(tmp_path / "config", dovecot, dovecot_user)
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config_dir))
    set_secret(password_key("work"), dovecot_user.password)
    project = write_imap_project(tmp_path / "project", LIST,
                                 extra_rows="| `other` | fallback | no | misconfigured on purpose |\n",
                                 extra_sources="  other:\n    kind: imap\n    account: missing\n")
    sources = SourceSet(load_project(project))
    try:
        resolution = sources.resolve(Op.CREATE_DRAFT)
        assert resolution.chosen == "imap"
        result = sources.dispatch(Op.LIST_RECENT_THREADS, lambda b: b.list_recent_threads(LIST, NOW - timedelta(days=30)))
        assert len(result.value) == 2
        other = sources.backends["other"]
        # A configuration error, not an unavailable server: it stays a ConfigError (exit 2
        # when the backend is needed) and shows as a configuration error in the matrix.
        with pytest.raises(ConfigError) as err:
            other.check_available()
        assert "accounts.missing" in str(err.value)
        assert sources.availability.reason("other").startswith("configuration error: ")
    finally:
        sources.close()


def _reply_without_references(seed):
    seed("INBOX", make_mail(1, subject="Bug", message_id="<root@r>"), when=NOW - timedelta(hours=3))
    seed("INBOX", make_mail(2, subject="Re: Bug", message_id="<mid@r>", references="<root@r>",
                            in_reply_to="<root@r>"), when=NOW - timedelta(hours=2))
    # A client that keeps only In-Reply-To (a mid-thread message), no References.
    seed("INBOX", make_mail(3, subject="Re: Re: Bug", message_id="<late@r>", in_reply_to="<mid@r>"),
         when=NOW - timedelta(hours=1))


def test_server_threading_finds_replies_that_only_name_a_mid_thread_message(source, seed):
    assert source.mailbox.conn.has("THREAD=REFERENCES")
    _reply_without_references(seed)
    thread = source.read_thread(tid("<root@r>"))
    assert [m.message_id for m in thread.messages] == ["<root@r>", "<mid@r>", "<late@r>"]


def test_without_server_threading_the_header_rule_applies(minimal_mailbox, dovecot_minimal, minimal_user):
    src = ImapSource("imap", {}, account=minimal_mailbox.account)
    try:
        assert not src.mailbox.conn.has("THREAD=REFERENCES")
        _reply_without_references(lambda folder, raw, when=None: dovecot_minimal.append(minimal_user, folder, raw, when=when))
        thread = src.read_thread(tid("<root@r>"))
        # Client-side threading sees only messages that name the root.
        assert [m.message_id for m in thread.messages] == ["<root@r>", "<mid@r>"]
    finally:
        src.close()


def test_a_message_without_message_id_is_a_synthetic_thread_of_its_own(source, seed):
    seed("INBOX", make_mail(1, message_id=None, subject="anonymous report"), when=NOW - timedelta(hours=1))
    seed("INBOX", make_mail(2, message_id=None, subject="another one"), when=NOW - timedelta(hours=2))
    rows = {r.subject: r for r in source.list_recent_threads(LIST, NOW - timedelta(days=1))}
    row = rows["anonymous report"]
    assert row.thread_id.kind == "msgid-synthetic" and row.root_message_id.endswith("@mailtriage.invalid>")
    thread = source.read_thread(row.thread_id)
    assert [m.subject for m in thread.messages] == ["anonymous report"]
    assert thread.messages[0].message_id == row.root_message_id  # list and full parse agree
    assert source.thread_url(row.thread_id).startswith("imap://")
