"""Addresses, the status machine and message validation, checked against the conformance data."""

from __future__ import annotations


import pytest

from mailtriage.modes import statemachine as sm
from mailtriage.modes.addresses import AddressError, MasAddress
from mailtriage.modes.envelope import ProtocolError
from mailtriage.modes.protocol_messages import MESSAGE_TYPES, parse_message
from tests.modes.conformance_data import CONFORMANCE, load_yaml

TABLE = load_yaml(CONFORMANCE / "transitions.yaml")
VALID = load_yaml(CONFORMANCE / "messages" / "valid.yaml")
INVALID = load_yaml(CONFORMANCE / "messages" / "invalid.yaml")


# -- addresses -------------------------------------------------------------------

@pytest.mark.parametrize("text, kind, rtype, rid, mode, key", [
    ("ticket@mas.test", "intake", "ticket", None, None, None),
    ("Ticket!Callback@MAS.Test", "intake", "ticket", None, "callback", None),
    ("ticket=GS-1@Mas.Test", "resource", "ticket", "GS-1", None, "ticket=GS-1@mas.test"),
    ("Alice <TICKET=gs-1!chat@mas.test.>", "resource", "ticket", "gs-1", "chat", "ticket=gs-1@mas.test"),
    ("ticket=a.b_c-9@bücher.example", "resource", "ticket", "a.b_c-9", None, "ticket=a.b_c-9@xn--bcher-kva.example"),
])
def test_address_forms_and_key(text, kind, rtype, rid, mode, key):
    address = MasAddress.parse(text)
    assert (address.is_intake, address.resource_type, address.resource_id, address.mode) == \
        (kind == "intake", rtype, rid, mode)
    if key is None:
        with pytest.raises(AddressError):
            address.key
    else:
        assert address.without_mode().key == key
        assert MasAddress.parse(address.canonical).without_mode().key == key


def test_key_preserves_id_case_and_folds_type_and_domain():
    def key(text: str) -> str:
        return MasAddress.parse(text).without_mode().key

    assert key("TICKET=Gs-1@EXAMPLE.org") == key("ticket=Gs-1@example.ORG")
    assert key("ticket=Gs-1@example.org") != key("ticket=gs-1@example.org")


def test_canonical_address_keeps_unicode_domain_and_ascii_for_smtp():
    address = MasAddress.parse("ticket=gs-1!callback@BÜCHER.example")
    assert address.canonical == "ticket=gs-1!callback@bücher.example"
    assert address.ascii == "ticket=gs-1!callback@xn--bcher-kva.example"
    assert address.without_mode().canonical == "ticket=gs-1@bücher.example"


@pytest.mark.parametrize("text", ["", "no-at-sign", "@mas.test", "ti cket@mas.test", "1ticket@mas.test",
                                  "ticket=@mas.test", "ticket=a=b@mas.test", "ticket!@mas.test",
                                  "ticket=gs-1@", "ticket=gs 1@mas.test", "ticket=" + "x" * 129 + "@mas.test"])
def test_addresses_that_are_not_mas_forms_are_refused(text):
    with pytest.raises(AddressError):
        MasAddress.parse(text)


# -- status machine --------------------------------------------------------------

def test_table_matches_the_conformance_data():
    assert list(sm.STATUSES) == TABLE["statuses"]
    assert sm.TERMINAL == set(TABLE["terminal"])
    assert {k: list(v) for k, v in sm.TRANSITIONS.items()} == TABLE["allowed"]


FROMS = ["(new)", *TABLE["statuses"]]


@pytest.mark.parametrize("current", FROMS)
def test_every_pair_of_the_table(current):
    allowed_next = set(TABLE["allowed"].get(current, []))
    for wanted in TABLE["statuses"]:
        if wanted in allowed_next:
            sm.check_transition(None if current == "(new)" else current, wanted)
        else:
            with pytest.raises(sm.InvalidTransition) as info:
                sm.check_transition(None if current == "(new)" else current, wanted)
            assert wanted in str(info.value)


def test_terminal_statuses_are_final():
    for status in sm.TERMINAL:
        assert not any(sm.allowed(status, nxt) for nxt in sm.STATUSES)


def test_only_the_timeout_owner_records_timed_out():
    sm.check_reporter("timed-out", timeout_owner=True)
    sm.check_reporter("running", timeout_owner=False)
    with pytest.raises(sm.NotTimeoutOwner):
        sm.check_reporter("timed-out", timeout_owner=False)


# -- messages --------------------------------------------------------------------

def test_valid_messages_cover_every_type():
    assert {entry["message"]["type"] for entry in VALID} == set(MESSAGE_TYPES)


@pytest.mark.parametrize("entry", VALID, ids=[e["name"] for e in VALID])
def test_valid_messages_are_accepted(entry):
    envelope = parse_message(entry["message"])
    assert envelope.type == entry["message"]["type"]
    assert envelope.id == entry["message"]["id"]
    if "case" in entry["message"]:
        assert envelope.case.key == entry["message"]["case"]["key"]


@pytest.mark.parametrize("entry", INVALID, ids=[e["name"] for e in INVALID])
def test_invalid_messages_are_refused_with_their_code(entry):
    with pytest.raises(ProtocolError) as info:
        parse_message(entry["message"])
    assert (info.value.status, info.value.code) == (entry["status"], entry["error"])
    assert info.value.body()["ok"] is False
    if entry.get("detail"):
        assert entry["detail"] in info.value.detail
