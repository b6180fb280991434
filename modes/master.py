"""Email as master (§3.1): email owns the case, the thread and the timeouts.

* ``!MODE`` on an intake or resource address creates or finds the case and sends
  ``handoff.request`` to the endpoint configured for that type and mode; with no
  endpoint, or a mode the type's statute does not enable, email records ``requested``
  then ``refused`` itself and continues by email.
* Each handoff gets a deadline (``deadline_seconds``, pushed out by a ``scheduled``
  status whose ``at`` lies beyond it). Past it without a terminal status, email records
  ``timed-out``, sends ``handoff.cancel`` and resumes by email.
* ``negotiating`` makes email ask the participant for the ``needs`` by mail; a reply on
  the case address that supplies them goes to the mode as ``handoff.update``.
* Every terminal status queues one mail to the participant from the case address
  saying what happened (Principle 10 applies when it is sent).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from mailtriage.backends.contract import reply_subject
from mailtriage.modes import statemachine as sm
from mailtriage.modes.addresses import MasAddress
from mailtriage.modes.clock import stamp
from mailtriage.modes.config import ResourceType
from mailtriage.modes.envelope import Envelope, build, new_id, ok
from mailtriage.modes.inbox import InboundMail
from mailtriage.modes.mailer import inert_text
from mailtriage.modes.store import Case, Handoff

if TYPE_CHECKING:
    from mailtriage.modes.engine import ModesEngine


ROLE = "master"

_ENDINGS = {
    "completed": "Your {mode} request for {case} is completed.",
    "failed": "Your {mode} request for {case} could not be completed.",
    "refused": "The {mode} mode could not take your request for {case}.",
    "expired": "Your {mode} request for {case} expired.",
    "cancelled": "Your {mode} request for {case} was cancelled.",
    "timed-out": "We did not hear back from the {mode} mode in time, so your request for {case} was cancelled.",
}


class MasterRole:
    def __init__(self, engine: "ModesEngine") -> None:
        self.engine = engine
        self.store = engine.store

    # -- inbound mail --------------------------------------------------------------

    def on_inbound(self, mail: InboundMail, address: MasAddress, rtype: ResourceType, case: Case | None) -> None:
        engine, now = self.engine, self.engine.clock.now()
        if case is None:
            case = self._new_case(rtype, mail)
            if not address.is_intake:
                self.store.note("unknown-case", f"mail to {address.without_mode().canonical}, which is no case; "
                                f"opened {case.address}", now, case_key=case.key)
        ref = engine.record_mail(mail, case_key=case.key, address=address)
        if not case.participant and mail.sender:
            self.store.set_participant(case.key, mail.sender)
            case = self.store.case(case.key)  # type: ignore[assignment]
        if address.mode:
            self.request_handoff(case, address.mode, rtype, ref)
        else:
            engine.relay_details(case, mail, ref)

    def _new_case(self, rtype: ResourceType, mail: InboundMail) -> Case:
        while True:
            number = self.store.next_number(f"case:{rtype.name}")
            address = MasAddress.resource(rtype.name, f"{rtype.id_prefix}-{number}", self.engine.config.domain)
            if self.store.case(address.key) is None:
                break
        return self.store.add_case(key=address.key, address=address.canonical, resource_type=rtype.name,
                                   resource_id=address.resource_id or "", role=ROLE, participant=mail.sender or None,
                                   now=self.engine.clock.now())

    def request_handoff(self, case: Case, mode: str, rtype: ResourceType, request_ref: str) -> None:
        engine, now = self.engine, self.engine.clock.now()
        if engine.open_handoff(case, mode):
            self.store.note("handoff-open", f"{mode} already has an open handoff on {case.address}; "
                            f"{request_ref} did not start another", now, case_key=case.key)
            return
        handoff_id = new_id("h")
        endpoint = rtype.modes.get(mode)
        refusal = None
        if not case.participant:
            refusal = ("declined", "the request mail has no sender address to continue with")
        elif mode not in rtype.enabled_modes:
            refusal = ("mode-not-enabled", f"the statute of {rtype.name} does not enable {mode}")
        elif endpoint is None or not endpoint.endpoint:
            refusal = ("mode-unavailable", f"no endpoint is configured for {rtype.name} / {mode}")
        deadline = now + timedelta(seconds=rtype.deadline_seconds)
        self.store.add_handoff(handoff_id=handoff_id, case_key=case.key, mode=mode, role=ROLE, status=sm.NEW,
                               now=now, endpoint=None if refusal else endpoint.endpoint,  # type: ignore[union-attr]
                               deadline=None if refusal else deadline, request_ref=request_ref)
        handoff = engine.record_status(self.store.handoff(handoff_id), "requested", source="email")  # type: ignore[arg-type]
        if refusal:
            self.end_by_email(handoff, "refused", {"reason": refusal[0], "detail": refusal[1]})
            return
        details = (self.store.mail(request_ref) or {}).get("details") or {}
        message = build("handoff.request", case=engine.case_ref(case), handoff_id=handoff_id, mode=mode,
                        details=details, status_url=engine.status_url, participant={"address": case.participant})
        engine.enqueue(message, endpoint.endpoint, handoff_id=handoff_id)  # type: ignore[union-attr,arg-type]

    # -- statuses from the mode ------------------------------------------------------

    def on_status(self, envelope: Envelope, case: Case) -> dict[str, Any]:
        engine = self.engine
        recorded = engine.record_mode_status(envelope, case)
        if recorded is None:
            return ok(ignored="stale")
        handoff, status, fields = recorded
        if status == "negotiating":
            self.store.update_handoff(handoff.handoff_id, engine.clock.now(), needs=fields["needs"])
            engine.queue_negotiation(case, handoff, fields["needs"])
        elif status == "scheduled" and "at" in fields:
            self._extend_deadline(handoff, datetime.fromisoformat(fields["at"]))
        elif sm.is_terminal(status):
            self.queue_resume(case, handoff, status, fields)
        return ok(recorded=status)

    def _extend_deadline(self, handoff: Handoff, at: datetime) -> None:
        rtype = self.engine.resource_type(self.store.case(handoff.case_key).resource_type)  # type: ignore[union-attr]
        seconds = rtype.deadline_seconds if rtype else 3600.0
        wanted = at + timedelta(seconds=seconds)
        if handoff.deadline is None or stamp(wanted) > handoff.deadline:
            self.store.update_handoff(handoff.handoff_id, self.engine.clock.now(), deadline=wanted)

    # -- email's own endings -----------------------------------------------------------

    def end_by_email(self, handoff: Handoff, status: str, fields: dict[str, Any]) -> None:
        """Record a terminal status email decides itself (refused, failed, timed-out) and resume."""
        handoff = self.engine.record_status(handoff, status, source="email", fields=fields)
        case = self.store.case(handoff.case_key)
        if case is not None:
            self.queue_resume(case, handoff, status, fields)

    def check_deadlines(self) -> None:
        """Handoffs past their deadline without a terminal status: timed-out, cancel, resume."""
        engine = self.engine
        now = engine.clock.now()
        for handoff in self.store.open_handoffs_past(now, sm.TERMINAL):
            if handoff.role != ROLE or handoff.status == sm.NEW:
                continue
            with self.store.transaction():
                sm.check_reporter(sm.TIMED_OUT, timeout_owner=True)
                self.end_by_email(handoff, sm.TIMED_OUT, {"detail": f"no terminal status by {handoff.deadline}"})
                case = self.store.case(handoff.case_key)
                if handoff.endpoint and case is not None:
                    message = build("handoff.cancel", case=engine.case_ref(case), handoff_id=handoff.handoff_id,
                                    reason="timed-out")
                    engine.enqueue(message, handoff.endpoint, handoff_id=handoff.handoff_id)

    def queue_resume(self, case: Case, handoff: Handoff, status: str, fields: dict[str, Any]) -> None:
        """One mail to the participant from the case address saying what happened."""
        engine = self.engine
        if self.store.outbound_mail_for(handoff.handoff_id, "resume") is not None:
            return  # one resume mail per handoff, whatever happens twice
        text = _ENDINGS[status].format(mode=handoff.mode, case=case.address)
        if fields.get("reason"):
            text += f"\nReason: {inert_text(fields['reason'])}"
        if fields.get("detail"):
            text += f"\nDetail: {inert_text(fields['detail'])}"
        text += f"\n\nWe continue by email: reply to this mail to add to {case.address}.\n"
        original = engine.request_mail(case, handoff)
        engine.queue_mail(case, purpose="resume", subject=reply_subject(original["subject"] if original else ""),
                          body=text, in_reply_to=original["ref"] if original else None, handoff_id=handoff.handoff_id)

