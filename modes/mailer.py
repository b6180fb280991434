"""Sending mail from a case address, always behind Principle 10.

Every send of the modes package — a master's ``mail.send``, email's own resume and
negotiation mails as master, acknowledgements and questions under an autonomous
policy — goes through :meth:`Mailer.send`, which runs :func:`send_policy_refusal`
(the shared guard of ``mailtriage.backends.send_policy``) right before sending. The
mail is built by the one composer (:mod:`mailtriage.backends.outgoing`) and goes out
through the one SMTP path (:func:`mailtriage.backends.imap.smtp.deliver`), traced on
the channel ``smtp:modes``.
"""

from __future__ import annotations

import email.utils
from datetime import timedelta
from email.message import EmailMessage

from mailtriage.backends.contract import reply_subject
from mailtriage.backends.errors import MailError
from mailtriage.backends.imap.smtp import SmtpEndpoint, deliver
from mailtriage.backends.outgoing import build_message
from mailtriage.backends.send_policy import SendRefusal, check_send
from mailtriage.core.inert import clean_lines
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.secrets import scrub
from mailtriage.modes.clock import Clock, stamp
from mailtriage.modes.config import ModesConfig, mail_password
from mailtriage.modes.errors import ModesError
from mailtriage.modes.store import Store

# Mails email writes on its own answer a participant's mail automatically (RFC 3834).
AUTOMATIC_PURPOSES = ("resume", "negotiation", "ack")


class MailUnavailable(ModesError):
    """SMTP could not take the mail now (connection, timeout, server refusal); retry later."""


def inert_text(text: object, limit: int = 500) -> str:
    """Text another party gave us, made safe to put in a mail: no control characters, bounded."""
    return clean_lines(text)[:limit]


@frozen_dataclass
class SendOutcome:
    sent: bool
    refusal: SendRefusal | None = None
    message_id: str | None = None


def send_policy_refusal(original: dict | None, *, config: ModesConfig, sent_recently: int) -> SendRefusal | None:
    """The one place the modes package asks the shared Principle 10 guard."""
    headers = (original.get("guard_headers") or []) if original else None
    return check_send(headers, authserv_id=config.authserv_id,
                      sent_recently=sent_recently, send_cap=config.send_cap)


class Mailer:
    def __init__(self, config: ModesConfig, store: Store, clock: Clock) -> None:
        self.config = config
        self.store = store
        self.clock = clock

    def sent_recently(self, exclude_ref: str | None = None) -> int:
        since = self.clock.now() - timedelta(hours=self.config.cap_window_hours)
        count = self.store.sends_since(since)
        if exclude_ref:
            row = self.store.mail(exclude_ref)
            if row and row["state"] in ("sending", "sent") and row["at"] >= stamp(since):
                count -= 1
        return count

    def new_message_id(self) -> str:
        return email.utils.make_msgid(domain=self.config.domain.encode("idna").decode("ascii"))

    async def send(self, ref: str, *, subject: str, body: str) -> SendOutcome:
        """Send the outbound mail recorded as ``ref`` (state ``queued`` or ``sending``).

        Runs Principle 10 against the mail it answers; a refusal is recorded on the row
        and returned (nothing is sent). Raises MailUnavailable when SMTP fails; the row
        then stays ``failed`` and a retry re-sends it with the same Message-ID.
        """
        row = self.store.mail(ref)
        if row is None:
            raise KeyError(ref)
        if row["state"] == "sent":
            return SendOutcome(True, None, row["message_id"])
        original = self.store.mail(row["in_reply_to"]) if row["in_reply_to"] else None
        refusal = send_policy_refusal(original, config=self.config, sent_recently=self.sent_recently(ref))
        if refusal is not None:
            with self.store.transaction():
                self.store.set_mail_state(ref, "refused", f"{refusal.reason}: {refusal.detail}")
            return SendOutcome(False, refusal)
        with self.store.transaction():
            self.store.set_mail_state(ref, "sending")
        message = self._compose(row, original, subject, body)
        try:
            await self._transmit(message, row)
        except MailUnavailable as exc:
            with self.store.transaction():
                self.store.set_mail_state(ref, "failed", str(exc))
            raise
        with self.store.transaction():
            self.store.set_mail_state(ref, "sent")
        return SendOutcome(True, None, row["message_id"])

    def _compose(self, row: dict, original: dict | None, subject: str, body: str) -> EmailMessage:
        extra = {"Auto-Submitted": "auto-replied"} if row["purpose"] in AUTOMATIC_PURPOSES else None
        return build_message(
            sender=row["sender"], to=[row["recipient"]],
            subject=subject if subject else reply_subject(original["subject"] if original else ""),
            body=body, message_id=row["message_id"], date=self.clock.now(),
            in_reply_to=original["message_id"] if original else None,
            references=[original["message_id"]] if original else (), extra_headers=extra)

    async def _transmit(self, message: EmailMessage, row: dict) -> None:
        smtp = self.config.smtp
        if smtp is None:
            raise MailUnavailable("no [smtp] server is configured")
        endpoint = SmtpEndpoint(name="modes", host=smtp.host, port=smtp.port, security=smtp.security,
                                username=smtp.username, password=mail_password(smtp), timeout=smtp.timeout,
                                tls_context=smtp.tls_context() if smtp.security != "plain" else None)
        try:
            await deliver(endpoint, message, sender=row["sender"], recipients=[row["recipient"]])
        except MailError as exc:
            raise MailUnavailable(scrub(f"SMTP {smtp.host}:{smtp.port}: {exc}")) from exc
