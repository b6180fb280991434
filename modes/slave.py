"""Email as slave (§3.2): the outside master owns the control flow, case ids and timeouts.

* Intake mail (no case yet) is reported as ``case.intake`` with an ``intake_ref`` and
  stays pending until the master's ``case.assign`` gives the resource id; email never
  invents a case id in this role. Mail to a resource address the master never assigned
  is intake mail too.
* Mail on a case is reported as ``case.message``.
* Email sends only on ``mail.send`` (a reply to a message recorded on the case, to its
  sender), unless the case policy sets ``autonomous_send``: then it also acknowledges
  the assignment and asks negotiation questions itself. Principle 10 holds for all.
* ``transfers``: ``block`` reports a ``!MODE`` request as ``handoff.requested`` with
  ``forwarded: false`` and nothing else; a webhook gets ``handoff.request``, and every
  status from it is relayed to the master (with email's own ``seq`` per handoff).
* Email sets no deadline and never records ``timed-out``; the master may end a handoff
  with ``handoff.cancel``, which email records as ``cancelled`` and forwards to the mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mailtriage.backends.contract import reply_subject
from mailtriage.modes import statemachine as sm
from mailtriage.modes.addresses import AddressError, MasAddress
from mailtriage.modes.config import ResourceType
from mailtriage.modes.envelope import Envelope, ProtocolError, build, new_id, ok
from mailtriage.modes.inbox import InboundMail, mail_event
from mailtriage.modes.mailer import MailUnavailable
from mailtriage.modes.store import Case, Handoff

if TYPE_CHECKING:
    from mailtriage.modes.engine import ModesEngine

ROLE = "slave"


class SlaveRole:
    def __init__(self, engine: "ModesEngine") -> None:
        self.engine = engine
        self.store = engine.store

    # -- policy --------------------------------------------------------------------

    def policy(self, case: Case) -> dict[str, Any]:
        """The effective policy: what the master set, the type's defaults for the rest."""
        rtype = self.engine.resource_type(case.resource_type)
        autonomous = case.autonomous_send if case.autonomous_send is not None else \
            (rtype.autonomous_send if rtype else False)
        transfers = case.transfers if case.transfers is not None else (rtype.transfers if rtype else "block")
        return {"autonomous_send": autonomous, "transfers": transfers}

    @property
    def master_url(self) -> str | None:
        return self.engine.config.master_url

    def to_master(self, message: dict[str, Any], **refs: Any) -> None:
        if not self.master_url:
            self.store.note("no-master", f"{message['type']} {message['id']} not sent: no [master] url configured",
                            self.engine.clock.now(), case_key=(message.get("case") or {}).get("key"),
                            intake_ref=refs.get("intake_ref"))
            return
        self.engine.enqueue(message, self.master_url, **refs)

    # -- inbound mail --------------------------------------------------------------

    def on_inbound(self, mail: InboundMail, address: MasAddress, rtype: ResourceType, case: Case | None) -> None:
        engine = self.engine
        if case is None:
            intake_ref = new_id("in")
            ref = engine.record_mail(mail, intake_ref=intake_ref, address=address)
            self.store.add_intake(intake_ref=intake_ref, resource_type=rtype.name, requested_mode=address.mode,
                                  message_ref=ref, now=engine.clock.now())
            if not address.is_intake:
                self.store.note("unknown-case", f"mail to {address.without_mode().canonical}, which the master never "
                                "assigned, reported as intake", engine.clock.now(), intake_ref=intake_ref)
            self.to_master(build("case.intake", intake_ref=intake_ref, resource_type=rtype.name,
                                 event=mail_event(mail, address, ref), requested_mode=address.mode),
                           intake_ref=intake_ref)
            return
        ref = engine.record_mail(mail, case_key=case.key, address=address)
        self.to_master(build("case.message", case=engine.case_ref(case), event=mail_event(mail, address, ref),
                             message_ref=ref))
        if address.mode:
            self.handle_mode_request(case, address.mode, ref)
        elif self.policy(case)["autonomous_send"]:
            engine.relay_details(case, mail, ref)

    def handle_mode_request(self, case: Case, mode: str, request_ref: str | None) -> None:
        engine, now = self.engine, self.engine.clock.now()
        if engine.open_handoff(case, mode):
            self.store.note("handoff-open", f"{mode} already has an open handoff on {case.address}",
                            now, case_key=case.key)
            return
        handoff_id = new_id("h")
        transfers = self.policy(case)["transfers"]
        if transfers == "block":
            self.store.add_handoff(handoff_id=handoff_id, case_key=case.key, mode=mode, role=ROLE, status=sm.NEW,
                                   now=now, endpoint=None, forwarded=False, request_ref=request_ref)
            self.store.note("transfer-blocked", f"{mode} requested; the case policy blocks transfers", now,
                            case_key=case.key, handoff_id=handoff_id)
            self.to_master(build("handoff.requested", case=engine.case_ref(case), handoff_id=handoff_id, mode=mode,
                                 forwarded=False), handoff_id=handoff_id)
            return
        webhook = transfers["webhook"]
        self.store.add_handoff(handoff_id=handoff_id, case_key=case.key, mode=mode, role=ROLE, status=sm.NEW,
                               now=now, endpoint=webhook, forwarded=True, request_ref=request_ref)
        handoff = engine.record_status(self.store.handoff(handoff_id), "requested", source="email")  # type: ignore[arg-type]
        self.to_master(build("handoff.requested", case=engine.case_ref(case), handoff_id=handoff_id, mode=mode,
                             forwarded=True), handoff_id=handoff_id)
        if not case.participant:
            self.end_by_email(handoff, "refused", {"reason": "declined",
                                                   "detail": "the request mail has no sender address to continue with"})
            return
        request = self.store.mail(request_ref) if request_ref else None
        engine.enqueue(build("handoff.request", case=engine.case_ref(case), handoff_id=handoff_id, mode=mode,
                             details=(request or {}).get("details") or {}, status_url=engine.status_url,
                             participant={"address": case.participant}), webhook, handoff_id=handoff_id)

    # -- messages from the master ------------------------------------------------------

    def on_assign(self, envelope: Envelope) -> dict[str, Any]:
        engine, now = self.engine, self.engine.clock.now()
        intake = self.store.intake(envelope.get("intake_ref"))
        if intake is None:
            raise ProtocolError("unknown-intake", f"no intake {envelope.get('intake_ref')!r}")
        try:
            address = MasAddress.resource(intake["resource_type"], envelope.get("resource_id"), engine.config.domain)
        except AddressError as exc:
            raise ProtocolError("invalid-message", f"resource_id: {exc}") from exc
        if intake["state"] == "assigned":
            if intake["case_key"] == address.key:
                return ok(case={"address": address.canonical, "key": address.key})
            raise ProtocolError("already-assigned", f"intake {intake['intake_ref']} is already {intake['case_key']}")
        policy = envelope.get("policy") or {}
        case = self.store.case(address.key)
        if case is not None and case.role != ROLE:
            raise ProtocolError("already-assigned", f"{case.address} exists with email as its master")
        first = self.store.mail(intake["message_ref"])
        if case is None:
            case = self.store.add_case(key=address.key, address=address.canonical,
                                       resource_type=intake["resource_type"], resource_id=address.resource_id or "",
                                       role=ROLE, participant=(first or {}).get("sender") or None, now=now,
                                       intake_ref=intake["intake_ref"],
                                       autonomous_send=policy.get("autonomous_send"), transfers=policy.get("transfers"))
        elif policy:
            self.store.set_policy(case.key, autonomous_send=policy.get("autonomous_send"),
                                  transfers=policy.get("transfers"))
            case = self.store.case(case.key)  # type: ignore[assignment]
        self.store.attach_mails_to_case(intake["intake_ref"], case.key)  # type: ignore[union-attr]
        self.store.set_intake(intake["intake_ref"], "assigned", case_key=case.key)  # type: ignore[union-attr]
        if self.policy(case)["autonomous_send"]:  # type: ignore[arg-type]
            self._queue_ack(case, first)  # type: ignore[arg-type]
        if intake["requested_mode"]:
            self.handle_mode_request(case, intake["requested_mode"], intake["message_ref"])  # type: ignore[arg-type]
        return ok(case={"address": case.address, "key": case.key})  # type: ignore[union-attr]

    def _queue_ack(self, case: Case, first: dict[str, Any] | None) -> None:
        body = (f"We received your message. It is now {case.address}.\n"
                f"Reply to this mail to add to it.\n")
        self.engine.queue_mail(case, purpose="ack", subject=reply_subject(first["subject"] if first else ""),
                               body=body, in_reply_to=first["ref"] if first else None)

    def on_policy(self, envelope: Envelope, case: Case) -> dict[str, Any]:
        self.store.set_policy(case.key, autonomous_send=envelope.get("autonomous_send"),
                              transfers=envelope.get("transfers"))
        return ok(policy=self.policy(self.store.case(case.key)))  # type: ignore[arg-type]

    def on_cancel(self, envelope: Envelope, case: Case) -> dict[str, Any]:
        engine = self.engine
        handoff = engine.handoff_of(envelope, case)
        try:
            sm.check_transition(handoff.status, "cancelled")
        except sm.InvalidTransition as exc:
            raise ProtocolError("invalid-transition", f"handoff {handoff.handoff_id}: {exc}") from exc
        reason = envelope.get("reason")
        engine.record_status(handoff, "cancelled", source="master", fields={"reason": reason})
        if handoff.forwarded and handoff.endpoint:
            engine.enqueue(build("handoff.cancel", case=engine.case_ref(case), handoff_id=handoff.handoff_id,
                                 reason=reason), handoff.endpoint, handoff_id=handoff.handoff_id)
        return ok(recorded="cancelled")

    async def on_mail_send(self, envelope: Envelope) -> tuple[int, dict[str, Any]]:
        """mail.send: a reply to a recorded message, to its sender, if Principle 10 allows it.

        Two steps around the SMTP call: the outbound mail is recorded (with the request
        id) before, and the response remembered after. A retry after a crash in between
        finds the recorded mail and sends it again with the same Message-ID.
        """
        engine, now = self.engine, self.engine.clock.now()
        store = self.store
        with store.transaction():
            try:
                case = engine.case_of(envelope)
                if case.role != ROLE:
                    raise ProtocolError("unexpected-type", f"mail.send comes from an outside master, but email is "
                                                           f"the master of {case.address}")
            except ProtocolError as error:
                store.remember(envelope.id, envelope.type, error.status, error.body(), now)
                return error.status, error.body()
            original = store.mail(envelope.get("in_reply_to"))
            if original is None or original["direction"] != "in" or original["case_key"] != case.key:
                body = {"ok": False, "error": "refused", "reason": "unknown-message",
                        "detail": f"no message {envelope.get('in_reply_to')!r} recorded on {case.address}"}
                store.remember(envelope.id, envelope.type, 403, body, now)
                return 403, body
            row = store.outbound_for_request(envelope.id)
            if row is None:
                ref = new_id("m")
                store.add_mail(ref=ref, direction="out", message_id=engine.mailer.new_message_id(), now=now,
                               state="queued", case_key=case.key, sender=MasAddress.parse(case.address).ascii,
                               recipient=original["sender"] or "", subject=envelope.get("subject"),
                               in_reply_to=original["ref"], purpose="mail.send", request_id=envelope.id)
            else:
                ref = row["ref"]
        try:
            outcome = await engine.mailer.send(ref, subject=envelope.get("subject"), body=envelope.get("body"))
        except MailUnavailable as exc:
            return 503, {"ok": False, "error": "mail-unavailable", "detail": str(exc)}
        if outcome.refusal is not None:
            status, body = 403, {"ok": False, "error": "refused", "reason": outcome.refusal.reason,
                                 "detail": outcome.refusal.detail}
        else:
            status, body = 200, ok(sent=True, message_ref=ref, message_id=outcome.message_id)
        with store.transaction():
            store.remember(envelope.id, envelope.type, status, body, engine.clock.now())
        return status, body

    # -- statuses from the mode (through the webhook) ------------------------------------

    def on_status(self, envelope: Envelope, case: Case) -> dict[str, Any]:
        engine = self.engine
        recorded = engine.record_mode_status(envelope, case)
        if recorded is None:
            return ok(ignored="stale")
        handoff, status, fields = recorded
        self.relay(case, handoff, status, fields)
        if status == "negotiating":
            self.store.update_handoff(handoff.handoff_id, engine.clock.now(), needs=fields["needs"])
            if self.policy(case)["autonomous_send"]:
                engine.queue_negotiation(case, self.store.handoff(handoff.handoff_id), fields["needs"])  # type: ignore[arg-type]
        return ok(recorded=status)

    def relay(self, case: Case, handoff: Handoff, status: str, fields: dict[str, Any]) -> None:
        seq = handoff.relay_seq + 1
        self.store.update_handoff(handoff.handoff_id, self.engine.clock.now(), relay_seq=seq)
        self.to_master(build("handoff.status", case=self.engine.case_ref(case), handoff_id=handoff.handoff_id,
                             seq=seq, status=status, **fields), handoff_id=handoff.handoff_id)

    def end_by_email(self, handoff: Handoff, status: str, fields: dict[str, Any]) -> None:
        """A status email itself must record (the webhook refused the request): relay it."""
        handoff = self.engine.record_status(handoff, status, source="email", fields=fields)
        case = self.store.case(handoff.case_key)
        if case is not None:
            self.relay(case, handoff, status, fields)
