"""Mail content made inert before it reaches the screen.

Subjects, names, bodies and attachment names come from strangers. They can carry
terminal escape sequences, C0/C1 control characters, bidi overrides that reorder a
line (``evil\u202egpj.exe``), zero-width characters that hide text, and Rich markup
(``[bold red]``). The characters and their markers are those of the one output boundary,
:mod:`mailtriage.core.inert`; this module only wraps them for Rich/Textual:

* C0/C1 controls and DEL become ``\\x1b``-style escapes;
* format characters (Unicode category Cf: bidi controls, zero-width space/joiners,
  the BOM, tag characters …), line/paragraph separators and invisible fillers become
  ``⟨U+202E⟩``.

The result is returned as a :class:`rich.text.Text` (never a markup string), so
``[bold red]`` stays literal text. Markers get their own style so they stand out from
a literal backslash written by the sender.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from mailtriage.core.inert import has_hidden_characters, marker, pattern, terminal_line, terminal_text

__all__ = ["MARKER_STYLE", "has_hidden_characters", "inert", "inert_text", "marker"]

#: How markers look: reverse video works in every theme, light or dark.
MARKER_STYLE = "reverse"


def inert(text: str | None, *, multiline: bool = False) -> str:
    """Plain text with every dangerous character replaced by its visible marker
    (the terminal sinks of :mod:`mailtriage.core.inert`).

    One-line fields (subjects, names, attachment names) also mark ``\\t`` and ``\\n``,
    so a subject cannot fake a second header line.
    """
    return terminal_text(text) if multiline else terminal_line(text)


def inert_text(text: str | None, *, multiline: bool = False, style: str | Style = "",
               marker_style: str | Style = MARKER_STYLE) -> Text:
    """A :class:`rich.text.Text` of ``text`` with markers styled; never parsed as markup."""
    if not text:
        return Text("", style=style)
    if multiline:
        text = text.replace("\r\n", "\n")
    out = Text(style=style)
    pos = 0
    for match in pattern(multiline).finditer(text):
        if match.start() > pos:
            out.append(text[pos:match.start()])
        out.append(marker(match.group()), style=marker_style)
        pos = match.end()
    if pos < len(text):
        out.append(text[pos:])
    return out
