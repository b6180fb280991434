"""The freed heap goes back to the system once a storm quiets (issue 39): after polls with
news, the first poll without any trims the heap, then not again until news comes."""

from mailtriage.core.collector import QuietTrim


def test_the_first_quiet_poll_after_news_trims_the_heap_once():
    calls = []
    trim = QuietTrim(lambda: calls.append(1) or True)
    assert not trim.polled(False)  # quiet from the start: nothing was freed by a storm
    assert [trim.polled(True) for _ in range(3)] == [False] * 3
    assert trim.polled(False) is True
    assert not trim.polled(False) and not trim.polled(False)
    assert not trim.polled(True) and trim.polled(False)
    assert len(calls) == trim.trims == 2

