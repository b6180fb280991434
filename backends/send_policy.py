"""Principle 10: whom mailtriage may send mail to (MAS mode contract §6).

One implementation for every send, whoever asks (personal compose over SMTP, the modes
package as master, a case's autonomous policy, an outside master's ``mail.send``).
A send that answers a received message is refused when that message

* came from the null sender (``Return-Path: <>``, a bounce) or has no sender address,
* is automated: ``Auto-Submitted`` other than ``no``, or ``Precedence: bulk | list | junk``,
* did not pass DMARC as read from a *trusted* ``Authentication-Results`` header: only
  headers whose authserv-id is the configured one count, and the topmost of them (the
  one our own receiving server added last) decides; no such header means "not passed",
* passed DMARC for *another* domain: the result's ``header.from`` must align with the
  domain of the From address we would answer (RFC 7489 §3.1.1 relaxed alignment: the
  same organizational domain, see :func:`organizational_domain`); a pass that names no
  ``header.from`` cannot be checked and does not count,
* has several From addresses or From headers (whom DMARC vouched for is then unclear),

and any send is refused once the send cap is reached.

:func:`check_send` returns ``None`` (allowed) or a :class:`SendRefusal` whose ``reason``
is the contract's code (``unauthenticated-sender``, ``automated-sender``,
``send-cap-reached``) and whose ``rule`` and ``detail`` say exactly which rule refused.
"""

from __future__ import annotations

import email.utils
import functools
from pathlib import Path
from typing import Iterable, Sequence

# Raised by the adapters' sends when check_send refuses; it lives under the mail error root and
# stays importable from here.
from mailtriage.backends.errors import SendRefused  # noqa: F401
from mailtriage.core.lean_dataclass import frozen_dataclass

UNAUTHENTICATED = "unauthenticated-sender"
AUTOMATED = "automated-sender"
CAP_REACHED = "send-cap-reached"
REASONS = (UNAUTHENTICATED, AUTOMATED, CAP_REACHED)
#: Sends per rolling window when an account names no ``send_cap`` (the accounts' default).
DEFAULT_SEND_CAP = 20
AUTOMATED_PRECEDENCE = ("bulk", "list", "junk")

# The headers the guard reads; a caller that keeps headers of a received message for
# later sends (without its body) keeps these.
GUARD_HEADERS = ("from", "return-path", "auto-submitted", "precedence", "authentication-results")

Headers = Sequence[tuple[str, str]]


@frozen_dataclass
class SendRefusal:
    reason: str  # one of REASONS
    rule: str  # null-sender | auto-submitted | precedence | dmarc | send-cap
    detail: str

    def to_json(self) -> dict:
        return {"reason": self.reason, "rule": self.rule, "detail": self.detail}




def guard_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The subset of ``headers`` (in order) that :func:`check_send` reads."""
    return [(str(name), str(value)) for name, value in headers if str(name).lower() in GUARD_HEADERS]


def check_send(
    original: Headers | None,
    *,
    authserv_id: str | Iterable[str] | None,
    sent_recently: int,
    send_cap: int,
) -> SendRefusal | None:
    """Decide whether mail may be sent in answer to a message with ``original`` headers.

    ``original`` holds the received message's headers in message order (top first), e.g.
    ``message.items()``; ``None`` for a send that answers no message (only the cap
    applies). ``authserv_id`` names the trusted Authentication-Results issuer(s).
    ``sent_recently`` is the number of sends inside the cap window.
    Never raises on hostile header content.
    """
    if original is not None:
        refusal = _check_original(list(original), _trusted_ids(authserv_id))
        if refusal:
            return refusal
    if sent_recently >= send_cap:
        return SendRefusal(CAP_REACHED, "send-cap", f"send cap reached ({sent_recently} of {send_cap} sends in the window)")
    return None


#: The compose kinds that answer the received message's sender (the others answer no one:
#: only the cap applies), as every adapter's ``send`` judges them.
ANSWERING_KINDS = ("reply", "reply_all", "receipt")


def check_before_confirm(kind: str, original: Headers | None, *, authserv_id: str | Iterable[str] | None,
                         sent_recently: int, send_cap: int) -> SendRefusal | None:
    """What :func:`check_send` will say when a ``kind`` compose is sent, asked while its
    proposal is made, so a refusal known now is shown before the user confirms (issue 30 §6).
    The send itself checks again (the cap may be reached meanwhile)."""
    return check_send(original if kind in ANSWERING_KINDS else None, authserv_id=authserv_id,
                      sent_recently=sent_recently, send_cap=send_cap)


def refusal_hint(refusal: SendRefusal, account_id: str) -> str | None:
    """What the user can change when the refusal comes from configuration, else None."""
    if refusal.rule == "dmarc" and refusal.detail.startswith("no trusted"):
        return (f"set authserv_id in [accounts.{account_id}] to the name your receiving server writes first in "
                "Authentication-Results (e.g. mx.example.org)")
    return None


def _trusted_ids(authserv_id: str | Iterable[str] | None) -> set[str]:
    if authserv_id is None:
        return set()
    ids = [authserv_id] if isinstance(authserv_id, str) else list(authserv_id)
    return {i.strip().lower() for i in ids if i and i.strip()}


def _values(headers: list[tuple[str, str]], name: str) -> list[str]:
    return [str(v) for k, v in headers if str(k).lower() == name]


def _check_original(headers: list[tuple[str, str]], trusted: set[str]) -> SendRefusal | None:
    for path in _values(headers, "return-path"):
        if "".join(_strip_comments(path).split()) in ("<>", ""):
            return SendRefusal(AUTOMATED, "null-sender", "the message came from the null sender (Return-Path: <>)")
    from_values = _values(headers, "from")
    senders = [addr for _, addr in email.utils.getaddresses(from_values) if "@" in addr]
    if not senders:
        return SendRefusal(AUTOMATED, "null-sender", "the message has no sender address to answer")
    if len(senders) > 1 or len(from_values) > 1:
        # DMARC vouches for one author domain; with several we cannot tell which one.
        return SendRefusal(UNAUTHENTICATED, "from", f"the message has {len(senders)} From addresses "
                           f"in {len(from_values)} From header(s); only a single author can be answered")
    for value in _values(headers, "auto-submitted"):
        token = _strip_comments(value).split(";")[0].strip().lower()
        if token != "no":
            return SendRefusal(AUTOMATED, "auto-submitted", f"the message is automated (Auto-Submitted: {token or 'empty'})")
    for value in _values(headers, "precedence"):
        token = _strip_comments(value).strip().lower()
        if token in AUTOMATED_PRECEDENCE:
            return SendRefusal(AUTOMATED, "precedence", f"the message is automated (Precedence: {token})")
    return _check_dmarc(headers, trusted, senders[0].rsplit("@", 1)[1])


def _check_dmarc(headers: list[tuple[str, str]], trusted: set[str], from_domain: str) -> SendRefusal | None:
    if not trusted:
        return SendRefusal(UNAUTHENTICATED, "dmarc",
                           "no trusted Authentication-Results issuer (authserv-id) is configured")
    for value in _values(headers, "authentication-results"):
        authserv, results = parse_authentication_results(value)
        if authserv not in trusted:
            continue  # anyone can write this header; only our receiving server counts
        dmarc = [result for method, result in results if method == "dmarc"]
        if dmarc and all(result == "pass" for result in dmarc):
            return _check_alignment(value, authserv, from_domain)
        found = ", ".join(f"dmarc={r}" for r in dmarc) or "no dmarc result"
        return SendRefusal(UNAUTHENTICATED, "dmarc", f"the sender did not pass DMARC ({authserv}: {found})")
    return SendRefusal(UNAUTHENTICATED, "dmarc",
                       f"no Authentication-Results from the trusted issuer ({', '.join(sorted(trusted))})")


def _check_alignment(value: str, authserv: str, from_domain: str) -> SendRefusal | None:
    vouched = [props.get("header.from", "") for method, _, props in parse_results_with_properties(value)
               if method == "dmarc"]
    if not vouched or not all(vouched):
        return SendRefusal(UNAUTHENTICATED, "dmarc-alignment",
                           f"the DMARC pass ({authserv}) names no header.from domain to align with the From address")
    for domain in vouched:
        if not domains_align(domain, from_domain):
            return SendRefusal(UNAUTHENTICATED, "dmarc-alignment",
                               f"the DMARC pass ({authserv}) is for header.from={domain}, "
                               f"not for the From address's domain")
    return None


def domains_align(a: str, b: str, suffixes: "PublicSuffixes | None" = None) -> bool:
    """Relaxed DMARC alignment: both names have the same organizational domain."""
    a, b = _normalize_domain(a), _normalize_domain(b)
    if not a or not b:
        return False
    if a == b:
        return True
    return organizational_domain(a, suffixes) == organizational_domain(b, suffixes)


def _normalize_domain(value: str) -> str:
    value = str(value).strip().strip('"').rstrip(".").lower()
    if "@" in value:  # header.from may be written as an address by some verifiers
        value = value.rsplit("@", 1)[1]
    try:
        return value.encode("idna").decode("ascii") if not value.isascii() else value
    except UnicodeError:
        return ""


# The public suffix list (https://publicsuffix.org) as Debian's ``publicsuffix`` package
# installs it. Without it we fall back to *strict* alignment (exact domain match): never
# looser than DMARC, only stricter for a sub-domain sender.
PSL_PATHS = (Path("/usr/share/publicsuffix/public_suffix_list.dat"),
             Path("/usr/local/share/publicsuffix/public_suffix_list.dat"))


class PublicSuffixes:
    """The rules of a public suffix list file (normal, ``*.`` wildcard and ``!`` exception)."""

    def __init__(self, text: str) -> None:
        self.rules: set[str] = set()
        self.exceptions: set[str] = set()
        for line in text.splitlines():
            rule = line.strip().split()[0] if line.strip() else ""
            if not rule or rule.startswith("//"):
                continue
            rule = _normalize_domain(rule.lstrip("!")) if not rule.startswith("*.") else \
                "*." + _normalize_domain(rule[2:])
            (self.exceptions if line.strip().startswith("!") else self.rules).add(rule)

    def suffix_length(self, labels: list[str]) -> int:
        """How many trailing labels form the public suffix (the algorithm of publicsuffix.org)."""
        best = 1  # the implicit "*" rule
        for n in range(1, len(labels) + 1):
            name = ".".join(labels[-n:])
            if name in self.exceptions:
                return n - 1
            wildcard = "*." + ".".join(labels[-(n - 1):]) if n > 1 else None
            if name in self.rules or (wildcard and wildcard in self.rules):
                best = n
        return best


@functools.lru_cache(maxsize=1)
def system_public_suffixes() -> PublicSuffixes | None:
    for path in PSL_PATHS:
        try:
            return PublicSuffixes(path.read_text(encoding="utf-8"))
        except OSError:
            continue
    return None


def organizational_domain(domain: str, suffixes: PublicSuffixes | None = None) -> str:
    """RFC 7489 §3.2: the public suffix plus one label; the name itself without a list."""
    domain = _normalize_domain(domain)
    suffixes = suffixes or system_public_suffixes()
    if suffixes is None:
        return domain
    labels = domain.split(".")
    keep = suffixes.suffix_length(labels) + 1
    return ".".join(labels[-keep:]) if len(labels) >= keep else domain


def parse_results_with_properties(value: str) -> list[tuple[str, str, dict[str, str]]]:
    """``[(method, result, {ptype.property: value})]`` of one RFC 8601 header value, lower-cased."""
    parts = [p.strip() for p in _strip_comments(value).split(";")]
    out = []
    for part in parts[1:]:
        words = part.split()
        if not words or part.lower() == "none":
            continue
        method, eq, result = words[0].partition("=")
        if not eq:
            continue
        props = {}
        for word in words[1:]:
            key, peq, val = word.partition("=")
            if peq:
                props[key.lower()] = val.strip('"').lower()
        out.append((method.split("/")[0].lower(), result.lower(), props))
    return out


def parse_authentication_results(value: str) -> tuple[str, list[tuple[str, str]]]:
    """``(authserv-id, [(method, result), ...])`` of one RFC 8601 header value, lower-cased."""
    text = _strip_comments(value)
    parts = [p.strip() for p in text.split(";")]
    head = parts[0].split()
    authserv = head[0].lower() if head else ""
    results = []
    for part in parts[1:]:
        if not part or part.lower() == "none":
            continue
        first = part.split()[0]
        method, eq, result = first.partition("=")
        if eq:
            results.append((method.split("/")[0].lower(), result.lower()))
    return authserv, results


def _strip_comments(value: str) -> str:
    """Drop RFC 5322 comments (nested parentheses) outside quoted strings."""
    out, depth, quoted, escaped = [], 0, False, False
    for ch in str(value):
        if escaped:
            escaped = False
            if depth == 0:
                out.append(ch)
            continue
        if ch == "\\":
            escaped = True
            if depth == 0:
                out.append(ch)
            continue
        if quoted:
            if ch == '"':
                quoted = False
            out.append(ch)
            continue
        if ch == '"' and depth == 0:
            quoted = True
            out.append(ch)
        elif ch == "(":
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)
