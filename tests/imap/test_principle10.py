"""Principle 10: every rule refuses, names itself, and trusts only the configured authserv-id."""

from __future__ import annotations

import pytest

from mailtriage.backends.mime import parse_message
from mailtriage.backends.principle10 import (Principle10, SendLedger, SendRefused, parse_authentication_results,
                                             reply_refusal)

MX = "mx.example.org"


def inbound(*extra: str, sender: str = "Reporter <reporter@example.net>") -> object:
    lines = [*extra, f"From: {sender}", "To: security@example.org", "Subject: report", "Message-ID: <r@x>", "", "hi"]
    return parse_message("\r\n".join(lines).encode())


PASS = f"Authentication-Results: {MX}; spf=pass smtp.mailfrom=example.net; dmarc=pass (p=reject) header.from=example.net"


def test_a_dmarc_pass_from_our_server_allows_a_reply():
    assert reply_refusal(inbound(PASS), authserv_id=MX) is None
    assert reply_refusal(inbound(PASS), authserv_id=MX.upper()) is None  # authserv-id is case-insensitive


@pytest.mark.parametrize("header,needle", [
    (f"Authentication-Results: {MX}; dmarc=fail header.from=example.net", "DMARC fail"),
    (f"Authentication-Results: {MX}; spf=pass smtp.mailfrom=example.net", "no DMARC result"),
    ("Authentication-Results: attacker.example; dmarc=pass header.from=example.net", "no DMARC result"),
    (f"Authentication-Results: {MX}; dmarc=pass header.from=elsewhere.example", "not the sender's domain"),
])
def test_dmarc_rules(header, needle):
    refusal = reply_refusal(inbound(header), authserv_id=MX)
    assert refusal.reason == "unauthenticated-sender" and needle in refusal.rule


def test_only_the_topmost_result_of_our_server_counts():
    # A forged header lower down (added before the mail reached our MX) cannot override ours.
    forged = f"Authentication-Results: {MX}; dmarc=pass header.from=example.net"
    ours = f"Authentication-Results: {MX}; dmarc=fail header.from=example.net"
    assert reply_refusal(inbound(ours, forged), authserv_id=MX).reason == "unauthenticated-sender"


def test_without_a_configured_authserv_id_nothing_is_trusted():
    refusal = reply_refusal(inbound(PASS), authserv_id=None)
    assert refusal.reason == "unauthenticated-sender" and "authserv_id" in refusal.rule


@pytest.mark.parametrize("header,rule", [
    ("Auto-Submitted: auto-replied", "Auto-Submitted"),
    ("Auto-Submitted: auto-generated; owner-email=x@y", "Auto-Submitted"),
    ("Precedence: bulk", "Precedence"),
    ("Precedence: list", "Precedence"),
    ("Precedence: JUNK", "Precedence"),
    ("Return-Path: <>", "null sender"),
])
def test_automated_mail_and_the_null_sender_are_refused(header, rule):
    refusal = reply_refusal(inbound(header, PASS), authserv_id=MX)
    assert refusal.reason == "automated-sender" and rule in refusal.rule


def test_auto_submitted_no_and_precedence_first_class_are_fine():
    assert reply_refusal(inbound("Auto-Submitted: no", "Precedence: first-class", PASS), authserv_id=MX) is None


def test_a_message_without_a_from_address_is_the_null_sender():
    refusal = reply_refusal(inbound(PASS, sender="undisclosed-recipients:;"), authserv_id=MX)
    assert refusal.reason == "automated-sender"


def test_parse_authentication_results_ignores_comments():
    parsed = parse_authentication_results("mx.example.org (Postfix) 1; dkim=pass (good signature); "
                                          "dmarc=pass (p=none dis=none) header.from=example.net")
    assert (parsed.authserv_id, parsed.dmarc, parsed.header_from) == ("mx.example.org", "pass", "example.net")


def test_the_send_cap_counts_the_last_24_hours(tmp_path):
    ledger = SendLedger(tmp_path / "ledger.json")
    guard = Principle10(ledger)
    ledger.record("work", now=0.0)  # long ago: does not count
    guard.check(account_id="work", send_cap=2, authserv_id=MX)
    guard.record("work")
    guard.record("work")
    with pytest.raises(SendRefused) as err:
        guard.check(account_id="work", send_cap=2, authserv_id=MX)
    assert err.value.refusal.reason == "send-cap-reached" and "send cap is 2" in str(err.value)
    guard.check(account_id="other", send_cap=2, authserv_id=MX)  # per account
    assert SendLedger(tmp_path / "ledger.json").count("work") == 2  # persisted


def test_an_unreadable_ledger_refuses_rather_than_resetting(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text("{not json")
    with pytest.raises(SendRefused) as err:
        Principle10(SendLedger(path)).check(account_id="work", send_cap=5, authserv_id=MX)
    assert err.value.refusal.reason == "send-cap-reached"
