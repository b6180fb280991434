"""core.lazy_re: a pattern compiled on first use answers as ``re.compile`` would."""

from __future__ import annotations

import re
import threading

import pytest

from mailtriage.core import inert
from mailtriage.core.lazy_re import compiled, lazy

SOURCE, FLAGS = r"(?P<word>[a-z]+)(\d)?", re.IGNORECASE
TEXTS = ["", "abc1 DEF x9", "123", "é a1"]


@pytest.mark.parametrize("text", TEXTS)
def test_every_read_answers_as_the_compiled_pattern(text):
    eager, late = re.compile(SOURCE, FLAGS), lazy(SOURCE, FLAGS)

    def seen(p):
        return (repr(p.match(text)), repr(p.search(text)), repr(p.fullmatch(text)), p.sub("-", text),
                p.subn(r"\g<word>!", text), p.split(text), p.findall(text),
                [m.span() for m in p.finditer(text)], p.pattern, p.flags, p.groups, dict(p.groupindex),
                repr(p.scanner(text).search()))

    assert seen(late) == seen(eager)


def test_it_compiles_on_first_use_and_hands_out_the_compiled_pattern():
    late = lazy(rb"[\x00-\x1f]")
    with pytest.raises(AttributeError):
        late.not_a_pattern_method  # noqa: B018
    first = late.search
    assert late.search is first  # kept: a later read is a slot read, not a compile
    real = compiled(late)
    assert isinstance(real, re.Pattern) and real == re.compile(rb"[\x00-\x1f]")
    assert re.sub(real, b"?", b"a\x01b") == b"a?b"
    eager = re.compile("x")
    assert compiled(eager) is eager


def test_a_bad_pattern_fails_when_first_used():
    late = lazy("(")
    with pytest.raises(re.error):
        late.search("x")


def test_threads_that_race_the_first_use_all_get_answers():
    late = lazy(r"b+")
    results, start = [], threading.Barrier(8)

    def use():
        start.wait()
        results.append(late.search("abbbc").span())

    threads = [threading.Thread(target=use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [(1, 4)] * 8


def test_inerts_pattern_is_a_compiled_one_for_those_that_pass_it_on():
    for multiline in (False, True):
        p = inert.pattern(multiline)
        assert isinstance(p, re.Pattern) and p.search("a\x1bb")
