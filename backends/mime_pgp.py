"""The OpenPGP pieces a walk over a message keeps for backends/pgp.py: RFC 3156 pairs, inline
armor (in text/plain or HTML), the signed bytes as sent, Exchange's rewrite of an encryption.

Moved out of :mod:`backends.mime` (issue 36). Nothing is decrypted or checked here: this runs
on every parse; the pieces are :class:`backends.pgp_status.PgpMaterial`. pgp_status and the
stdlib's generator load where OpenPGP is met, not with this module.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from mailtriage.backends.contract import TextPart
from mailtriage.backends.mime_header_text import _policy, decode_bytes
from mailtriage.backends.mime_html import _html_only_links, _mark_hidden, html_armor_text
from mailtriage.backends.mime_parts import _parse, _payload_bytes

if TYPE_CHECKING:
    from email.message import EmailMessage

    from mailtriage.backends.mime_walk import _Walk


# ---------------------------------------------------------------------------
# OpenPGP pieces
# ---------------------------------------------------------------------------


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
