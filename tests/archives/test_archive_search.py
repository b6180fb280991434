"""The archives' own search (issue 14 §4): Pony Mail's stats ``q`` / ``header_*`` and HyperKitty's
search, on the emulators; hostile text never becomes the archive's syntax."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailtriage.backends.hyperkitty import hyperkitty_query
from mailtriage.backends.mailbox_contract import InvalidQuery
from mailtriage.backends.ponymail import ponymail_search_params
from mailtriage.backends.search import SearchField, SearchRequest


def stats_calls(server):
    return [r for r in server.requests if r.path == "/api/stats.lua"]


def test_ponymail_params_are_one_phrase_or_one_field():
    assert ponymail_search_params(SearchRequest("heap overflow")) == {"q": '"heap overflow"'}
    assert ponymail_search_params(SearchRequest("sam", field=SearchField.FROM)) == {"header_from": "sam"}
    assert ponymail_search_params(SearchRequest('-x" y:z \\', field=SearchField.TEXT)) == {"q": '"x y z"'}
    with pytest.raises(InvalidQuery):
        ponymail_search_params(SearchRequest('"--"'))


def test_ponymail_search_is_one_stats_request_newest_first(pm_source, pm_server, now):
    source = pm_source()
    assert source.features.server_search
    page = source.search(SearchRequest("sql injection"))
    assert [s.subject for s in page.items] == ["Re: [SECURITY] SQL injection in search",
                                               "Re: [SECURITY] SQL injection in search",
                                               "[SECURITY] SQL injection in search"]
    assert page.total == 3 and page.backend == "pony" and page.method == "Pony Mail stats q"
    call = stats_calls(pm_server)[-1]
    assert call.param("q") == '"sql injection"' and call.param("emailsOnly") == "true"
    root = page.items[-1]
    assert root.thread_id.kind == "ponymail" and root.root_message_id == "<sqli-root@reporter.example>"
    # A reply is read through its thread: its own mid, the root looked up when read.
    assert source.read_thread(page.items[0].thread_id).messages[0].message_id == "<sqli-root@reporter.example>"


def test_ponymail_fields_and_since(pm_source, pm_server, now):
    source = pm_source()
    by_from = source.search(SearchRequest("heap finder", field=SearchField.FROM))
    assert [s.subject for s in by_from.items] == ["Heap overflow in decoder"]
    by_body = source.search(SearchRequest("unescaped", field=SearchField.BODY))
    assert [s.subject for s in by_body.items] == ["[SECURITY] SQL injection in search"]
    assert source.search(SearchRequest("ancient", field=SearchField.SUBJECT)).total == 1  # older than 30 days too
    recent = source.search(SearchRequest("report", since=now - timedelta(days=3)))
    assert all(s.last_activity >= now - timedelta(days=3) for s in recent.items)
    assert stats_calls(pm_server)[-1].param("d") == "lte=3d"


def test_ponymail_hostile_text_is_no_syntax(pm_source, pm_server):
    source = pm_source()
    page = source.search(SearchRequest('"unbalanced -heap'))  # Foal would 500 on the quote, exclude on -
    assert page.total == 0
    assert stats_calls(pm_server)[-1].param("q") == '"unbalanced -heap"'


def test_ponymail_pages_locally(pm_source):
    source = pm_source()
    first = source.search(SearchRequest("sql", page_size=2))
    second = source.search(SearchRequest("sql", page_size=2, page=1))
    assert len(first.items) == 2 and first.more and len(second.items) == 1 and not second.more


# -- HyperKitty ---------------------------------------------------------------------------

def search_calls(server):
    return [r for r in server.requests if r.path == "/search"]


def test_hyperkitty_query_is_one_phrase():
    assert hyperkitty_query(SearchRequest("xss login")) == '"xss login"'
    assert hyperkitty_query(SearchRequest('-a "b" --c')) == '"a b c"'
    with pytest.raises(InvalidQuery):
        hyperkitty_query(SearchRequest('"-"'))


def test_hyperkitty_search_reads_the_results_page_then_each_email(hk_source, hk_server, now):
    source = hk_source()
    assert source.features.server_search and source.features.server_search_fields == ("text",)
    page = source.search(SearchRequest("xss"))
    assert [s.subject for s in page.items] == ["Re: [SECURITY] XSS in login form", "Re: [SECURITY] XSS in login form",
                                               "[SECURITY] XSS in login form"]
    assert page.total == 3 and not page.more and page.method == "HyperKitty search"
    call = search_calls(hk_server)[-1]
    assert call.param("q") == '"xss"' and call.param("mlist") == source.list_address
    assert call.param("sort") == "date-desc" and call.param("page") == "1"
    thread = {s.thread_id for s in page.items}
    assert len(thread) == 1 and next(iter(thread)).kind == "hyperkitty"  # one thread, by its hash
    assert page.items[-1].root_message_id == "<xss-root@reporter.example>"
    assert page.items[0].sender.name == "Alice Reporter"
    assert source.read_thread(page.items[0].thread_id).messages[0].message_id == "<xss-root@reporter.example>"


def test_hyperkitty_pages_and_past_the_end(hk_source):
    source = hk_source()
    first = source.search(SearchRequest("filler", page_size=10))
    assert first.total == 30 and len(first.items) == 10 and first.more
    assert first.items[0].subject == "Filler thread 0"  # newest first
    last = source.search(SearchRequest("filler", page_size=10, page=2))
    assert [s.subject for s in last.items][-1] == "Filler thread 29" and not last.more
    beyond = source.search(SearchRequest("filler", page_size=10, page=7))
    assert beyond.items == ()  # Django's paginator answers the last page: not taken for page 8


def test_hyperkitty_hostile_text_is_no_syntax(hk_source, hk_server):
    source = hk_source()
    page = source.search(SearchRequest('xss -login "'))
    assert page.total == 0  # as syntax, -login would exclude and xss alone match three
    assert search_calls(hk_server)[-1].param("q") == '"xss login"'
