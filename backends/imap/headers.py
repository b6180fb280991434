"""Turn one FETCH response (ENVELOPE + a few header fields) into a :class:`MailHeader`.

Mail is hostile input: 8-bit headers, broken encodings, missing Message-IDs and dates
are decoded as well as possible, with a note, and never break the page they are on.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from typing import Any, Iterable
from urllib.parse import urlsplit

from mailtriage.backends.contract import Address
from mailtriage.backends import mime, mime_dates, mime_header_text, mime_headers, mime_ids
from mailtriage.backends.mime_header_text import decode_header_text
from mailtriage.backends.mime_headers import split_header_block
from mailtriage.backends.imap.ids import MessageRef
from mailtriage.backends.mailbox_contract import ListUnsubscribe, MailHeader

# The header fields fetched for every listed message. They are parsed with the same
# helpers as the full MIME parse (backends.mime), so a list row and the opened message
# agree on IDs, dates, subjects and addresses by construction. (Raw fields are also
# cheaper to parse than an IMAP ENVELOPE.)
LIST_FIELDS = ("FROM", "TO", "CC", "SUBJECT", "DATE", "MESSAGE-ID", "IN-REPLY-TO", "REFERENCES",
               "LIST-UNSUBSCRIBE", "CONTENT-TYPE")
FIELDS_ITEM = f"BODY.PEEK[HEADER.FIELDS ({' '.join(LIST_FIELDS)})]"
FIELDS_KEY = f"BODY[HEADER.FIELDS ({' '.join(LIST_FIELDS)})]".encode()
HEADER_ITEMS = ["UID", "FLAGS", "INTERNALDATE", "RFC822.SIZE", FIELDS_ITEM]

# Keywords that are server/client bookkeeping, not user labels.
SYSTEM_KEYWORDS = frozenset(k.lower() for k in (
    "$HasAttachment", "$HasNoAttachment", "$Forwarded", "$MDNSent", "$Junk", "$NotJunk", "NonJunk", "Junk",
    "$Phishing", "$Submitted", "$SubmitPending", "$Important", "$Answered", "$Recent",
    "$MailtriageMove",  # a COPY+EXPUNGE move under way (backends/imap/mutations.py), not a label
))
_SYNTHETIC_DOMAIN = "mailtriage.invalid"


def decode_text(value: Any, notes: list[str] | None = None, what: str = "header",
                charset: str | None = None) -> str:
    """Decode an IMAP string (bytes, maybe RFC 2047, maybe raw 8-bit) to text, as the
    MIME parser does (so a list row and the opened message agree): raw 8-bit bytes and
    UTF-7 read in ``charset``, the body's declared charset, first."""
    if value is None:
        return ""
    text, found = decode_header_text(value, charset)
    if notes is not None:
        notes.extend(f"{what}: {note}" for note in found)
    return text


def mime_synthetic_id(raw: bytes) -> str:
    """The synthetic ID the offline backends and the full read give a message: the hash of
    its header block and body (``raw``: the whole message, or HEADER + TEXT from
    :data:`SYNTHETIC_ITEMS`). Given a header block alone it is only a stand-in."""
    return mime_headers.message_synthetic_id(raw)


# What a message without a Message-ID is fetched with to be named: its header and as much
# of its body as the synthetic ID hashes.
SYNTHETIC_ITEMS = ["UID", "BODY.PEEK[HEADER]", "BODY.PEEK[TEXT]<0.1048576>"]


def synthetic_id_from_fetch(item: dict) -> str | None:
    """The synthetic ID of a message from its FETCH of :data:`SYNTHETIC_ITEMS` (None: no header)."""
    header = item.get(b"BODY[HEADER]")
    if header is None:
        return None
    return mime_headers.message_synthetic_id(header + (item.get(b"BODY[TEXT]<0>") or b""))


def synthetic_message_id(ref: MessageRef) -> str:
    """Last resort when even the raw header cannot be read: stable per folder reset."""
    digest = hashlib.sha1(f"{ref.account_id}\0{ref.folder}\0{ref.uidvalidity}\0{ref.uid}".encode()).hexdigest()
    return f"<synthetic-imap-{digest[:24]}@{_SYNTHETIC_DOMAIN}>"


def thread_root(message_id: str, references: tuple[str, ...], in_reply_to: str | None) -> str:
    """The root Message-ID of a message's thread (a thread is named by its root)."""
    if references:
        return references[0]
    if in_reply_to:
        return in_reply_to
    return message_id


def parse_list_unsubscribe(value: str | None) -> ListUnsubscribe | None:
    """The first valid https: and mailto: targets of List-Unsubscribe, or None. Never fetched."""
    if not value:
        return None
    https = mailto = None
    for target in re.findall(r"<([^<>]+)>", value):
        target = re.sub(r"\s+", "", target)
        scheme = target.split(":", 1)[0].lower()
        if scheme == "https" and https is None:
            parts = urlsplit(target)
            if parts.netloc and not any(ord(ch) < 33 for ch in target):
                https = target
        elif scheme == "mailto" and mailto is None:
            address = target[7:].split("?", 1)[0]
            if "@" in address:
                mailto = target
    if https is None and mailto is None:
        return None
    return ListUnsubscribe(https, mailto)


def keywords(flags: Iterable[Any]) -> tuple[str, ...]:
    out = []
    for flag in flags:
        text = flag.decode("utf-8", errors="replace") if isinstance(flag, bytes) else str(flag)
        if not text.startswith("\\") and text.lower() not in SYSTEM_KEYWORDS:
            out.append(text)
    return tuple(out)


def _flag_set(flags: Iterable[Any]) -> set[str]:
    return {(f.decode("utf-8", errors="replace") if isinstance(f, bytes) else str(f)).lower() for f in flags}


def has_attachments(flags: set[str], content_type: str) -> bool:
    """The same rule the hasAttachment search uses (so list filter and header agree)."""
    if "$hasattachment" in flags:
        return True
    if "$hasnoattachment" in flags:
        return False
    return content_type.strip().lower().startswith("multipart/mixed")


def aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def header_from_fetch(ref: MessageRef, data: dict, header_block: bytes | None = None) -> MailHeader:
    """Build the header of one message from its FETCH data (see HEADER_ITEMS).

    ``header_block`` (the raw header, or the whole message) is only needed for a message
    without a Message-ID: its synthetic ID is then the hash of the header block, exactly
    as the MIME parser makes it, so the list row and the opened message carry one ID.
    """
    notes: list[str] = []
    block = data.get(FIELDS_KEY)
    if block is None and header_block is not None:
        block, _ = split_header_block(header_block)
    fields = mime_headers.header_fields(block or b"")
    flags = data.get(b"FLAGS", ())
    flag_set = _flag_set(flags)
    # Raw 8-bit (or UTF-7) header text reads in the charset the body declares, as the read
    # path does (mime._message_from_headers), so a row and the opened message agree.
    charset = mime.body_charset(fields.get(b"content-type"))
    subject = decode_text(fields.get(b"subject"), notes, "subject", charset)
    senders = mime_header_text.parse_address_list(fields.get(b"from"), charset)
    message_id = mime_ids.extract_msgid(fields.get(b"message-id"))
    synthetic = message_id is None
    if synthetic:
        message_id = mime_synthetic_id(header_block) if header_block is not None else synthetic_message_id(ref)
        notes.append("no Message-ID; a synthetic one stands in")
    references = mime_ids.extract_msgids(fields.get(b"references"))
    in_reply_to = mime_ids.extract_msgid(fields.get(b"in-reply-to"), reference=True)  # "<yes>" links nothing
    sent_date = mime_dates.parse_date(fields.get(b"date"))
    if fields.get(b"date") and sent_date is None:
        notes.append("the Date header is not a date")
    content_type = fields.get(b"content-type", b"").decode("ascii", "replace")
    unsubscribe = fields.get(b"list-unsubscribe")
    return MailHeader(
        id=str(ref),
        account_id=ref.account_id,
        folder_id=ref.folder,
        subject=subject,
        sender=senders[0] if senders else Address("", ""),
        to=mime_header_text.parse_address_list(fields.get(b"to"), charset),
        cc=mime_header_text.parse_address_list(fields.get(b"cc"), charset),
        date=aware(data.get(b"INTERNALDATE")),
        sent_date=sent_date,
        message_id=message_id,
        in_reply_to=in_reply_to,
        references=references,
        read="\\seen" in flag_set,
        flagged="\\flagged" in flag_set,
        answered="\\answered" in flag_set,
        draft="\\draft" in flag_set,
        labels=keywords(flags),
        has_attachments=has_attachments(flag_set, content_type),
        thread_key=thread_root(message_id, references, in_reply_to),
        thread_count=1,
        list_unsubscribe=parse_list_unsubscribe(unsubscribe.decode("utf-8", "replace") if unsubscribe else None),
        size=data.get(b"RFC822.SIZE"),
        synthetic_id=synthetic,
        notes=tuple(dict.fromkeys(notes)),
    )
