"""The one composer of outgoing mail: personal sends and drafts, flow reply drafts, and the
modes gateway's mails all become an :class:`email.message.EmailMessage` here.

The message uses the standard library's modern policy (``policy.SMTP``: ``policy.default``
with CRLF line ends, as SMTP and IMAP APPEND want them). Every header whose value can come
from mail content (recipients, subject, threading, extra headers) goes through
:func:`mailtriage.backends.mime.set_composed_header`: one clean, bounded line, addresses
and Message-IDs only when well formed, and never an exception. The sender, the date and our
own Message-ID are ours and are set as they are.
"""

from __future__ import annotations

from datetime import datetime, timezone
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from typing import Mapping, Sequence

from mailtriage.backends.mailbox_contract import OutgoingAttachment
from mailtriage.backends.mime import set_composed_header

# Outgoing bytes: the default policy with CRLF line ends.
POLICY = policy.SMTP


def new_message_id(sender: str) -> str:
    """A fresh Message-ID in the sender's domain (the local host's when it has none)."""
    domain = sender.rpartition("@")[2] or None
    return make_msgid(domain=domain)


def compose(*, sender: str | None, to: Sequence[str], subject: str, body: str, message_id: str,
            cc: Sequence[str] = (), date: datetime | None = None, in_reply_to: str | None = None,
            references: Sequence[str] = (), extra_headers: Mapping[str, str] | None = None,
            forwarded: bytes | None = None, attachments: Sequence[OutgoingAttachment] = ()) -> EmailMessage:
    """One outgoing message.

    ``to``/``cc`` are recipient strings (joined into one header each), ``references`` the
    References IDs in order, ``forwarded`` the bytes of a message attached whole (a forward),
    ``extra_headers`` more headers from content (e.g. ``Auto-Submitted``). ``date`` defaults
    to now. Headers come in the order From, To, Cc, Subject, In-Reply-To, References, Date,
    Message-ID, then the extra ones.
    """
    msg = EmailMessage(policy=POLICY)
    if sender:
        msg["From"] = sender
    put = lambda name, value: set_composed_header(msg, name, value)  # noqa: E731
    put("To", ", ".join(to))
    if cc:
        put("Cc", ", ".join(cc))
    put("Subject", subject)
    if in_reply_to:
        put("In-Reply-To", in_reply_to)
    if references:
        put("References", " ".join(references))
    msg["Date"] = format_datetime(date or datetime.now(timezone.utc))
    msg["Message-ID"] = message_id
    for name, value in (extra_headers or {}).items():
        put(name, value)
    msg.set_content(body)
    if forwarded is not None:
        msg.add_attachment(message_from_bytes(forwarded, policy=policy.default))
    for attachment in attachments:
        maintype, _, subtype = attachment.content_type.partition("/")
        msg.add_attachment(attachment.data, maintype=maintype or "application", subtype=subtype or "octet-stream",
                           filename=attachment.filename)
    return msg


def as_bytes(message: EmailMessage) -> bytes:
    """The message as it goes over the wire or into a folder (CRLF line ends)."""
    return message.as_bytes(policy=POLICY)
