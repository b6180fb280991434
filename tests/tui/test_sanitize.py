"""Mail content is inert: every dangerous character becomes a visible marker."""

import sys
import unicodedata

import pytest
from rich.text import Text

from mailtriage.tui.sanitize import has_hidden_characters, inert, inert_text, marker


@pytest.mark.parametrize("raw, shown", [
    ("\x1b[31mred", "\\x1b[31mred"),
    ("a\x07b", "a\\x07b"),
    ("del\x7f", "del\\x7f"),
    ("c1\x9b2J", "c1\\x9b2J"),
    ("evil\u202egpj.exe", "evil⟨U+202E⟩gpj.exe"),
    ("zero\u200bwidth", "zero⟨U+200B⟩width"),
    ("bom\ufeff", "bom⟨U+FEFF⟩"),
    ("isolate\u2067x\u2069", "isolate⟨U+2067⟩x⟨U+2069⟩"),
    ("tag\U000e0041", "tag⟨U+E0041⟩"),
    ("filler\u3164", "filler⟨U+3164⟩"),
    ("line\u2028sep", "line⟨U+2028⟩sep"),
    ("subject\nBcc: x@y", "subject\\x0aBcc: x@y"),
    ("tab\there", "tab\\x09here"),
    ("plain [bold red]markup[/]", "plain [bold red]markup[/]"),
    ("Ølaf Søren 田中太郎 ❤️", "Ølaf Søren 田中太郎 ❤️"),
])
def test_one_line_fields(raw, shown):
    assert inert(raw) == shown


def test_bodies_keep_newlines_and_tabs_but_not_escapes():
    body = "line one\r\nline\ttwo\n\x1b[2Jcleared\rover"
    assert inert(body, multiline=True) == "line one\nline\ttwo\n\\x1b[2Jcleared\\x0dover"


def test_markup_is_literal_text_and_markers_are_styled():
    text = inert_text("[bold red]boom[/] \u202eabc")
    assert isinstance(text, Text)
    assert text.plain == "[bold red]boom[/] ⟨U+202E⟩abc"
    # No span from markup parsing; exactly one span, the marker's.
    assert [(s.start, s.end, str(s.style)) for s in text.spans] == [(18, 26, "reverse")]


def test_every_control_and_format_character_is_caught():
    # The character list is written out for start-up speed; check it against Unicode.
    missed = []
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        if ch in "\t\n":
            continue
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") and inert(ch, multiline=True) == ch:
            missed.append(f"U+{code:04X}")
    assert missed == []


def test_has_hidden_characters():
    assert has_hidden_characters("a\u200bb")
    assert not has_hidden_characters("plain text\nwith lines")
    assert marker("\x1b") == "\\x1b" and marker("\u202e") == "⟨U+202E⟩"
