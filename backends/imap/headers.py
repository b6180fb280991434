"""Turn one FETCH response (ENVELOPE + a few header fields) into a :class:`MailHeader`.

Mail is hostile input: 8-bit headers, broken encodings, missing Message-IDs and dates
are decoded as well as possible, with a note, and never break the page they are on.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from email.parser import BytesHeaderParser
from email import policy
from typing import Any, Iterable
from urllib.parse import urlsplit

from mailtriage.backends.contract import Address
from mailtriage.backends.mime import decode_header_text
from mailtriage.backends.imap.ids import MessageRef
from mailtriage.backends.mailbox import ListUnsubscribe, MailHeader

# Header fields fetched beside ENVELOPE for every listed message.
EXTRA_FIELDS = ("REFERENCES", "LIST-UNSUBSCRIBE", "CONTENT-TYPE")
EXTRA_ITEM = f"BODY.PEEK[HEADER.FIELDS ({' '.join(EXTRA_FIELDS)})]"
EXTRA_KEY = f"BODY[HEADER.FIELDS ({' '.join(EXTRA_FIELDS)})]".encode()
HEADER_ITEMS = ["UID", "FLAGS", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE", EXTRA_ITEM]

# Keywords that are server/client bookkeeping, not user labels.
SYSTEM_KEYWORDS = frozenset(k.lower() for k in (
    "$HasAttachment", "$HasNoAttachment", "$Forwarded", "$MDNSent", "$Junk", "$NotJunk", "NonJunk", "Junk",
    "$Phishing", "$Submitted", "$SubmitPending", "$Important", "$Answered", "$Recent",
))
_MSGID = re.compile(r"<[^<>\s]+>")
_SYNTHETIC_DOMAIN = "mailtriage.invalid"
_parser = BytesHeaderParser(policy=policy.compat32)


def decode_text(value: Any, notes: list[str] | None = None, what: str = "header") -> str:
    """Decode an IMAP string (bytes, maybe RFC 2047, maybe raw 8-bit) to text, as the
    MIME parser does (so a list row and the opened message agree)."""
    if value is None:
        return ""
    text, found = decode_header_text(value)
    if notes is not None:
        notes.extend(f"{what}: {note}" for note in found)
    return text


def addresses(items: Iterable[Any] | None, notes: list[str]) -> tuple[Address, ...]:
    out = []
    for item in items or ():
        if item.host is None:  # group start/end markers carry no address
            continue
        name = decode_text(item.name, notes, "address name")
        mailbox = decode_text(item.mailbox, notes, "address")
        host = decode_text(item.host, notes, "address")
        out.append(Address(name, f"{mailbox}@{host}" if host else mailbox))
    return tuple(out)


def normalise_message_id(value: Any) -> str | None:
    text = decode_text(value) if value is not None else ""
    match = _MSGID.search(text)
    if match:
        return match.group(0)
    text = text.strip()
    return f"<{text}>" if text and " " not in text else None


def message_ids(text: str | None) -> tuple[str, ...]:
    return tuple(_MSGID.findall(text or ""))


def synthetic_message_id(ref: MessageRef) -> str:
    digest = hashlib.sha1(f"{ref.account_id}\0{ref.folder}\0{ref.uidvalidity}\0{ref.uid}".encode()).hexdigest()
    return f"<synthetic-imap-{digest[:24]}@{_SYNTHETIC_DOMAIN}>"


def thread_root(message_id: str, references: tuple[str, ...], in_reply_to: str | None) -> str:
    """The root Message-ID of a message's thread (DESIGN.md: thread identity)."""
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


def header_from_fetch(ref: MessageRef, data: dict) -> MailHeader:
    """Build the header of one message from its FETCH data (see HEADER_ITEMS)."""
    notes: list[str] = []
    envelope = data.get(b"ENVELOPE")
    extra = _parser.parsebytes(data.get(EXTRA_KEY) or b"")
    flags = data.get(b"FLAGS", ())
    flag_set = _flag_set(flags)
    if envelope is not None:
        subject = decode_text(envelope.subject, notes, "subject")
        senders = addresses(envelope.from_, notes)
        to = addresses(envelope.to, notes)
        cc = addresses(envelope.cc, notes)
        sent_date = aware(envelope.date)
        message_id = normalise_message_id(envelope.message_id)
        in_reply_to = normalise_message_id(envelope.in_reply_to) if envelope.in_reply_to else None
    else:
        subject, senders, to, cc, sent_date, message_id, in_reply_to = "", (), (), (), None, None, None
        notes.append("server returned no envelope")
    synthetic = message_id is None
    if synthetic:
        message_id = synthetic_message_id(ref)
        notes.append("no Message-ID; a synthetic one stands in")
    references = message_ids(decode_text(extra.get("References"), notes, "References"))
    return MailHeader(
        id=str(ref),
        account_id=ref.account_id,
        folder_id=ref.folder,
        subject=subject,
        sender=senders[0] if senders else Address("", ""),
        to=to,
        cc=cc,
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
        has_attachments=has_attachments(flag_set, extra.get("Content-Type") or ""),
        thread_key=thread_root(message_id, references, in_reply_to),
        thread_count=1,
        list_unsubscribe=parse_list_unsubscribe(decode_text(extra.get("List-Unsubscribe"))),
        size=data.get(b"RFC822.SIZE"),
        synthetic_id=synthetic,
        notes=tuple(dict.fromkeys(notes)),
    )
