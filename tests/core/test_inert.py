"""The one output boundary: every sink, fed arbitrary code points, writes none of the
neutralized set raw (issue 20 §1)."""

from __future__ import annotations

import io
import json
import re
import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mailtriage.core import inert
from mailtriage.core.inert import NEUTRALIZED

# The set exactly as issue 20 lists it, written out independently of the module.
ISSUE_SET = (
    [chr(c) for c in range(0x20) if chr(c) not in "\t\n"] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]
    + ["\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))]
    + ["\u00ad", *map(chr, range(0x200B, 0x200E)), *map(chr, range(0x2060, 0x2065)),
       *map(chr, range(0x206A, 0x2070)), "\ufeff"]
    + [chr(c) for c in range(0xE0000, 0xE0080)]
)
_RAW = re.compile(f"[{NEUTRALIZED}]")

# Arbitrary code points, with the dangerous ones over-represented so every run hits them.
hostile = st.text(st.one_of(st.characters(codec=None, exclude_categories=()), st.sampled_from(ISSUE_SET)),
                  max_size=60)


def test_neutralized_set_is_the_issue_set():
    assert sorted(c for c in map(chr, range(0x110000)) if _RAW.fullmatch(c)) == sorted(ISSUE_SET)
    # The panes' wider set still covers every control and format character.
    missed = [f"U+{c:04X}" for c in range(0x110000)
              if chr(c) not in "\t\n" and unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp", "Cs")
              and not inert.is_neutralized(chr(c))]
    assert missed == []


def _check(out: str, *, newline: bool = True, tab: bool = True) -> None:
    assert _RAW.search(out) is None, repr(out)
    if not newline:
        assert "\n" not in out, repr(out)
    if not tab:
        assert "\t" not in out, repr(out)


def _printers():
    from mailtriage.cli import main as cli
    from mailtriage.tui.sanitize import inert as tui_inert
    from mailtriage.tui.sanitize import inert_text as tui_text
    from mailtriage.application.flows.proposals import ApplyReport, Blocked, BlockedBy, Field, Proposal, Write, WriteKind
    from mailtriage.application.flows.text import display_address, excerpt, markdown_inert, one_line, plain_lines

    def proposal(text: str) -> str:
        p = Proposal(text, warnings=[text], notes=[text], blocked=Blocked(BlockedBy.COMPOSE, text))
        p.writes.append(Write(WriteKind.DRAFT, text, text, [Field("Subject", text, marker=text),
                                                             Field("Body", text, multiline=True)], lambda w: None))
        p.preview = [Field(text, text)]
        p.existing = [Field(text, text, multiline=True)]
        return p.render_text()

    def report(text: str) -> str:
        return ApplyReport(written=[(text, None)], failed=(text, text), not_attempted=[text]).describe()

    def emit(text: str) -> str:
        old = sys.stdout
        sys.stdout = buf = io.StringIO()
        try:
            cli._emit({text: [text, {"k": text}]})
        finally:
            sys.stdout = old
        assert json.loads(buf.getvalue()) == {text: [text, {"k": text}]}  # lossless
        return buf.getvalue()

    def emit_lines(text: str) -> str:
        old = sys.stdout
        sys.stdout = buf = io.StringIO()
        try:
            cli._emit({text: [text, {"k": text}], "v": text}, lines=True)
        finally:
            sys.stdout = old
        assert json.loads(buf.getvalue()) == {text: [text, {"k": text}], "v": text}  # lossless
        return buf.getvalue()

    def err(text: str) -> str:
        old = sys.stderr
        sys.stderr = buf = io.StringIO()
        try:
            cli._err(text)
        finally:
            sys.stderr = old
        return buf.getvalue()

    return {
        # name: (printer, newline allowed, tab allowed)
        "terminal_line": (inert.terminal_line, False, False),
        "terminal_text": (inert.terminal_text, True, True),
        "json_dumps": (lambda t: inert.json_dumps({"v": t}, indent=None), False, False),
        "json_dumps_lines": (lambda t: inert.json_dumps_lines({t: [t, {t: t}], "v": t}), True, False),
        "markdown_inline": (inert.markdown_inline, False, False),
        "markdown_block": (inert.markdown_block, True, False),
        "header_text": (inert.header_text, False, False),
        "clean_line": (inert.clean_line, False, False),
        "clean_lines": (inert.clean_lines, True, True),
        "one_line": (one_line, False, False),
        "plain_lines": (plain_lines, True, True),
        "markdown_inert": (markdown_inert, True, False),
        "display_address": (lambda t: display_address(t, t), False, False),
        "excerpt": (excerpt, False, False),
        "proposal.render_text": (proposal, True, True),
        "report.describe": (report, True, False),
        "cli._emit": (emit, True, False),
        "cli._emit lines": (emit_lines, True, False),
        "cli._err": (err, True, True),
        "tui.inert": (tui_inert, False, False),
        "tui.inert_text": (lambda t: tui_text(t).plain, False, False),
        "tui.inert_text multiline": (lambda t: tui_text(t, multiline=True).plain, True, True),
    }


PRINTERS = _printers()


@pytest.mark.parametrize("name", sorted(PRINTERS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=hostile)
def test_no_neutralized_character_leaves_any_printer(name, text):
    printer, newline, tab = PRINTERS[name]
    _check(printer(text), newline=newline, tab=tab)


@pytest.mark.parametrize("ch", ISSUE_SET[::7] + ["\U000e007f", "\u2064", "\u061c"])
def test_every_listed_character_is_caught_by_every_printer(ch):
    for name, (printer, newline, tab) in PRINTERS.items():
        out = printer(f"a{ch}b")
        assert _RAW.search(out) is None, (name, repr(out))


def test_json_lines_put_one_list_item_on_each_line_and_read_back_the_same():
    doc = {"command": "queue", "rows": [{"s": "fdp\u202e.exe", "n": [1, 2]}, {"s": "ünï\ncödé"}], "warnings": [],
           "now": None}
    text = inert.json_dumps_lines(doc)
    assert json.loads(text) == doc
    assert text.splitlines() == ['{', '  "command": "queue",', '  "rows": [', '    {"s": "fdp\\u202e.exe", "n": [1, 2]},',
                                 '    {"s": "ünï\\ncödé"}', '  ],', '  "warnings": [],', '  "now": null', '}']
    assert inert.json_dumps_lines({}) == "{}" and json.loads(inert.json_dumps_lines([1, {"a": 2}])) == [1, {"a": 2}]


def test_terminal_markers_are_visible():
    assert inert.terminal_line("t\x1b]0;x\x07\r\nCc: e") == "t\\x1b]0;x\\x07\\x0d\\x0aCc: e"
    assert inert.terminal_text("a\r\nb\rc\u202e") == "a\nb\\x0dc⟨U+202E⟩"


def test_json_escapes_keep_the_value():
    text = inert.json_dumps({"s": "fdp\u202e.exe \x85 \U000e0041 ünïcödé"}, indent=None)
    assert text == '{"s": "fdp\\u202e.exe \\u0085 \\udb40\\udc41 ünïcödé"}'
    assert json.loads(text)["s"] == "fdp\u202e.exe \x85 \U000e0041 ünïcödé"


def _html(markdown: str) -> str:
    from markdown_it import MarkdownIt  # rich's own Markdown parser: CommonMark + GFM tables/strikethrough

    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)


_LIVE_HTML = re.compile(r"<(?!/?p>)[a-z/]")


def test_markdown_inline_leaves_no_markup():
    text = ("![x](http://host/pixel) [Security Team](https://evil/login) @octocat "
            "*b* _i_ `c` <img src=x> &amp; ~~s~~ <https://auto.example> [ref]: http://x")
    out = inert.markdown_inline(text)
    assert _LIVE_HTML.search(_html(out)) is None, _html(out)
    assert "@octocat" not in out and "&#64;octocat" in out  # no mention, no notification
    assert "http://" not in out and "https://" not in out  # no bare autolink (GFM linkify)


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.sampled_from(list("![]()*_`<>&~#|{}-+=:/@.\\ \nabhtp1")), max_size=40))
def test_markdown_block_never_renders_markup(text):
    html = _html(inert.markdown_block(text))
    assert _LIVE_HTML.search(html.replace("<br />", "")) is None, html


def test_markdown_block_escapes_line_starts():
    lines = inert.markdown_block("### Forged\n> quote\n- item\n+ item\n1. one\n2) two\n---\n====\n```\n"
                                 "        code\n| a | b |").split("\n")
    assert lines == ["\\#\\#\\# Forged", "&gt; quote", "\\- item", "\\+ item", "1\\. one", "2\\) two",
                     "\\---", "\\====", "\\`\\`\\`", "   code", "\\| a \\| b \\|"]


def test_header_text_is_one_bounded_line():
    assert inert.header_text("Hello\r\nCc: attacker@evil.example\u202e") == "Hello Cc: attacker@evil.example"
    assert len(inert.header_text("x" * 5000)) == 900
