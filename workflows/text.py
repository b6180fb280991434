"""Mail content made safe to carry into drafts, tracker bodies and sweep items.

Mail content is data: subjects, names and bodies can hold terminal escapes, bidi
overrides, zero-width characters and Markdown that would change how a tracker page
renders. These helpers make it inert *before* it leaves a flow; they never interpret it.
"""

from __future__ import annotations

import re

# C0/C1 controls (keeping \n and \t where the caller allows lines), bidi controls and
# zero-width characters.
_INVISIBLE = re.compile(r"[\u200b-\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff\u00ad]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
_SPACES = re.compile(r"[ \t\r\n]+")


def one_line(text: str | None, limit: int = 200) -> str:
    """One line of visible text: controls and invisible characters removed, runs of
    whitespace collapsed, cut at ``limit`` characters (with an ellipsis)."""
    value = _INVISIBLE.sub("", _CONTROL.sub(" ", text or ""))
    value = _SPACES.sub(" ", value).strip()
    if len(value) > limit:
        value = value[: limit - 1].rstrip() + "…"
    return value


def plain_lines(text: str | None) -> str:
    """Multi-line text with controls and invisible characters removed (line breaks kept)."""
    value = (text or "").replace("\r\n", "\n").replace("\r", "\n")
    value = _INVISIBLE.sub("", _CONTROL.sub(" ", value))
    return "\n".join(line.rstrip() for line in value.split("\n"))


def markdown_inert(text: str) -> str:
    """Text placed in a tracker body that must not become markup there: no headings
    (a ``### Field`` line would forge a field section), no HTML, no link syntax."""
    out = []
    for line in text.split("\n"):
        # HTML and quote markers become entities; other block markers get a backslash.
        line = line.replace("<", "&lt;").replace(">", "&gt;")
        stripped = line.lstrip()
        if stripped.startswith(("#", "---", "===", "```", "~~~", "|")):
            line = line[: len(line) - len(stripped)] + "\\" + stripped
        out.append(line)
    return "\n".join(out)


def display_address(name: str | None, email: str | None) -> str:
    """``Name (email)`` or the bare address, one inert line."""
    name = one_line(name, 120)
    email = one_line(email, 200)
    if name and email and name.lower() != email.lower():
        return f"{name} ({email})"
    return email or name or "(unknown sender)"


_QUOTE_HEADER = re.compile(r"^(on .{0,200}wrote:|-+ ?original message ?-+|from: .+)$", re.IGNORECASE)


def excerpt(body: str | None, limit: int = 300) -> str:
    """The new text of a mail in one line: quoted lines (``>``), the quote header
    ("On … wrote:") and the signature (after ``-- ``) left out, then cut at ``limit``."""
    kept: list[str] = []
    for line in plain_lines(body).split("\n"):
        if line == "-- " or line.strip() == "--":
            break
        if line.lstrip().startswith(">"):
            continue
        if _QUOTE_HEADER.match(line.strip()):
            break
        kept.append(line)
    return one_line("\n".join(kept), limit)
