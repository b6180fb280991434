"""Contract rules checked exhaustively over the wire, in both roles, against the real endpoint:
every invalid message of conformance/messages/invalid.yaml and every transition the §4
table forbids (from each status a handoff can be in on the email side)."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.modes.conformance_data import CONFORMANCE, load_yaml
from tests.modes.harness import DOMAIN, Harness

TABLE = load_yaml(CONFORMANCE / "transitions.yaml")
INVALID = load_yaml(CONFORMANCE / "messages" / "invalid.yaml")


@pytest.mark.parametrize("role", ["master", "slave"])
def test_every_invalid_message_is_refused_with_its_code(make_harness, role):
    harness = make_harness(role)
    for entry in INVALID:
        status, body = harness.post(entry["message"])
        assert (status, body["error"]) == (entry["status"], entry["error"]), entry["name"]
        assert body["ok"] is False and isinstance(body["detail"], str) and body["detail"], entry["name"]
        if entry.get("detail"):
            assert entry["detail"] in body["detail"], entry["name"]
    assert harness.mode.received == [] and harness.master.received == []


class Handoffs:
    """Makes handoffs on the email side in a given role and drives them to a status."""

    def __init__(self, harness: Harness) -> None:
        self.h = harness
        self.seq: dict[str, int] = {}
        self.made = 0

    def new(self) -> tuple[dict, str]:
        self.made += 1
        h = self.h
        if h.role == "master":
            h.deliver(sender=f"p{self.made}@example.com", to=f"ticket!callback@{DOMAIN}", subject="Call")
        else:
            h.deliver(sender=f"p{self.made}@example.com", to=f"ticket!callback@{DOMAIN}", subject="Call")
            intake = h.master.take_type("case.intake").body
            status, _ = h.post({"mas_modes_version": "0.1", "type": "case.assign", "id": f"assign-{self.made}",
                                "intake_ref": intake["intake_ref"], "resource_id": f"T-{self.made}",
                                "policy": {"transfers": {"webhook": h.mode.url}}})
            assert status == 200
            assert h.master.take_type("handoff.requested").body["forwarded"] is True
        request = h.mode.take_type("handoff.request").body
        self.seq[request["handoff_id"]] = 0
        return request["case"], request["handoff_id"]

    # The fields a status must carry to be a valid message (so only the transition is wrong).
    REQUIRED = {"negotiating": {"needs": ["phone"]}, "refused": {"reason": "declined"}}

    def status(self, case: dict, handoff_id: str, status: str) -> tuple[int, dict]:
        self.seq[handoff_id] += 1
        return self.h.post({"mas_modes_version": "0.1", "type": "handoff.status",
                            "id": f"{handoff_id}-{self.seq[handoff_id]}", "case": case, "handoff_id": handoff_id,
                            "seq": self.seq[handoff_id], "status": status, **self.REQUIRED.get(status, {})})

    def recorded(self, case: dict) -> list[str]:
        thread = self.h.thread_of(case["key"])
        return [s["status"] for s in thread["handoffs"][0]["statuses"]]


@pytest.mark.parametrize("role", ["master", "slave"])
def test_every_transition_the_table_forbids_is_refused(make_harness, role):
    harness = make_harness(role, types={"deadline_seconds": 600})
    handoffs = Handoffs(harness)
    # A mode's cancelled comes only after email sent handoff.cancel, and email as master sends
    # it only together with timed-out: in that role cancelled is never reached.
    froms = [s for s in TABLE["statuses"] if s != ("cancelled" if role == "master" else "timed-out")]
    # timed-out first: reaching it moves the clock past every open handoff's deadline.
    froms.sort(key=lambda s: s != "timed-out")
    checked = 0
    for current in froms:
        case, handoff_id = handoffs.new()
        if current == "timed-out":
            harness.tick(601)  # email, the timeout owner, records it
        elif current == "cancelled":  # the outside master cancels; email forwards it to the mode
            status, body = harness.post({"mas_modes_version": "0.1", "type": "handoff.cancel",
                                         "id": f"{handoff_id}-cancel", "case": case, "handoff_id": handoff_id,
                                         "reason": "master says stop"})
            assert (status, body) == (200, {"ok": True, "recorded": "cancelled"}), body
        else:
            for step in TABLE["paths"][current]:
                status, body = handoffs.status(case, handoff_id, step)
                assert (status, body) == (200, {"ok": True, "recorded": step}), (current, step, body)
        before = handoffs.recorded(case)
        assert before[-1] == current
        allowed = set(TABLE["allowed"].get(current, []))
        for wanted in TABLE["statuses"]:
            if wanted in allowed:
                continue
            status, body = handoffs.status(case, handoff_id, wanted)
            if wanted == "timed-out":  # a mode never sends it, whatever the state
                assert (status, body["error"]) == (403, "not-timeout-owner"), (current, wanted, body)
            elif wanted == "cancelled" and current in ("timed-out", "cancelled"):
                # email sent handoff.cancel: the mode's cancelled is its acknowledgement, recorded as a note
                assert (status, body) == (200, {"ok": True, "acknowledged": "cancelled"}), (current, body)
            else:
                assert (status, body["error"]) == (409, "invalid-transition"), (current, wanted, body)
                assert current in body["detail"] and wanted in body["detail"]
            checked += 1
        assert handoffs.recorded(case) == before, f"a refused status changed the record from {current}"
    expected = sum(len(TABLE["statuses"]) - len(TABLE["allowed"].get(s, [])) for s in froms)
    assert checked == expected
    # Leave nothing unread: the parties saw only what the flow above consumed or the
    # master-side relays and resume mails of the handoffs that ended.
    for record in harness.mode.unconsumed() + harness.master.unconsumed():
        assert record.problem is None and record.body["type"] in ("handoff.status", "handoff.cancel")


def test_the_same_id_twice_at_once_is_processed_once(make_harness):
    harness = make_harness("slave")
    harness.deliver(sender="q@example.com", to=f"ticket@{DOMAIN}", subject="Hi")
    intake = harness.master.take().body
    harness.post({"mas_modes_version": "0.1", "type": "case.assign", "id": "a", "intake_ref": intake["intake_ref"],
                  "resource_id": "Q-1"})
    case = {"address": f"ticket=Q-1@{DOMAIN}", "key": f"ticket=Q-1@{DOMAIN}"}
    raw = json.dumps({"mas_modes_version": "0.1", "type": "mail.send", "id": "twice", "case": case,
                      "in_reply_to": intake["event"]["message_ref"], "subject": "Re: Hi", "body": "once"}).encode()
    engine = harness.thread.engine

    async def both():
        return await asyncio.gather(engine.handle(raw), engine.handle(raw))

    first, second = harness.thread.call(both())
    assert first == second and first[0] == 200 and first[1]["sent"] is True
    harness.settle()
    assert len(harness.sent_mail()) == 1
