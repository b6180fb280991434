"""Whole-folder orders against a real Dovecot (issue 35): ``order`` (UID SORT / UID THREAD
REFERENCES), ``unread_ids`` (UID SEARCH UNSEEN) and ``headers`` (a page of them), IDs only."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailtriage.backends.errors import NotSupported
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.imap.account import password_key
from mailtriage.core.secrets import set_secret
from tests.imap.conftest import BASE_TIME, account_for, make_mail


def subjects(mailbox, ids):
    return [h.subject for h in mailbox.headers(ids)]


def test_sort_threads_and_unread_cover_the_folder(seed, mailbox):
    # Arrival: 0 root, 1 other, 2 reply to 0, 3 reply to 0 (a second branch), 4 reply to 2.
    mails = [
        make_mail(0, subject="Heap overflow", sender="Cy <c@example.net>"),
        make_mail(1, subject="Alpha report", sender="Ann <a@example.net>", extra="X-Pad: " + "x" * 900),
        make_mail(2, subject="Re: Heap overflow", sender="Bo <b@example.net>", in_reply_to="<m0@example.net>",
                  references="<m0@example.net>"),
        make_mail(3, subject="Re: Heap overflow", sender="Di <d@example.net>", in_reply_to="<m0@example.net>",
                  references="<m0@example.net>"),
        make_mail(4, subject="Re: Re: Heap overflow", sender="Ed <e@example.net>", in_reply_to="<m2@example.net>",
                  references="<m0@example.net> <m2@example.net>"),
    ]
    for n, raw in enumerate(mails):
        seed("INBOX", raw, flags=() if n in (1, 4) else (b"\\Seen",), when=BASE_TIME + timedelta(minutes=n))

    newest = mailbox.order("INBOX")
    assert subjects(mailbox, newest.ids)[0] == "Re: Re: Heap overflow" and len(newest.ids) == 5
    by_sender = mailbox.order("INBOX", "sender")
    assert [h.sender.name for h in mailbox.headers(by_sender.ids)] == ["Ann", "Bo", "Cy", "Di", "Ed"]
    assert "SORT" in by_sender.how
    assert subjects(mailbox, mailbox.order("INBOX", "size").ids)[0] == "Alpha report"  # largest first
    assert subjects(mailbox, mailbox.order("INBOX", "subject").ids)[0] == "Alpha report"  # "Re:" ignored
    assert mailbox.order("INBOX", "sender", reverse=True).ids == tuple(reversed(by_sender.ids))

    tree = mailbox.order("INBOX", threads=True)
    # The thread with the newest member first; its root, then each branch under its parent.
    assert [(s, d) for s, d in zip(subjects(mailbox, tree.ids), tree.depths)] == [
        ("Heap overflow", 0), ("Re: Heap overflow", 1), ("Re: Re: Heap overflow", 2), ("Re: Heap overflow", 1),
        ("Alpha report", 0)]

    unread = mailbox.unread_ids("INBOX")
    assert sorted(subjects(mailbox, unread.ids)) == ["Alpha report", "Re: Re: Heap overflow"]


def test_a_server_without_sort_declines(dovecot_minimal, memory_keyring):
    user = dovecot_minimal.add_user()
    dovecot_minimal.append(user, "INBOX", make_mail(0))
    account = account_for(dovecot_minimal, user)
    set_secret(password_key(account.id), user.password)
    mailbox = ImapMailbox(account)
    try:
        assert len(mailbox.order("INBOX").ids) == 1  # the server's order needs no SORT
        with pytest.raises(NotSupported, match="no SORT"):
            mailbox.order("INBOX", "sender")
        assert len(mailbox.unread_ids("INBOX").ids) == 1
    finally:
        mailbox.close()
