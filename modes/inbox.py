"""Inbound mail: reading the MAS mailbox over IMAP and normalizing each mail.

The MAS addresses of the domain deliver into one mailbox. :class:`Inbox` reads the
messages after a cursor (UIDVALIDITY + last UID) through the IMAP adapter
(:meth:`mailtriage.backends.imap.adapter.ImapMailbox.read_new`): ``BODY.PEEK[]`` on a
read-only EXAMINE, so read state never changes. :func:`parse_inbound` turns the bytes into an
:class:`InboundMail` and :func:`mail_event` into the normalized gateway event we put
in ``case.intake`` / ``case.message``.

The event schema the contract cites (``mas-event-v0.1``) is not available; our event
is documented in docs/modes.md.
"""

from __future__ import annotations

import email.utils
import hashlib
import threading
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage

import html2text

from mailtriage.backends.errors import MailError
from mailtriage.backends.imap.account import ImapAccount
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.send_policy import guard_headers
from mailtriage.core.secrets import scrub
from mailtriage.modes.addresses import AddressError, MasAddress, same_domain
from mailtriage.modes.config import MailServer, mail_password
from mailtriage.modes.errors import ModesError

# Where the address a mail was delivered to can be read, most reliable first.
RECIPIENT_HEADERS = ("delivered-to", "x-original-to", "envelope-to", "to", "cc")


class MailboxError(ModesError):
    """The mailbox cannot be read now (connection, login, folder); the poll is retried later."""


@dataclass
class InboundMail:
    message_id: str
    sender: str  # the From address ("" when there is none)
    sender_name: str
    subject: str
    date: str | None
    text: str
    headers: list[tuple[str, str]]
    recipients: list[str]
    in_reply_to: str | None = None
    uid: int | None = None
    uidvalidity: int | None = None
    mailbox: str | None = None
    notes: list[str] = field(default_factory=list)

    def mas_address(self, domain: str) -> MasAddress | None:
        """The first recipient that is a MAS address of ``domain`` (None when there is none)."""
        for recipient in self.recipients:
            try:
                address = MasAddress.parse(recipient)
            except AddressError:
                continue
            if same_domain(address, domain):
                return address
        return None

    @property
    def guard_headers(self) -> list[tuple[str, str]]:
        return guard_headers(self.headers)


def parse_inbound(raw: bytes, *, uid: int | None = None, uidvalidity: int | None = None,
                  mailbox: str | None = None) -> InboundMail:
    """Parse one received mail. Never raises on malformed content; problems go to ``notes``."""
    notes: list[str] = []
    message: EmailMessage = message_from_bytes(raw, policy=policy.default)  # type: ignore[assignment]
    headers: list[tuple[str, str]] = []
    for name, value in message.raw_items():
        try:
            headers.append((name, str(message.policy.header_fetch_parse(name, value))))
        except Exception:  # noqa: BLE001 - hostile header content must not stop the poll
            headers.append((name, str(value)))
            notes.append(f"header {name} could not be decoded")
    values = lambda name: [v for k, v in headers if k.lower() == name]  # noqa: E731
    message_id = (values("message-id") or [""])[0].strip()
    if not message_id:
        digest = hashlib.sha256(raw).hexdigest()[:32]
        message_id = f"<synthetic-{digest}@mailtriage.invalid>"
        notes.append("the mail has no Message-ID; a synthetic one was derived from its content")
    name, sender = email.utils.parseaddr(", ".join(values("from")[:1]))
    recipients = []
    for header in RECIPIENT_HEADERS:
        for _, addr in email.utils.getaddresses(values(header)):
            if addr and addr not in recipients:
                recipients.append(addr)
    return InboundMail(
        message_id=message_id,
        sender=sender if "@" in sender else "",
        sender_name=name,
        subject=(values("subject") or [""])[0],
        date=(values("date") or [None])[0],
        text=_plain_text(message, notes),
        headers=headers,
        recipients=recipients,
        in_reply_to=((values("in-reply-to") or [""])[0].strip() or None),
        uid=uid,
        uidvalidity=uidvalidity,
        mailbox=mailbox,
        notes=notes,
    )


def _plain_text(message: EmailMessage, notes: list[str]) -> str:
    try:
        part = message.get_body(preferencelist=("plain", "html"))
    except Exception:  # noqa: BLE001
        part = None
    if part is None:
        return ""
    try:
        text = part.get_content()
    except (LookupError, UnicodeError, ValueError) as exc:
        notes.append(f"the body could not be decoded ({exc}); read as UTF-8 with replacement")
        payload = part.get_payload(decode=True) or b""
        text = payload.decode("utf-8", "replace")
    if part.get_content_type() == "text/html":
        converter = html2text.HTML2Text()
        converter.ignore_images = True
        text = converter.handle(text)
    return text


def mail_event(mail: InboundMail, address: MasAddress, message_ref: str) -> dict:
    """The normalized gateway event of one mail (our shape; see docs/modes.md)."""
    return {
        "kind": "mail.received",
        "message_ref": message_ref,
        "message_id": mail.message_id,
        "to": address.canonical,
        "from": {"name": mail.sender_name, "address": mail.sender},
        "subject": mail.subject,
        "date": mail.date,
        "in_reply_to": mail.in_reply_to,
        "text": mail.text,
        "requested_mode": address.mode,
    }


def read_fields(text: str, names: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``name: value`` lines for the wanted field names (case-insensitive), quoted lines skipped."""
    wanted = {n.lower() for n in names}
    found: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(">"):
            continue
        name, sep, value = stripped.partition(":")
        key = name.strip().lower()
        if sep and key in wanted and value.strip() and key not in found:
            found[key] = value.strip()[:500]
    return found


@dataclass
class Fetched:
    """What one poll of the mailbox gave: the mails after the cursor, or a baseline."""

    uidvalidity: int
    items: list[tuple[int, bytes]]
    baseline: int | None = None  # the last UID, when this poll set a silent baseline


class Inbox:
    """Reads new mail from the configured IMAP folder through the IMAP adapter.
    Blocking: run it in a worker thread."""

    # The adapter's account id: it names the protocol-trace channel (``imap:modes``).
    ACCOUNT_ID = "modes"

    def __init__(self, server: MailServer) -> None:
        self.server = server
        self._reading: ImapMailbox | None = None  # the poll's mailbox while it reads, for abort()
        self._stopped = False
        self._lock = threading.Lock()

    def abort(self) -> None:
        """From another thread (the server stops): end the poll's connection, so a poll
        waiting on the server fails now instead of at its timeout; no poll connects again."""
        with self._lock:
            self._stopped = True
            reading = self._reading
        if reading is not None:
            reading.abort()

    @property
    def name(self) -> str:
        return f"{self.server.username}@{self.server.host}:{self.server.port}/{self.server.folder}"

    def account(self) -> ImapAccount:
        """The mailbox as an IMAP account of the adapter (read-only, password login)."""
        server = self.server
        return ImapAccount(id=self.ACCOUNT_ID, host=server.host, port=server.port, security=server.security,
                           username=server.username or "", access="read", auth="password",
                           timeout=server.timeout, ca_file=server.ca_file)

    def fetch_after(self, cursor: tuple[int, int] | None, limit: int = 200) -> Fetched:
        """At most ``limit`` mails after ``cursor``, oldest first.

        No cursor (first start) or a changed UIDVALIDITY gives a silent baseline, as the
        mailbox adapters' poll does: the cursor moves to the last UID and nothing is
        returned, so mail that was there before we started watching is never taken for
        new requests. The folder is opened read-only. Raises MailboxError; the connection
        is always closed.
        """
        # The password comes from the modes configuration (keyring or environment), not
        # from the personal accounts' keyring entry.
        mailbox = ImapMailbox(self.account(), password_provider=lambda _account: mail_password(self.server) or "")
        with self._lock:
            if self._stopped:
                raise MailboxError(f"not reading {self.name}: the server stops")
            self._reading = mailbox
        try:
            new = mailbox.read_new(self.server.folder, cursor, limit=limit)
        except MailError as exc:
            raise MailboxError(scrub(f"cannot read {self.name}: {exc}")) from exc
        finally:
            with self._lock:
                self._reading = None
            mailbox.close()
        return Fetched(new.uidvalidity, list(new.items), baseline=new.baseline)
