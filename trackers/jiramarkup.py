"""Markdown as Jira stores it: wiki markup (REST v2, Data Center) and ADF (REST v3, Cloud).

Only what the tracker contract needs is mapped; everything else passes through as text:

* wiki: ``### Heading`` <-> ``h3. Heading``; fenced code <-> ``{code:lang}`` / ``{noformat}``;
* ADF: headings <-> ``heading`` nodes, fenced code <-> ``codeBlock``, other blocks are
  paragraphs (single line breaks become ``hardBreak``), ``rule`` reads as ``---``, lists and
  quotes read back as ``-`` / ``1.`` / ``>`` lines.

A body written in the canonical form (one blank line between blocks, ``### Heading`` with
one space) reads back byte for byte. ADF is a tree, so on v3 several blank lines in a row
read back as one.
"""

from __future__ import annotations

import re
from typing import Any

_MD_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*$")
_MD_FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*([\w+#.-]*)[ \t]*$")
_WIKI_HEADING = re.compile(r"^h([1-6])\.[ \t]+(.*?)[ \t]*$")
_WIKI_CODE_OPEN = re.compile(r"^\{code(?::([^}]*))?\}[ \t]*$")
_WIKI_NOFORMAT = re.compile(r"^\{noformat\}[ \t]*$")


# -- wiki markup ------------------------------------------------------------------------

# Text lines are *text* in wiki markup: a Markdown backslash escape (how mail-derived text
# arrives, see core/inert.py) becomes the literal character, and every character that could
# open wiki markup is escaped, so ``{code}``, ``[~user]``, ``*x*``, ``-x-``, ``!img!``,
# ``|cell|`` and ``----`` from a reporter stay text. Our own line-start Markdown (headings,
# fences, ``- `` list items, a ``---`` separator line) still maps.
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])|&(lt|gt|amp|#64|#92);")
_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "#64": "@", "#92": "\\"}
_WIKI_ALWAYS = set("{}[]|!^~")
_WIKI_EDGE = set("*_+-")  # markup only at a word edge: CVE-2025-1 and snake_case stay readable
_WIKI_LINE_START = re.compile(r"^(\s*)(h[1-6]|bq)\.")
_WIKI_UNESCAPE = re.compile(r"\\([{}\[\]|!^~*_+\-?#.])|&#92;")


def _wiki_text(line: str) -> str:
    literal: list[tuple[str, bool]] = []  # (char, came from a Markdown escape or entity)
    pos = 0
    for m in _MD_ESCAPE.finditer(line):
        literal += [(c, False) for c in line[pos:m.start()]]
        literal.append((m.group(1) if m.group(1) else _ENTITIES[m.group(2)], True))
        pos = m.end()
    literal += [(c, False) for c in line[pos:]]
    chars = [c for c, _ in literal]
    out: list[str] = []
    for i, c in enumerate(chars):
        before = chars[i - 1] if i else " "
        after = chars[i + 1] if i + 1 < len(chars) else " "
        if c == "\\":
            out.append("&#92;")  # "\\" is a line break in wiki markup
        elif c in _WIKI_ALWAYS or (c == "?" and "?" in (before, after)) \
                or (c == "#" and not "".join(chars[:i]).strip()):
            out.append("\\" + c)
        elif c in _WIKI_EDGE and not (before.isalnum() and after.isalnum()):
            out.append("\\" + c)
        else:
            out.append(c)
    return _WIKI_LINE_START.sub(r"\1\2\\.", "".join(out))


def _wiki_line(line: str) -> str:
    if line.strip() == "---":  # our rollup separator
        return line
    if line.startswith("- "):  # our list item; the item's text is text
        return "- " + _wiki_text(line[2:])
    return _wiki_text(line)


def md_to_wiki(text: str) -> str:
    out: list[str] = []
    fence: str | None = None
    closer = ""
    for line in text.split("\n"):
        bare = line.rstrip("\r")
        cr = line[len(bare):]
        if fence is None:
            m = _MD_FENCE.match(bare)
            if m:
                fence = m.group(1)
                lang = m.group(2)
                closer = "{code}" if lang else "{noformat}"
                out.append(("{code:" + lang + "}" if lang else "{noformat}") + cr)
                continue
            h = _MD_HEADING.match(bare)
            out.append(f"h{len(h.group(1))}. {_wiki_text(h.group(2))}{cr}" if h else _wiki_line(bare) + cr)
        else:
            if bare.strip() and bare.strip()[0] == fence[0] and set(bare.strip()) == {fence[0]} \
                    and len(bare.strip()) >= len(fence):
                out.append(closer + cr)
                fence = None
            else:
                out.append(line)
    return "\n".join(out)


def wiki_to_md(text: str) -> str:
    out: list[str] = []
    block: str | None = None
    for line in text.split("\n"):
        bare = line.rstrip("\r")
        cr = line[len(bare):]
        if block is None:
            m = _WIKI_CODE_OPEN.match(bare)
            if m:
                block = "code"
                out.append("```" + (m.group(1) or "").split("|")[0] + cr)
                continue
            if _WIKI_NOFORMAT.match(bare):
                block = "noformat"
                out.append("```" + cr)
                continue
            h = _WIKI_HEADING.match(bare)
            text = _WIKI_UNESCAPE.sub(lambda m: m.group(1) or "\\", h.group(2) if h else bare)
            out.append("#" * int(h.group(1)) + " " + text + cr if h else text + cr)
        else:
            if (block == "code" and bare.strip() == "{code}") or (block == "noformat" and _WIKI_NOFORMAT.match(bare)):
                out.append("```" + cr)
                block = None
            else:
                out.append(line)
    return "\n".join(out)


# -- ADF --------------------------------------------------------------------------------

def _plain(line: str) -> str:
    """A Markdown line as the text it shows: escapes and our entities resolved. ADF text
    nodes are never parsed as markup, so the text goes in exactly as written."""
    return _MD_ESCAPE.sub(lambda m: m.group(1) if m.group(1) else _ENTITIES[m.group(2)], line)


def _text_nodes(text: str) -> list[dict]:
    nodes: list[dict] = []
    for n, line in enumerate(_plain(text).split("\n")):
        if n:
            nodes.append({"type": "hardBreak"})
        if line:
            nodes.append({"type": "text", "text": line})
    return nodes


def md_to_adf_nodes(text: str) -> list[dict]:
    """Block nodes for a markdown text."""
    nodes: list[dict] = []
    lines = text.replace("\r\n", "\n").split("\n")
    para: list[str] = []

    def flush() -> None:
        if para:
            nodes.append({"type": "paragraph", "content": _text_nodes("\n".join(para))})
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _MD_FENCE.match(line)
        if fence:
            flush()
            j = i + 1
            body: list[str] = []
            while j < len(lines) and not (lines[j].strip() and set(lines[j].strip()) == {fence.group(1)[0]}
                                          and len(lines[j].strip()) >= len(fence.group(1))):
                body.append(lines[j])
                j += 1
            node: dict[str, Any] = {"type": "codeBlock", "content": [{"type": "text", "text": "\n".join(body)}]
                                    if body and "\n".join(body) else []}
            if fence.group(2):
                node["attrs"] = {"language": fence.group(2)}
            nodes.append(node)
            i = j + 1
            continue
        heading = _MD_HEADING.match(line)
        if heading:
            flush()
            nodes.append({"type": "heading", "attrs": {"level": len(heading.group(1))},
                          "content": _text_nodes(heading.group(2))})
        elif not line.strip():
            flush()
        else:
            para.append(line)
        i += 1
    flush()
    return nodes


def md_to_adf(text: str) -> dict:
    return {"type": "doc", "version": 1, "content": md_to_adf_nodes(text)}


def inline_text(node: dict) -> str:
    kind = node.get("type")
    if kind == "text":
        return node.get("text", "")
    if kind == "hardBreak":
        return "\n"
    if kind in ("mention", "emoji", "inlineCard", "status", "date"):
        attrs = node.get("attrs") or {}
        return str(attrs.get("text") or attrs.get("shortName") or attrs.get("url") or attrs.get("timestamp") or "")
    return "".join(inline_text(c) for c in node.get("content") or [])


def _block_md(node: dict, depth: int = 0) -> str:
    kind = node.get("type")
    content = node.get("content") or []
    if kind == "heading":
        level = int((node.get("attrs") or {}).get("level", 1))
        return "#" * level + " " + inline_text(node)
    if kind == "codeBlock":
        lang = (node.get("attrs") or {}).get("language") or ""
        return f"```{lang}\n{inline_text(node)}\n```"
    if kind == "rule":
        return "---"
    if kind in ("bulletList", "orderedList"):
        lines = []
        for n, item in enumerate(content, 1):
            marker = "-" if kind == "bulletList" else f"{n}."
            text = "\n".join(_block_md(c, depth + 1) for c in item.get("content") or [])
            first, *rest = text.split("\n") or [""]
            lines.append("  " * depth + f"{marker} {first}")
            lines += ["  " * depth + "  " + r for r in rest]
        return "\n".join(lines)
    if kind == "blockquote":
        inner = "\n\n".join(_block_md(c) for c in content)
        return "\n".join("> " + line if line else ">" for line in inner.split("\n"))
    return inline_text(node)


def adf_nodes_to_md(nodes: list[dict]) -> str:
    blocks = [_block_md(n) for n in nodes]
    return "\n\n".join(blocks) + "\n" if blocks else ""


def adf_to_md(doc: Any) -> str:
    if doc is None:
        return ""
    if isinstance(doc, str):  # some sites answer v3 text fields as strings
        return doc
    return adf_nodes_to_md(doc.get("content") or [])


# -- ### sections in ADF ----------------------------------------------------------------

def _heading_key(node: dict) -> str:
    return " ".join(inline_text(node).split()).casefold()


def adf_section(nodes: list[dict], heading: str) -> tuple[int, int] | None:
    """(index of the level-3 heading node, index one past its section) or None."""
    want = " ".join(heading.split()).casefold()
    for i, node in enumerate(nodes):
        if node.get("type") == "heading" and (node.get("attrs") or {}).get("level") == 3 and _heading_key(node) == want:
            end = len(nodes)
            for j in range(i + 1, len(nodes)):
                if nodes[j].get("type") == "heading" and int((nodes[j].get("attrs") or {}).get("level", 1)) <= 3:
                    end = j
                    break
            return i, end
    return None


def adf_get_field(doc: Any, heading: str) -> str | None:
    nodes = (doc or {}).get("content") or [] if isinstance(doc, dict) else []
    span = adf_section(nodes, heading)
    if span is None:
        return None
    return adf_nodes_to_md(nodes[span[0] + 1:span[1]]).strip("\n")


def adf_set_field(doc: Any, heading: str, value: str) -> tuple[dict, bool]:
    """(new doc, created). Nodes outside the section are kept as they are."""
    doc = dict(doc) if isinstance(doc, dict) else {"type": "doc", "version": 1, "content": []}
    nodes = list(doc.get("content") or [])
    new_nodes = md_to_adf_nodes(value.rstrip("\n"))
    span = adf_section(nodes, heading)
    if span is None:
        nodes += [{"type": "heading", "attrs": {"level": 3}, "content": _text_nodes(heading.strip())}] + new_nodes
        created = True
    else:
        nodes = nodes[:span[0] + 1] + new_nodes + nodes[span[1]:]
        created = False
    doc["content"] = nodes
    doc.setdefault("type", "doc")
    doc.setdefault("version", 1)
    return doc, created
