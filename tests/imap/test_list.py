"""``list(MailQuery)`` against a real Dovecot: paging, totals, filters, merge rule, hostile mail."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mailtriage.backends.mailbox_contract import InvalidQuery, MailQuery
from mailtriage.core.trace import TRACE
from tests.imap.conftest import BASE_TIME, make_mail


def seed_many(dovecot, user, folder, raws, flags=()):
    with dovecot.client(user) as admin:
        if not admin.folder_exists(folder):
            admin.create_folder(folder)
        for raw in raws:
            admin.append(folder, raw, flags=flags)


def subjects(page):
    return [m.subject for m in page.messages]


def test_query_needs_exactly_one_source_and_sane_paging():
    with pytest.raises(InvalidQuery):
        MailQuery()
    with pytest.raises(InvalidQuery):
        MailQuery(folder="INBOX", label="x")
    with pytest.raises(InvalidQuery):
        MailQuery(folder="INBOX", page=-1)
    with pytest.raises(InvalidQuery):
        MailQuery(folder="INBOX", page_size=0)


def test_pages_are_zero_based_newest_first_with_a_total(dovecot, dovecot_user, mailbox):
    seed_many(dovecot, dovecot_user, "INBOX", [make_mail(n) for n in range(12)])
    first = mailbox.list(MailQuery(folder="INBOX", page=0, page_size=5))
    assert first.total == 12
    assert subjects(first) == [f"Message {n}" for n in (11, 10, 9, 8, 7)]
    last = mailbox.list(MailQuery(folder="INBOX", page=2, page_size=5))
    assert subjects(last) == ["Message 1", "Message 0"]
    beyond = mailbox.list(MailQuery(folder="INBOX", page=3, page_size=5))
    assert beyond.messages == () and beyond.total == 12


def test_page_fetches_only_the_page_never_the_folder(dovecot, dovecot_user, mailbox):
    seed_many(dovecot, dovecot_user, "INBOX", [make_mail(n) for n in range(30)])
    sent = []
    unsubscribe = TRACE.subscribe(lambda line: sent.append(line.text) if line.direction == ">" else None)
    try:
        mailbox.list(MailQuery(folder="INBOX", page=1, page_size=4))
    finally:
        unsubscribe()
    fetches = [t for t in sent if " FETCH " in t]
    assert fetches and all("1:*" not in t for t in fetches)
    assert any("FETCH 23:26 " in t for t in fetches)  # positions 4..7 from the top of 30
    assert not any(" SEARCH " in t or " SORT " in t for t in sent)


def test_header_fields(dovecot, dovecot_user, mailbox, seed):
    seed("INBOX", make_mail(1, subject="=?utf-8?q?Caf=C3=A9_report?=", cc="Other <o@example.org>",
                            references="<root@x> <mid@x>", in_reply_to="<mid@x>",
                            extra="List-Unsubscribe: <https://lists.example.org/u?x=1>, <mailto:leave@example.org>"),
         flags=(b"\\Flagged", b"triaged"))
    header = mailbox.list(MailQuery(folder="INBOX")).messages[0]
    assert header.subject == "Café report"
    assert header.sender.email == "reporter@example.net" and header.sender.name == "Reporter"
    assert [a.email for a in header.cc] == ["o@example.org"]
    assert header.references == ("<root@x>", "<mid@x>") and header.in_reply_to == "<mid@x>"
    assert header.thread_key == "<root@x>" and header.thread_count == 1
    assert header.flagged and not header.read and header.labels == ("triaged",)
    assert header.list_unsubscribe.https == "https://lists.example.org/u?x=1"
    assert header.list_unsubscribe.mailto == "mailto:leave@example.org"
    assert header.sent_date == BASE_TIME + timedelta(minutes=1)
    assert header.to_json()["listUnsubscribe"] == {"https": "https://lists.example.org/u?x=1",
                                                    "mailto": "mailto:leave@example.org"}


def test_thread_count_counts_page_members(dovecot, dovecot_user, mailbox):
    seed_many(dovecot, dovecot_user, "INBOX", [
        make_mail(1, message_id="<root@x>"),
        make_mail(2, references="<root@x>", in_reply_to="<root@x>"),
        make_mail(3),
    ])
    page = mailbox.list(MailQuery(folder="INBOX"))
    counts = {m.message_id: (m.thread_key, m.thread_count) for m in page.messages}
    assert counts["<root@x>"] == ("<root@x>", 2) and counts["<m2@example.net>"] == ("<root@x>", 2)
    assert counts["<m3@example.net>"] == ("<m3@example.net>", 1)


def test_filters(dovecot, dovecot_user, mailbox, seed):
    seed("INBOX", make_mail(1, sender="Alice <alice@example.net>", body="buffer overflow in parser\n"), flags=(b"\\Seen",))
    seed("INBOX", make_mail(2, sender="Bob <bob@example.net>"), flags=(b"\\Flagged",))
    attachment = (b"From: Carol <carol@example.net>\r\nTo: s@example.org\r\nSubject: with file\r\n"
                  b"Message-ID: <att@x>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"
                  b"--b\r\nContent-Type: text/plain\r\n\r\nsee file\r\n--b\r\nContent-Type: application/pdf\r\n"
                  b"Content-Disposition: attachment; filename=poc.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n"
                  b"JVBERi0xLjQK\r\n--b--\r\n")
    seed("INBOX", attachment)

    def ids(**filters):
        page = mailbox.list(MailQuery(folder="INBOX", **filters))
        assert page.total == len(page.messages)
        return sorted(m.message_id for m in page.messages)

    assert ids(text="overflow") == ["<m1@example.net>"]
    assert ids(from_="bob@") == ["<m2@example.net>"]
    assert ids(unread=True) == ["<att@x>", "<m2@example.net>"]
    assert ids(unread=False) == ["<m1@example.net>"]
    assert ids(flagged=True) == ["<m2@example.net>"]
    assert ids(flagged=False) == ["<att@x>", "<m1@example.net>"]
    assert ids(has_attachment=True) == ["<att@x>"]
    assert ids(has_attachment=False) == ["<m1@example.net>", "<m2@example.net>"]
    assert ids(text="Überlauf") == []  # 8-bit search terms go as a UTF-8 literal
    assert [m.has_attachments for m in mailbox.list(MailQuery(folder="INBOX")).messages] == [True, False, False]


def test_since_is_exact(dovecot, dovecot_user, mailbox, seed):
    now = datetime.now(timezone.utc).replace(microsecond=0)
    seed("INBOX", make_mail(1), when=now - timedelta(days=3))
    seed("INBOX", make_mail(2), when=now - timedelta(hours=2))
    page = mailbox.list(MailQuery(folder="INBOX", since=now - timedelta(hours=5)))
    assert [m.message_id for m in page.messages] == ["<m2@example.net>"] and page.total == 1


def test_since_is_exact_without_within(dovecot_minimal, minimal_user, minimal_mailbox):
    """SINCE is whole days: mail that arrived earlier the same day (or the day before, by
    the server's clock) is trimmed by its arrival time, and the total follows."""
    since = datetime(2026, 3, 10, 15, 0, tzinfo=timezone.utc)
    for n, when in enumerate([since - timedelta(days=2), since - timedelta(hours=14), since - timedelta(hours=1),
                              since + timedelta(hours=1), since + timedelta(days=1)]):
        dovecot_minimal.append(minimal_user, "INBOX", make_mail(n), when=when)
    assert not minimal_mailbox.conn.has("WITHIN")
    page = minimal_mailbox.list(MailQuery(folder="INBOX", since=since))
    assert [m.message_id for m in page.messages] == ["<m4@example.net>", "<m3@example.net>"] and page.total == 2


def test_filtered_paging_slices_newest_first(dovecot, dovecot_user, mailbox):
    seed_many(dovecot, dovecot_user, "INBOX", [make_mail(n, sender=f"s{n % 2}@example.net") for n in range(10)])
    page = mailbox.list(MailQuery(folder="INBOX", from_="s1@", page=1, page_size=2))
    assert page.total == 5 and subjects(page) == ["Message 5", "Message 3"]


def test_label_source_merges_folders_except_trash_and_junk(dovecot, dovecot_user, mailbox, seed):
    seed("INBOX", make_mail(1), flags=(b"embargo",), when=BASE_TIME + timedelta(hours=1))
    seed("Archive", make_mail(2), flags=(b"embargo",), when=BASE_TIME + timedelta(hours=3))
    seed("Reports", make_mail(3), flags=(b"embargo",), when=BASE_TIME + timedelta(hours=2))
    seed("Reports", make_mail(4), when=BASE_TIME + timedelta(hours=4))
    seed("Trash", make_mail(5), flags=(b"embargo",), when=BASE_TIME + timedelta(hours=5))
    seed("Junk", make_mail(6), flags=(b"embargo",), when=BASE_TIME + timedelta(hours=6))
    page = mailbox.list(MailQuery(label="embargo", page_size=2))
    assert page.total == 3
    assert [m.message_id for m in page.messages] == ["<m2@example.net>", "<m3@example.net>"]
    second = mailbox.list(MailQuery(label="embargo", page=1, page_size=2))
    assert [m.message_id for m in second.messages] == ["<m1@example.net>"]


def test_hostile_mail_lists_without_breaking_the_page(dovecot, dovecot_user, mailbox):
    eight_bit = (b"From: J\xf6rg <joerg@example.net>\r\nTo: s@example.org\r\nSubject: Sch\xf6ne Gr\xfc\xdfe\r\n"
                 b"Message-ID: <latin1@x>\r\n\r\nbody\r\n")
    utf8_raw = "From: Zoë <zoe@example.net>\r\nSubject: Größe ✓\r\nMessage-ID: <utf8@x>\r\n\r\nbody\r\n".encode()
    broken_mime = (b"From: x@example.net\r\nSubject: =?bogus-charset?B?!!!?=\r\nMessage-ID: <broken@x>\r\n"
                   b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"never-closed\"\r\n\r\n"
                   b"--never-closed\r\nContent-Type: text/plain; charset=klingon\r\n\r\nqapla\r\n")
    no_id = b"From: nobody@example.net\r\nSubject: no id\r\nDate: not a date\r\n\r\nbody\r\n"
    seed_many(dovecot, dovecot_user, "INBOX", [make_mail(1), eight_bit, utf8_raw, broken_mime, no_id, make_mail(2)])
    page = mailbox.list(MailQuery(folder="INBOX"))
    assert page.total == 6 and len(page.messages) == 6
    by_id = {m.message_id: m for m in page.messages}
    assert by_id["<utf8@x>"].subject == "Größe ✓" and by_id["<utf8@x>"].sender.name == "Zoë"
    assert "Sch" in by_id["<latin1@x>"].subject
    assert by_id["<broken@x>"].notes  # the undecodable subject is explained, the mail still listed
    synthetic = [m for m in page.messages if m.synthetic_id]
    assert len(synthetic) == 1 and synthetic[0].subject == "no id"
    assert synthetic[0].message_id.endswith("@mailtriage.invalid>") and synthetic[0].sent_date is None
    assert {"<m1@example.net>", "<m2@example.net>"} <= set(by_id)


def test_unknown_folder_is_a_clear_error(mailbox):
    from mailtriage.backends.errors import BackendFailure

    with pytest.raises(BackendFailure) as err:
        mailbox.list(MailQuery(folder="Nope"))
    assert "Nope" in str(err.value)


def test_new_mail_shows_on_the_next_page_request(dovecot, dovecot_user, mailbox, seed):
    seed("INBOX", make_mail(1))
    assert mailbox.list(MailQuery(folder="INBOX")).total == 1
    seed("INBOX", make_mail(2))  # another session delivers; our selected view learns it by NOOP
    page = mailbox.list(MailQuery(folder="INBOX"))
    assert page.total == 2 and page.messages[0].message_id == "<m2@example.net>"
