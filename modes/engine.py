"""The email side of the contract: receives messages and mail, keeps the thread, reacts.

:class:`ModesEngine` is what the HTTP server drives. Handling a message or a mail only
changes the durable record (one transaction each) and queues what must follow —
contract messages in the outbox, mails email writes itself — which :meth:`run_due`
then performs. So the answer to a message never waits on another party, and a crash
loses nothing that was acknowledged.

Message handling order: a repeated ``id`` gets the original response; then the envelope
and payload are validated; then the case, the handoff, ``seq`` (stale statuses are
ignored) and the status machine are checked.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import timedelta
from typing import Any

from mailtriage.backends.contract import reply_subject
from mailtriage.modes import statemachine as sm
from mailtriage.modes.addresses import MasAddress
from mailtriage.modes.callers import Caller, check_route, forbidden, may_send
from mailtriage.modes.client import ACCEPTED, REFUSED, ContractClient, Delivery, Outbox
from mailtriage.modes.clock import Clock, SystemClock
from mailtriage.modes.config import ModesConfig, ResourceType
from mailtriage.modes.errors import ModesError
from mailtriage.modes.envelope import CaseRef, Envelope, ProtocolError, build, new_id
from mailtriage.modes.inbox import Inbox, InboundMail, parse_inbound, read_fields
from mailtriage.modes.mailer import Mailer, MailUnavailable
from mailtriage.modes.master import MasterRole
from mailtriage.modes.protocol_messages import parse_message
from mailtriage.modes.slave import SlaveRole
from mailtriage.modes.store import Case, Handoff, Store

log = logging.getLogger("mailtriage.modes")

MAX_BODY = 1_000_000  # bytes of one incoming message
EMAIL_SENDS = ("handoff.request", "handoff.update", "case.intake", "case.message", "handoff.requested")


class CancelAcknowledged(ModesError):
    """A mode's ``cancelled`` after email's handoff.cancel ended the handoff: taken as an acknowledgement."""

    def __init__(self, handoff: Handoff) -> None:
        super().__init__(handoff.handoff_id)
        self.handoff = handoff


class ModesEngine:
    def __init__(self, config: ModesConfig, *, clock: Clock | None = None, store: Store | None = None,
                 status_url: str | None = None) -> None:
        self.config = config
        self.clock = clock or SystemClock()
        self.store = store or Store(config.database)
        self.client = ContractClient(timeout=config.http_timeout, attempts=config.http_attempts,
                                     backoff=config.http_backoff)
        self.outbox = Outbox(self.store, self.client, self.clock, retry_after=config.retry_after,
                             max_attempts=config.max_attempts, on_result=self._on_delivery)
        self.mailer = Mailer(config, self.store, self.clock)
        self.inbox = Inbox(config.mailbox) if config.mailbox else None
        self.status_url = status_url or config.status_url()
        self.master = MasterRole(self)
        self.slave = SlaveRole(self)
        self._inflight: dict[str, asyncio.Future] = {}
        self._work_lock = asyncio.Lock()
        self._poll_lock = asyncio.Lock()
        self._kicked: asyncio.Task | None = None
        self.auto_run = True  # after each message or poll, perform what it queued in the background

    def close(self) -> None:
        self.client.close()
        self.store.close()

    # -- incoming contract messages ----------------------------------------------------

    async def handle(self, raw: bytes, *, caller: Caller | None = None) -> tuple[int, dict[str, Any]]:
        """Process one POSTed body from ``caller`` (the server authenticated it; None: in-process,
        unchecked). Returns ``(http_status, response_body)``; never raises."""
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            error = ProtocolError("invalid-json", f"the body is not UTF-8 JSON: {exc}")
            return error.status, error.body()
        message_id = value.get("id") if isinstance(value, dict) else None
        usable_id = isinstance(message_id, str) and 0 < len(message_id) <= 200
        if usable_id:
            earlier = self.store.processed(message_id)
            if earlier is not None:
                if not may_send(caller, self.store.processed_type(message_id)):
                    error = forbidden(f"id {message_id!r} was used for a message {caller} may not send")
                    return error.status, error.body()
                return earlier
            if message_id in self._inflight:  # the same id again while the first is still being answered
                return await asyncio.shield(self._inflight[message_id])
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        if usable_id:
            self._inflight[message_id] = future
        try:
            try:
                status, body = await self._process(value, message_id if usable_id else None, caller)
            except Exception as exc:  # noqa: BLE001 - one bad message must not take the endpoint down
                log.exception("modes: message %s failed", message_id)
                status, body = 500, ProtocolError("internal-error", f"{type(exc).__name__}: {exc}").body()
            future.set_result((status, body))
        finally:
            if usable_id:
                self._inflight.pop(message_id, None)
            if not future.done():
                future.cancel()  # we were cancelled: a duplicate waiting on us gets no answer and may retry
        self.kick()
        return status, body

    async def _process(self, value: Any, message_id: str | None,
                       caller: Caller | None = None) -> tuple[int, dict[str, Any]]:
        try:
            envelope = parse_message(value)
        except ProtocolError as error:
            if message_id is not None:
                with self.store.transaction():
                    self.store.remember(message_id, str(value.get("type")), error.status, error.body(),
                                        self.clock.now())
            return error.status, error.body()
        try:  # not remembered: the same id with the right token is then processed
            check_route(envelope, caller, self.store)
        except ProtocolError as error:
            return error.status, error.body()
        if envelope.type == "mail.send":
            return await self.slave.on_mail_send(envelope)
        with self.store.transaction():
            try:
                status, body = 200, self._dispatch(envelope)
            except ProtocolError as error:
                status, body = error.status, error.body()
            self.store.remember(envelope.id, envelope.type, status, body, self.clock.now())
        return status, body

    def _dispatch(self, envelope: Envelope) -> dict[str, Any]:
        if envelope.type in EMAIL_SENDS:
            raise ProtocolError("unexpected-type", f"{envelope.type} goes from email to a mode or master; "
                                                   "this endpoint is the email side")
        if envelope.type == "case.assign":
            return self.slave.on_assign(envelope)
        case = self.case_of(envelope)
        if envelope.type == "handoff.status":
            role = self.master if case.role == "master" else self.slave
            try:
                return role.on_status(envelope, case)
            except CancelAcknowledged:
                return {"ok": True, "acknowledged": sm.CANCELLED}
        if case.role != "slave":
            raise ProtocolError("unexpected-type", f"{envelope.type} comes from an outside master, but email is the "
                                                   f"master of {case.address}")
        if envelope.type == "case.policy":
            return self.slave.on_policy(envelope, case)
        if envelope.type == "handoff.cancel":
            return self.slave.on_cancel(envelope, case)
        raise ProtocolError("unexpected-type", f"{envelope.type} is not accepted here")  # pragma: no cover

    def case_of(self, envelope: Envelope) -> Case:
        assert envelope.case is not None
        case = self.store.case(envelope.case.key)
        if case is None:
            raise ProtocolError("unknown-case", f"no case {envelope.case.address} (key {envelope.case.key})")
        return case

    # -- shared record keeping ---------------------------------------------------------

    def case_ref(self, case: Case) -> CaseRef:
        return CaseRef(case.address, case.key)

    def resource_type(self, name: str) -> ResourceType | None:
        return self.config.resource_type(name)

    def handoff_of(self, envelope: Envelope, case: Case) -> Handoff:
        handoff = self.store.handoff(envelope.get("handoff_id"))
        if handoff is None or handoff.case_key != case.key:
            raise ProtocolError("unknown-handoff", f"no handoff {envelope.get('handoff_id')!r} on {case.address}")
        return handoff

    def accept_status(self, envelope: Envelope, handoff: Handoff) -> bool:
        """Check an incoming handoff.status. False: stale (ignore). Raises ProtocolError."""
        status, seq = envelope.get("status"), envelope.get("seq")
        if handoff.status == sm.NEW or not handoff.forwarded:
            raise ProtocolError("invalid-transition", f"handoff {handoff.handoff_id} was never sent to a mode "
                                                      "(transfers blocked); no status can follow")
        try:
            sm.check_reporter(status, timeout_owner=False)
        except sm.NotTimeoutOwner as exc:
            raise ProtocolError("not-timeout-owner", str(exc)) from exc
        if handoff.last_seq is not None and seq <= handoff.last_seq:
            return False
        if status == sm.CANCELLED:
            # §4: cancelled comes after handoff.cancel. A mode cancelling on its own is
            # refused; after our cancel (which already ended the handoff) it is the
            # mode's acknowledgement.
            if not self.store.has_queued(handoff.handoff_id, "handoff.cancel"):
                raise ProtocolError("invalid-transition", f"handoff {handoff.handoff_id}: {handoff.status} -> "
                                                          "cancelled is not allowed: a mode reports cancelled only "
                                                          "after email sent handoff.cancel")
            if sm.is_terminal(handoff.status):
                raise CancelAcknowledged(handoff)
        try:
            sm.check_transition(handoff.status, status)
        except sm.InvalidTransition as exc:
            raise ProtocolError("invalid-transition", f"handoff {handoff.handoff_id}: {exc}") from exc
        return True

    def record_status(self, handoff: Handoff, status: str, *, source: str, seq: int | None = None,
                      fields: dict[str, Any] | None = None) -> Handoff:
        """Record a status the table allows (checked again here: nothing bypasses the machine)."""
        sm.check_transition(handoff.status, status)
        now = self.clock.now()
        changes: dict[str, Any] = {"status": status}
        if seq is not None:
            changes["last_seq"] = seq
        self.store.update_handoff(handoff.handoff_id, now, **changes)
        self.store.add_status(handoff_id=handoff.handoff_id, case_key=handoff.case_key, status=status, seq=seq,
                              source=source, fields=fields or {}, now=now)
        if sm.is_terminal(status):
            # A request or update still waiting for the mode has nothing left to start.
            self.store.withdraw(handoff.handoff_id, ("handoff.request", "handoff.update"), now)
        return self.store.handoff(handoff.handoff_id)  # type: ignore[return-value]

    def status_fields(self, envelope: Envelope) -> dict[str, Any]:
        return {k: envelope.get(k) for k in ("needs", "at", "outcome", "reason", "detail") if k in envelope.body}

    def record_mode_status(self, envelope: Envelope, case: Case) -> tuple[Handoff, str, dict[str, Any]] | None:
        """Record the handoff.status a mode sent on ``case``: (handoff, status, fields), or None
        when it is stale. Raises ProtocolError (unknown handoff, a transition the machine refuses)
        and CancelAcknowledged (the mode's cancelled after our handoff.cancel)."""
        handoff = self.handoff_of(envelope, case)
        try:
            accepted = self.accept_status(envelope, handoff)
        except CancelAcknowledged:
            now = self.clock.now()
            self.store.update_handoff(handoff.handoff_id, now, last_seq=envelope.get("seq"))
            self.store.note("cancel-acknowledged", f"the {handoff.mode} mode confirmed handoff.cancel "
                            f"(seq {envelope.get('seq')}); the handoff stays {handoff.status}", now,
                            case_key=case.key, handoff_id=handoff.handoff_id)
            raise
        if not accepted:
            return None
        status = envelope.get("status")
        fields = self.status_fields(envelope)
        handoff = self.record_status(handoff, status, source="mode", seq=envelope.get("seq"), fields=fields)
        return handoff, status, fields

    def enqueue(self, message: dict[str, Any], url: str, *, handoff_id: str | None = None,
                intake_ref: str | None = None) -> None:
        self.store.enqueue(message, url, self.clock.now(), handoff_id=handoff_id, intake_ref=intake_ref)

    def queue_mail(self, case: Case, *, purpose: str, subject: str, body: str, in_reply_to: str | None,
                   handoff_id: str | None = None) -> str | None:
        """Queue a mail email writes itself to the case's participant (sent by :meth:`send_queued_mails`)."""
        if not case.participant:
            self.store.note("mail-not-queued", f"{purpose} mail: the case has no participant address",
                            self.clock.now(), case_key=case.key, handoff_id=handoff_id)
            return None
        ref = new_id("m")
        self.store.add_mail(ref=ref, direction="out", message_id=self.mailer.new_message_id(), now=self.clock.now(),
                            state="queued", case_key=case.key, sender=MasAddress.parse(case.address).ascii,
                            recipient=case.participant, subject=subject, in_reply_to=in_reply_to, purpose=purpose,
                            handoff_id=handoff_id, body=body)
        return ref

    def request_mail(self, case: Case, handoff: Handoff | None = None) -> dict[str, Any] | None:
        """The participant mail a send answers: the one that asked for the handoff, else the latest."""
        if handoff is not None and handoff.request_ref:
            mail = self.store.mail(handoff.request_ref)
            if mail is not None:
                return mail
        return self.store.latest_inbound(case.key)

    def queue_negotiation(self, case: Case, handoff: Handoff, needs: list[str]) -> None:
        original = self.request_mail(case, handoff)
        lines = "\n".join(f"{name}: ..." for name in needs)
        body = (f"To continue {case.address} by {handoff.mode}, we need: {', '.join(needs)}.\n"
                f"Reply to this mail with one line per item, for example:\n\n{lines}\n")
        self.queue_mail(case, purpose="negotiation", subject=reply_subject(original["subject"] if original else ""),
                        body=body, in_reply_to=original["ref"] if original else None, handoff_id=handoff.handoff_id)

    def relay_details(self, case: Case, mail: InboundMail, mail_ref: str) -> bool:
        """A reply that supplies what a negotiating handoff needs becomes handoff.update."""
        for handoff in reversed(self.store.handoffs(case.key)):
            if handoff.status != "negotiating" or not handoff.endpoint or not handoff.forwarded:
                continue
            details = read_fields(mail.text, handoff.needs)
            if not details:
                return False
            message = build("handoff.update", case=self.case_ref(case), handoff_id=handoff.handoff_id,
                            details=details)
            self.enqueue(message, handoff.endpoint, handoff_id=handoff.handoff_id)
            self.store.note("details-relayed", f"{', '.join(sorted(details))} from {mail_ref} sent to the "
                            f"{handoff.mode} mode as handoff.update", self.clock.now(), case_key=case.key,
                            handoff_id=handoff.handoff_id)
            return True
        return False

    def open_handoff(self, case: Case, mode: str) -> Handoff | None:
        for handoff in self.store.handoffs(case.key):
            if handoff.mode == mode and not sm.is_terminal(handoff.status) and handoff.status != sm.NEW:
                return handoff
        return None

    # -- inbound mail --------------------------------------------------------------

    async def poll_mailbox(self) -> int:
        """Read new mail from the mailbox and record it. Returns how many mails were new.

        Raises MailboxError when the mailbox cannot be read (nothing is lost: the cursor
        only moves past mail that was recorded).
        """
        if self.inbox is None:
            return 0
        async with self._poll_lock:
            cursor = self.store.cursor(self.inbox.name)
            fetched = await asyncio.to_thread(self.inbox.fetch_after, cursor)
            uidvalidity = fetched.uidvalidity
            if fetched.baseline is not None:
                # First start, or the mailbox was reset: remember where it stands, process nothing.
                with self.store.transaction():
                    self.store.set_cursor(self.inbox.name, uidvalidity, fetched.baseline)
                log.info("modes: %s: silent baseline at UIDVALIDITY %s, UID %s%s", self.inbox.name, uidvalidity,
                         fetched.baseline, "" if cursor is None else f" (UIDVALIDITY was {cursor[0]})")
                return 0
            new = 0
            for uid, raw in fetched.items:
                mail = parse_inbound(raw, uid=uid, uidvalidity=uidvalidity, mailbox=self.inbox.server.folder)
                try:
                    with self.store.transaction():
                        if self.store.inbound_by_message_id(mail.message_id) is None:
                            self.on_inbound(mail)
                            new += 1
                        self.store.set_cursor(self.inbox.name, uidvalidity, uid)
                except Exception as exc:  # noqa: BLE001 - one mail must not stop the others
                    log.exception("modes: mail uid %s failed", uid)
                    with self.store.transaction():
                        self.store.note("mail-failed", f"uid {uid} {mail.message_id}: {type(exc).__name__}: {exc}",
                                        self.clock.now())
                        self.store.set_cursor(self.inbox.name, uidvalidity, uid)
        self.kick()
        return new

    def on_inbound(self, mail: InboundMail) -> None:
        """Record one new mail and queue the reactions of the role it belongs to."""
        address = mail.mas_address(self.config.domain)
        rtype = self.resource_type(address.resource_type) if address else None
        if address is None or rtype is None:
            ref = self.record_mail(mail)
            why = "no MAS address of this domain" if address is None else \
                f"resource type {address.resource_type!r} is not configured"
            self.store.note("unrouted", f"{mail.message_id} ({ref}): {why}", self.clock.now())
            return
        case = None
        if not address.is_intake:
            case = self.store.case(address.without_mode().key)
        role = case.role if case else rtype.role
        (self.master if role == "master" else self.slave).on_inbound(mail, address, rtype, case)

    def record_mail(self, mail: InboundMail, *, case_key: str | None = None, intake_ref: str | None = None,
                    address: MasAddress | None = None) -> str:
        """Record an inbound mail reference; for a ``!MODE`` mail also the mode's fields from its text."""
        details = None
        if address is not None and address.mode:
            rtype = self.resource_type(address.resource_type)
            endpoint = rtype.modes.get(address.mode) if rtype else None
            details = read_fields(mail.text, endpoint.fields) if endpoint else {}
        ref = new_id("m")
        self.store.add_mail(ref=ref, direction="in", message_id=mail.message_id, now=self.clock.now(),
                            state="recorded", case_key=case_key, intake_ref=intake_ref, mailbox=mail.mailbox,
                            uidvalidity=mail.uidvalidity, uid=mail.uid, sender=mail.sender,
                            recipient=", ".join(mail.recipients), subject=mail.subject,
                            guard_headers=mail.guard_headers, details=details,
                            detail="; ".join(mail.notes) or None)
        return ref

    # -- what was queued: deadlines, outbox, mails ---------------------------------------

    def kick(self) -> None:
        """Perform queued work soon, in the background (no-op without a running loop)."""
        if not self.auto_run:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._kicked is None or self._kicked.done():
            self._kicked = loop.create_task(self.settle())

    async def run_due(self) -> None:
        """One pass: deadlines past the clock, due outbox messages, queued mails."""
        async with self._work_lock:
            self.master.check_deadlines()  # the slave role has none: timeouts belong to the master
            await self.outbox.deliver_due()
            await self.send_queued_mails()

    async def settle(self, rounds: int = 20) -> None:
        """Run passes until nothing is due now (what one pass queues, the next performs)."""
        for _ in range(rounds):
            await self.run_due()
            now = self.clock.now()
            if not self.store.due(now, limit=1) and not self.store.queued_mails(now):
                return

    async def send_queued_mails(self) -> None:
        for row in self.store.queued_mails(self.clock.now()):
            try:
                outcome = await self.mailer.send(row["ref"], subject=row["subject"] or "", body=row["body"] or "")
            except MailUnavailable as exc:
                with self.store.transaction():
                    self.store.set_mail_state(row["ref"], "queued", str(exc),
                                              next_attempt=self.clock.now() + timedelta(seconds=self.config.retry_after))
                continue
            if outcome.refusal is not None:
                with self.store.transaction():
                    self.store.note("send-refused", f"{row['purpose']} mail to {row['recipient']} not sent: "
                                    f"{outcome.refusal.reason} ({outcome.refusal.detail})", self.clock.now(),
                                    case_key=row["case_key"], handoff_id=row["handoff_id"])

    def _on_delivery(self, item: dict[str, Any], delivery: Delivery) -> None:
        """The receiver answered (or never will): update the record. Runs inside a transaction."""
        if delivery.outcome == ACCEPTED:
            return
        now = self.clock.now()
        what = "refused" if delivery.outcome == REFUSED else "undeliverable"
        detail = f"{item['type']} {item['id']} to {item['url']} {what}: {delivery.error}"
        self.store.note(f"message-{what}", detail, now, case_key=item["case_key"], intake_ref=item["intake_ref"],
                        handoff_id=item["handoff_id"])
        if item["type"] == "case.intake" and item["intake_ref"]:
            self.store.set_intake(item["intake_ref"], "rejected" if delivery.outcome == REFUSED else "undeliverable",
                                  detail=detail)
        if item["type"] == "handoff.request" and item["handoff_id"]:
            handoff = self.store.handoff(item["handoff_id"])
            if handoff is not None and sm.allowed(handoff.status, "failed"):
                role = self.master if handoff.role == "master" else self.slave
                role.end_by_email(handoff, "failed", {"detail": f"the mode endpoint did not take the request ({what})"})
