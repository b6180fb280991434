"""Runs one conformance flow (tests/modes/conformance/flows/*/*.yaml) against a Harness.

A flow is a list of steps; each step has one action and may carry ``expect`` / ``save``:

=====================  ===========================================================
``mail: {...}``        a mail arrives in the MAS mailbox (from, to, subject, body,
                       dmarc, return_path, headers, in_reply_to); email polls
``send: {...}``        a contract message POSTed to the email side (envelope filled
                       in: version, a fresh id unless given); ``expect`` status/body
``raw: ...``           a body POSTed as is (``content_type`` may be given)
``tick: N``            the clock moves N seconds; email does what is due
``restart: true``      the server stops and starts again on the same SQLite file
``party: {...}``       how mode/master answer from now: ok | refuse | error | hang
                       (``mode_once``/``master_once``: a list used first)
``expect_mode/master`` the next message that party received matches (subset)
``expect_no_message``  mode, master or both received nothing more
``expect_mail``        the next mail the SMTP server accepted matches
``expect_no_mail``     no further mail was sent
``expect_thread``      the durable record of a case matches (subset)
``expect_no_case``     no case with that key exists
``expect_intake``      an intake has the given state
=====================  ===========================================================

Strings ``$name`` and ``$name.path`` are replaced by saved values; ``${name}`` inside a
longer string too. Every message a party received must pass the contract validator,
and at the end nothing may be left unexpected (messages or mails).
"""

from __future__ import annotations

import re
from typing import Any

from tests.modes.harness import Harness

_INLINE = re.compile(r"\$\{([A-Za-z0-9_.-]+)\}")
ACTIONS = ("mail", "send", "raw", "tick", "restart", "party", "expect_mode", "expect_master",
           "expect_no_message", "expect_mail", "expect_no_mail", "expect_thread", "expect_no_case", "expect_intake")


def lookup(value: Any, path: str) -> Any:
    for part in path.split("."):
        if part == "":
            continue
        if isinstance(value, list):
            value = value[int(part)]
        else:
            value = value[part]
    return value


class FlowRunner:
    def __init__(self, harness: Harness, flow: dict) -> None:
        self.h = harness
        self.flow = flow
        self.vars: dict[str, Any] = {}
        self.counter = 0

    # -- variables -------------------------------------------------------------------

    def sub(self, value: Any) -> Any:
        if isinstance(value, str):
            if value.startswith("$") and not value.startswith("${") and re.fullmatch(r"\$[A-Za-z0-9_.-]+", value):
                name, _, path = value[1:].partition(".")
                if name in ("mode_url", "master_url"):
                    return self.h.mode.url if name == "mode_url" else self.h.master.url
                if name not in self.vars:
                    raise AssertionError(f"flow uses ${name} before saving it")
                return lookup(self.vars[name], path)
            return _INLINE.sub(lambda m: str(self.sub("$" + m.group(1))), value)
        if isinstance(value, dict):
            return {k: self.sub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.sub(v) for v in value]
        return value

    def save(self, spec: dict | str | None, source: Any) -> None:
        if spec is None:
            return
        if isinstance(spec, str):
            self.vars[spec] = source
            return
        for name, path in spec.items():
            self.vars[name] = lookup(source, path)

    # -- matching ----------------------------------------------------------------------

    def match(self, expected: Any, actual: Any, where: str) -> None:
        if expected == "*":
            return
        if isinstance(expected, dict):
            assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r}"
            for key, value in expected.items():
                if key.endswith("~"):  # substring
                    name = key[:-1]
                    assert name in actual, f"{where}.{name} missing in {actual!r}"
                    for piece in value if isinstance(value, list) else [value]:
                        assert str(piece) in str(actual[name]), f"{where}.{name}: {piece!r} not in {actual[name]!r}"
                    continue
                if value is None and key.endswith("!"):
                    assert key[:-1] not in actual, f"{where}.{key[:-1]} should be absent: {actual!r}"
                    continue
                assert key in actual, f"{where}.{key} missing in {actual!r}"
                self.match(value, actual[key], f"{where}.{key}")
        elif isinstance(expected, list):
            assert isinstance(actual, list) and len(actual) == len(expected), \
                f"{where}: expected {len(expected)} items, got {actual!r}"
            for i, (e, a) in enumerate(zip(expected, actual)):
                self.match(e, a, f"{where}[{i}]")
        else:
            assert expected == actual, f"{where}: expected {expected!r}, got {actual!r}"

    # -- the steps -----------------------------------------------------------------------

    def run(self) -> None:
        for index, step in enumerate(self.flow["steps"]):
            actions = [k for k in step if k in ACTIONS]
            assert len(actions) == 1, f"step {index} needs exactly one action: {step}"
            action = actions[0]
            try:
                getattr(self, "do_" + action)(self.sub(step[action]), step)
            except AssertionError as exc:
                raise AssertionError(f"flow {self.flow['name']} step {index} ({action}): {exc}") from None
        self.finish()

    def finish(self) -> None:
        for party in (self.h.mode, self.h.master):
            assert party.problems() == [], f"{party.name} received invalid messages: {party.problems()}"
            left = [r.body.get("type") for r in party.unconsumed()]
            assert not left, f"flow {self.flow['name']}: {party.name} received messages the flow did not expect: {left}"
        left_mail = self.h.sent_mail()[self.h.mails_consumed:]
        assert not left_mail, f"flow {self.flow['name']}: unexpected mail: {[m.message['Subject'] for m in left_mail]}"

    def do_mail(self, spec: dict, step: dict) -> None:
        kwargs = dict(spec)
        if "from" in kwargs:
            kwargs["sender"] = kwargs.pop("from")
        message_id = self.h.deliver(**kwargs)
        self.save(step.get("save"), message_id)

    def _envelope(self, spec: dict) -> dict:
        message = dict(spec)
        message.setdefault("mas_modes_version", "0.1")
        if "id" not in message:
            self.counter += 1
            message["id"] = f"{self.flow['name']}-{self.counter}"
        return {"mas_modes_version": message.pop("mas_modes_version"), "type": message.pop("type"),
                "id": message.pop("id"), **message}

    def do_send(self, spec: dict, step: dict) -> None:
        self._post(self._envelope(spec), step)

    def do_raw(self, spec: Any, step: dict) -> None:
        self._post(spec.encode() if isinstance(spec, str) else spec, step,
                   content_type=step.get("content_type", "application/json"))

    def _post(self, message: Any, step: dict, content_type: str = "application/json") -> None:
        status, body = self.h.post(message, content_type=content_type)
        expect = self.sub(step.get("expect", {"status": 200, "body": {"ok": True}}))
        if "status" in expect:
            assert status == expect["status"], f"HTTP {status} {body!r}, expected {expect['status']}"
        if "body" in expect:
            self.match(expect["body"], body, "response")
        self.save(step.get("save"), body)

    def do_tick(self, seconds: float, step: dict) -> None:
        self.h.tick(float(seconds))

    def do_restart(self, _: Any, step: dict) -> None:
        self.h.restart()

    def do_party(self, spec: dict, step: dict) -> None:
        for name in ("mode", "master"):
            party = getattr(self.h, name)
            if name in spec:
                party.behaviour = spec[name]
            if f"{name}_once" in spec:
                party.once = list(spec[f"{name}_once"])

    def _expect_party(self, party, spec: dict, step: dict) -> None:
        for _ in range(int(step.get("times", 1))):
            record = party.take()
            if "answered" in step:
                assert record.answered == step["answered"], f"answered {record.answered}, expected {step['answered']}"
            self.match(spec, record.body, party.name)
            self.save(step.get("save"), record.body)

    def do_expect_mode(self, spec: dict, step: dict) -> None:
        self._expect_party(self.h.mode, spec, step)

    def do_expect_master(self, spec: dict, step: dict) -> None:
        self._expect_party(self.h.master, spec, step)

    def do_expect_no_message(self, who: str, step: dict) -> None:
        for party in (self.h.mode, self.h.master):
            if who in (party.name, "both"):
                left = [r.body for r in party.unconsumed()]
                assert not left, f"{party.name} received {left}"

    def do_expect_mail(self, spec: dict, step: dict) -> None:
        mail = self.h.take_mail()
        message = mail.message
        actual = {
            "to": mail.rcpt_tos,
            "envelope_from": mail.mail_from,
            "from": str(message["From"]),
            "subject": str(message["Subject"]),
            "in_reply_to": str(message["In-Reply-To"]) if message["In-Reply-To"] else None,
            "auto_submitted": str(message["Auto-Submitted"]) if message["Auto-Submitted"] else None,
            "message_id": str(message["Message-ID"]),
            "body": message.get_content(),
        }
        self.match(spec, actual, "mail")
        self.save(step.get("save"), actual)

    def do_expect_no_mail(self, _: Any, step: dict) -> None:
        left = self.h.sent_mail()[self.h.mails_consumed:]
        assert not left, f"mail was sent: {[str(m.message['Subject']) for m in left]}"

    def do_expect_thread(self, spec: dict, step: dict) -> None:
        spec = dict(spec)
        key = spec.pop("case")
        if isinstance(key, dict):
            key = key["key"]
        thread = self.h.thread_of(key)
        assert thread is not None, f"no case {key}"
        # Statuses compare as their names, notes as their kinds: the flows state what happened.
        for handoff in thread["handoffs"]:
            handoff["statuses"] = [s["status"] for s in handoff["statuses"]]
        thread["note_kinds"] = [n["kind"] for n in thread["notes"]]
        if "note_kinds" in spec:
            missing = [k for k in spec.pop("note_kinds") if k not in thread["note_kinds"]]
            assert not missing, f"notes {missing} missing in {thread['notes']}"
        self.match(spec, thread, "thread")
        self.save(step.get("save"), thread)

    def do_expect_no_case(self, key: str, step: dict) -> None:
        store = self.h.store()
        try:
            assert store.case(key) is None, f"a case {key} exists"
            assert store.cases() == [] if step.get("none_at_all") else True, f"cases exist: {store.cases()}"
        finally:
            store.close()

    def do_expect_intake(self, spec: dict, step: dict) -> None:
        store = self.h.store()
        try:
            intake = store.intake(spec["intake_ref"])
        finally:
            store.close()
        assert intake is not None, f"no intake {spec['intake_ref']}"
        self.match({k: v for k, v in spec.items() if k != "intake_ref"}, intake, "intake")
