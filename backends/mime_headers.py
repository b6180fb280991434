"""Line ends and the header block of raw RFC 5322 bytes: split, fields, synthetic IDs.

Moved out of :mod:`backends.mime` (issue 36); what the full parse there and the fast listing
paths of the backends share, so both read a header block alike.
"""

from __future__ import annotations

import hashlib
import re

from mailtriage.core.lazy_re import lazy

__all__ = [
    "SYNTHETIC_DOMAIN",
    "header_fields",
    "normalize_line_ends",
    "split_header_block",
    "synthetic_message_id",
    "message_synthetic_id",
]


SYNTHETIC_DOMAIN = "mailtriage.invalid"


# ---------------------------------------------------------------------------
# Line ends and the header block
# ---------------------------------------------------------------------------

def normalize_line_ends(raw: bytes) -> tuple[bytes, str | None]:
    """Turn CR-only line ends (old Mac mail) into LF; return the bytes and a note.

    CRLF and LF are left alone (the parser reads both); a message with more bare
    carriage returns than line feeds (one stored in an mbox gains a final LF) is
    rewritten.
    """
    if b"\r" not in raw:
        return raw, None
    bare_cr = raw.count(b"\r") - raw.count(b"\r\n")
    if bare_cr > raw.count(b"\n"):
        return (raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n"),
                "the message used CR-only line ends; read as LF")
    return raw, None


class _Later:
    """A pattern compiled when first used, for what listing mail never needs (HTML parts, the
    mbox scan's dates): ``_X()`` is the compiled pattern. Compiling them with the module cost
    2-3 ms of every backend's import (python -X importtime)."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, *args: object) -> None:
        self._args = args
        self._compiled: re.Pattern | None = None

    def __call__(self) -> re.Pattern:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(*self._args)  # two threads at once: equal patterns
        return compiled


_BLANK_LINE = lazy(rb"\r?\n\r?\n")


def split_header_block(raw: bytes) -> tuple[bytes, int]:
    """Return ``(header_block, body_offset)`` for raw message bytes.

    The header block runs up to (not including) the first blank line; ``body_offset``
    is where the body starts (``len(raw)`` when there is no body). CRLF, LF and
    CR-only line ends are all recognised. A message that starts with an empty line
    has no headers.
    """
    if raw[:1] == b"\n":
        return b"", 1
    if raw[:2] == b"\r\n":
        return b"", 2
    if raw[:1] == b"\r":
        return b"", 1
    if b"\r" not in raw:
        end = raw.find(b"\n\n")
        if end < 0:
            return raw, len(raw)
        return raw[: end + 1], end + 2
    if b"\n" not in raw:  # CR-only
        end = raw.find(b"\r\r")
        if end < 0:
            return raw, len(raw)
        return raw[: end + 1], end + 2
    match = _BLANK_LINE.search(raw)
    if match is None:
        return raw, len(raw)
    return raw[: match.start() + (2 if raw[match.start()] == 13 else 1)], match.end()


# How much of a body the synthetic ID hashes: enough to tell messages apart, bounded
# so every reader (including the mbox scan, which sees a message in one buffer) can.
_SYNTHETIC_BODY_BYTES = 256 * 1024


def synthetic_message_id(header_block: bytes, body: bytes | None = None) -> str:
    """A stable Message-ID for a message that has none: a hash of its headers (and body).

    Line ends are normalised first so the same message gives the same ID whether
    it was stored with LF, CRLF or CR line ends. With ``body`` (the offline archives,
    which always have it: the mbox reader hashes it after undoing ``>From ``
    quoting) the body counts too, so two alerts with identical headers stay two
    messages, and the same bytes give the same ID in an mbox, a Maildir or a
    ``.eml`` file. Without it (backends that list from headers alone) only the
    headers are hashed, as before. The domain ``mailtriage.invalid`` can never
    collide with a real Message-ID.
    """
    normalized = header_block.replace(b"\r\n", b"\n").replace(b"\r", b"\n").rstrip(b"\n")
    if body is None:
        return f"<synthetic-{hashlib.sha256(normalized).hexdigest()[:24]}@{SYNTHETIC_DOMAIN}>"
    text = body[: 4 * _SYNTHETIC_BODY_BYTES]
    text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")[:_SYNTHETIC_BODY_BYTES].strip(b"\n")
    digest = hashlib.sha256(normalized + b"\n\n" + text).hexdigest()[:24]
    return f"<synthetic-{digest}@{SYNTHETIC_DOMAIN}>"


def message_synthetic_id(raw: bytes) -> str:
    """The synthetic Message-ID :func:`parse_message` gives ``raw`` with ``hash_body``.

    ``raw`` is the whole message, or a prefix of it holding the header block and the
    first MiB of the body (what an IMAP FETCH of ``BODY[HEADER]`` and ``BODY[TEXT]<0.1048576>``
    gives): the same bytes give the same ID whichever backend read them (issue 33).
    """
    raw = unfold_header_names(normalize_line_ends(raw)[0])[0]
    header, offset = split_header_block(raw)
    return synthetic_message_id(header, raw[offset: offset + 4 * _SYNTHETIC_BODY_BYTES])


# A header field: name at the start of a line, optional blanks, colon, then the value
# with its continuation lines (their line breaks kept; decoding unfolds them). A name
# folded away from its colon ("From\n : <x@y>", seen in the wild) is the same field.
_HEADER_FIELD = lazy(rb"^([!-9;-~]+)[ \t]*(?:\n[ \t]+)?:[ \t]*(.*(?:\n[ \t].*)*)", re.MULTILINE)
# A line of the header block that is neither a field nor a continuation: a strict
# reader (the stdlib parser, RFC 5322) ends the header block there, so nothing after
# it may become a header (a "From:" after it is body text, not a sender).
_NOT_A_FIELD = lazy(rb"^(?![!-9;-~]+[ \t]*(?:\n[ \t]+)?:|[ \t])[^\n]+", re.MULTILINE)
_FOLDED_NAME = lazy(rb"^([!-9;-~]+)[ \t]*\n[ \t]+:", re.MULTILINE)


def malformed_header_line(header_block: bytes) -> int | None:
    """Offset (in the LF form of the block) of the first line that is not a header field.

    A leading mbox ``From `` line is not counted. None when the block is well formed.
    """
    block = header_block
    if b"\r" in block:
        block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    start = block.find(b"\n") + 1 if block.startswith(b"From ") else 0
    match = _NOT_A_FIELD.search(block, start) if start or block else None
    return match.start() if match is not None else None


def header_fields(header_block: bytes, wanted: frozenset[bytes] | set[bytes] | None = None) -> dict[bytes, bytes]:
    """Byte-level header scan: ``{lowercased name: raw value}``; the first occurrence wins.

    The value keeps folded line breaks; no decoding happens here, callers decode
    only what they show. ``wanted`` (lowercased names) limits what is kept. Line
    ends may be LF, CRLF or CR. A leading mbox ``From `` line is skipped; the block
    ends at the first other line that is not a field (as for a strict parser), so a
    lenient reading never finds a header a strict one does not. The mbox fast path
    reads the same fields with the same rules, so both agree on every ID, date and
    subject.
    """
    block = header_block
    if b"\r" in block:
        block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    end = malformed_header_line(block)
    if end is not None:
        block = block[:end]
    fields: dict[bytes, bytes] = {}
    for match in _HEADER_FIELD.finditer(block):
        name = match.group(1).lower()
        if (wanted is None or name in wanted) and name not in fields:
            fields[name] = match.group(2)
    return fields


def header_values(header_block: bytes, name: bytes) -> list[bytes]:
    """Every value of header ``name`` (lowercase) in the block, in order (same rules as header_fields)."""
    block = header_block
    if b"\r" in block:
        block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    end = malformed_header_line(block)
    if end is not None:
        block = block[:end]
    return [m.group(2) for m in _HEADER_FIELD.finditer(block) if m.group(1).lower() == name]


def unfold_header_names(raw: bytes) -> tuple[bytes, bool]:
    """Join a header name folded away from its colon (``From\\n : x``) in the header block."""
    header, offset = split_header_block(raw)
    if b":" not in header or _FOLDED_NAME.search(header.replace(b"\r\n", b"\n")) is None:
        return raw, False
    crlf = b"\r\n" in header
    fixed = _FOLDED_NAME.sub(rb"\1:", header.replace(b"\r\n", b"\n"))
    if crlf:
        fixed = fixed.replace(b"\n", b"\r\n")
    return fixed + raw[len(header):], True
