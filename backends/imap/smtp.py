"""The one SMTP path (aiosmtplib): personal sends, the modes gateway's mail, and the SMTP
half of the connection verifier.

:func:`deliver` is the only place mail leaves over SMTP: :func:`transmit` (a personal
account, from a worker thread) and the modes mailer (on its event loop) both call it with
an :class:`SmtpEndpoint`. Messages are built by :mod:`mailtriage.backends.outgoing`.

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
from email.message import EmailMessage
from typing import Sequence

import aiosmtplib
from aiosmtplib.typing import Default

from mailtriage.backends.errors import BackendFailure, NotSupported, SignInNeeded, Unavailable
from mailtriage.backends.imap import message_reads, protocol
from mailtriage.backends.imap.account import ImapAccount, password_key, smtp_password, smtp_password_key
from mailtriage.backends.imap.sending import SendRun
from mailtriage.backends.mailbox_contract import Compose, MailMessage
# SendNotConfirmed and compose_message live with the composer; they are imported from here too.
from mailtriage.backends.outgoing import Outgoing, SendNotConfirmed, as_bytes, compose_message  # noqa: F401
from mailtriage.backends.send_policy import SendRefused, check_send
from mailtriage.backends.send_ledger import SendLedger
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.secrets import SecretUnavailable
from mailtriage.core.tls import trusting
from mailtriage.core.trace import TRACE


class _TracedSMTP(aiosmtplib.SMTP):
    """aiosmtplib's client with every command and reply in the protocol trace."""

    def __init__(self, *args, channel: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._channel = channel
        self._in_auth = False
        self.text_sent = False  # the server said 354: from here a lost connection may hide a delivery

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
        protocol = self.protocol
        if protocol is not None:  # aiosmtplib writes the text only after the server's 354: note when
            write = protocol.write

            def noting_write(data: bytes) -> None:
                if data != b"DATA\r\n":
                    self.text_sent = True
                write(data)

            protocol.write = noting_write
        return await super().data(message, timeout=timeout)


@frozen_dataclass
class SmtpEndpoint:
    """One SMTP server as a send needs it. ``name`` names the sender in errors and the
    trace channel (``smtp:<name>``); no ``password`` means no AUTH."""

    name: str
    host: str
    port: int
    security: str  # tls | starttls | plain
    username: str | None
    password: str | None
    timeout: float
    tls_context: ssl.SSLContext | None = None

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    def client(self) -> _TracedSMTP:
        return _TracedSMTP(
            hostname=self.host, port=self.port,
            username=self.username if self.password is not None else None, password=self.password,
            use_tls=self.security == "tls", start_tls=self.security == "starttls",
            tls_context=self.tls_context if self.security != "plain" else None,
            timeout=self.timeout, channel=f"smtp:{self.name}",
        )


class SendOutcomeUnknown(BackendFailure):
    """The connection was lost after the message text went out: the server may have taken
    the mail without our hearing its answer. Counted as sent; never retried on its own."""


def _translate(endpoint: SmtpEndpoint, what: str, exc: Exception) -> Exception:
    where = endpoint.where
    if isinstance(exc, aiosmtplib.SMTPAuthenticationError):
        return SignInNeeded(endpoint.name, f"{where} rejected the SMTP credentials: {exc.code} {exc.message}")
    if isinstance(exc, (aiosmtplib.SMTPConnectError, aiosmtplib.SMTPConnectTimeoutError,
                        aiosmtplib.SMTPServerDisconnected, aiosmtplib.SMTPTimeoutError,
                        aiosmtplib.SMTPReadTimeoutError, ConnectionError, TimeoutError, ssl.SSLError, OSError)):
        return Unavailable(endpoint.name, f"SMTP {what} with {where} failed: {exc}")
    if isinstance(exc, aiosmtplib.SMTPException):
        return BackendFailure(endpoint.name, f"SMTP {what} with {where} failed: {exc}")
    return exc


async def deliver(endpoint: SmtpEndpoint, message: EmailMessage, *, sender: str, recipients: Sequence[str],
                  run: SendRun | None = None) -> None:
    """The one SMTP send: connect (TLS or STARTTLS as configured), AUTH when there is a
    password, MAIL/RCPT/DATA, QUIT; every exchange in the protocol trace.

    Raises SignInNeeded (credentials rejected), Unavailable (unreachable, timed out, TLS)
    or BackendFailure (the server refused the mail).
    """
    client = None
    try:
        client = endpoint.client()
        if run is not None:
            run.client = client  # abort() ends it until its text goes out
        async with client:
            await client.send_message(message, sender=sender, recipients=list(recipients))
    except (aiosmtplib.SMTPException, OSError, ssl.SSLError) as exc:
        translated = _translate(endpoint, "send", exc)
        if client is not None and client.text_sent and isinstance(translated, Unavailable):
            raise SendOutcomeUnknown(endpoint.name, f"SMTP send with {endpoint.where}: the connection was lost "
                                     f"after the message text was sent ({exc}); the mail may have been sent, "
                                     "or may not: ask a recipient before sending it again") from exc
        raise translated from exc


def _tls_context(account: ImapAccount) -> ssl.SSLContext:
    return trusting(account.ca_file, use="mail")  # the process's context of these CAs


def _password(account: ImapAccount) -> str:
    try:
        password = smtp_password(account)
    except SecretUnavailable as exc:  # no keyring service, or the password command failed
        raise SignInNeeded(account.id, str(exc)) from None
    if password is None:
        raise SignInNeeded(account.id, f"no SMTP password in keyring (key '{smtp_password_key(account.id)}' "
                                       f"or '{password_key(account.id)}')")
    return password


def account_endpoint(account: ImapAccount) -> SmtpEndpoint:
    """The SMTP server of a personal account, its password from keyring."""
    smtp = account.smtp
    if smtp is None:
        raise NotSupported(account.id, "send", "the account has no SMTP server (smtp_host)")
    return SmtpEndpoint(name=account.id, host=smtp.host, port=smtp.port, security=smtp.security,
                        username=smtp.username, password=_password(account), timeout=account.timeout,
                        tls_context=_tls_context(account) if smtp.security != "plain" else None)


def _run(coro):
    """Run an SMTP coroutine from synchronous code (backend calls run in worker threads)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise RuntimeError("SMTP calls are synchronous; run them in a worker thread, not on an event loop")


def verify_smtp(account: ImapAccount) -> None:
    """Really connect, EHLO, STARTTLS when configured, AUTH, QUIT. Raises SignInNeeded only
    for rejected credentials; Unavailable for an unreachable or broken server."""
    endpoint = account_endpoint(account)

    async def go() -> None:
        client = endpoint.client()
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
        raise _translate(endpoint, "verification", exc) from None


def transmit(account: ImapAccount, message: EmailMessage, recipients: Sequence[str],
             run: SendRun | None = None) -> None:
    """Send a personal account's message from synchronous code (a worker thread); ``run``: the
    mailbox's, for its abort()."""
    endpoint = account_endpoint(account)
    send = deliver(endpoint, message, sender=account.from_address, recipients=recipients, run=run)
    if run is None:
        _run(send)
        return

    def ended() -> Unavailable:
        return Unavailable(endpoint.name, f"the SMTP connection to {endpoint.where} was ended (the app quits); "
                                          "nothing was sent")

    _run(run.watch(send, ended))


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
    try:
        transmit(account, outgoing.message, outgoing.recipients, mb.send_run)
    except SendOutcomeUnknown as exc:
        ledger.record(account.id)  # it may have left: the cap counts it
        # A Sent copy is filed only for mail known to have left (a copy would say it was sent);
        # nothing is sent again on its own: the user decides, after asking a recipient.
        raise SendOutcomeUnknown(exc.backend, f"{exc.detail}; no copy was filed in Sent") from exc
    ledger.record(account.id)
    _after_send(mb, outgoing, source)
    return outgoing.message["Message-ID"]


def _after_send(mb, outgoing: Outgoing, source: MailMessage | None) -> None:
    """Keep a copy in Sent and mark the source answered. The mail is already sent: a failure
    here is reported, never turned into a second send."""
    problems = []
    try:  # finding the Sent folder talks to the server too
        sent = mb.folders.role_folder("sent")
        if sent is not None:
            mb.append(sent, as_bytes(outgoing.message), (b"\\Seen",))
    except Exception as exc:  # noqa: BLE001
        problems.append(f"the copy to Sent failed: {exc}")
    if source is not None and outgoing.replying_to is not None:
        try:
            ref, _state = mb.open_ref(source.header.id)
            mb.conn.call("UID STORE +\\Answered", lambda c: protocol.store(c, str(ref.uid), "+FLAGS.SILENT",
                                                                          [b"\\Answered"]))
        except Exception as exc:  # noqa: BLE001
            problems.append(f"marking the source answered failed: {exc}")
    if problems:
        raise BackendFailure(mb.account_id, "the mail was sent, but " + "; ".join(problems))
