"""One leaf part of a parsed message as bytes: the stdlib parser, transfer decoding with a
note for each thing broken, line ends, what an attachment saves.

Moved out of :mod:`backends.mime` (issue 36): what the walk (:mod:`backends.mime_walk`), the
OpenPGP pieces and the attachment reads share. The stdlib's parser loads with the first parse,
not with this module (as there: listing from headers needs none of it).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import TYPE_CHECKING

from mailtriage.backends.mime_header_text import _policy
from mailtriage.core.lazy_re import lazy

if TYPE_CHECKING:
    from email.message import EmailMessage


# ---------------------------------------------------------------------------
# Leaf parts
# ---------------------------------------------------------------------------


def _parse(raw: bytes, headersonly: bool = False) -> EmailMessage:
    """The stdlib parser with ``policy.default`` (a parser per call: it keeps no state)."""
    from email.parser import BytesParser  # with email.policy, on the first full parse (see the top)

    return BytesParser(policy=_policy()).parsebytes(raw, headersonly=headersonly)  # type: ignore[return-value]


def _defect_text(defect: object) -> str:
    text = str(defect).strip() or type(defect).__name__
    name = type(defect).__name__
    return text if text == name else f"{name}: {text}"


def _part_label(part: EmailMessage) -> str:
    filename = None
    try:
        filename = part.get_filename()
    except Exception:  # noqa: BLE001 - a broken parameter must not lose the part
        filename = None
    label = part.get_content_type()
    return f"{label} ({filename})" if filename else label


def _payload_bytes(part: EmailMessage) -> tuple[bytes, list[str]]:
    """Decoded transfer-encoding of one leaf part, with notes for what was broken."""
    notes: list[str] = []
    before = len(part.defects)
    cte = str(part.get("content-transfer-encoding", "7bit")).strip().lower()
    try:
        data = part.get_payload(decode=True)
    except Exception as exc:  # noqa: BLE001 - decoding must never lose the message
        raw = part.get_payload(decode=False)
        data = raw.encode("ascii", "surrogateescape") if isinstance(raw, str) else b""
        notes.append(f"could not decode {cte}: {exc}; shown undecoded")
    if data is None:
        data = b""
    for defect in part.defects[before:]:
        name = type(defect).__name__
        if name == "InvalidBase64LengthDefect":
            salvaged = _salvage_base64(part)
            if salvaged is None:
                notes.append("broken base64 (invalid length); shown undecoded")
            else:
                data, dropped = salvaged
                notes.append(f"broken base64 (invalid length); the last {dropped} characters "
                             "could not be decoded and were dropped")
        elif name == "InvalidBase64PaddingDefect":
            notes.append("base64 padding was wrong; decoded anyway")
        elif name == "InvalidBase64CharactersDefect":
            notes.append("base64 contained invalid characters; they were skipped")
        else:
            notes.append(_defect_text(defect))
    if cte == "quoted-printable":
        raw = part.get_payload(decode=False)
        if isinstance(raw, str) and re.search(r"=(?![0-9A-Fa-f]{2}|\r?\n|\r|$)", raw, re.MULTILINE):
            notes.append("quoted-printable contained invalid escapes; kept as written")
    elif cte not in ("7bit", "8bit", "binary", "base64", "quoted-printable", "x-uuencode", "uuencode",
                     "x-uue", "uue", ""):
        notes.append(f"unknown Content-Transfer-Encoding {cte!r}; shown undecoded")
    return data, notes


_BASE64_ALPHABET = lazy(rb"[^A-Za-z0-9+/]")


def _salvage_base64(part: EmailMessage) -> tuple[bytes, int] | None:
    """Decode the longest whole prefix of a base64 body whose length is wrong."""
    raw = part.get_payload(decode=False)
    if not isinstance(raw, str):
        return None
    clean = _BASE64_ALPHABET.sub(b"", raw.encode("ascii", "ignore"))
    usable = len(clean) - len(clean) % 4
    try:
        return base64.b64decode(clean[:usable]), len(clean) - usable
    except (binascii.Error, ValueError):
        return None


def _strip_cr(text: str) -> str:
    """Line ends of decoded text as LF: CRs left over from CRLF files (inside base64, say) go."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _message_bytes(part: EmailMessage) -> bytes:
    """The bytes of the message a message/rfc822 part carries."""
    children = part.get_payload()
    inner = children[0] if isinstance(children, list) and children else None
    if inner is None:
        return b""
    try:
        return inner.as_bytes()
    except Exception:  # noqa: BLE001 - a broken inner header must not lose the message
        return inner.as_string().encode("utf-8", "surrogateescape")


# Transfer encodings whose line breaks are the wire's (RFC 5322 lines end CRLF; IMAP and a
# CRLF mbox or .eml keep them), not the sender's file: base64 carries the file's own bytes.
_LINE_ENCODINGS = frozenset({"", "7bit", "8bit", "binary", "quoted-printable"})


def _as_saved(part: EmailMessage, data: bytes) -> bytes:
    """An attachment's bytes as saved: a text part sent in a line encoding gets LF line ends
    (the sender's file had them: a Unix PoC's ``#!/bin/sh\r`` shebang would break otherwise),
    so IMAP, a CRLF mbox and an LF mbox give the same file. Base64 and non-text parts are
    saved byte for byte."""
    if part.get_content_maintype() != "text" or b"\r\n" not in data:
        return data
    encoding = str(part.get("content-transfer-encoding", "") or "").strip().lower()
    return data.replace(b"\r\n", b"\n") if encoding in _LINE_ENCODINGS else data
