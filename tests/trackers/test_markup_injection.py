"""Mail-derived text cannot become markup in a tracker (issue 20 §7): Markdown on GitHub
and local files, wiki markup on Jira v2, plain text nodes on Jira v3."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mailtriage.core.inert import markdown_block
from mailtriage.trackers import jiramarkup as m

HOSTILE = ("{code}x{code} {noformat} {quote}q{quote} [~admin] *bold* _it_ -strike- +under+ ^sup^ ~sub~ "
           "??cite?? !http://evil.example/i.png! |cell| [link|http://evil.example] ---\n"
           "---\n----\nh1. forged heading\nbq. forged quote\n* item\n# item\n{color:red}x{color}")

# Wiki markup that must never appear unescaped in converted mail text.
_LIVE_WIKI = [
    re.compile(r"(?<!\\)\{(code|noformat|quote|color|panel|html)"),
    re.compile(r"(?<!\\)\[~"),
    re.compile(r"(?<!\\)\[[^\]\\]*\|"),
    re.compile(r"(?<![\\\w])\*[^*\s]"),
    re.compile(r"(?<![\\\w])_[^_\s]"),
    re.compile(r"(?<![\\\w])-[^-\s\\]"),
    re.compile(r"(?<![\\\w])\+[^+\s]"),
    re.compile(r"(?<!\\)\^"),
    re.compile(r"(?<!\\)~"),
    re.compile(r"(?<!\\)\?\?"),
    re.compile(r"(?<!\\)!\S"),
    re.compile(r"(?<!\\)\|"),
    re.compile(r"^(?:-{2,}|h[1-6]\.|bq\.|[*#-]+ )", re.MULTILINE),
    re.compile(r"(?<![\\-])--"),
]


def _live(wiki: str) -> list[str]:
    return [p.pattern for p in _LIVE_WIKI if p.search(wiki)]


def test_wiki_escapes_mail_text():
    wiki = m.md_to_wiki(markdown_block(HOSTILE))
    assert _live(wiki) == [], wiki
    # Markdown-only escapes leave no backslash in Jira, and words with dashes stay readable.
    assert m.md_to_wiki(markdown_block("issue #5 (a) <b> CVE-2025-1 snake_case")) == \
        "issue #5 (a) <b> CVE-2025-1 snake_case"


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.sampled_from(list("{}[]~*_-+^?!|#() \nabch1.:/\\`<>&@=")), max_size=40))
def test_no_wiki_markup_survives_any_mail_text(text):
    wiki = m.md_to_wiki(markdown_block(text))
    assert _live(wiki) == [], (text, wiki)


def test_our_own_markdown_still_maps():
    body = "### Reporter\n\n" + markdown_block("[~admin] *x*") + "\n\n```\n{code}\n```\n"
    wiki = m.md_to_wiki(body)
    assert wiki.startswith("h3. Reporter\n\n") and "{noformat}\n{code}\n{noformat}" in wiki


def test_adf_text_nodes_hold_the_text_as_written():
    doc = m.md_to_adf(markdown_block("![x](http://h/p) *b* [~admin] {code} <script> @octocat a\\b"))
    para, = doc["content"]
    texts = [n["text"] for n in para["content"] if n["type"] == "text"]
    assert texts == ["![x](http://h/p) *b* [~admin] {code} <script> @octocat a\\b"]
    assert {n["type"] for n in para["content"]} == {"text"}  # no marks, links or mentions


def test_thread_line_with_backticks_round_trips():
    from mailtriage.backends.contract import ThreadId
    from mailtriage.trackers.rollup import Entry
    from mailtriage.application.flows.linking import RollupState, thread_line

    for value in ("<abc`def``x@reporter.example>", "`<a@b>`", "<plain@x>"):
        tid = ThreadId("mbox", value)
        line = thread_line(tid)
        assert "\n" not in line
        entry = Entry(date="2026-09-01", user="tess", action="Import", body=f"Imported.\n{line}\nmore")
        assert RollupState((entry,)).thread_id() == tid, line
