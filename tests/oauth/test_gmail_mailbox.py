"""The Gmail mailbox adapter against the emulator: paged search, reads that keep read state,
threads, attachments, labels and colours, flags and moves, history polling, drafts and send."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailtriage.backends.errors import NotSupported
from mailtriage.backends.gmail.adapter import GmailMailbox, nearest_color
from mailtriage.backends.imap.smtp import SendNotConfirmed
from mailtriage.backends.mailbox_contract import Compose, ForeignMessageId, InvalidQuery, MailQuery
from mailtriage.backends.send_policy import SendRefused
from mailtriage.backends.send_ledger import SendLedger
from tests.oauth.fixtures import google_account, save_google_sign_in
from tests.oauth.mail import BASE, make_mail


@pytest.fixture
def mailbox(gmail_account):
    mb = GmailMailbox(gmail_account)
    yield mb
    mb.close()


def deliver(emulator, n, **kwargs):
    labels = kwargs.pop("labels", ("INBOX", "UNREAD"))
    raw = make_mail(n, **kwargs)
    return emulator.add_message(raw, labels=labels, date=(BASE + timedelta(minutes=n)).timestamp())


def test_list_pages_newest_first_with_a_total(google_emulator, mailbox):
    for n in range(7):
        deliver(google_emulator, n)
    first = mailbox.list(MailQuery(folder="INBOX", page=0, page_size=3))
    assert [m.subject for m in first.messages] == ["Message 6", "Message 5", "Message 4"]
    assert first.total == 7
    last = mailbox.list(MailQuery(folder="INBOX", page=2, page_size=3))
    assert [m.subject for m in last.messages] == ["Message 0"]
    assert mailbox.list(MailQuery(folder="INBOX", page=5, page_size=3)).messages == ()
    header = first.messages[0]
    assert header.folder_id == "INBOX" and not header.read and header.message_id == "<m6@example.net>"
    assert header.id.startswith("me:gmail:")


def test_filters_become_gmail_search_terms(google_emulator, mailbox):
    deliver(google_emulator, 1, subject="Heap overflow", sender="Alice <alice@reporter.example>")
    deliver(google_emulator, 2, subject="Other", labels=("INBOX",))
    starred = deliver(google_emulator, 3, subject="Starred one", labels=("INBOX", "STARRED"))
    deliver(google_emulator, 4, subject="With file", attachment=("poc.bin", b"\x00\x01"))
    query = lambda **kw: {m.subject for m in mailbox.list(MailQuery(folder="INBOX", **kw)).messages}  # noqa: E731
    assert query(from_="alice@reporter.example") == {"Heap overflow"}
    assert query(text="heap") == {"Heap overflow"}
    assert query(unread=False) == {"Other", "Starred one"}
    assert query(flagged=True) == {"Starred one"}
    assert query(has_attachment=True) == {"With file"}
    assert query(since=BASE + timedelta(minutes=2, seconds=30)) == {"Starred one", "With file"}
    assert query(text='" OR from:alice') == set()  # text cannot become an operator
    assert mailbox.list(MailQuery(label="STARRED")).messages[0].id == mailbox.mid(starred)


def test_get_and_thread_leave_read_state_unchanged(google_emulator, mailbox):
    root = deliver(google_emulator, 1, subject="Report")
    google_emulator.add_message(make_mail(2, subject="Re: Report", sender="Me <me@example.org>",
                                          in_reply_to="<m1@example.net>", references="<m1@example.net>"),
                                labels=("SENT",), date=(BASE + timedelta(minutes=2)).timestamp())
    deliver(google_emulator, 3, subject="Re: Report", in_reply_to="<m2@example.net>",
            references="<m1@example.net> <m2@example.net>")
    message = mailbox.get(mailbox.mid(root))
    assert message.content.body_text.strip() == "Hello" and not message.header.read
    thread = mailbox.thread(mailbox.mid(root))
    assert [m.header.message_id for m in thread.messages] == ["<m1@example.net>", "<m2@example.net>",
                                                             "<m3@example.net>"]
    assert thread.messages[1].header.folder_id == "SENT"
    assert "UNREAD" in google_emulator.messages[root].labels


def test_attachments_are_bytes(google_emulator, mailbox):
    gid = deliver(google_emulator, 1, attachment=("poc.bin", b"\x00\xffexploit"))
    message = mailbox.get(mailbox.mid(gid))
    assert [(a.index, a.filename) for a in message.attachments] == [(0, "poc.bin")]
    assert message.header.has_attachments
    assert mailbox.attachment(mailbox.mid(gid), 0) == b"\x00\xffexploit"


def test_a_foreign_id_is_refused_before_any_request(google_emulator, mailbox):
    before = len(google_emulator.server.requests)
    for bad in ("other:gmail:18e0", "me:imap:SU5CT1g:1:2", "me:gmail:../../x"):
        with pytest.raises(ForeignMessageId):
            mailbox.get(bad)
    with pytest.raises(ForeignMessageId):
        mailbox.set_flags(["me:gmail:18e0", "other:gmail:18e1"], read=True)
    assert len(google_emulator.server.requests) == before


def test_labels_with_colours_and_label_writes(google_emulator, mailbox):
    red = google_emulator.add_label("Embargo", color="#fb4c2f")
    google_emulator.add_label("Triage/Done", color="#16a766")
    labels = mailbox.list_labels()
    assert labels.supported and labels.folder_backed
    assert [(label.name, label.color) for label in labels.labels] == [("Embargo", "red"), ("Triage/Done", "green")]
    created = mailbox.create_label("CVE requested")
    assert created.id.startswith("Label_") and created.color is None
    assert mailbox.rename_label(created.id, "CVE assigned").name == "CVE assigned"
    with pytest.raises(NotSupported):
        mailbox.recolor_label(red, "blue")  # the adapter contract: Gmail rejects colour writes
    with pytest.raises(NotSupported):
        mailbox.rename_label("INBOX", "Mine")
    mailbox.delete_label(created.id)
    assert created.id not in google_emulator.labels


@pytest.mark.parametrize("hex_color, name", [("#fb4c2f", "red"), ("#ffad47", "orange"), ("#fad165", "yellow"),
                                             ("#16a766", "green"), ("#2da2bb", "teal"), ("#4a86e8", "blue"),
                                             ("#a479e2", "purple"), ("#f691b3", "pink"), ("#999999", "gray"),
                                             ("nonsense", None)])
def test_gmail_palette_colours_map_to_canonical_names(hex_color, name):
    assert nearest_color(hex_color) == name


def test_flags_labels_and_moves(google_emulator, mailbox):
    a, b = deliver(google_emulator, 1), deliver(google_emulator, 2)
    label = google_emulator.add_label("Embargo")
    ids = [mailbox.mid(a), mailbox.mid(b)]
    mailbox.set_flags(ids, read=True, flagged=True)
    assert all("UNREAD" not in google_emulator.messages[g].labels and "STARRED" in google_emulator.messages[g].labels
               for g in (a, b))
    mailbox.set_labels(ids[:1], [label], [])
    assert label in google_emulator.messages[a].labels
    assert mailbox.get(ids[0]).header.labels == (label,)
    mailbox.archive(ids[:1])
    assert "INBOX" not in google_emulator.messages[a].labels
    mailbox.move(ids[:1], "INBOX")
    assert "INBOX" in google_emulator.messages[a].labels
    mailbox.trash(ids[1:])
    assert "TRASH" in google_emulator.messages[b].labels and "INBOX" not in google_emulator.messages[b].labels
    with pytest.raises(NotSupported):
        mailbox.delete_permanently(ids[1:])
    assert b in google_emulator.messages
    with pytest.raises(InvalidQuery):
        mailbox.set_flags([], read=True)


def test_writes_need_organize(google_emulator, memory_keyring):
    account = google_account(google_emulator, access="draft")
    save_google_sign_in(google_emulator, account)
    gid = deliver(google_emulator, 1)
    mb = GmailMailbox(account)
    with pytest.raises(NotSupported) as caught:
        mb.set_flags([mb.mid(gid)], read=True)
    assert "organize = true" in str(caught.value)
    assert "UNREAD" in google_emulator.messages[gid].labels


def test_folders_have_roles_counts_and_children(google_emulator, mailbox):
    deliver(google_emulator, 1)
    deliver(google_emulator, 2, labels=("INBOX",))
    parent = google_emulator.add_label("Triage")
    child = google_emulator.add_label("Triage/Done")
    folders = {f.id: f for f in mailbox.list_folders()}
    assert (folders["INBOX"].role, folders["INBOX"].unread, folders["INBOX"].total) == ("inbox", 1, 2)
    assert {f.role for f in folders.values()} >= {"inbox", "drafts", "sent", "junk", "trash", "archive"}
    assert folders[child].parent_id == parent and folders[child].name == "Done"
    created = mailbox.create_folder("Later", parent)
    assert google_emulator.labels[created.id]["name"] == "Triage/Later"


def test_a_label_without_its_parent_label_keeps_the_rest_of_its_path(google_emulator, mailbox):
    """Gmail's labels have only names (labels.list gives no parent); nesting is the web UI's
    reading of "/" in the name. A label whose parent label does not exist (made by the API
    or a client) hangs under its nearest existing ancestor, named by the rest of its path,
    never as its last part alone (two "Acme" at the top)."""
    orphan = google_emulator.add_label("Vendors/Acme")
    other = google_emulator.add_label("Partners/Acme")
    triage = google_emulator.add_label("Triage")
    deep = google_emulator.add_label("Triage/2026/Done")  # no "Triage/2026" label
    folders = {f.id: f for f in mailbox.list_folders()}
    assert (folders[orphan].parent_id, folders[orphan].name) == (None, "Vendors/Acme")
    assert (folders[other].parent_id, folders[other].name) == (None, "Partners/Acme")
    assert (folders[deep].parent_id, folders[deep].name) == (triage, "2026/Done")


def test_poll_sets_a_silent_baseline_then_reports_new_inbox_mail(google_emulator, mailbox):
    deliver(google_emulator, 1)
    baseline = mailbox.poll(None)
    assert baseline.baseline and baseline.messages == ()
    new = deliver(google_emulator, 2)
    deliver(google_emulator, 3, labels=("SENT",))  # not inbox mail
    result = mailbox.poll(baseline.cursor)
    assert [h.id for h in result.messages] == [mailbox.mid(new)] and not result.baseline
    assert int(result.cursor) > int(baseline.cursor)
    assert mailbox.poll(result.cursor).messages == ()
    google_emulator.history_floor = google_emulator.history_id + 1  # Gmail forgot that far back
    reset = mailbox.poll(result.cursor)
    assert reset.baseline and reset.messages == ()


def test_save_draft_reply_is_on_the_thread(google_emulator, mailbox):
    root = deliver(google_emulator, 1, subject="Report")
    draft_id = mailbox.save_draft(Compose("reply", body="Thanks", source_id=mailbox.mid(root)))
    stored = google_emulator.messages[mailbox.gid(draft_id)]
    assert stored.thread_id == google_emulator.messages[root].thread_id and "DRAFT" in stored.labels
    assert stored.header("In-Reply-To") == "<m1@example.net>" and stored.header("Subject") == "Re: Report"
    assert stored.header("To") == "reporter@example.net"


def test_send_needs_confirmation_access_and_principle_10(google_emulator, memory_keyring, tmp_path):
    account = google_account(google_emulator, access="send", authserv_id="mx.example.org")
    save_google_sign_in(google_emulator, account)
    mb = GmailMailbox(account)
    ledger = SendLedger(tmp_path / "ledger.json")
    trusted = deliver(google_emulator, 1, subject="Report",
                      extra="Authentication-Results: mx.example.org; dmarc=pass header.from=example.net")
    bulk = deliver(google_emulator, 2, subject="News", extra="Precedence: bulk")
    with pytest.raises(SendNotConfirmed):
        mb.send(Compose("reply", body="Hi", source_id=mb.mid(trusted)), confirmed=False, ledger=ledger)
    with pytest.raises(SendRefused) as caught:
        mb.send(Compose("reply", body="Hi", source_id=mb.mid(bulk)), confirmed=True, ledger=ledger)
    assert caught.value.refusal.rule == "precedence"
    assert not any("SENT" in m.labels for m in google_emulator.messages.values())
    sent = mb.send(Compose("reply", body="Thanks", source_id=mb.mid(trusted)), confirmed=True, ledger=ledger)
    stored = google_emulator.messages[mb.gid(sent)]
    assert "SENT" in stored.labels and stored.thread_id == google_emulator.messages[trusted].thread_id
    assert ledger.count(account.id) == 1


def test_send_is_declined_without_send_access(google_emulator, mailbox, tmp_path):
    gid = deliver(google_emulator, 1)
    with pytest.raises(NotSupported):
        mailbox.send(Compose("reply", body="x", source_id=mailbox.mid(gid)), confirmed=True,
                     ledger=SendLedger(tmp_path / "l.json"))


def test_paging_forward_costs_one_list_call_a_page(google_emulator, mailbox):
    # Gmail has no offset: page N was N+1 list calls (every token walked again).
    for n in range(7):
        deliver(google_emulator, n)
    seen = []
    for number in range(4):
        seen += [m.subject for m in mailbox.list(MailQuery(folder="INBOX", page=number, page_size=2)).messages]
    assert seen == [f"Message {n}" for n in reversed(range(7))]
    lists = [r for r in google_emulator.server.requests if r.path.endswith("/messages") and r.method == "GET"]
    assert len(lists) == 4
    assert mailbox.list(MailQuery(folder="INBOX", page=9, page_size=2)).messages == ()


def test_raw_is_the_messages_bytes_by_our_message_id(google_emulator, mailbox):
    # The raw view and `|` call the contract's raw(message_id): it returned Gmail's
    # (answer, bytes) tuple and took Gmail's own id, so a Gmail account piped a tuple.
    gid = deliver(google_emulator, 1, subject="Report")
    raw = mailbox.raw(mailbox.mid(gid))
    assert isinstance(raw, bytes) and b"Subject: Report" in raw and b"Message-ID: <m1@example.net>" in raw
