"""Header text (RFC 2047 words, 8-bit headers, charsets), addresses and List-Unsubscribe.

Moved out of :mod:`backends.mime` (issue 36). ``email.policy`` (:func:`_policy`) and
``email.utils`` load where an unusual address needs them, not with this module.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from typing import TYPE_CHECKING

from mailtriage.backends.contract import Address
from mailtriage.core.inert import header_text
from mailtriage.core.lazy_re import lazy

if TYPE_CHECKING:
    from email.message import EmailMessage
    from email.policy import EmailPolicy


__all__ = ["decode_header_text", "list_unsubscribe", "parse_address"]


_EMAIL: dict[str, object] = {}  # the policies, made on first use (see _policy)

# Charsets we fall back to, in order, when a label is missing, unknown or wrong.
# windows-1252 decodes every byte except five, latin-1 decodes every byte: the last
# resort never fails, so a part is always shown.
_FALLBACK_CHARSETS = ("utf-8", "windows-1252", "latin-1")

# Labels seen in the wild that mean "the sender did not know"; treated as unlabelled.
_MEANINGLESS_CHARSETS = {"unknown-8bit", "x-unknown", "unknown", "default", "x-user-defined", ""}


# ---------------------------------------------------------------------------
# Header text (RFC 2047) and addresses
# ---------------------------------------------------------------------------

_ENCODED_WORD = lazy(r"=\?([^?\s]+)\?([bBqQ])\?([^?\s]*)\?=")
_BETWEEN_WORDS = lazy(r"(\?=)\s+(?==\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=)")
_QP_ESCAPE = lazy(rb"=([0-9A-Fa-f]{2})")


# Labels whose text is usually written in a superset (GB2312 mail is mostly GBK or
# GB18030 in practice, and GB18030 decodes all of them), or that Python spells
# differently.
_CHARSET_ALIASES = {"gb2312": "gb18030", "gbk": "gb18030", "euc-cn": "gb18030", "x-gbk": "gb18030",
                    "cp936": "gb18030", "x-utf-7": "utf-7", "x-utf7": "utf-7"}


def _codec_name(label: str | None) -> str | None:
    """Python codec name for a charset label, or None when unknown/meaningless."""
    if label is None:
        return None
    label = label.strip().strip('"').lower()
    if label in _MEANINGLESS_CHARSETS:
        return None
    label = _CHARSET_ALIASES.get(label, label)
    try:
        name = codecs.lookup(label).name
    except (LookupError, ValueError):  # ValueError: a NUL in the label
        return None
    return _CHARSET_ALIASES.get(name, name)


# A part in a multibyte charset with a few bad bytes is still that charset: decode it
# with replacement characters rather than as latin-1 mojibake (at most this share of
# the bytes may be bad).
_REPLACE_AT_MOST = 0.02
_UTF8_MULTIBYTE = lazy(rb"[\xc2-\xf4][\x80-\xbf]+")


def _decode_with_replacement(data: bytes, codec: str) -> tuple[str, int] | None:
    """``data`` decoded in ``codec`` with U+FFFD for bad bytes, when few are bad; else None."""
    if codec in ("ascii", "latin-1", "iso8859-1", "cp1252", "utf-7"):
        return None  # single-byte labels are better served by the fallback charsets
    if codec == "utf-8" and _UTF8_MULTIBYTE.search(data) is None:
        return None  # no valid multibyte sequence at all: not utf-8, a mislabel
    try:
        text = data.decode(codec, "replace")
    except LookupError:
        return None
    bad = text.count("\ufffd") - data.decode(codec, "ignore").count("\ufffd")
    if bad <= 0 or bad > max(1, int(len(data) * _REPLACE_AT_MOST)):
        return None
    return text, bad


def decode_bytes(data: bytes, label: str | None) -> tuple[str, str | None]:
    """Decode ``data`` declared as charset ``label``; return ``(text, note)``.

    Never raises. A note says when the label was unknown or wrong and which charset
    was used instead; pure ASCII is always fine whatever the label.
    """
    codec = _codec_name(label)
    if codec is not None:
        try:
            return data.decode(codec), None
        except (UnicodeDecodeError, LookupError):
            pass
        replaced = _decode_with_replacement(data, codec)
        if replaced is not None:
            text, bad = replaced
            return text, (f"{bad} byte{'s' if bad > 1 else ''} invalid in the declared charset {label}; "
                          "replaced with U+FFFD")
    elif label is None or label.strip().lower() in _MEANINGLESS_CHARSETS:
        try:
            return data.decode("ascii"), None
        except UnicodeDecodeError:
            pass
    for fallback in _FALLBACK_CHARSETS:
        if fallback == codec:
            continue
        try:
            text = data.decode(fallback)
        except UnicodeDecodeError:
            continue
        if codec is not None:
            note = f"declared charset {label} does not match the content; decoded as {fallback}"
        elif label is None or label.strip().lower() in _MEANINGLESS_CHARSETS:
            note = f"no charset declared for 8-bit text; decoded as {fallback}"
        else:
            note = f"unknown charset {label!r}; decoded as {fallback}"
        return text, note
    return data.decode("latin-1"), None  # unreachable: latin-1 decodes every byte


def _encoded_word_bytes(encoding: str, payload: str) -> bytes | None:
    """The bytes an encoded word carries; None when its base64 is broken."""
    data = payload.encode("utf-8", "surrogateescape")  # raw 8-bit inside a word: keep its bytes
    if encoding in "bB":
        padded = data + b"=" * (-len(data) % 4)
        try:
            return base64.b64decode(padded, validate=False)
        except (binascii.Error, ValueError):
            return None
    return _QP_ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), data.replace(b"_", b" "))


def _decode_encoded_word(charset: str, encoding: str, payload: str) -> tuple[str, str | None]:
    raw = _encoded_word_bytes(encoding, payload)
    if raw is None:
        return f"=?{charset}?{encoding}?{payload}?=", "a base64 encoded-word in a header is broken; shown as is"
    text, charset_note = decode_bytes(raw, charset.split("*", 1)[0])  # RFC 2231 language suffix: utf-8*en
    return text, (f"encoded-word: {charset_note}" if charset_note else None)


# Raw 8-bit header bytes shaped like a double-byte EUC charset: every run of non-ASCII bytes is
# pairs of bytes in 0xA1-0xFE. GB2312 (EUC-CN) is the commonest such header in mail and GB18030
# decodes it (and GBK); EUC-KR and EUC-JP share the shape but cannot be told apart from it, so
# they are read as GB18030 only when the message declares no charset of its own. Latin text
# (an accented letter between ASCII ones, a run of odd length or with bytes below 0xA1) is not
# EUC-shaped and keeps the windows-1252 fallback.
_HIGH_RUN = lazy(rb"[\x80-\xff]+")
_EUC_PAIRS = lazy(rb"(?:[\xa1-\xfe][\xa1-\xfe])+")


def _euc_shaped(value: bytes) -> bool:
    runs = _HIGH_RUN.findall(value)
    return bool(runs) and all(_EUC_PAIRS.fullmatch(run) for run in runs)


def _decode_raw_header(value: bytes, charset: str | None, notes: list[str]) -> str:
    """A header with raw 8-bit bytes: the body's declared charset, then utf-8, then GB18030 when
    the bytes are EUC-shaped (see ``_euc_shaped``), then windows-1252."""
    codec = _codec_name(charset)
    if codec is not None and codec not in ("ascii", "utf-8"):
        try:
            text = value.decode(codec)
            notes.append(f"raw 8-bit characters in the header; read as {charset}, the body's charset")
            return text
        except (UnicodeDecodeError, LookupError):
            pass
    try:
        text = value.decode("utf-8")
        notes.append("raw 8-bit characters in the header; read as utf-8")
        return text
    except UnicodeDecodeError:
        pass
    if _euc_shaped(value):
        try:
            text = value.decode("gb18030")
            notes.append("raw 8-bit characters in the header, not utf-8, shaped like GB2312/EUC; "
                         "read as gb18030 (a guess)")
            return text
        except UnicodeDecodeError:
            pass
    text = value.decode("windows-1252", "replace")
    notes.append("raw 8-bit characters in the header, not utf-8; read as windows-1252")
    return text


# A UTF-7 shift sequence (``+AD4-`` is ``>``): an ASCII header of a message whose body declares
# UTF-7 was written in UTF-7 by the same client. Only with the ``-`` that ends it, so ``C++``
# or ``a+b`` stay as they are.
_UTF7_SHIFT = lazy(rb"\+[A-Za-z0-9+/]+-")


def header_needs_charset(value: bytes | None) -> bool:
    """Whether decoding header ``value`` depends on the charset the message body declares
    (raw 8-bit bytes, or a UTF-7 shift sequence)."""
    return bool(value) and (not value.isascii() or _UTF7_SHIFT.search(value) is not None)


def _decode_utf7_header(text: str, charset: str | None, notes: list[str]) -> str:
    if charset is None or _codec_name(charset) != "utf-7" or _UTF7_SHIFT.search(text.encode("ascii")) is None:
        return text
    try:
        decoded = text.encode("ascii").decode("utf-7")
    except UnicodeDecodeError:
        return text
    notes.append(f"the header is written in UTF-7, the body's charset ({charset}); decoded")
    return decoded


def decode_header_text(value: bytes | str | None, charset: str | None = None) -> tuple[str, list[str]]:
    """Decode an unstructured header (Subject, a display name) into text and notes.

    Handles RFC 2047 encoded-words in any charset Python knows (adjacent words in one
    charset are joined before decoding, RFC 2047 section 6.2, so a character split
    over two words survives), falls back (with a note) for unknown or mislabelled
    charsets, decodes raw 8-bit headers (``charset``, the body's declared charset,
    then utf-8, then GB18030 for EUC-shaped bytes, then windows-1252) with a note, reads
    an ASCII header with UTF-7 shift sequences as UTF-7 when ``charset`` is UTF-7, and
    unfolds continuation lines.
    """
    notes: list[str] = []
    if value is None:
        return "", notes
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    try:
        text = _decode_utf7_header(value.decode("ascii"), charset, notes)
    except UnicodeDecodeError:
        text = _decode_raw_header(value, charset, notes)
    if "\n" in text or "\r" in text:
        text = re.sub(r"\r?\n|\r", "", text)
    text = text.strip()
    if "=?" not in text:
        return text, notes
    text = _BETWEEN_WORDS.sub(r"\1", text)
    out: list[str] = []
    position = 0
    matches = list(_ENCODED_WORD.finditer(text))
    i = 0
    while i < len(matches):
        match = matches[i]
        out.append(text[position:match.start()])
        charset_label, encoding = match.group(1), match.group(2)
        # Adjacent words of one charset form one run of bytes.
        run = [match]
        while (i + len(run) < len(matches) and matches[i + len(run)].start() == run[-1].end()
               and matches[i + len(run)].group(1).lower() == charset_label.lower()):
            run.append(matches[i + len(run)])
        chunks = [_encoded_word_bytes(m.group(2), m.group(3)) for m in run]
        if len(run) > 1 and None not in chunks:
            decoded, charset_note = decode_bytes(b"".join(chunks), charset_label.split("*", 1)[0])
            note = f"encoded-word: {charset_note}" if charset_note else None
        else:
            run = [match]
            decoded, note = _decode_encoded_word(charset_label, encoding, match.group(3))
        if note and note not in notes:
            notes.append(note)
        out.append(decoded)
        position = run[-1].end()
        i += len(run)
    out.append(text[position:])
    return "".join(out), notes


_ADDR_SPEC = r'[^\s<>"(),;:@\[\]\\]+@[^\s<>"(),;:@\[\]\\]+'
_NAME_ADDR = lazy(r'\s*([^"(),;:<>@\[\]\\]*?)\s*<(' + _ADDR_SPEC + r')>\s*')
_BARE_ADDR = lazy(r"\s*(" + _ADDR_SPEC + r")\s*")


def is_plain_address(text: str) -> bool:
    """Is ``text`` one bare addr-spec (no quotes, commas, encoded words, names)? Only such
    a value may become a recipient: anything else can turn into other recipients once a
    header is serialised (an encoded word decodes to ``a@x, b@y``)."""
    return re.fullmatch(_ADDR_SPEC, text) is not None and "=?" not in text


# -- headers we compose from mail content ----------------------------------------------------

_COMPOSED_ID = lazy(r"<[^\s<>\x00-\x1f\x7f]{1,250}>")
_MAX_REFERENCES = 30  # RFC 5322 §3.6.4 allows trimming; keep the root and the newest ones


def composed_ids(ids) -> list[str]:
    """Message-IDs fit for In-Reply-To/References: well-formed ones only, no duplicates,
    the root plus the newest when there are many (a reporter can send hundreds)."""
    kept = [i for i in dict.fromkeys(ids or ()) if i and _COMPOSED_ID.fullmatch(i)]
    if len(kept) > _MAX_REFERENCES:
        kept = kept[:1] + kept[-(_MAX_REFERENCES - 1):]
    return kept


def composed_addresses(values) -> str:
    """An address header from recipient strings: display names cleaned to one line (a
    decoded CR/LF cannot add a header), only plain addr-specs kept."""
    from email.utils import formataddr, getaddresses  # composing only; email.utils costs ~3 ms at import

    out = []
    for name, addr in getaddresses([header_text(v, 2000) for v in values or ()]):
        if addr and is_plain_address(addr):
            out.append(formataddr((header_text(name, 200), addr)))
    return ", ".join(out)


def set_composed_header(msg: EmailMessage, name: str, value: str) -> None:
    """Set a header built from mail content. The value is made one clean, bounded line
    (the serializer folds it), so it never raises; an address header keeps only what
    parses as addresses."""
    if name.lower() in ("to", "cc", "bcc", "reply-to"):
        value = composed_addresses([value])
    elif name.lower() in ("in-reply-to", "references"):
        value = " ".join(composed_ids(str(value).split()))
    else:
        value = header_text(value)
    if not value and name.lower() != "subject":
        return
    try:
        msg[name] = value
    except (ValueError, TypeError, IndexError):  # a value the header parser still refuses
        msg[name] = value.encode("ascii", "replace").decode("ascii")


def parse_address(value: bytes | str | None, charset: str | None = None) -> Address:
    """The first address of a From-like header; ``Address('', '')`` when there is none."""
    addresses = parse_address_list(value, charset)
    return addresses[0] if addresses else Address("", "")


# An obsolete source route (RFC 5322 obs-route): "<@a.example,@b.example:user@host>".
_SOURCE_ROUTE = lazy(r"<\s*@[^<>:\s,]+(?:\s*,\s*@[^<>:\s,]+)*\s*:\s*")
# Pipermail's obfuscation: "user at example.com (Name)".
_PIPERMAIL = lazy(r"\s*([^\s@<>()\",;:]+) at ([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)\s*(?:\((.*)\))?\s*")


def _clean_email(email: str, charset: str | None) -> str:
    """Raw 8-bit bytes in an address are kept as surrogates while parsing; decode them."""
    if email.isascii():
        return email
    raw = email.encode("utf-8", "surrogateescape")
    return raw.decode("utf-8") if raw.isascii() else _decode_raw_header(raw, charset, [])


def _address_of_text(text: str) -> Address:
    """An address read from decoded text (a From that was only an encoded word)."""
    match = _NAME_ADDR.fullmatch(text)
    if match is not None:
        return Address(" ".join(match.group(1).split()).strip('" '), match.group(2))
    match = _BARE_ADDR.fullmatch(text)
    if match is not None:
        return Address("", match.group(1))
    return Address(text.strip(), "")


def parse_address_list(value: bytes | str | None, charset: str | None = None) -> tuple[Address, ...]:
    """Every address in a To/Cc-like header, display names decoded (never raises).

    The raw value is split first and display names decoded after, so an encoded
    comma inside a name cannot split an address. ``charset`` is the body's declared
    charset, tried first for raw 8-bit display names. Source routes are dropped
    (the mailbox is what follows the colon), pipermail's ``user at host (Name)`` is
    read as ``user@host``, and a value that is only an encoded word is decoded
    before it is read (never lower-cased or trimmed first).
    """
    if not value:
        return ()
    raw_text = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
    if "\n" in raw_text or "\r" in raw_text:
        raw_text = re.sub(r"\r?\n|\r", "", raw_text)
    if "<@" in raw_text or "< @" in raw_text:
        raw_text = _SOURCE_ROUTE.sub("<", raw_text)
    # The common single-address shapes, read as getaddresses reads them (a test
    # checks that on many generated values); anything else goes to getaddresses.
    match = _NAME_ADDR.fullmatch(raw_text)
    if match is not None:
        display, _ = decode_header_text(" ".join(match.group(1).split()), charset)
        return (Address(display.strip(), _clean_email(match.group(2), charset)),)
    match = _BARE_ADDR.fullmatch(raw_text)
    if match is not None:
        return (Address("", _clean_email(match.group(1), charset)),)
    if "<" not in raw_text and "," not in raw_text and ";" not in raw_text and "(" not in raw_text:
        tokens = raw_text.split()
        if len(tokens) > 1 and all(_BARE_ADDR.fullmatch(t) for t in tokens):
            # Addresses listed without commas ("a@x b@y"): each is an address.
            return tuple(Address("", _clean_email(t, charset)) for t in tokens)
    if "@" not in raw_text:
        match = _PIPERMAIL.fullmatch(raw_text)
        if match is not None:
            display, _ = decode_header_text(match.group(3) or "", charset)
            return (Address(display.strip(), f"{match.group(1)}@{match.group(2)}"),)
        if "=?" in raw_text:
            decoded, _ = decode_header_text(raw_text, charset)
            if "=?" not in decoded:
                return (_address_of_text(decoded),)
    if "\\@" in raw_text:  # an escaped "@": getaddresses takes what follows the last "@" for the address
        return _strict_addresses(raw_text, charset)
    from email.utils import getaddresses  # unusual address shapes only; email.utils costs ~3 ms at import

    try:
        pairs = getaddresses([raw_text])
    except (TypeError, ValueError, IndexError):
        return (_unreadable_address(raw_text, charset),)
    result = []
    for name, email in pairs:
        if not name and not email:
            continue
        email = email.strip()
        if "@" in email and not _HAS_LOCAL_AND_DOMAIN.fullmatch(email):
            # "@host" or "user@": a piece of something getaddresses could not read, not an address.
            return _strict_addresses(raw_text, charset)
        display, _ = decode_header_text(name, charset)
        result.append(Address(display.strip(), _clean_email(email, charset)))
    return tuple(result)


_HAS_LOCAL_AND_DOMAIN = lazy(r".*[^@\s]@[^@\s]+")


def _unreadable_address(raw_text: str, charset: str | None) -> Address:
    """A From-like value with no readable address: its raw text as the name (shown through the
    inert sinks like any name), no address (never one made from a piece of it)."""
    text, _ = decode_header_text(" ".join(raw_text.split()), charset)
    return Address(text.strip(), "")


def _strict_addresses(raw_text: str, charset: str | None) -> tuple[Address, ...]:
    """The addresses ``policy.default`` reads in a value the legacy parser misreads (a quoted-pair
    outside quotes: ``<Postmaster\\@example.com@xxx.com>`` is ``xxx.com`` to ``getaddresses``).
    The valid addresses it finds are kept; for an invalid one the raw value stands (after them)
    as a name with no address."""
    try:
        header = _policy().header_factory("to", raw_text)
        found = [(a.display_name, a.username, a.domain, a.addr_spec) for a in header.addresses]
        defects = header.defects
    except Exception:  # noqa: BLE001 - the header classes raise on some inputs
        return (_unreadable_address(raw_text, charset),)
    valid = tuple(Address(" ".join(name.split()), _clean_email(spec, charset))
                  for name, user, domain, spec in found if user and domain)
    if len(valid) < len(found) or not valid and defects:
        return valid + (_unreadable_address(raw_text, charset),)
    return valid


# ---------------------------------------------------------------------------
# List-Unsubscribe
# ---------------------------------------------------------------------------

def list_unsubscribe(value: str | bytes | None) -> dict[str, list[str]]:
    """Parse List-Unsubscribe into ``{"https": [...], "mailto": [...], "other": [...]}``.

    Targets are only parsed, never fetched or sent to. Plain ``http:`` targets go to
    ``other``: they are shown, but are not a safe one-click target.
    """
    result: dict[str, list[str]] = {"https": [], "mailto": [], "other": []}
    if not value:
        return result
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    for target in re.findall(r"<([^<>]+)>", value):
        target = re.sub(r"\s+", "", target)
        scheme = target.split(":", 1)[0].lower()
        if scheme == "https":
            result["https"].append(target)
        elif scheme == "mailto":
            result["mailto"].append(target)
        else:
            result["other"].append(target)
    return result


def _policy(name: str = "default") -> EmailPolicy:
    """``email.policy.default`` (``"default"``), or the canonical form of a signed entity
    (``"canonical"``: lines end CRLF, headers written back as they came, no refolding)."""
    made = _EMAIL.get(name)
    if made is None:
        from email import policy  # the first full parse loads it: ~11 ms at import (see the top)

        made = policy.default if name == "default" else policy.default.clone(
            linesep="\r\n", max_line_length=0, refold_source="none")
        _EMAIL[name] = made
    return made  # type: ignore[return-value]
