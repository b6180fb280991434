"""backends/send_policy.py: every rule of §6, on header lists as a received message carries them."""

from __future__ import annotations

from email import message_from_string, policy

import pytest

from mailtriage.backends.send_policy import (
    PublicSuffixes,
    check_send,
    domains_align,
    organizational_domain,
    guard_headers,
    parse_authentication_results,
)

TRUSTED = "mx.mas.test"


def headers(*extra: str, sender: str = "Alice <alice@example.com>") -> list[tuple[str, str]]:
    text = "".join(line + "\n" for line in extra) + (f"From: {sender}\n" if sender else "") + "Subject: hi\n\nbody\n"
    return list(message_from_string(text, policy=policy.default).items())


def check(hdrs, sent=0, cap=10, authserv=TRUSTED):
    return check_send(hdrs, authserv_id=authserv, sent_recently=sent, send_cap=cap)


PASS = f"Authentication-Results: {TRUSTED}; spf=pass smtp.mailfrom=example.com; dmarc=pass (p=reject) header.from=example.com"


def test_authenticated_human_mail_may_be_answered():
    assert check(headers(PASS, "Return-Path: <alice@example.com>", "Auto-Submitted: no", "Precedence: first-class")) is None


@pytest.mark.parametrize("extra, rule", [
    ([f"Authentication-Results: {TRUSTED}; dmarc=fail (p=reject) header.from=example.com"], "dmarc"),
    ([f"Authentication-Results: {TRUSTED}; dmarc=none header.from=example.com"], "dmarc"),
    ([f"Authentication-Results: {TRUSTED}; spf=pass smtp.mailfrom=example.com"], "dmarc"),
    ([f"Authentication-Results: {TRUSTED}; none"], "dmarc"),
    ([], "dmarc"),
    # A forged header from someone else's server is not trusted, even when it says pass.
    (["Authentication-Results: evil.example; dmarc=pass header.from=example.com"], "dmarc"),
    # Our server's (topmost) verdict wins over a pass lower in the header block.
    ([f"Authentication-Results: {TRUSTED}; dmarc=fail", PASS], "dmarc"),
])
def test_unauthenticated_sender(extra, rule):
    refusal = check(headers(*extra))
    assert (refusal.reason, refusal.rule) == ("unauthenticated-sender", rule)


def test_comment_saying_pass_does_not_count():
    refusal = check(headers(f"Authentication-Results: {TRUSTED}; dmarc=fail (dmarc=pass faked in a comment)"))
    assert refusal.reason == "unauthenticated-sender"
    assert "dmarc=fail" in refusal.detail


def test_authserv_id_is_compared_case_insensitively_and_may_carry_a_version():
    assert check(headers("Authentication-Results: MX.Mas.Test 1; dmarc=pass header.from=example.com")) is None


def test_no_trusted_issuer_configured_refuses():
    refusal = check(headers(PASS), authserv=None)
    assert refusal.reason == "unauthenticated-sender" and "configured" in refusal.detail


@pytest.mark.parametrize("extra, rule", [
    (["Auto-Submitted: auto-replied"], "auto-submitted"),
    (["Auto-Submitted: auto-generated; owner-email=x@example.com"], "auto-submitted"),
    (["Auto-Submitted: AUTO-NOTIFIED (vacation)"], "auto-submitted"),
    (["Precedence: bulk"], "precedence"),
    (["Precedence: List"], "precedence"),
    (["Precedence: junk"], "precedence"),
    (["Return-Path: <>"], "null-sender"),
    (["Return-Path: < >"], "null-sender"),
])
def test_automated_sender(extra, rule):
    refusal = check(headers(PASS, *extra))
    assert (refusal.reason, refusal.rule) == ("automated-sender", rule)


def test_no_sender_address_is_treated_as_the_null_sender():
    refusal = check(headers(PASS, sender=""))
    assert (refusal.reason, refusal.rule) == ("automated-sender", "null-sender")


def test_send_cap():
    assert check(headers(PASS), sent=9, cap=10) is None
    refusal = check(headers(PASS), sent=10, cap=10)
    assert (refusal.reason, refusal.rule) == ("send-cap-reached", "send-cap")
    assert check(None, sent=0, cap=0).reason == "send-cap-reached"
    assert check(None, sent=0, cap=1) is None


def test_guard_headers_keeps_only_what_the_guard_reads_in_order():
    kept = guard_headers(headers(PASS, "Received: from x", "Precedence: bulk", "X-Other: 1"))
    assert [name.lower() for name, _ in kept] == ["authentication-results", "precedence", "from"]


def test_parse_authentication_results():
    assert parse_authentication_results(
        'mx.example.org 1; spf=pass (sender ok) smtp.mailfrom="a;b@x"; DKIM/1=Pass header.d=x; dmarc=fail'
    ) == ("mx.example.org", [("spf", "pass"), ("dkim", "pass"), ("dmarc", "fail")])


# --- DMARC alignment (issue 20 §5): a pass only vouches for the domain it names ---------

@pytest.mark.parametrize("result", [
    f"Authentication-Results: {TRUSTED}; dmarc=pass header.from=evil.example",
    # the pass is for a look-alike that merely ends with our sender's name
    f"Authentication-Results: {TRUSTED}; dmarc=pass header.from=notexample.com",
    # a pass naming no domain cannot be checked against the From address
    f"Authentication-Results: {TRUSTED}; dmarc=pass",
    f"Authentication-Results: {TRUSTED}; dmarc=pass header.from=",
])
def test_dmarc_pass_for_another_domain_is_refused(result):
    refusal = check(headers(result))
    assert (refusal.reason, refusal.rule) == ("unauthenticated-sender", "dmarc-alignment")


def test_dmarc_pass_aligns_on_the_organizational_domain():
    sub = f"Authentication-Results: {TRUSTED}; dmarc=pass header.from=mail.example.com"
    assert check(headers(sub, sender="Alice <alice@example.com>")) is None
    org = f"Authentication-Results: {TRUSTED}; dmarc=pass header.from=Example.COM"
    assert check(headers(org, sender="Alice <alice@lists.example.com>")) is None


@pytest.mark.parametrize("sender", [
    "Alice <alice@example.com>, Mallory <mallory@evil.example>",
    "mallory@evil.example, alice@example.com",
])
def test_from_with_several_addresses_is_refused(sender):
    refusal = check(headers(PASS, sender=sender))
    assert (refusal.reason, refusal.rule) == ("unauthenticated-sender", "from")


def test_several_from_headers_are_refused():
    refusal = check(headers(PASS, "From: Mallory <mallory@evil.example>"))
    assert (refusal.reason, refusal.rule) == ("unauthenticated-sender", "from")


PSL = """// a small public suffix list in the file's own syntax
com
uk
co.uk
*.ck
!www.ck
"""


@pytest.mark.parametrize("domain, org", [
    ("example.com", "example.com"),
    ("a.b.example.com", "example.com"),
    ("shop.example.co.uk", "example.co.uk"),
    ("co.uk", "co.uk"),
    ("x.y.foo.ck", "y.foo.ck"),
    ("a.www.ck", "www.ck"),
    ("host.unknown-tld", "host.unknown-tld"),
])
def test_organizational_domain_follows_the_public_suffix_algorithm(domain, org):
    assert organizational_domain(domain, PublicSuffixes(PSL)) == org


def test_public_suffixes_never_align_two_registrants():
    psl = PublicSuffixes(PSL)
    assert domains_align("a.example.co.uk", "example.co.uk", psl)
    assert not domains_align("evil.co.uk", "example.co.uk", psl)
    assert not domains_align("co.uk", "example.co.uk", psl)
    assert not domains_align("", "example.com", psl)
