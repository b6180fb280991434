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

The small byte-level helpers live beside this module, one per section it had
(issue 36): :mod:`backends.mime_headers` (line ends, :func:`split_header_block`,
:func:`header_fields`, :func:`synthetic_message_id`), :mod:`backends.mime_ids`
(:func:`extract_msgid`, :func:`extract_msgids`), :mod:`backends.mime_dates`
(:func:`parse_date`, :func:`parse_date_epoch`) and :mod:`backends.mime_header_text`
(:func:`decode_header_text`, :func:`parse_address`, :func:`list_unsubscribe`). They are
what both the full parser and the fast listing paths of the backends use, so a fast
path and the full parse agree on IDs, dates and subjects by construction.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mailtriage.backends.contract import Address, AttachmentInfo, Message, TextPart
from mailtriage.backends.errors import MailError
from mailtriage.backends.mime_dates import implausible_date, parse_date
from mailtriage.backends.mime_header_text import (
    _policy,
    decode_bytes,
    decode_header_text,
    parse_address,
    parse_address_list,
)
from mailtriage.backends.mime_headers import (
    _SYNTHETIC_BODY_BYTES,
    _Later,
    header_fields,
    header_values,
    malformed_header_line,
    normalize_line_ends,
    split_header_block,
    synthetic_message_id,
    unfold_header_names,
)
from mailtriage.backends.mime_ids import extract_msgid, extract_msgids, ignored_references
from mailtriage.core.lazy_re import lazy

if TYPE_CHECKING:
    from email.message import EmailMessage

    from mailtriage.backends.pgp_status import PgpMaterial

__all__ = ["AttachmentNotFound", "all_attachment_bytes", "attachment_bytes", "parse_message", "parse_message_headers"]


# The stdlib's full parser (email.policy, email.parser, email.generator: ~11 ms of imports,
# python -X importtime), email.utils (~3 ms, with socket) and pgp_status (~3 ms of
# dataclasses) load where a body is parsed, an unusual address or date is read, or OpenPGP
# is met, not with this module: listing from headers (mbox, IMAP) needs none of them.


class AttachmentNotFound(MailError, LookupError):
    """:func:`attachment_bytes` was asked for an index the message does not have."""


# ---------------------------------------------------------------------------
# Full parse
# ---------------------------------------------------------------------------


def _parse(raw: bytes, headersonly: bool = False) -> EmailMessage:
    """The stdlib parser with ``policy.default`` (a parser per call: it keeps no state)."""
    from email.parser import BytesParser  # with email.policy, on the first full parse (see the top)

    return BytesParser(policy=_policy()).parsebytes(raw, headersonly=headersonly)  # type: ignore[return-value]


_KEY_FIELDS = frozenset((b"message-id", b"references", b"in-reply-to", b"date", b"subject", b"from", b"to", b"cc",
                         b"content-type"))
_ADDRESS_HEADERS = ("to", "cc")


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


# Inline styles that hide text from the reader while a filter (or a model) still sees it.
_HIDDEN_STYLE = _Later(
    r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0*(?:\.0+)?(?:px|pt|em|rem|%)?\s*(?:;|$|!)"
    r"|opacity\s*:\s*0(?:\.0+)?\s*(?:;|$)",
    re.IGNORECASE)
_WHITE_TEXT = _Later(r"(?<![-\w])color\s*:\s*(?:#fff(?:fff)?\b|white\b|rgba?\(\s*255\s*,\s*255\s*,\s*255)",
                         re.IGNORECASE)
_DARK_BACKGROUND = _Later(r"background(?:-color)?\s*:\s*(?!#fff|white|transparent|none)[#\w]", re.IGNORECASE)
_TAG = _Later(r"<(/?)([A-Za-z][A-Za-z0-9]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>")
_STYLE_ATTR = _Later(r"""\bstyle\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
_FONT_WHITE = _Later(r"""\bcolor\s*=\s*["']?\s*(?:#fff(?:fff)?|white)\b""", re.IGNORECASE)
_VOID_TAGS = frozenset(("br", "img", "hr", "meta", "link", "input", "col", "area", "base", "wbr", "source"))
HIDDEN_OPEN, HIDDEN_CLOSE = "[hidden text: ", "]"


def _is_hidden(tag: str, attrs: str) -> bool:
    match = _STYLE_ATTR().search(attrs)
    style = next((g for g in match.groups() if g is not None), "") if match else ""
    if style and _HIDDEN_STYLE().search(style):
        return True
    # White text is hidden on the usual white page, not on a background it sets itself.
    if style and _WHITE_TEXT().search(style) and not _DARK_BACKGROUND().search(style):
        return True
    if re.search(r"(?:^|\s)hidden(?:\s|=|$)", attrs, re.IGNORECASE):
        return True
    return tag == "font" and _FONT_WHITE().search(attrs) is not None


def _mark_hidden(html: str) -> tuple[str, int]:
    """Wrap the text of elements hidden by their style in visible markers; count them."""
    if "<" not in html:
        return html, 0
    out: list[str] = []
    position = 0
    stack: list[tuple[str, bool]] = []
    hidden_depth = 0
    count = 0
    for match in _TAG().finditer(html):
        closing, tag, attrs = match.group(1), match.group(2).lower(), match.group(3)
        if tag in ("style", "script", "head", "title"):
            continue
        if not closing:
            if tag in _VOID_TAGS or attrs.rstrip().endswith("/"):
                continue
            hidden = hidden_depth == 0 and _is_hidden(tag, attrs)
            stack.append((tag, hidden))
            if hidden:
                hidden_depth += 1
                count += 1
                out.append(html[position:match.end()])
                out.append(HIDDEN_OPEN)
                position = match.end()
            continue
        # A closing tag closes the nearest open element of that name (and any left open inside it).
        for depth in range(len(stack) - 1, -1, -1):
            if stack[depth][0] == tag:
                closed = stack[depth:]
                del stack[depth:]
                if any(h for _, h in closed):
                    hidden_depth = 0
                    out.append(html[position:match.start()])
                    out.append(HIDDEN_CLOSE)
                    position = match.start()
                break
    out.append(html[position:])
    if hidden_depth:
        out.append(HIDDEN_CLOSE)
    return "".join(out), count


def _html_to_text(html: str) -> tuple[str, str | None]:
    """HTML to readable text. html2text only rewrites markup; nothing is fetched.

    Text the HTML hides from its reader (display:none, zero-size fonts, white text,
    ...) is kept and wrapped in ``[hidden text: ...]`` with a note: it is what a
    lure hides from a person and shows to a filter.
    """
    notes = []
    try:
        html, hidden = _mark_hidden(html)
    except Exception:  # noqa: BLE001 - marking is best effort; the text itself must not be lost
        hidden = 0
    if hidden:
        notes.append(f"the HTML hides text from its reader ({hidden} element{'s' if hidden > 1 else ''}: "
                     "display:none, zero-size, white or invisible); shown marked [hidden text: ...]")
    try:
        # Lazy: html2text costs about 50 ms to import and only HTML-only mail needs it.
        import html2text
    except ImportError:  # pragma: no cover - a declared dependency
        notes.append("html2text is not installed; tags stripped")
        return re.sub(r"<[^>]+>", "", html), "; ".join(notes)
    converter = html2text.HTML2Text()
    converter.body_width = 0
    converter.ignore_images = False  # keep alt text and the target visible, never load it
    converter.images_to_alt = True
    converter.unicode_snob = True
    try:
        return converter.handle(html).strip("\n") + "\n", "; ".join(notes) or None
    except Exception as exc:  # noqa: BLE001 - hostile HTML must not lose the message
        notes.append(f"HTML could not be converted ({exc}); tags stripped")
        return re.sub(r"<[^>]+>", "", html), "; ".join(notes)


def _strip_cr(text: str) -> str:
    """Line ends of decoded text as LF: CRs left over from CRLF files (inside base64, say) go."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


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


_HREF = _Later(r"""\bhref\s*=\s*(?:"([^"<>]*)"|'([^'<>]*)'|([^\s>"']+))""", re.IGNORECASE)


def _html_only_links(html_part: EmailMessage, plain_text: str) -> list[str]:
    """Link targets of an HTML alternative that its text/plain sibling does not show."""
    try:
        data, _ = _payload_bytes(html_part)
        label = html_part.get_param("charset")
        html, _ = decode_bytes(data, label if isinstance(label, str) else None)
    except Exception:  # noqa: BLE001 - a comparison only; never lose the message over it
        return []
    plain = " ".join(plain_text.split())
    links = []
    for match in _HREF().finditer(html):
        target = next(g for g in match.groups() if g is not None).strip()
        if not target or target.startswith("#") or target.lower().startswith("mailto:"):
            continue
        from html import unescape  # links of an HTML part only; html.entities costs ~1 ms at import

        target = unescape(target)
        if target not in plain and target.rstrip("/") not in plain and target not in links:
            links.append(target)
    return links


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


# RFC 3156: the protocol parameter names what the second part of the pair holds.
_PGP_PROTOCOLS = {"multipart/encrypted": "application/pgp-encrypted",
                  "multipart/signed": "application/pgp-signature"}
# What an encrypted part shows until backends/pgp.py opens it (or says why it could not).
ENCRYPTED_PLACEHOLDER = "application/pgp-encrypted"
ATTACHED_ENCRYPTED_TEXT = "[attached encrypted part: not decrypted, see the attachments]\n"
ATTACHED_ENCRYPTED_NOTE = ("an encrypted part inside a clear mail: not decrypted (only an encryption of the whole "
                           "message is opened)")


def _pgp_mime(part: EmailMessage, children: list[EmailMessage]) -> bool:
    """An RFC 3156 pair: the protocol parameter and the part it names are both there (else walked as usual)."""
    protocol = _PGP_PROTOCOLS.get(part.get_content_type())
    if protocol is None or len(children) != 2:
        return False
    if str(part.get_param("protocol", "") or "").strip().lower() != protocol:
        return False
    # multipart/encrypted: the first part is the protocol's; multipart/signed: the second.
    named = children[0] if part.get_content_type() == "multipart/encrypted" else children[1]
    return named.get_content_type() == protocol


def signed_entity_bytes(part: EmailMessage) -> bytes:
    """The bytes a PGP/MIME signature covers: the first part as written, in CRLF form (RFC 3156 §5)."""
    from email.generator import BytesGenerator  # signed messages only (see the top)
    from io import BytesIO  # with it

    buffer = BytesIO()
    BytesGenerator(buffer, mangle_from_=False, policy=_policy("canonical")).flatten(part, linesep="\r\n")
    data = buffer.getvalue()
    # The generator may leave bare LFs inside a body it kept verbatim.
    return re.sub(rb"(?<!\r)\n", b"\r\n", data)


def _keep_inline_armor(part: EmailMessage, result: _Walk) -> None:
    """Inline armor: keep the part's transfer-decoded bytes and charset, so gpg checks a clearsigned
    text on the bytes that were signed (a latin-1 or koi8-r text re-encoded as UTF-8 reads BAD)."""
    from mailtriage.backends.pgp_status import PgpMaterial  # OpenPGP pieces only (see the top)

    data, _ = _payload_bytes(part)
    index = len(result.text_parts) - 1
    result.pgp.append(PgpMaterial("inline", index, index + 1, data, label=_part_charset(part),
                                  forwarded=result.forwarded > 0))


def _part_charset(part: EmailMessage) -> str:
    label = part.get_param("charset")
    if isinstance(label, tuple):  # RFC 2231 charset*=
        label = label[2]
    return label if isinstance(label, str) else ""


HTML_ARMOR_NOTE = ("OpenPGP armor in HTML: shown as the text extracted from the HTML (entities decoded, <br> and "
                   "blocks as line ends)")


def _keep_html_armor(part: EmailMessage, result: _Walk) -> None:
    """Inline armor in an HTML part (webmail sends it so): the part shows the text extracted from
    the HTML, and gpg reads the armor in that text (in the part's charset), as in text/plain.
    html2text's rendering would rewrap or escape the armor; text the HTML hides is kept, marked."""
    data, _ = _payload_bytes(part)
    label = _part_charset(part)
    markup, _ = decode_bytes(data, label or None)
    if "BEGIN PGP" not in markup:
        return
    marked, hidden = _mark_hidden(markup)
    text = html_armor_text(marked)
    if "-----BEGIN PGP " not in text:
        return
    from mailtriage.backends.pgp_status import PgpMaterial  # OpenPGP pieces only (see the top)

    shown = result.text_parts[-1]
    notes = [shown.note, HTML_ARMOR_NOTE]
    if hidden:
        notes.append(f"the HTML hides text from its reader ({hidden} element{'s' if hidden > 1 else ''}); "
                     "shown marked [hidden text: ...]")
    links = _html_only_links(part, text)  # the extracted text shows anchor text only: name the real targets
    if links:
        listed = ", ".join(links[:5]) + (f" and {len(links) - 5} more" if len(links) > 5 else "")
        notes.append(f"links in the HTML whose targets the text does not show: {listed}")
    result.text_parts[-1] = TextPart(shown.content_type, text, note="; ".join(dict.fromkeys(filter(None, notes))),
                                     from_html=True)
    try:
        encoded = text.encode(label or "utf-8")
    except (LookupError, UnicodeError):
        encoded, label = text.encode("utf-8"), "utf-8"
    index = len(result.text_parts) - 1
    result.pgp.append(PgpMaterial("inline", index, index + 1, encoded, label=label, forwarded=result.forwarded > 0))


_HTML_DROPPED = _Later(r"<!--.*?(?:-->|$)|<(script|style|head|title)\b[^>]*>.*?(?:</\1\s*>|$)",
                       re.IGNORECASE | re.DOTALL)
_HTML_BLOCKS = frozenset(("address", "article", "blockquote", "body", "center", "dd", "div", "dl", "dt", "footer",
                          "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "html", "li", "ol", "p", "pre",
                          "section", "table", "td", "th", "tr", "ul"))
_HTML_SPACE = lazy(r"[ \t\r\n\f]+")  # not \s: a non-breaking space is never collapsed


def html_armor_text(markup: str) -> str:
    """The text of HTML as a browser lays it out, for reading armor out of it: comments, scripts
    and styles dropped, whitespace collapsed (kept inside <pre>), <br> as a line end and a block
    element as the start of a new line, entities decoded, non-breaking spaces as spaces."""
    from html import unescape  # HTML holding armor only (see _html_only_links)

    out: list[str] = []

    def line_end() -> None:
        if out and not out[-1].endswith("\n"):
            out[-1] = out[-1].rstrip(" ")
            out.append("\n")

    def add(chunk: str, pre: bool) -> None:
        if not pre:
            chunk = _HTML_SPACE.sub(" ", chunk)
            if not out or out[-1].endswith("\n"):
                chunk = chunk.lstrip(" ")  # a browser shows no space at the start of a line
        if chunk:
            out.append(unescape(chunk).replace("\xa0", " "))

    markup = _HTML_DROPPED().sub("", _strip_cr(markup))
    pre = 0
    position = 0
    pre_opened = False
    for match in _TAG().finditer(markup):
        chunk = markup[position:match.start()]
        if pre_opened and chunk.startswith("\n"):
            chunk = chunk.split("\n", 1)[1]  # a browser does not show the line end right after <pre>
        add(chunk, pre > 0)
        position = match.end()
        closing, tag = match.group(1), match.group(2).lower()
        pre_opened = tag == "pre" and not closing
        if tag == "br":
            if out and not pre:
                out[-1] = out[-1].rstrip(" ")
            out.append("\n")
        elif tag in _HTML_BLOCKS:
            line_end()
        if tag == "pre":
            pre = max(0, pre - 1) if closing else pre + 1
    add(markup[position:], pre > 0)
    return "".join(out).strip("\n") + "\n"


_MAX_BOUNDARY_TRIES = 50


def raw_first_part(raw: bytes, part: EmailMessage, first: EmailMessage) -> bytes | None:
    """The first body part of the multipart ``part`` exactly as ``raw`` carries it, in CRLF form.

    RFC 3156 §5: a signature covers the signed part as sent. The email generator writes a part
    back in its own way (a space after each colon, an empty value, a final line end), which reads
    as a BAD signature; so the part is cut out of the raw bytes between its boundaries. The cut
    is taken only when it parses back to the same part (a boundary string repeated elsewhere in
    the mail cannot swap in other bytes); None when no cut does.
    """
    boundary = part.get_boundary()
    if not boundary or not raw:
        return None
    delimiter = re.escape(b"--" + boundary.encode("utf-8", "surrogateescape"))
    opening = re.compile(rb"(?:^|(?<=\n))" + delimiter + rb"[ \t]*\r?\n")
    closing = re.compile(rb"\r?\n" + delimiter)
    expected = None
    for tried, start in enumerate(opening.finditer(raw)):
        if tried >= _MAX_BOUNDARY_TRIES:
            break  # a mail full of look-alike delimiters: the generator's bytes are checked instead
        end = closing.search(raw, start.end())
        if end is None:
            break
        candidate = raw[start.end():end.start()]
        if expected is None:
            expected = signed_entity_bytes(first)
        if signed_entity_bytes(_parse(candidate)) == expected:
            return re.sub(rb"(?<!\r)\n", b"\r\n", candidate)
    return None


def _whole_encrypted(data: bytes, result: _Walk, note: str) -> None:
    """The message is one encryption: a placeholder part and the ciphertext for backends/pgp.py."""
    from mailtriage.backends.pgp_status import PgpMaterial  # PGP/MIME only (see the top)

    first = len(result.text_parts)
    result.text_parts.append(TextPart(ENCRYPTED_PLACEHOLDER, "[encrypted part: not decrypted]\n", note=note))
    result.pgp.append(PgpMaterial("encrypted", first, first + 1, data))


def _exchange_mangled(children: list[EmailMessage]) -> bool:
    """Exchange's rewrite of a multipart/encrypted message: multipart/mixed of an (optional) empty
    text part, the application/pgp-encrypted version part and the armored ciphertext."""
    if len(children) == 3:
        if children[0].get_content_type() != "text/plain" or _payload_bytes(children[0])[0].strip():
            return False
        children = children[1:]
    if len(children) != 2 or children[0].get_content_type() != "application/pgp-encrypted":
        return False
    if b"Version: 1" not in _payload_bytes(children[0])[0]:
        return False
    return _payload_bytes(children[1])[0].lstrip().startswith(b"-----BEGIN PGP MESSAGE-----")


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
    raw, _ = normalize_line_ends(bytes(raw))
    return _walk(_parse(raw)).attachment_parts


def _attachment_data(part) -> bytes:
    if part.get_content_type() == "message/rfc822" and part.is_multipart():
        return _message_bytes(part)
    data, _ = _payload_bytes(part)
    return _as_saved(part, data)


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
