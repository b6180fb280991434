"""Mail content made inert before it reaches the screen.

Subjects, names, bodies and attachment names come from strangers. They can carry
terminal escape sequences, C0/C1 control characters, bidi overrides that reorder a
line (``evil\u202egpj.exe``), zero-width characters that hide text, and Rich markup
(``[bold red]``). Here every such character is replaced by a *visible* marker:

* C0/C1 controls and DEL become ``\\x1b``-style escapes;
* format characters (Unicode category Cf: bidi controls, zero-width space/joiners,
  the BOM, tag characters …), line/paragraph separators and invisible fillers become
  ``⟨U+202E⟩``.

The result is returned as a :class:`rich.text.Text` (never a markup string), so
``[bold red]`` stays literal text. Markers get their own style so they stand out from
a literal backslash written by the sender.
"""

from __future__ import annotations

import re

from rich.style import Style
from rich.text import Text

#: How markers look: reverse video works in every theme, light or dark.
MARKER_STYLE = "reverse"

# Every code point of category Cc (minus \t \n, handled per field), Cf, Zl, Zp, plus
# the default-ignorable invisible letters (Hangul fillers, Khmer vowel inherent,
# Mongolian free variation selectors, combining grapheme joiner). Listed explicitly
# because scanning Unicode at import time would cost start-up time; a test checks the
# list against unicodedata.
_DANGEROUS_RANGES = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f"
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\u3164\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001345f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_ONE_LINE = re.compile(f"[\t\n{_DANGEROUS_RANGES}]")
_MULTI_LINE = re.compile(f"[{_DANGEROUS_RANGES}]")


def marker(ch: str) -> str:
    """The visible stand-in for one dangerous character."""
    code = ord(ch)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"\\x{code:02x}"
    return f"⟨U+{code:04X}⟩"


def _normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n")


def inert(text: str | None, *, multiline: bool = False) -> str:
    """Plain text with every dangerous character replaced by its visible marker.

    One-line fields (subjects, names, attachment names) also mark ``\\t`` and ``\\n``,
    so a subject cannot fake a second header line.
    """
    if not text:
        return ""
    pattern = _MULTI_LINE if multiline else _ONE_LINE
    if multiline:
        text = _normalize_newlines(text)
    return pattern.sub(lambda m: marker(m.group()), text)


def inert_text(text: str | None, *, multiline: bool = False, style: str | Style = "",
               marker_style: str | Style = MARKER_STYLE) -> Text:
    """A :class:`rich.text.Text` of ``text`` with markers styled; never parsed as markup."""
    if not text:
        return Text("", style=style)
    pattern = _MULTI_LINE if multiline else _ONE_LINE
    if multiline:
        text = _normalize_newlines(text)
    out = Text(style=style)
    pos = 0
    for match in pattern.finditer(text):
        if match.start() > pos:
            out.append(text[pos:match.start()])
        out.append(marker(match.group()), style=marker_style)
        pos = match.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def has_hidden_characters(text: str | None) -> bool:
    """True when ``text`` holds anything :func:`inert` would mark (tabs/newlines excluded)."""
    return bool(text) and _MULTI_LINE.search(text) is not None
