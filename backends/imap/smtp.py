"""Sending personal mail over SMTP (aiosmtplib), and the SMTP half of the connection verifier.

Sending exists only for personal compose (reply, reply-all, forward, new), only through
a confirmed proposal, only on an account whose ``access`` is ``send``, and every send
passes the Principle 10 guard first (:func:`mailtriage.backends.send_policy.check_send`,
with the cap counted by :class:`mailtriage.backends.send_ledger.SendLedger`). The
triage operations never come here.

Transport: implicit TLS, STARTTLS (required when configured), or plain only to a
loopback host; certificates verified (plus the account's ``ca_file``); the password
from keyring ``smtp:<account>`` (else ``imap:<account>``); every call has the account's
timeout. The SMTP exchange goes to the protocol trace (channel ``smtp:<account>``)
with AUTH secrets redacted and the message body reduced to its size.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from datetime import datetime, timezone
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime, getaddresses, make_msgid
from functools import partial
from typing import Sequence

import aiosmtplib
from aiosmtplib.typing import Default

from mailtriage.backends.contract import reply_subject
from mailtriage.backends.errors import BackendFailure, MailError, NotSupported, SignInNeeded, Unavailable
from mailtriage.backends.imap.account import ImapAccount, password_key, smtp_password_key
from mailtriage.backends.mailbox_contract import Compose, MailMessage
from mailtriage.backends.mime import set_composed_header
from mailtriage.backends.send_policy import SendRefused, check_send
from mailtriage.backends.send_ledger import SendLedger
from mailtriage.core.secrets import get_secret
from mailtriage.core.trace import TRACE


class SendNotConfirmed(MailError):
    """A send was asked for without a confirmed proposal: nothing was sent."""

    def __init__(self, account_id: str) -> None:
        super().__init__(f"{account_id}: a send happens only through a confirmed proposal; nothing was sent")


class _TracedSMTP(aiosmtplib.SMTP):
    """aiosmtplib's client with every command and reply in the protocol trace."""

    def __init__(self, *args, channel: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._channel = channel
        self._in_auth = False

    async def execute_command(self, *args: bytes, timeout=Default.token):
        if TRACE.active:
            line = b" ".join(args).decode("utf-8", errors="replace")
            if self._in_auth:
                TRACE.log(self._channel, ">", "[REDACTED]")
            elif line.upper().startswith("AUTH "):
                TRACE.log(self._channel, ">", " ".join(line.split()[:2]) + " [REDACTED]")
            else:
                TRACE.log(self._channel, ">", line)
        if args and args[0].upper() == b"AUTH":
            self._in_auth = True
        response = await super().execute_command(*args, timeout=timeout)
        if response.code != 334:
            self._in_auth = False
        if TRACE.active:
            TRACE.log(self._channel, "<", f"{response.code} {response.message}"[:300])
        return response

    async def starttls(self, *args, **kwargs):
        # aiosmtplib upgrades the transport itself, outside execute_command.
        TRACE.log(self._channel, ">", "STARTTLS")
        response = await super().starttls(*args, **kwargs)
        TRACE.log(self._channel, "<", f"{response.code} {response.message}"[:300])
        return response

    async def data(self, message, timeout=Default.token):
        if TRACE.active:
            size = len(message) if isinstance(message, (bytes, str)) else 0
            TRACE.log(self._channel, ">", f"DATA [message {size} bytes]")
        return await super().data(message, timeout=timeout)


def _tls_context(account: ImapAccount) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    if account.ca_file:
        ctx.load_verify_locations(cafile=account.ca_file)
    return ctx


def _password(account: ImapAccount) -> str:
    password = get_secret(smtp_password_key(account.id)) or get_secret(password_key(account.id))
    if password is None:
        raise SignInNeeded(account.id, f"no SMTP password in keyring (key '{smtp_password_key(account.id)}' "
                                       f"or '{password_key(account.id)}')")
    return password


def _client(account: ImapAccount) -> _TracedSMTP:
    smtp = account.smtp
    if smtp is None:
        raise NotSupported(account.id, "send", "the account has no SMTP server (smtp_host)")
    return _TracedSMTP(
        hostname=smtp.host, port=smtp.port, username=smtp.username, password=_password(account),
        use_tls=smtp.security == "tls", start_tls=smtp.security == "starttls",
        tls_context=_tls_context(account) if smtp.security != "plain" else None,
        timeout=account.timeout, channel=f"smtp:{account.id}",
    )


def _translate(account: ImapAccount, what: str, exc: Exception) -> Exception:
    where = f"{account.smtp.host}:{account.smtp.port}" if account.smtp else "?"
    if isinstance(exc, aiosmtplib.SMTPAuthenticationError):
        return SignInNeeded(account.id, f"{where} rejected the SMTP credentials: {exc.code} {exc.message}")
    if isinstance(exc, (aiosmtplib.SMTPConnectError, aiosmtplib.SMTPConnectTimeoutError,
                        aiosmtplib.SMTPServerDisconnected, aiosmtplib.SMTPTimeoutError,
                        aiosmtplib.SMTPReadTimeoutError, ConnectionError, TimeoutError, ssl.SSLError, OSError)):
        return Unavailable(account.id, f"SMTP {what} with {where} failed: {exc}")
    if isinstance(exc, aiosmtplib.SMTPException):
        return BackendFailure(account.id, f"SMTP {what} with {where} failed: {exc}")
    return exc


def _run(coro):
    """Run an SMTP coroutine from synchronous code (backend calls run in worker threads)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    raise RuntimeError("SMTP calls are synchronous; run them in a worker thread, not on an event loop")


def verify_smtp(account: ImapAccount) -> None:
    """Really connect, EHLO, STARTTLS when configured, AUTH, QUIT. Raises SignInNeeded only
    for rejected credentials; Unavailable for an unreachable or broken server."""

    async def go() -> None:
        client = _client(account)
        try:
            await client.connect()  # EHLO, STARTTLS and AUTH happen here
        finally:
            if client.is_connected:
                try:
                    await client.quit()
                except aiosmtplib.SMTPException:
                    client.close()

    try:
        _run(go())
    except (aiosmtplib.SMTPException, OSError, ssl.SSLError) as exc:
        raise _translate(account, "verification", exc) from None


def transmit(account: ImapAccount, message: EmailMessage, recipients: Sequence[str]) -> None:
    async def go() -> None:
        client = _client(account)
        async with client:
            await client.send_message(message, sender=account.from_address, recipients=list(recipients))

    try:
        _run(go())
    except (aiosmtplib.SMTPException, OSError, ssl.SSLError) as exc:
        raise _translate(account, "send", exc) from None


# -- composing -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Outgoing:
    message: EmailMessage
    recipients: tuple[str, ...]
    replying_to: MailMessage | None


def _addresses(values: Sequence[str]) -> list[str]:
    return [addr for _name, addr in getaddresses(list(values)) if addr and "@" in addr]


def compose_message(account: ImapAccount, compose: Compose, source: MailMessage | None,
                    source_raw: bytes | None = None) -> Outgoing:
    """Build the outgoing message. Replies answer ``source``'s sender (Reply-To honoured),
    reply-all adds its To/Cc without our own address; threading comes from ``source``."""
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

    msg = EmailMessage(policy=policy.SMTP)
    msg["From"] = account.from_address
    # To, Cc, Subject and threading come from mail content: cleaned and folded, never raising.
    put = partial(set_composed_header, msg)
    put("To", ", ".join(to))
    if cc:
        put("Cc", ", ".join(cc))
    if source is not None and compose.kind in ("reply", "reply_all"):
        put("Subject", compose.subject or reply_subject(source.content.subject))
        put("In-Reply-To", source.content.message_id)
        refs = [*source.content.references, source.content.message_id]
        put("References", " ".join(dict.fromkeys(r for r in refs if not r.endswith("@mailtriage.invalid>"))))
    elif source is not None and compose.kind == "forward":
        put("Subject", compose.subject or f"Fwd: {source.content.subject}".strip())
        # A forward threads with the forwarded message (as mail clients do), not as new mail.
        if not source.content.message_id.endswith("@mailtriage.invalid>"):
            put("In-Reply-To", source.content.message_id)
        refs = [*source.content.references, source.content.message_id]
        if any(not r.endswith("@mailtriage.invalid>") for r in refs):
            put("References", " ".join(dict.fromkeys(r for r in refs if not r.endswith("@mailtriage.invalid>"))))
    else:
        put("Subject", compose.subject or "")
    msg["Date"] = format_datetime(datetime.now(timezone.utc))
    domain = own.rpartition("@")[2] or None
    msg["Message-ID"] = make_msgid(domain=domain)
    msg.set_content(compose.body)
    if compose.kind == "forward" and source_raw is not None:
        from email import message_from_bytes

        msg.add_attachment(message_from_bytes(source_raw, policy=policy.default))
    for attachment in compose.attachments:
        maintype, _, subtype = attachment.content_type.partition("/")
        msg.add_attachment(attachment.data, maintype=maintype or "application", subtype=subtype or "octet-stream",
                           filename=attachment.filename)
    return Outgoing(msg, recipients, replying_to)


def send(mb, compose: Compose, *, confirmed: bool, ledger: SendLedger | None = None) -> str:
    """Send a personal compose. Returns the sent Message-ID.

    Raises:
        SendNotConfirmed: no confirmed proposal.
        SendRefused: Principle 10 refused; ``refusal`` names the rule (nothing was sent).
        NotSupported: the account's access is not ``send`` or it has no SMTP server.
        SignInNeeded / Unavailable / BackendFailure: as the SMTP server answered.
    """
    account: ImapAccount = mb.account
    if not confirmed:
        raise SendNotConfirmed(account.id)
    if account.access != "send":
        raise NotSupported(account.id, "send", f"account access is {account.access!r}; sending needs access = \"send\"")
    if account.smtp is None:
        raise NotSupported(account.id, "send", "the account has no SMTP server (smtp_host)")
    source = source_raw = None
    if compose.kind != "new":
        from mailtriage.backends.imap import message_reads

        ref, state = mb.open_ref(compose.source_id)
        found = message_reads.fetch_full(mb, ref.folder, state.uidvalidity, [ref.uid])
        if not found:
            raise BackendFailure(account.id, f"the source message {compose.source_id} is gone; nothing was sent")
        source, source_raw = found[0].parsed(), found[0].raw
    outgoing = compose_message(account, compose, source, source_raw)
    ledger = ledger or SendLedger()
    # Principle 10: a reply answers the source's sender, so the source's headers are judged;
    # new mail and forwards answer no one, and only the cap applies.
    original = list(outgoing.replying_to.content.headers) if outgoing.replying_to else None
    refusal = check_send(original, authserv_id=account.authserv_id, sent_recently=ledger.count(account.id),
                         send_cap=account.send_cap)
    if refusal is not None:
        raise SendRefused(refusal)
    transmit(account, outgoing.message, outgoing.recipients)
    ledger.record(account.id)
    _after_send(mb, outgoing, source)
    return outgoing.message["Message-ID"]


def _after_send(mb, outgoing: Outgoing, source: MailMessage | None) -> None:
    """Keep a copy in Sent and mark the source answered. The mail is already sent: a failure
    here is reported, never turned into a second send."""
    from mailtriage.backends.imap import protocol

    sent = mb.folders.role_folder("sent")
    problems = []
    if sent is not None:
        raw = outgoing.message.as_bytes(policy=policy.SMTP)
        try:
            mb.conn.call(f"APPEND {sent}", lambda c: c.append(sent, raw, flags=(b"\\Seen",)))
        except Exception as exc:  # noqa: BLE001
            problems.append(f"copy to {sent!r} failed: {exc}")
    if source is not None and outgoing.replying_to is not None:
        try:
            ref, _state = mb.open_ref(source.header.id)
            mb.conn.call("UID STORE +\\Answered", lambda c: protocol.store(c, str(ref.uid), "+FLAGS.SILENT",
                                                                          [b"\\Answered"]))
        except Exception as exc:  # noqa: BLE001
            problems.append(f"marking the source answered failed: {exc}")
    if problems:
        raise BackendFailure(mb.account_id, "the mail was sent, but " + "; ".join(problems))
