"""Mail content made safe to carry into drafts, tracker bodies and sweep items.

Mail content is data: subjects, names and bodies can hold terminal escapes, bidi
overrides, zero-width characters and Markdown that would change how a tracker page
renders. These helpers make it inert *before* it leaves a flow; they never interpret it.
"""

from __future__ import annotations

import re

from mailtriage.core.inert import clean_line, clean_lines, markdown_block, sender_mismatch
from mailtriage.core.lazy_re import lazy


def one_line(text: str | None, limit: int = 200) -> str:
    """One line of visible text (:func:`mailtriage.core.inert.clean_line`)."""
    return clean_line(text, limit)


def plain_lines(text: str | None) -> str:
    """Multi-line text with controls and invisible characters removed (line breaks kept)."""
    return clean_lines(text)


def markdown_inert(text: str) -> str:
    """Text placed in a tracker body that must not become markup there: no headings
    (a ``### Field`` line would forge a field section), no HTML, links, images,
    emphasis, code, @mentions or wiki markup (:func:`mailtriage.core.inert.markdown_block`)."""
    return markdown_block(text)


def display_address(name: str | None, email: str | None) -> str:
    """``Name (email)`` or the bare address, one inert line."""
    name = one_line(name, 120)
    email = one_line(email, 200)
    if name and email and name.lower() != email.lower():
        return f"{name} ({email})"
    return email or name or "(unknown sender)"


def spoof_warning(name: str | None, email: str | None) -> str | None:
    """The proposal warning for a sender whose display name could pass for an address the
    mail is not from (``"security@project.example" <attacker@evil.example>``), or None."""
    why = sender_mismatch(name, email)
    if not why:
        return None
    return (f"⚠ the sender's name \u201c{one_line(name, 120)}\u201d looks like an address, but it is not "
            f"the sender's address: the mail is from {one_line(email, 200)} ({why})")


_QUOTE_HEADER = lazy(r"^(on .{0,200}wrote:|-+ ?original message ?-+|from: .+)$", re.IGNORECASE)


def excerpt(body: str | None, limit: int = 300) -> str:
    """The new text of a mail in one line: quoted lines (``>``), the quote header
    ("On … wrote:") and the signature (after ``-- ``) left out, then cut at ``limit``.

    A quote header after text of the sender's own ends it (a top-posted reply: what follows
    is the quote, marked with ``>`` or not); an "On … wrote:" before any (an interleaved reply
    that opens with the quote) is skipped, and the sender's text after the quote is kept. An
    "Original Message" or "From:" header always ends it: its quote is not marked."""
    kept: list[str] = []
    for line in plain_lines(body).split("\n"):
        if line == "-- " or line.strip() == "--":
            break
        if line.lstrip().startswith(">"):
            continue
        header = _QUOTE_HEADER.match(line.strip())
        if header:
            if any(k.strip() for k in kept) or not header.group(1).lower().startswith("on "):
                break  # what follows is the quote (an Outlook-style one is not marked with ">")
            continue
        kept.append(line)
    return one_line("\n".join(kept), limit)
