"""GmailSource.search (issue 14 §4): Gmail's own search (messages.list ``q``) on the emulator,
the field as Gmail's operator, the list scope kept, hostile text one quoted phrase, pages by
nextPageToken with Gmail's estimate."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailtriage.application.search import _check
from mailtriage.backends.errors import NotSupported
from mailtriage.backends.gmail.search import field_terms
from mailtriage.backends.gmail.source import GmailSource
from mailtriage.backends.search import SearchField, SearchRequest
from tests.oauth.mail import BASE, make_mail


def at(minutes):
    return (BASE + timedelta(minutes=minutes)).timestamp()


@pytest.fixture
def source(gmail_account):
    src = GmailSource("gmail", {"list": "security@example.org"}, account=gmail_account)
    yield src
    src.close()


@pytest.fixture
def mail(google_emulator):
    e = google_emulator
    e.add_message(make_mail(1, subject="Heap overflow in parser", body="details\n"), date=at(1))
    e.add_message(make_mail(2, subject="Re: Heap overflow in parser", sender="Priya <priya@frob.example>",
                            in_reply_to="<m1@example.net>", references="<m1@example.net>",
                            body="we confirm the overflow\n"), date=at(2))
    e.add_message(make_mail(3, subject="Question", sender="Overflow Finder <finder@example.net>"), date=at(3))
    e.add_message(make_mail(4, subject="overflow elsewhere", to="other@example.org"), date=at(4))
    return e


def test_fields_become_gmail_operators_and_the_text_one_phrase():
    assert field_terms(SearchRequest("heap overflow")) == '"heap overflow"'
    assert field_terms(SearchRequest("ana", field=SearchField.FROM)) == 'from:("ana")'
    assert field_terms(SearchRequest("x", field=SearchField.SUBJECT)) == 'subject:("x")'
    assert field_terms(SearchRequest('a" OR from:evil {x} -y')) == '"a OR from:evil {x} -y"'


def test_search_answers_thread_rows_newest_first_within_the_list(mail, source):
    page = source.search(SearchRequest("overflow"))
    assert [s.subject for s in page.items] == ["Question", "Re: Heap overflow in parser", "Heap overflow in parser"]
    assert page.backend == "gmail" and page.estimate and page.total == 3 and not page.more
    reply = page.items[1]
    assert reply.thread_id.kind == "gmail" and reply.thread_id.root == "<m1@example.net>"
    assert reply.thread_id == page.items[2].thread_id  # one Gmail thread
    assert "list:security@example.org" in mail.queries[-1]


def test_each_field_searches_what_it_names(mail, source):
    def subjects(field):
        return [s.subject for s in source.search(SearchRequest("overflow", field=field)).items]

    assert subjects(SearchField.SUBJECT) == ["Re: Heap overflow in parser", "Heap overflow in parser"]
    assert subjects(SearchField.FROM) == ["Question"]
    assert "body" not in source.features.server_search_fields


def test_pages_follow_next_page_token(mail, source):
    first = source.search(SearchRequest("overflow", page_size=2))
    second = source.search(SearchRequest("overflow", page_size=2, page=1))
    assert [s.subject for s in first.items] == ["Question", "Re: Heap overflow in parser"] and first.more
    assert [s.subject for s in second.items] == ["Heap overflow in parser"] and not second.more
    beyond = source.search(SearchRequest("overflow", page_size=2, page=5))
    assert beyond.items == () and not beyond.more


def test_hostile_text_stays_one_phrase(mail, source):
    page = source.search(SearchRequest('x" OR from:finder {overflow} -y'))
    assert page.items == ()  # as a phrase it matches nothing; as operators it would match "Question"
    q = mail.queries[-1]
    assert q.count('"') == 2 and '"x OR from:finder {overflow} -y"' in q


def test_since_is_after_epoch(mail, source):
    page = source.search(SearchRequest("overflow", since=BASE + timedelta(minutes=2, seconds=30)))
    assert [s.subject for s in page.items] == ["Question"]


def test_application_refuses_a_body_search_on_gmail_naming_it(mail, source):
    with pytest.raises(NotSupported, match="gmail.*body"):
        _check(source.name, source.features, SearchRequest("x", field=SearchField.BODY))


def test_search_pages_forward_with_one_list_call_each(mail, source):
    pages = [source.search(SearchRequest("overflow", page=n, page_size=1)) for n in range(3)]
    assert [len(p.items) for p in pages] == [1, 1, 1] and [p.more for p in pages] == [True, True, False]
    lists = [r for r in mail.server.requests if r.path.endswith("/messages") and r.method == "GET"]
    assert len(lists) == 3
