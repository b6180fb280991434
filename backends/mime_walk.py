"""The walk over a parsed message's MIME tree: what each part shows (text, attachment,
forwarded message, external reference, OpenPGP placeholder), in display order.

Moved out of :mod:`backends.mime` (issue 36), which loads it with the first full parse;
pgp_status loads where OpenPGP is met, not with this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mailtriage.backends.contract import AttachmentInfo, TextPart
from mailtriage.backends.mime_header_text import decode_bytes, decode_header_text
from mailtriage.backends.mime_html import _html_only_links, _html_to_text
from mailtriage.backends.mime_parts import _as_saved, _defect_text, _message_bytes, _payload_bytes, _part_label, _strip_cr
from mailtriage.backends.mime_pgp import (
    ATTACHED_ENCRYPTED_NOTE,
    ATTACHED_ENCRYPTED_TEXT,
    ENCRYPTED_PLACEHOLDER,
    _exchange_mangled,
    _keep_html_armor,
    _keep_inline_armor,
    _pgp_mime,
    _whole_encrypted,
    raw_first_part,
    signed_entity_bytes,
)

if TYPE_CHECKING:
    from email.message import EmailMessage

    from mailtriage.backends.pgp_status import PgpMaterial


# ---------------------------------------------------------------------------
# The walk
# ---------------------------------------------------------------------------


@dataclass
class _Walk:
    """What a walk over the MIME tree found, in display order."""

    text_parts: list[TextPart]
    attachments: list[AttachmentInfo]
    attachment_parts: list[EmailMessage]
    notes: list[str]
    pgp: list[PgpMaterial] = field(default_factory=list)  # OpenPGP pieces, for backends/pgp.py
    raw: bytes = b""  # the message as parsed: a signature is checked on its original bytes
    forwarded: int = 0  # how many message/rfc822 levels the walk is inside (a forwarded message's pieces)


def _text_part(part: EmailMessage, content_type: str) -> TextPart:
    data, notes = _payload_bytes(part)
    label = part.get_param("charset")
    if isinstance(label, tuple):  # RFC 2231 charset*=
        label = label[2]
    text, charset_note = decode_bytes(data, label if isinstance(label, str) else None)
    if charset_note:
        notes.append(charset_note)
    text = _strip_cr(text)
    from_html = False
    if content_type == "text/html":
        text, html_note = _html_to_text(text)
        text = _strip_cr(text)
        from_html = True
        if html_note:
            notes.append(html_note)
    return TextPart(content_type=content_type, text=text, note="; ".join(notes) or None, from_html=from_html)


def _header_summary_text(msg: EmailMessage) -> str:
    lines = []
    for name in ("From", "To", "Cc", "Date", "Subject"):
        raw = msg.get(name)
        if raw is not None:
            text, _ = decode_header_text(str(raw))
            lines.append(f"{name}: {text}")
    return "\n".join(lines) + "\n"


def _walk(msg: EmailMessage, raw: bytes = b"") -> _Walk:
    result = _Walk([], [], [], [], raw=raw)
    _walk_into(msg, result, depth=0)
    return result


def _attach(part: EmailMessage, result: _Walk, extra_notes: list[str] | None = None) -> None:
    notes = list(extra_notes or [])
    index = len(result.attachments)
    filename = None
    try:
        filename = part.get_filename()
    except Exception as exc:  # noqa: BLE001
        notes.append(f"filename unreadable: {exc}")
    if filename and "=?" in filename:
        filename, name_notes = decode_header_text(filename)
        notes.extend(name_notes)
    if not filename:
        filename = f"unnamed-{index + 1}"
        notes.append("the part names no file; name made up")
    data, payload_notes = _payload_bytes(part)
    data = _as_saved(part, data)
    notes.extend(payload_notes)
    if part.get_content_type() == "application/pgp-keys":
        from mailtriage.backends.pgp_status import PgpMaterial  # OpenPGP pieces only (see the top)

        result.pgp.append(PgpMaterial("key", -1, -1, data, label=filename))  # offered for import, on request
    result.attachments.append(AttachmentInfo(
        filename=filename, content_type=part.get_content_type(), size=len(data),
        note="; ".join(notes) or None))
    result.attachment_parts.append(part)


def _attach_message(part: EmailMessage, result: _Walk) -> None:
    """List a forwarded message (message/rfc822) as an attachment named after its subject."""
    data = _message_bytes(part)
    children = part.get_payload()
    inner = children[0] if isinstance(children, list) and children else None
    subject = ""
    if inner is not None:
        try:
            subject, _ = decode_header_text(str(inner.get("subject", "") or ""))
        except Exception:  # noqa: BLE001
            subject = ""
    name = part.get_filename() or (re.sub(r"[\x00-\x1f/\\]+", " ", subject).strip()[:80] or "forwarded message") + ".eml"
    result.attachments.append(AttachmentInfo(filename=name, content_type="message/rfc822", size=len(data)))
    result.attachment_parts.append(part)


def _walk_into(part: EmailMessage, result: _Walk, depth: int) -> None:
    """Walk one part; a part the stdlib cannot read becomes raw text with a note."""
    try:
        _walk_part(part, result, depth)
    except Exception as exc:  # noqa: BLE001 - e.g. a NUL in a parameter makes the header classes raise
        note = f"a MIME part could not be read ({type(exc).__name__}: {exc}); its raw text is shown"
        result.notes.append(note)
        try:
            raw = part.get_payload(decode=False)
        except Exception:  # noqa: BLE001
            raw = None
        if isinstance(raw, str):
            text, charset_note = decode_bytes(raw.encode("utf-8", "surrogateescape"), None)
            result.text_parts.append(TextPart("text/plain", text, note="; ".join(filter(None, (note, charset_note)))))


def _walk_part(part: EmailMessage, result: _Walk, depth: int) -> None:
    if depth > 50:
        result.notes.append("MIME nesting deeper than 50 levels; the rest is not shown")
        return
    for defect in part.defects:
        note = f"{_part_label(part)}: {_defect_text(defect)}"
        if note not in result.notes:
            result.notes.append(note)
    content_type = part.get_content_type()
    maintype = part.get_content_maintype()
    disposition = part.get_content_disposition()

    if part.is_multipart():
        children = part.get_payload()
        if not isinstance(children, list):
            children = []
        if content_type == "message/delivery-status":
            blocks = []
            for block in children:
                blocks.append("\n".join(f"{k}: {v}" for k, v in block.items()))
            result.text_parts.append(TextPart(content_type=content_type, text="\n\n".join(blocks) + "\n"))
            return
        if content_type == "message/external-body":
            result.text_parts.append(_external_reference(part, children))
            return
        if content_type == "message/rfc822" or maintype == "message":
            if content_type == "message/rfc822":
                _attach_message(part, result)  # a forwarded message is listed and fetchable, as bytes
            result.forwarded += 1
            for inner in children:
                result.text_parts.append(TextPart(
                    content_type="message/rfc822",
                    text="---- attached message ----\n" + _header_summary_text(inner)))
                _walk_into(inner, result, depth + 1)
            result.forwarded -= 1
            return
        if content_type == "multipart/alternative" and children:
            chosen = _choose_alternative(children)
            html = next((c for c in children if c.get_content_type() == "text/html"
                         and c.get_content_disposition() != "attachment"), None)
            before = len(result.text_parts)
            _walk_into(chosen, result, depth + 1)
            if html is not None and chosen is not html and chosen.get_content_type() == "text/plain" \
                    and len(result.text_parts) == before + 1:
                plain = result.text_parts[-1]
                if not plain.text.strip():
                    # An empty text alternative hides the message: show the HTML one.
                    del result.text_parts[-1]
                    _walk_into(html, result, depth + 1)
                    if len(result.text_parts) == before + 1:
                        shown = result.text_parts[-1]
                        note = "the text/plain alternative is empty; the HTML alternative is shown"
                        result.text_parts[-1] = TextPart(shown.content_type, shown.text,
                                                         note="; ".join(filter(None, (note, shown.note))),
                                                         from_html=shown.from_html)
                else:
                    extra = _html_only_links(html, plain.text)
                    if extra:
                        listed = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
                        note = (f"the alternatives differ: links only in the HTML alternative "
                                f"(not shown here): {listed}")
                        result.text_parts[-1] = TextPart(plain.content_type, plain.text,
                                                         note="; ".join(filter(None, (plain.note, note))),
                                                         from_html=plain.from_html)
            for other in children:
                # Alternatives that are not text (e.g. a calendar invite) stay reachable.
                if other is not chosen and other.get_content_maintype() not in ("text", "multipart"):
                    _attach(other, result)
            return
        if _pgp_mime(part, children):
            _walk_pgp(part, children, result, depth)
            return
        if depth == 0 and content_type == "multipart/mixed" and _exchange_mangled(children):
            data, _ = _payload_bytes(children[-1])
            note = ("PGP/MIME encrypted (RFC 3156), rewritten by Exchange into multipart/mixed: "
                    "read as multipart/encrypted")
            result.notes.append(note)
            _whole_encrypted(data, result, note)
            return
        if not children:
            result.notes.append(f"{content_type} has no parts")
        for child in children:
            _walk_into(child, result, depth + 1)
        return

    if maintype == "multipart":
        # Declared multipart but unsplittable (no or wrong boundary): show the raw text.
        text_part = _text_part(part, "text/plain")
        note = f"{content_type} could not be split into parts; shown as raw text"
        result.text_parts.append(TextPart("text/plain", text_part.text,
                                          note="; ".join(filter(None, (note, text_part.note)))))
        return
    if disposition == "attachment":
        _attach(part, result)
        return
    if maintype == "text" or content_type in ("message/rfc822-headers",):
        if content_type in ("text/plain", "text/html") or part.get_filename() is None:
            result.text_parts.append(_text_part(part, content_type))
            if content_type == "text/plain" and "-----BEGIN PGP " in result.text_parts[-1].text:
                _keep_inline_armor(part, result)
            elif content_type == "text/html":
                _keep_html_armor(part, result)
            return
    if content_type == "message/external-body":
        result.text_parts.append(_external_reference(part, []))
        return
    _attach(part, result)


# RFC 2046 §5.2.3 / RFC 2017: the parameters that say where an external body is.
_EXTERNAL_PARAMETERS = ("access-type", "url", "site", "directory", "name", "server", "subject", "mode",
                        "size", "expiration")


def _external_reference(part: EmailMessage, children: list) -> TextPart:
    """A message/external-body part: where its body is said to be, as text (never fetched, never
    an attachment: the part holds no bytes, and saving it gave an empty file)."""
    lines = ["[external reference: the body is not in this message and is not fetched]"]
    for name in _EXTERNAL_PARAMETERS:
        value = part.get_param(name, header="content-type")
        if value:
            text = value if isinstance(value, str) else str(value[2] if isinstance(value, tuple) else value)
            lines.append(f"{name}: {' '.join(text.split())}")
    inner = children[0] if children else None
    if inner is not None:
        try:
            lines.append(f"content-type: {inner.get_content_type()}")
            filename = inner.get_filename() or part.get_filename()
        except Exception:  # noqa: BLE001 - a broken inner header: the reference is still shown
            filename = None
        if filename:
            lines.append(f"filename: {' '.join(str(filename).split())}")
    return TextPart(content_type="message/external-body", text="\n".join(lines) + "\n",
                    note="message/external-body points elsewhere; nothing is fetched or saved")


def _walk_pgp(part: EmailMessage, children: list[EmailMessage], result: _Walk, depth: int) -> None:
    """RFC 3156 pairs: keep the ciphertext or the signed bytes for the decryption step.

    Nothing is decrypted here (this runs on every parse); an encrypted pair shows as one
    placeholder part, a signed pair shows its first part as any part and hides the signature.
    """
    from mailtriage.backends.pgp_status import PgpMaterial  # PGP/MIME only (see the top)

    if part.get_content_type() == "multipart/encrypted":
        data, _ = _payload_bytes(children[1])
        first = len(result.text_parts)
        if depth == 0:
            _whole_encrypted(data, result, "PGP/MIME encrypted (RFC 3156)")
            return
        # Only an encryption of the whole message is the sender's report: one inside a clear mail
        # (a part, a forwarded message) may be anyone's old ciphertext, wrapped to be decrypted and
        # quoted back. It is listed as an attachment and never opened into the text.
        result.text_parts.append(TextPart(ENCRYPTED_PLACEHOLDER, ATTACHED_ENCRYPTED_TEXT, note=ATTACHED_ENCRYPTED_NOTE))
        _attach(children[1], result, [ATTACHED_ENCRYPTED_NOTE])
        result.pgp.append(PgpMaterial("attached-encrypted", first, first + 1, data))
        return
    first = len(result.text_parts)
    _walk_into(children[0], result, depth + 1)
    try:
        signed = raw_first_part(result.raw, part, children[0]) or signed_entity_bytes(children[0])
    except Exception as exc:  # noqa: BLE001 - a part the generator cannot write is still shown
        result.notes.append(f"the signed part could not be written back for checking ({type(exc).__name__})")
        return
    signature, _ = _payload_bytes(children[1])
    result.pgp.append(PgpMaterial("signed", first, len(result.text_parts), signed, signature,
                                  forwarded=result.forwarded > 0))


def _choose_alternative(children: list[EmailMessage]) -> EmailMessage:
    """Prefer text/plain, then a multipart holding text, then HTML, then the last."""
    for child in children:
        if child.get_content_type() == "text/plain" and child.get_content_disposition() != "attachment":
            return child
    for child in children:
        if child.is_multipart():
            return child
    for child in children:
        if child.get_content_type() == "text/html":
            return child
    return children[-1]
