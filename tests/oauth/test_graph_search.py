"""GraphSource.search (issue 14 §4) on the Graph emulator: ``$search`` as documented (a bare value
on from/subject/body, ``from:``/``subject:``/``body:`` restrictions, never with ``$filter`` or
``$orderby``, paged by nextLink with no count), the list scope and window applied to the
results, hostile text one KQL phrase."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailtriage.backends.errors import BackendFailure
from mailtriage.backends.microsoft.api import GraphApi
from mailtriage.backends.microsoft.search import search_term
from mailtriage.backends.microsoft.source import GraphSource
from mailtriage.backends.search import SearchField, SearchRequest
from tests.oauth.mail import BASE, make_mail


def deliver(emulator, n, folder="inbox", **kwargs):
    return emulator.add_message(make_mail(n, **kwargs), folder=folder,
                                received=(BASE + timedelta(minutes=n)).timestamp())


@pytest.fixture
def source(graph_account):
    src = GraphSource("m365", {"list": "security@example.org"}, account=graph_account)
    yield src
    src.close()


@pytest.fixture
def mail(microsoft_emulator):
    e = microsoft_emulator
    deliver(e, 1, subject="Heap overflow in parser", body="details\n")
    deliver(e, 2, subject="Re: Heap overflow in parser", in_reply_to="<m1@example.net>",
            references="<m1@example.net>", body="we confirm the overflow\n")
    deliver(e, 3, subject="Question", sender="Overflow Finder <finder@example.net>")
    deliver(e, 4, subject="overflow, not on the list", to="other@example.org")
    deliver(e, 5, subject="overflow archived", folder="archive")
    return e


def test_the_term_is_one_kql_phrase_with_the_property():
    assert search_term(SearchRequest("heap overflow")) == '"\\"heap overflow\\""'
    assert search_term(SearchRequest("ana", field=SearchField.FROM)) == '"from:\\"ana\\""'
    assert search_term(SearchRequest("x", field=SearchField.BODY)) == '"body:\\"x\\""'
    assert search_term(SearchRequest('a" OR subject:\\"b')) == '"\\"a OR subject: b\\""'


def test_a_name_of_two_words_is_one_phrase_of_the_sender(microsoft_emulator, source):
    # KQL: "from:Alice Smith" is from:Alice AND "Smith" anywhere (Alice Jones writing about Smith).
    deliver(microsoft_emulator, 1, subject="Report", sender="Alice Smith <alice@example.net>")
    deliver(microsoft_emulator, 2, subject="About Smith", sender="Alice Jones <jones@example.net>")
    page = source.search(SearchRequest("Alice Smith", field=SearchField.FROM))
    assert [s.subject for s in page.items] == ["Report"]


def test_search_answers_conversation_rows_within_the_list(mail, source):
    page = source.search(SearchRequest("overflow"))
    assert [s.subject for s in page.items] == ["Question", "Re: Heap overflow in parser", "Heap overflow in parser"]
    assert page.total == 3 and not page.more and page.method == "Microsoft Graph $search"
    assert page.items[1].thread_id == page.items[2].thread_id and page.items[1].thread_id.kind == "graph"
    assert page.items[1].thread_id.root == "<m1@example.net>"


def test_fields_restrict_to_one_property(mail, source):
    def subjects(field):
        return [s.subject for s in source.search(SearchRequest("overflow", field=field)).items]

    assert subjects(SearchField.SUBJECT) == ["Re: Heap overflow in parser", "Heap overflow in parser"]
    assert subjects(SearchField.FROM) == ["Question"]
    assert subjects(SearchField.BODY) == ["Re: Heap overflow in parser"]


def test_all_folders_and_paging_without_a_count(mail, source):
    everywhere = source.search(SearchRequest("overflow", all_folders=True))
    assert "overflow archived" in [s.subject for s in everywhere.items]
    first = source.search(SearchRequest("overflow", page_size=2))
    assert len(first.items) == 2 and first.more and first.total is None  # Graph gives no count
    second = source.search(SearchRequest("overflow", page_size=2, page=1))
    assert [s.subject for s in second.items] == ["Heap overflow in parser"] and second.total == 3


def test_never_combined_with_filter_or_orderby_and_hostile_text_stays_a_phrase(mail, source, microsoft_emulator):
    page = source.search(SearchRequest('x" OR from:finder'))
    assert page.items == ()  # as KQL it would have matched "Question"
    assert microsoft_emulator.searches[-1] == '"\\"x OR from:finder\\""'
    source.search(SearchRequest("overflow", since=BASE + timedelta(minutes=2, seconds=30)))
    # The window was applied to the results: the emulator refuses $search with $filter/$orderby (400).
    assert [s.subject for s in source.search(SearchRequest(
        "overflow", since=BASE + timedelta(minutes=2, seconds=30))).items] == ["Question"]


def test_the_emulator_refuses_search_with_orderby(mail, graph_account):
    api = GraphApi(graph_account)
    try:
        with pytest.raises(BackendFailure, match="cannot be combined"):
            api.get("/me/messages", "messages.search", **{"$search": '"x"', "$orderby": "receivedDateTime desc"})
    finally:
        api.close()
