"""``### Heading`` field sections of an issue body, read and written byte-exactly.

A field is a level-3 heading (``### Affected versions``) and the text under it up to the next
heading of level 1–3 or the end of the body. Headings match case-insensitively (after
trimming spaces and an optional closing ``###``); headings inside fenced code blocks are not
headings. ``set_field`` replaces only the section's text (from its first to its last
non-blank line) or appends a missing section at the end of the body; every other byte —
CRLF line ends, trailing spaces, blank lines, other sections — is left as it was.

Jira Data Center stores bodies in wiki markup, where the same field is ``h3. Heading`` and
code sits between ``{code}`` / ``{noformat}`` markers; :data:`JIRA_WIKI` describes that.
"""

from __future__ import annotations

import re
from typing import Callable, Iterator

from mailtriage.core.lazy_re import lazy
from mailtriage.core.lean_dataclass import frozen_dataclass

FIELD_LEVEL = 3


@frozen_dataclass
class Syntax:
    """How a body spells headings and code blocks."""

    name: str
    #: yields (line index, level, heading text) for each heading outside code blocks
    scan: Callable[[list[str]], Iterator[tuple[int, int, str]]]
    #: the heading line for a new section (without line end)
    render_heading: Callable[[str], str]
    #: the line that closes a code block left open at the end of the text, else None
    open_block_closer: Callable[[list[str]], str | None]


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` terminators kept (only ``\\n`` splits: CR, VT, U+2028 do not)."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _bare(line: str) -> str:
    if line.endswith("\n"):
        line = line[:-1]
    if line.endswith("\r"):
        line = line[:-1]
    return line


def newline_of(text: str) -> str:
    """The document's line end: CRLF when most lines end so, else LF."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


# -- Markdown ---------------------------------------------------------------------------

_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def _strip_closing_hashes(text: str) -> str:
    m = re.match(r"^(.*?)(?:[ \t]+#+)?[ \t]*$", text)
    stripped = m.group(1) if m else text
    return "" if re.fullmatch(r"#+", stripped or "") else stripped


def _scan_markdown(lines: list[str], state: dict | None = None) -> Iterator[tuple[int, int, str]]:
    fence: str | None = None
    for i, raw in enumerate(lines):
        line = _bare(raw)
        m = _MD_FENCE.match(line)
        if fence is None:
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                fence = m.group(1)
                continue
            h = _MD_HEADING.match(line)
            if h:
                yield i, len(h.group(1)), _strip_closing_hashes(h.group(2) or "").strip()
        else:
            # A fence closes with the same character, at least as long, and nothing after it.
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip():
                fence = None
    if state is not None:
        state["open"] = fence


def _markdown_closer(lines: list[str]) -> str | None:
    state: dict = {}
    for _ in _scan_markdown(lines, state):
        pass
    return state.get("open")


MARKDOWN = Syntax("markdown", _scan_markdown, lambda text: f"### {text}", _markdown_closer)


# -- Jira wiki markup --------------------------------------------------------------------

_WIKI_HEADING = re.compile(r"^[ \t]*h([1-6])\.[ \t]*(.*?)[ \t]*$")
_WIKI_BLOCK = lazy(r"\{(code|noformat)(?::[^}]*)?\}")


def _scan_wiki(lines: list[str], state: dict | None = None) -> Iterator[tuple[int, int, str]]:
    block: str | None = None
    for i, raw in enumerate(lines):
        line = _bare(raw)
        if block is None:
            h = _WIKI_HEADING.match(line)
            if h:
                yield i, int(h.group(1)), h.group(2).strip()
            markers = _WIKI_BLOCK.findall(line)
            # an odd number of markers on a line leaves a block open
            for name in markers:
                block = name if block is None else None
        else:
            for name in _WIKI_BLOCK.findall(line):
                if name == block:
                    block = None
                    break
    if state is not None:
        state["open"] = block


def _wiki_closer(lines: list[str]) -> str | None:
    state: dict = {}
    for _ in _scan_wiki(lines, state):
        pass
    return "{" + state["open"] + "}" if state.get("open") else None


JIRA_WIKI = Syntax("jira-wiki", _scan_wiki, lambda text: f"h3. {text}", _wiki_closer)


# -- sections ---------------------------------------------------------------------------


@frozen_dataclass
class Section:
    heading_line: int  # index of the heading line
    end: int  # index one past the section's last line
    heading: str


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def sections(lines: list[str], syntax: Syntax = MARKDOWN) -> list[Section]:
    """Every level-3 section, in order."""
    heads = list(syntax.scan(lines))
    out: list[Section] = []
    for n, (i, level, text) in enumerate(heads):
        if level != FIELD_LEVEL:
            continue
        end = len(lines)
        for j, lvl, _ in heads[n + 1:]:
            if lvl <= FIELD_LEVEL:
                end = j
                break
        out.append(Section(i, end, text))
    return out


def find_section(lines: list[str], heading: str, syntax: Syntax = MARKDOWN) -> Section | None:
    """The first level-3 section whose heading matches ``heading`` case-insensitively."""
    want = _key(heading)
    for section in sections(lines, syntax):
        if _key(section.heading) == want:
            return section
    return None


def _content_span(lines: list[str], section: Section) -> tuple[int, int] | None:
    """(first, last) indices of the section's non-blank lines, or None when it is empty."""
    body = range(section.heading_line + 1, section.end)
    filled = [i for i in body if _bare(lines[i]).strip()]
    if not filled:
        return None
    return filled[0], filled[-1]


def get_field(text: str, heading: str, syntax: Syntax = MARKDOWN) -> str | None:
    """The section's text with surrounding blank lines removed and line ends as LF;
    ``""`` for an empty section, None when there is no such section."""
    lines = split_lines(text)
    section = find_section(lines, heading, syntax)
    if section is None:
        return None
    span = _content_span(lines, section)
    if span is None:
        return ""
    return "\n".join(_bare(line) for line in lines[span[0]:span[1] + 1])


def _value_lines(value: str, nl: str) -> list[str]:
    value = value.replace("\r\n", "\n")
    value = value.rstrip("\n")
    if not value:
        return []
    return [line + nl for line in value.split("\n")]


def set_field(text: str, heading: str, value: str, syntax: Syntax = MARKDOWN) -> tuple[str, bool]:
    """(new text, created). Replaces the section's text or appends the section at the end.

    The value's trailing line breaks are dropped and its line ends follow the document's.
    """
    nl = newline_of(text) if text else "\n"
    lines = split_lines(text)
    new_lines = _value_lines(value, nl)
    section = find_section(lines, heading, syntax)
    if section is None:
        prefix = text
        if prefix and not prefix.endswith("\n"):
            prefix += nl
        closer = syntax.open_block_closer(lines)
        if closer:
            # a code block left open runs to the end of the text; close it so the new
            # heading is a heading (the existing text renders the same)
            prefix += closer + nl
        if prefix and not prefix.endswith(nl + nl) and not prefix.endswith("\n\n"):
            prefix += nl
        block = syntax.render_heading(heading.strip()) + nl
        if new_lines:
            block += nl + "".join(new_lines)
        return prefix + block, True
    span = _content_span(lines, section)
    if span is not None:
        first, last = span
        if new_lines:
            # the last value line keeps the original last line's ending (none at end of text)
            ending = lines[last][len(_bare(lines[last])):]
            new_lines[-1] = _bare(new_lines[-1]) + ending
        return "".join(lines[:first] + new_lines + lines[last + 1:]), False
    # the section exists but is empty: the value goes after the heading and one blank line
    if not new_lines:
        return text, False
    h = section.heading_line
    if not lines[h].endswith("\n"):
        lines[h] = lines[h] + nl
    blanks = section.end - (h + 1)  # blank lines between the heading and the next heading
    at_end = section.end == len(lines)
    if blanks:
        insert_at = h + 2  # after the first blank line
        if not lines[h + 1].endswith("\n"):
            lines[h + 1] += nl
        insert = new_lines + ([nl] if blanks == 1 and not at_end else [])
    else:
        insert_at = h + 1
        insert = [nl] + new_lines + ([] if at_end else [nl])
    return "".join(lines[:insert_at] + insert + lines[insert_at:]), False
