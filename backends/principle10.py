"""Principle 10 (mas-modes-contract §6): when mail may be sent at all. One implementation,
used by personal sending now and by the MAS-modes email side later.

Mail is never sent

* to a sender that did not pass DMARC, as read from a *trusted* Authentication-Results
  header: only a header whose authserv-id is the one configured for the account counts
  (a header any other host wrote is ignored, whatever it claims);
* to automated mail: ``Auto-Submitted`` other than ``no``, or ``Precedence: bulk | list
  | junk``;
* to the null sender (``Return-Path: <>`` or no usable From address);
* once the account's send cap is reached (sends in the last 24 hours, kept in a small
  ledger of timestamps in the data dir; nothing about the mail itself is stored).

A refusal names its rule and carries the §5 reason code (``unauthenticated-sender``,
``automated-sender``, ``send-cap-reached``, ``unknown-message``).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from mailtriage.backends.contract import Message
from mailtriage.backends.errors import MailError

WINDOW_SECONDS = 24 * 3600
AUTOMATED_PRECEDENCE = ("bulk", "list", "junk")
REASONS = ("unauthenticated-sender", "automated-sender", "send-cap-reached", "unknown-message")


@dataclass(frozen=True)
class Refusal:
    reason: str  # one of REASONS (mas-modes-contract §5)
    rule: str  # which rule refused, in words

    def to_json(self) -> dict:
        return {"ok": False, "error": "refused", "reason": self.reason, "rule": self.rule}


class SendRefused(MailError):
    """Principle 10 (or the account's access setting) refused a send; ``refusal`` says which rule."""

    def __init__(self, refusal: Refusal) -> None:
        self.refusal = refusal
        super().__init__(f"send refused ({refusal.reason}): {refusal.rule}")


# -- Authentication-Results (RFC 8601) ---------------------------------------------------------

_COMMENT = re.compile(r"\((?:[^()\\]|\\.)*\)")


def _strip_comments(text: str) -> str:
    previous = None
    while previous != text:  # nested comments
        previous, text = text, _COMMENT.sub(" ", text)
    return text


@dataclass(frozen=True)
class AuthResults:
    authserv_id: str
    dmarc: str | None  # pass, fail, none, temperror, ... or None when not reported
    header_from: str | None


def parse_authentication_results(value: str) -> AuthResults | None:
    text = _strip_comments(value.replace("\r", " ").replace("\n", " ")).strip()
    if not text:
        return None
    head, _, rest = text.partition(";")
    authserv_id = head.strip().split()[0].lower() if head.strip() else ""
    if not authserv_id:
        return None
    dmarc = header_from = None
    for clause in rest.split(";"):
        match = re.match(r"\s*dmarc\s*=\s*([A-Za-z]+)", clause, re.IGNORECASE)
        if match:
            dmarc = match.group(1).lower()
            found = re.search(r"header\.from\s*=\s*\"?([^\s\";]+)", clause, re.IGNORECASE)
            header_from = found.group(1).lower() if found else None
            break
    return AuthResults(authserv_id, dmarc, header_from)


def trusted_dmarc(headers: Iterable[tuple[str, str]], authserv_id: str) -> AuthResults | None:
    """The topmost Authentication-Results written by ``authserv_id`` (headers in message
    order, newest first, as MTAs prepend them), or None."""
    wanted = authserv_id.strip().lower()
    for name, value in headers:
        if name.lower() != "authentication-results":
            continue
        parsed = parse_authentication_results(value)
        if parsed is not None and parsed.authserv_id == wanted:
            return parsed
    return None


def _header(headers: Sequence[tuple[str, str]], name: str) -> str | None:
    lname = name.lower()
    for key, value in headers:
        if key.lower() == lname:
            return value
    return None


def reply_refusal(message: Message, *, authserv_id: str | None) -> Refusal | None:
    """Why a reply to ``message``'s sender must not be sent, or None when it may be."""
    headers = list(message.headers)
    return_path = _header(headers, "Return-Path")
    if return_path is not None and re.fullmatch(r"\s*<\s*>\s*", return_path):
        return Refusal("automated-sender", "null sender: Return-Path is <> (a bounce or notification)")
    if not message.sender.email or "@" not in message.sender.email:
        return Refusal("automated-sender", "null sender: the message has no usable From address")
    auto = _header(headers, "Auto-Submitted")
    if auto is not None and auto.split(";")[0].strip().lower() != "no":
        return Refusal("automated-sender", f"Auto-Submitted: {auto.strip()} (anything but 'no' is automated)")
    precedence = _header(headers, "Precedence")
    if precedence is not None and precedence.strip().lower() in AUTOMATED_PRECEDENCE:
        return Refusal("automated-sender", f"Precedence: {precedence.strip()} (bulk, list and junk are automated)")
    if not authserv_id:
        return Refusal("unauthenticated-sender", "no authserv_id is configured for the account, so no "
                                                 "Authentication-Results can be trusted to show a DMARC pass")
    results = trusted_dmarc(headers, authserv_id)
    if results is None or results.dmarc is None:
        return Refusal("unauthenticated-sender", f"no DMARC result from {authserv_id} in Authentication-Results")
    if results.dmarc != "pass":
        return Refusal("unauthenticated-sender", f"DMARC {results.dmarc} per Authentication-Results of {authserv_id}")
    domain = message.sender.email.rpartition("@")[2].lower()
    if results.header_from and results.header_from != domain:
        return Refusal("unauthenticated-sender", f"the DMARC pass is for {results.header_from}, "
                                                 f"not the sender's domain {domain}")
    return None


# -- send cap ----------------------------------------------------------------------------------

class SendLedger:
    """Timestamps of sends per account (a JSON file), for the rolling 24-hour send cap."""

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            from mailtriage.core.settings import data_dir

            path = data_dir() / "send-ledger.json"
        self.path = path
        self._lock = threading.Lock()

    def _load(self) -> dict[str, list[float]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            # An unreadable ledger must not reset the cap to zero: refuse instead.
            raise SendRefused(Refusal("send-cap-reached", f"the send ledger {self.path} is unreadable ({exc})"))
        return {str(k): [float(t) for t in v] for k, v in data.items() if isinstance(v, list)}

    def count(self, account_id: str, now: float | None = None) -> int:
        now = time.time() if now is None else now
        with self._lock:
            return sum(1 for t in self._load().get(account_id, []) if now - t < WINDOW_SECONDS)

    def record(self, account_id: str, now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self._lock:
            data = self._load()
            recent = [t for t in data.get(account_id, []) if now - t < WINDOW_SECONDS]
            data[account_id] = [*recent, now]
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, self.path)


class Principle10:
    """The guard every send goes through: ``check(...)`` raises SendRefused naming the rule."""

    def __init__(self, ledger: SendLedger | None = None) -> None:
        self.ledger = ledger or SendLedger()

    def cap_refusal(self, account_id: str, send_cap: int) -> Refusal | None:
        sent = self.ledger.count(account_id)
        if sent >= send_cap:
            return Refusal("send-cap-reached", f"account {account_id} sent {sent} mails in the last 24 hours; "
                                               f"its send cap is {send_cap}")
        return None

    def check(self, *, account_id: str, send_cap: int, authserv_id: str | None,
              replying_to: Message | None = None) -> None:
        """Raise SendRefused when the send must not happen. ``replying_to`` is the inbound
        message whose sender receives the reply (None for new mail and forwards)."""
        if replying_to is not None:
            refusal = reply_refusal(replying_to, authserv_id=authserv_id)
            if refusal is not None:
                raise SendRefused(refusal)
        refusal = self.cap_refusal(account_id, send_cap)
        if refusal is not None:
            raise SendRefused(refusal)

    def record(self, account_id: str) -> None:
        self.ledger.record(account_id)
