"""The one composer of outgoing mail: personal sends and drafts, flow reply drafts, and the
modes gateway's mails all become an :class:`email.message.EmailMessage` here.

The message uses the standard library's modern policy (``policy.SMTP``: ``policy.default``
with CRLF line ends, as SMTP and IMAP APPEND want them). Every header whose value can come
from mail content (recipients, subject, threading, extra headers) goes through
:func:`mailtriage.backends.mime_header_text.set_composed_header`: one clean, bounded line, addresses
and Message-IDs only when well formed, and never an exception. The sender, the date and our
own Message-ID are ours and are set as they are.
"""

from __future__ import annotations

from datetime import datetime, timezone
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import format_datetime, formataddr, getaddresses, make_msgid
from typing import Mapping, Protocol, Sequence

from mailtriage.backends.contract import reply_subject
from mailtriage.backends.errors import BackendFailure, MailError
from mailtriage.backends.mailbox_contract import Compose, MailMessage, OutgoingAttachment
from mailtriage.backends.mime_header_text import set_composed_header
from mailtriage.core.inert import header_text
from mailtriage.core.lean_dataclass import frozen_dataclass

# Outgoing bytes: the default policy with CRLF line ends.
POLICY = policy.SMTP


class AccountAddress(Protocol):
    """What composing needs of a personal account (IMAP, Gmail, Microsoft alike)."""

    id: str

    @property
    def from_address(self) -> str: ...


class SendNotConfirmed(MailError):
    """A send was asked for without a confirmed proposal: nothing was sent."""

    def __init__(self, account_id: str) -> None:
        super().__init__(f"{account_id}: a send happens only through a confirmed proposal; nothing was sent")


def sender_header(address: str, name: str | None = None) -> str:
    """The ``From:`` value: the configured display name (one clean line) and the address.

    The name comes from settings (``name``), never from the operating system's login."""
    name = header_text(name or "", 200)
    return formataddr((name, address)) if name and address else address


def new_message_id(sender: str) -> str:
    """A fresh Message-ID in the sender's domain (the local host's when it has none)."""
    domain = sender.rpartition("@")[2] or None
    return make_msgid(domain=domain)


def build_message(*, sender: str | None, to: Sequence[str], subject: str, body: str, message_id: str,
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


# -- personal compose ----------------------------------------------------------------------

@frozen_dataclass
class Outgoing:
    message: EmailMessage
    recipients: tuple[str, ...]
    replying_to: MailMessage | None


def _addresses(values: Sequence[str]) -> list[str]:
    return [addr for _name, addr in getaddresses(list(values)) if addr and "@" in addr]


def _real_ids(ids: Sequence[str]) -> list[str]:
    """The IDs in order without duplicates, leaving out the synthetic ones we made up."""
    return list(dict.fromkeys(i for i in ids if not i.endswith("@mailtriage.invalid>")))


def compose_message(account: AccountAddress, compose: Compose, source: MailMessage | None,
                    source_raw: bytes | None = None) -> Outgoing:
    """A personal compose (new, reply, reply-all, forward) as an outgoing message, for a
    send or a draft. Replies answer ``source``'s sender (Reply-To honoured), reply-all
    adds its To/Cc without our own address; threading comes from ``source``, and a
    forward carries ``source_raw`` whole. Raises BackendFailure when there is no
    recipient, no From address, or a reply without its source."""
    own = account.from_address.lower()
    to, cc = list(compose.to), list(compose.cc)
    replying_to = None
    if compose.kind in ("reply", "reply_all"):
        if source is None:
            raise BackendFailure(account.id, f"a {compose.kind} needs its source message")
        replying_to = source
        if not to:
            reply_to = source.content.header("Reply-To")
            to = _addresses([reply_to]) if reply_to else [source.content.sender.email]
        if compose.kind == "reply_all" and not compose.cc:
            others = [a.email for a in (*source.content.to, *source.content.cc)]
            cc = [a for a in dict.fromkeys(others) if a.lower() != own and a not in to]
    recipients = tuple(dict.fromkeys(_addresses([*to, *cc, *compose.bcc])))
    if not recipients:
        raise BackendFailure(account.id, "the message has no recipient")
    if not account.from_address:
        raise BackendFailure(account.id, "the account has no From address (set address = \"…\")")

    subject, in_reply_to, references = compose.subject or "", None, []
    if source is not None and compose.kind in ("reply", "reply_all"):
        subject = compose.subject or reply_subject(source.content.subject)
        in_reply_to = source.content.message_id
        references = _real_ids([*source.content.references, source.content.message_id])
    elif source is not None and compose.kind == "forward":
        subject = compose.subject or f"Fwd: {source.content.subject}".strip()
        # A forward threads with the forwarded message (as mail clients do), not as new mail.
        forwarded_id = source.content.message_id
        in_reply_to = None if forwarded_id.endswith("@mailtriage.invalid>") else forwarded_id
        references = _real_ids([*source.content.references, source.content.message_id])
    msg = build_message(sender=sender_header(account.from_address, compose.from_name), to=to, cc=cc, subject=subject, body=compose.body,
                        message_id=new_message_id(own), in_reply_to=in_reply_to, references=references,
                        forwarded=source_raw if compose.kind == "forward" and not compose.forward_inline else None,
                        attachments=compose.attachments)
    return Outgoing(msg, recipients, replying_to)
