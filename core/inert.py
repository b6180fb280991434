"""The one output boundary for untrusted text.

Subjects, names, bodies, attachment names, Message-IDs, archive data and server error
strings come from strangers. Before any of it reaches an output it passes through one
function here, chosen by the *sink*:

=====================  ===========================================================
sink                   function and guarantee
=====================  ===========================================================
terminal line          :func:`terminal_line` — one line; every neutralized
                       character (and tab, LF, CR) shown as a visible marker
terminal text          :func:`terminal_text` — like a line, but LF and tab kept
JSON on stdout         :func:`json_dumps` — the neutralized characters escaped as
                       ``\\uXXXX`` inside strings: the document decodes to the very
                       same values (lossless for scripts), yet no raw one is written;
                       :func:`json_dumps_lines` the same, one list item a line
Markdown (trackers)    :func:`markdown_inline` / :func:`markdown_block` — invisible
                       characters removed, every inline and block syntax escaped
mail header            :func:`header_text` — one clean line: controls become spaces,
                       invisible characters are dropped, whitespace collapsed
tracker text / draft   :func:`clean_line` / :func:`clean_lines` — same cleaning
=====================  ===========================================================

The neutralized set (:data:`NEUTRALIZED`) is the one issue 20 lists: C0 controls (tab
and newline only where a sink allows them), DEL, C1 controls (ESC among them), bidi
controls (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069), zero-width and invisible
characters (U+00AD, U+200B–U+200D, U+2060–U+2064, U+206A–U+206F, U+FEFF) and tag
characters (U+E0000–U+E007F). :data:`_ALSO` adds the other characters the app's panes
always marked (every other format character, line/paragraph separators, invisible
fillers, lone surrogates), so nothing regresses. Ranges are written out rather than
computed from :mod:`unicodedata` to keep start-up fast; a test checks them.

This module is UI-free: :mod:`mailtriage.tui.sanitize` wraps it into Rich ``Text``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from mailtriage.core.lazy_re import compiled, lazy  # compiled on first use: most commands never use them

_C0_C1 = "\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 without tab and newline (sinks add them), DEL, C1
_BIDI_INVISIBLE_TAGS = (
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi controls
    "\u00ad\u200b-\u200d\u2060-\u2064\u206a-\u206f\ufeff"  # zero-width and invisible
    "\U000e0000-\U000e007f"  # tag characters
)
#: Exactly the set issue 20 names, as a regex character-class body.
NEUTRALIZED = _C0_C1 + _BIDI_INVISIBLE_TAGS
# What the panes marked before the boundary was shared: every other Cf, Zl, Zp and the
# default-ignorable fillers, plus lone surrogates (unencodable on any terminal).
_ALSO = (
    "\u034f\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u2028-\u2029\u2065"
    "\u3164\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001345f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0080-\U000e0fff"
    "\ud800-\udfff"
)
_DANGEROUS = NEUTRALIZED + _ALSO
#: Every character the boundary never lets through as itself (a character-class body): the
#: neutralized set and the others it marks.
MARKED = _DANGEROUS
_ONE_LINE = lazy(f"[\t\n{_DANGEROUS}]")
_MULTI_LINE = lazy(f"[{_DANGEROUS}]")
_CONTROLS = lazy(r"[\x00-\x1f\x7f-\x9f]")
_INVISIBLE = lazy(f"[{_BIDI_INVISIBLE_TAGS}{_ALSO}]")
_SPACES = lazy(r"[ \t\r\n]+")


def marker(ch: str) -> str:
    """The visible stand-in for one neutralized character: ``\\x1b`` or ``⟨U+202E⟩``."""
    code = ord(ch)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"\\x{code:02x}"
    return f"⟨U+{code:04X}⟩"


def is_neutralized(ch: str) -> bool:
    """True for a character no output may carry raw (tab and newline excluded)."""
    return _MULTI_LINE.fullmatch(ch) is not None


def has_hidden_characters(text: str | None) -> bool:
    """True when ``text`` holds anything a terminal sink would mark (tab/newline excluded)."""
    return bool(text) and _MULTI_LINE.search(text) is not None


def pattern(multiline: bool) -> re.Pattern:
    """The regex of characters a terminal sink marks (for wrappers that style markers)."""
    return compiled(_MULTI_LINE if multiline else _ONE_LINE)


def _text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else str(value)


# -- terminal ------------------------------------------------------------------------------

def terminal_line(text: Any) -> str:
    """One terminal line: every neutralized character, tab, CR and LF as a visible marker,
    so a subject cannot move the cursor, retitle the window, write the clipboard (OSC 52),
    reorder the line or forge a second line."""
    return _ONE_LINE.sub(lambda m: marker(m.group()), _text(text))


def terminal_text(text: Any) -> str:
    """Several terminal lines: CRLF becomes LF; LF and tab kept; the rest marked (a lone
    CR too, since it would overwrite the line)."""
    value = _text(text).replace("\r\n", "\n")
    return _MULTI_LINE.sub(lambda m: marker(m.group()), value)


# -- JSON ----------------------------------------------------------------------------------

def _escape(match: re.Match) -> str:
    code = ord(match.group())
    if code > 0xFFFF:  # a JSON escape is UTF-16: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def json_dumps(doc: Any, *, indent: int | None = 2) -> str:
    """One JSON document with no neutralized character written raw.

    Non-ASCII text stays readable (``ensure_ascii=False``), but every neutralized
    character is written as its ``\\uXXXX`` escape. JSON allows a raw character only
    inside a string, so the escape is lossless: a script decodes exactly the value the
    backend returned, while a terminal showing the output sees six harmless characters.
    """
    text = json.dumps(doc, indent=indent, ensure_ascii=False, default=str)
    return _MULTI_LINE.sub(_escape, text)


def json_dumps_lines(doc: Any) -> str:
    """:func:`json_dumps` of a document whose lists are long (``queue --json``: one row per
    report): the same escaping, but one member of the top-level object per line and each item
    of a top-level list on a line of its own, instead of every value indented on lines of its
    own. Still one JSON document (``json.loads`` reads it); ``grep`` and ``head`` see one row a
    line; and each item is written by the C encoder (an indented document goes through
    Python's own: about 0.4 s of ``queue --json`` over 10,000 reports).

    Anything but an object is written as :func:`json_dumps` writes it."""
    if not isinstance(doc, dict):
        return json_dumps(doc)

    def one(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, default=str)

    members = []
    for key, value in doc.items():
        name = one(key if isinstance(key, str) else str(key))
        if isinstance(value, list) and value:
            members.append(f"  {name}: [\n    " + ",\n    ".join(one(item) for item in value) + "\n  ]")
        else:
            members.append(f"  {name}: {one(value)}")
    text = "{\n" + ",\n".join(members) + "\n}" if members else "{}"
    return _MULTI_LINE.sub(_escape, text)


# -- plain cleaned text (drafts, tracker titles, mail headers) -----------------------------

def clean_line(text: Any, limit: int = 200) -> str:
    """One line of visible text: controls become spaces, invisible characters are removed,
    runs of whitespace collapsed, cut at ``limit`` characters (with an ellipsis)."""
    value = _INVISIBLE.sub("", _CONTROLS.sub(" ", _text(text)))
    value = _SPACES.sub(" ", value).strip()
    if limit and len(value) > limit:
        value = value[: limit - 1].rstrip() + "…"
    return value


def clean_lines(text: Any) -> str:
    """Several lines with controls and invisible characters removed (line breaks kept)."""
    value = _text(text).replace("\r\n", "\n").replace("\r", "\n")
    value = _INVISIBLE.sub("", re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", " ", value))
    return "\n".join(line.rstrip() for line in value.split("\n"))


def header_text(text: Any, limit: int = 900) -> str:
    """A value safe to put in a header we compose (Subject, a display name, a Message-ID):
    one line, so CR/LF decoded from an RFC 2047 word can never start a new header, and
    bounded, so the serializer can always fold it."""
    return clean_line(text, limit)


# -- Markdown --------------------------------------------------------------------------------

# Every ASCII punctuation that opens or closes inline markup in CommonMark/GFM: emphasis,
# code spans, links and images, strikethrough, tables, HTML and entities, GitHub's
# ``#123`` references. A backslash before ASCII punctuation is a valid Markdown escape,
# so the rendered text reads exactly as written. (Jira wiki markup is escaped when the
# Markdown is converted, in ``trackers/jiramarkup.py``.)
_MD_INLINE = lazy(r"([\\`*_\[\]!#|~&])")
# ``@name`` where GitHub would see a mention (not inside an address like a@b.example).
_MENTION = lazy(r"(?<![A-Za-z0-9._%+\\-])@(?=[A-Za-z0-9_-])")
_BARE_URL = lazy(r"(?i)\b(https?|ftp|mailto|www)(:|\.)")
_LIST_START = lazy(r"^(\d+)([.)])")


def markdown_inline(text: Any) -> str:
    """Mail-derived text inside one Markdown line: nothing in it can become markup.

    Invisible characters are removed and line breaks folded (:func:`clean_line`); ASCII
    punctuation that could open markup is backslash-escaped; ``<`` and ``>`` become
    entities (no HTML); ``@name`` is written ``&#64;name`` so GitHub neither links nor
    notifies anyone; a bare URL loses its autolink (``https\\://``), so a link that shows
    one target cannot lead to another."""
    value = clean_line(text, 0)
    value = _MD_INLINE.sub(r"\\\1", value)
    value = value.replace("<", "&lt;").replace(">", "&gt;")
    value = _MENTION.sub("&#64;", value)
    return _BARE_URL.sub(lambda m: m.group(1) + "\\" + m.group(2), value)


def markdown_block(text: Any) -> str:
    """Several lines of mail-derived text in a Markdown body: each line escaped as
    :func:`markdown_inline` does, and its start too, so no heading (a forged ``### Field``
    section), list, quote, fence, table, rule or setext underline survives."""
    out = []
    for line in clean_lines(text).split("\n"):
        stripped = line.lstrip(" ")
        body = _LIST_START.sub(r"\1\\\2", markdown_inline(stripped))
        if body[:1] in ("=", "-", "+"):  # setext underline, rule, list item
            body = "\\" + body
        # Four leading spaces would make an indented code block: keep at most three.
        out.append(" " * min(len(line) - len(stripped), 3) + body)
    return "\n".join(out)


# -- senders --------------------------------------------------------------------------------

_EMAILISH = lazy(r"[^\s<>\"'(),;:\[\]]+@[^\s<>\"'(),;:\[\]]+")
_DOMAINISH = lazy(r"(?<![\w.-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24}(?![\w-])")


def sender_mismatch(name: str | None, email: str | None) -> str | None:
    """Why a display name could pass for an address the mail is not from, or None.

    ``"security@project.example" <attacker@evil.example>`` shows as a trusted address in any
    list that shows names. A name that holds an address (``@`` after NFKC, so a fullwidth
    ``＠`` counts) other than the sender's, or names a domain the sender's address is not
    in, is a mismatch. The answer quotes the name: show it through a sink."""
    if not name:
        return None
    text = unicodedata.normalize("NFKC", clean_line(name, 0)).casefold()
    real = clean_line(email, 0).casefold()
    domain = real.rpartition("@")[2]
    for found in _EMAILISH.findall(text):
        found = found.strip(".")
        if found != real:
            return f"the name holds the address {found}, the mail is from {real or '(no address)'}"
    rest = _EMAILISH.sub(" ", text)
    if "@" in rest:
        return f"the name holds an @, the mail is from {real or '(no address)'}"
    for found in _DOMAINISH.findall(rest):
        if found != domain and not domain.endswith("." + found):
            return f"the name names {found}, the mail is from {real or '(no address)'}"
    return None


def sender_label(name: str | None, email: str | None) -> str:
    """A sender in one line for lists: the display name, or — when the name could pass for
    an address it is not (:func:`sender_mismatch`) — ``⚠ real@address «name»``, the real
    address first so a narrow column still shows it. Plain text: pass it through a sink."""
    name = clean_line(name, 0)
    email = clean_line(email, 0)
    if not name:
        return email
    if sender_mismatch(name, email):
        return f"⚠ {email} «{name}»"
    if unicodedata.normalize("NFKC", name).casefold() == email.casefold():
        return email
    return name
