"""MIME decoding shared by every mail backend: raw RFC 5322 bytes -> contract ``Message``.

Built on the stdlib ``email`` package with ``policy.default``. Mail is hostile or
broken often enough that nothing here may raise for bad *content*: RFC 2047 words
in unknown or wrong charsets, 8-bit headers, broken base64 / quoted-printable,
defective MIME structure and CR-only line ends each become a visible note (on the
part, ``TextPart.note`` / ``AttachmentInfo.note``, or on the message,
``Message.notes``) and the rest of the message is still shown.

HTML-only mail becomes text through html2text. Nothing remote is ever fetched:
html2text only rewrites markup, and List-Unsubscribe targets are parsed, never
opened.

This module is the entry (:func:`parse_message`, :func:`parse_message_headers`, the
attachments) and the message's headers; the rest lives beside it, one module per section
it had (issue 36). The byte-level helpers: :mod:`backends.mime_headers` (line ends,
:func:`split_header_block`, :func:`header_fields`, :func:`synthetic_message_id`),
:mod:`backends.mime_ids` (:func:`extract_msgid`, :func:`extract_msgids`),
:mod:`backends.mime_dates` (:func:`parse_date`, :func:`parse_date_epoch`) and
:mod:`backends.mime_header_text` (:func:`decode_header_text`, :func:`parse_address`,
:func:`list_unsubscribe`). They are what both the full parser and the fast listing paths of
the backends use, so a fast path and the full parse agree on IDs, dates and subjects by
construction. The body: :mod:`backends.mime_walk` (the walk over the MIME tree),
:mod:`backends.mime_parts` (one leaf part's bytes), :mod:`backends.mime_html` (HTML as text)
and :mod:`backends.mime_pgp` (the OpenPGP pieces kept for backends/pgp.py).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from mailtriage.backends.contract import Address, Message, TextPart
from mailtriage.backends.errors import MailError
from mailtriage.backends.mime_dates import implausible_date, parse_date
from mailtriage.backends.mime_header_text import (
    decode_bytes,
    decode_header_text,
    parse_address,
    parse_address_list,
)
from mailtriage.backends.mime_headers import (
    _SYNTHETIC_BODY_BYTES,
    header_fields,
    header_values,
    malformed_header_line,
    normalize_line_ends,
    split_header_block,
    synthetic_message_id,
    unfold_header_names,
)
from mailtriage.backends.mime_ids import extract_msgid, extract_msgids, ignored_references
from mailtriage.backends.mime_parts import _as_saved, _defect_text, _message_bytes, _parse, _payload_bytes, _strip_cr
from mailtriage.core.lazy_re import lazy

if TYPE_CHECKING:
    from email.message import EmailMessage

__all__ = ["AttachmentNotFound", "all_attachment_bytes", "attachment_bytes", "parse_message", "parse_message_headers"]


# The stdlib's full parser (email.policy, email.parser, email.generator: ~11 ms of imports,
# python -X importtime), email.utils (~3 ms, with socket) and pgp_status (~3 ms of
# dataclasses) load where a body is parsed, an unusual address or date is read, or OpenPGP
# is met, not with this module: listing from headers (mbox, IMAP) needs none of them. So do
# the walk's modules (mime_walk, mime_html, mime_pgp): the first full parse loads them.


class AttachmentNotFound(MailError, LookupError):
    """:func:`attachment_bytes` was asked for an index the message does not have."""


# ---------------------------------------------------------------------------
# The message and its headers
# ---------------------------------------------------------------------------

_KEY_FIELDS = frozenset((b"message-id", b"references", b"in-reply-to", b"date", b"subject", b"from", b"to", b"cc",
                         b"content-type"))


def _raw_header_items(msg: EmailMessage) -> list[tuple[str, bytes]]:
    items = []
    for name, value in msg.raw_items():
        if not isinstance(value, str):  # already a header object (not from the parser)
            value = str(value)
        # utf-8 + surrogateescape gives back the original bytes of an 8-bit header.
        items.append((name, value.encode("utf-8", "surrogateescape")))
    return items


def _address_text(address: Address) -> str:
    return f"{address.name} <{address.email}>" if address.name else (address.email or "(no address)")


def _display_header(name: str, raw: bytes, notes: list[str], charset: str | None = None) -> str:
    lname = name.lower()
    if lname in ("message-id", "in-reply-to", "references", "date", "received", "dkim-signature",
                 "arc-seal", "arc-message-signature", "authentication-results"):
        text = raw.decode("utf-8", "replace")
        return re.sub(r"\r?\n|\r", "", text)
    text, header_notes = decode_header_text(raw, charset)
    for note in header_notes:
        notes.append(f"{name}: {note}")
    return text


def _truncate(raw: bytes, max_bytes: int) -> tuple[bytes, str]:
    header, body_offset = split_header_block(raw)
    keep = max(0, max_bytes - len(header))
    note = (f"message is {len(raw):,} bytes, over the size cap of {max_bytes:,}; "
            f"body truncated to its first {keep:,} bytes")
    return raw[: body_offset + keep], note


def parse_message(raw: bytes, *, backend_ref: str | None = None, max_bytes: int | None = None,
                  hash_body: bool = False) -> Message:
    """Parse raw RFC 5322 bytes into a contract :class:`Message` (never raises for content).

    ``max_bytes`` caps how much of an oversized message is decoded: the headers are
    always read in full, the body is cut, and a message note says so. ``hash_body``:
    a synthetic Message-ID hashes the body too (the offline archives; backends that
    list from headers alone leave it off so listing and reading agree).

    Raises:
        TypeError: ``raw`` is not bytes.
    """
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise TypeError(f"parse_message needs bytes, not {type(raw).__name__}")
    raw = bytes(raw)
    notes: list[str] = []
    raw, line_note = normalize_line_ends(raw)
    if line_note:
        notes.append(line_note)
    raw = _fix_header_block(raw, notes)
    header_block, body_offset = split_header_block(raw)
    # For a synthetic ID, taken before any cap.
    body_head = raw[body_offset: body_offset + 4 * _SYNTHETIC_BODY_BYTES] if hash_body else None
    if max_bytes is not None and len(raw) > max_bytes:
        raw, cap_note = _truncate(raw, max_bytes)
        notes.append(cap_note)
    try:
        msg = _parse(raw)
    except Exception as exc:  # noqa: BLE001 - the stdlib parser is lenient; keep the mail anyway
        notes.append(f"MIME structure could not be parsed ({exc}); body shown as raw text")
        base = _message_from_headers(header_block, notes, backend_ref, body=body_head)
        body = raw[len(header_block):]
        text, note = decode_bytes(body, None)
        return _replace(base, text_parts=(TextPart("text/plain", _strip_cr(text), note=note),))
    try:
        base = _message_from_headers(header_block, notes, backend_ref, parsed=msg, body=body_head)
    except Exception as exc:  # noqa: BLE001 - fall back to the byte-level header scan
        notes.append(f"headers could not be parsed ({type(exc).__name__}: {exc})")
        base = _message_from_headers(header_block, notes, backend_ref, parsed=None, use_parser=False,
                                     body=body_head)
    from mailtriage.backends.mime_walk import _walk  # the body's modules, with the first parse (see the top)

    walk = _walk(msg, raw)
    notes.extend(walk.notes)
    return _replace(base, text_parts=tuple(walk.text_parts), attachments=tuple(walk.attachments),
                    notes=tuple(dict.fromkeys(notes)), pgp=tuple(walk.pgp))


def _replace(message: Message, **changes: object) -> Message:
    return replace(message, **changes)


def parse_message_headers(raw: bytes, *, backend_ref: str | None = None, hash_body: bool = False) -> Message:
    """The cheap variant for listing: headers only, no body decoding.

    ``raw`` may be the whole message or just its header block. The result has no
    text parts or attachments. ``hash_body`` as for :func:`parse_message`.
    """
    raw = bytes(raw)
    notes: list[str] = []
    raw, line_note = normalize_line_ends(raw)
    if line_note:
        notes.append(line_note)
    raw = _fix_header_block(raw, notes)
    header_block, body_offset = split_header_block(raw)
    return _message_from_headers(header_block, notes, backend_ref, body=raw[body_offset:] if hash_body else None)


def _fix_header_block(raw: bytes, notes: list[str]) -> bytes:
    """Unfold header names folded away from their colon, and say when the block is malformed."""
    raw, unfolded = unfold_header_names(raw)
    if unfolded:
        notes.append("the header block is malformed: a field name is folded over lines; read as one field")
    header_block, _ = split_header_block(raw)
    bad = malformed_header_line(header_block)
    if bad is not None:
        block = header_block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        line = block[bad:].split(b"\n", 1)[0][:60].decode("utf-8", "replace")
        notes.append(f"the header block is malformed: the line {line!r} is not a header field; "
                     "the headers end there and the rest is read as the body")
    return raw


_CHARSET_PARAM = lazy(rb"""charset\s*=\s*["']?([^"';\s]+)""", re.IGNORECASE)


def body_charset(content_type: bytes | None) -> str | None:
    """The charset a message's top Content-Type declares (for raw 8-bit headers): the read
    path and every listing decode raw header text with it first."""
    if not content_type:
        return None
    match = _CHARSET_PARAM.search(content_type)
    return match.group(1).decode("ascii", "replace") if match else None


_body_charset = body_charset  # the name backends/mbox.py imports


def _message_from_headers(header_block: bytes, notes: list[str], backend_ref: str | None,
                          parsed: EmailMessage | None = None, use_parser: bool = True,
                          body: bytes | None = None) -> Message:
    if parsed is None and use_parser:
        try:
            parsed = _parse(header_block + b"\n", headersonly=True)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"headers could not be parsed ({exc})")
            parsed = None
    items: list[tuple[str, bytes]] = _raw_header_items(parsed) if parsed is not None else []
    if parsed is not None:
        for defect in parsed.defects:
            if type(defect).__name__ in ("MissingHeaderBodySeparatorDefect",):
                notes.append(f"message: {_defect_text(defect)}")
    # The fields that identify and place a message come from the byte-level scan the
    # listing fast paths use too, so a listed message and its full parse agree.
    first = {k.decode("ascii"): v for k, v in header_fields(header_block, _KEY_FIELDS).items()}
    charset = _body_charset(first.get("content-type"))
    headers = tuple((name, _display_header(name, value, notes, charset)) for name, value in items)

    message_id = extract_msgid(first.get("message-id"))
    synthetic = False
    if message_id is None:
        if "message-id" in first:
            notes.append("the Message-ID header is unreadable; a synthetic ID stands in")
        message_id = synthetic_message_id(header_block, body)
        synthetic = True
    subject, subject_notes = decode_header_text(first.get("subject"), charset)
    sender = parse_address(first.get("from"), charset)
    senders = header_values(header_block, b"from")
    if len(senders) > 1:
        shown = "; ".join(_address_text(parse_address(v, charset)) for v in senders)
        notes.append(f"the message has {len(senders)} From headers: {shown}; the first is shown as the sender")
    to = parse_address_list(first.get("to"), charset)
    cc = parse_address_list(first.get("cc"), charset)
    date = parse_date(first.get("date"))
    if first.get("date") and date is None:
        notes.append(f"the Date header is not a date: {first['date'].decode('utf-8', 'replace')!r}")
    odd = implausible_date(date.timestamp() if date is not None else None)
    if odd:
        notes.append(f"the Date header ({date.isoformat()}) is {odd}; it may be wrong")
    in_reply_to = extract_msgid(first.get("in-reply-to"), reference=True)
    references = extract_msgids(first.get("references"))
    ignored = ignored_references(first.get("in-reply-to")) + ignored_references(first.get("references"))
    if ignored:
        notes.append(f"reference values that are not Message-IDs (no @) are ignored: "
                     f"{', '.join(dict.fromkeys(ignored))}")
    return Message(
        message_id=message_id,
        subject=subject,
        sender=sender,
        to=to,
        cc=cc,
        date=date,
        in_reply_to=in_reply_to,
        references=references,
        headers=headers,
        notes=tuple(dict.fromkeys(notes)),
        synthetic_id=synthetic,
        backend_ref=backend_ref,
    )


def attachment_bytes(raw: bytes, index: int) -> bytes:
    """The decoded bytes of attachment ``index`` (as numbered in ``Message.attachments``).

    Raises:
        AttachmentNotFound: the message has no attachment with that index.
    """
    parts = _attachment_parts(raw)
    if not 0 <= index < len(parts):
        raise AttachmentNotFound(f"no attachment {index}; the message has {len(parts)}")
    return _attachment_data(parts[index])


def all_attachment_bytes(raw: bytes) -> list[bytes]:
    """The decoded bytes of every attachment, numbered as in ``Message.attachments`` (one parse:
    what OpenPGP keeps in memory of a decrypted message)."""
    return [_attachment_data(part) for part in _attachment_parts(raw)]


def _attachment_parts(raw: bytes) -> list:
    from mailtriage.backends.mime_walk import _walk  # the body's modules (see the top)

    raw, _ = normalize_line_ends(bytes(raw))
    return _walk(_parse(raw)).attachment_parts


def _attachment_data(part) -> bytes:
    if part.get_content_type() == "message/rfc822" and part.is_multipart():
        return _message_bytes(part)
    data, _ = _payload_bytes(part)
    return _as_saved(part, data)
