"""Every message type of the contract (§5) with its payload, and their validation.

:func:`parse_message` turns a decoded JSON value into an :class:`Envelope` or raises
:class:`ProtocolError` with a 4xx code and a detail that names the field. The same
validation checks what we receive and, in the tests, what we send.

``event`` (in ``case.intake`` and ``case.message``) is the normalized gateway event. Its
schema (``mas-event-v0.1``) is not available to us; we require an object and document
the fields we put in it (docs/modes.md, :func:`mailtriage.modes.inbox.mail_event`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable
from urllib.parse import urlsplit

from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.modes.addresses import valid_resource_id, valid_token
from mailtriage.modes.envelope import MAX_ID_LENGTH, VERSION, CaseRef, Envelope, ProtocolError
from mailtriage.modes.statemachine import REFUSAL_REASONS, STATUSES

Check = Callable[[Any], str | None]  # returns a problem, or None when the value is fine


def _string(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "must be a non-empty string"
    if len(value) > 10_000:
        return "is longer than 10000 characters"
    return None


def _text(value: Any) -> str | None:
    return None if isinstance(value, str) and len(value) <= 1_000_000 else "must be a string (at most 1 MB)"


def _ident(value: Any) -> str | None:
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LENGTH:
        return f"must be a non-empty string of at most {MAX_ID_LENGTH} characters"
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        return "must not contain control characters"
    return None


def _token(value: Any) -> str | None:
    return None if isinstance(value, str) and valid_token(value) else "must be a MAS token (letter, then letters, digits, '-')"


def _resource_id(value: Any) -> str | None:
    return None if isinstance(value, str) and valid_resource_id(value) else \
        "must be a MAS resource id (letters, digits, '.', '_', '-'; at most 128)"


def _bool(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _seq(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return "must be a non-negative integer"
    return None


def _object(value: Any) -> str | None:
    return None if isinstance(value, dict) else "must be an object"


def _url(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be an http(s) URL"
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "must be an http(s) URL"
    return None


def _participant(value: Any) -> str | None:
    if not isinstance(value, dict) or _string(value.get("address")):
        return "must be an object with a non-empty string address"
    return None


def _transfers(value: Any) -> str | None:
    if value == "block":
        return None
    if isinstance(value, dict) and set(value) == {"webhook"} and _url(value["webhook"]) is None:
        return None
    return 'must be "block" or {"webhook": URL}'


def _policy(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "must be an object {autonomous_send, transfers}"
    for name, check in (("autonomous_send", _bool), ("transfers", _transfers)):
        if name in value:
            problem = check(value[name])
            if problem:
                return f"{name} {problem}"
    unknown = set(value) - {"autonomous_send", "transfers"}
    if unknown:
        return f"has unknown fields {sorted(unknown)}"
    return None


def _status(value: Any) -> str | None:
    return None if value in STATUSES else f"must be one of {', '.join(STATUSES)}"


def _needs(value: Any) -> str | None:
    if not isinstance(value, list) or not value or any(_token(v) for v in value):
        return "must be a non-empty list of field names"
    return None


def _rfc3339(value: Any) -> str | None:
    if not isinstance(value, str) or "T" not in value.upper() and " " not in value:
        return "must be an RFC 3339 date-time"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return "must be an RFC 3339 date-time"
    return None if parsed.tzinfo else "must be an RFC 3339 date-time with an offset (Z or ±hh:mm)"


def _refusal_reason(value: Any) -> str | None:
    return None if value in REFUSAL_REASONS else f"must be one of {', '.join(REFUSAL_REASONS)}"


@frozen_dataclass
class MessageType:
    name: str
    route: str  # "from → to" as in §5
    required: dict[str, Check]
    optional: dict[str, Check]
    has_case: bool = True


MESSAGE_TYPES: dict[str, MessageType] = {t.name: t for t in (
    MessageType("handoff.request", "email → mode",
                {"handoff_id": _ident, "mode": _token, "details": _object, "status_url": _url,
                 "participant": _participant}, {}),
    MessageType("handoff.update", "email → mode", {"handoff_id": _ident, "details": _object}, {}),
    MessageType("handoff.cancel", "email → mode, master → email", {"handoff_id": _ident, "reason": _string}, {}),
    MessageType("handoff.status", "mode → email, email → master (relay)",
                {"handoff_id": _ident, "seq": _seq, "status": _status},
                {"needs": _needs, "at": _rfc3339, "outcome": _string, "reason": _string, "detail": _text}),
    MessageType("case.intake", "email → master",
                {"intake_ref": _ident, "resource_type": _token, "event": _object},
                {"requested_mode": lambda v: None if v is None else _token(v)}, has_case=False),
    MessageType("case.assign", "master → email",
                {"intake_ref": _ident, "resource_id": _resource_id}, {"policy": _policy}, has_case=False),
    MessageType("case.message", "email → master", {"event": _object, "message_ref": _ident}, {}),
    MessageType("case.policy", "master → email", {}, {"autonomous_send": _bool, "transfers": _transfers}),
    MessageType("handoff.requested", "email → master",
                {"handoff_id": _ident, "mode": _token, "forwarded": _bool}, {}),
    MessageType("mail.send", "master → email", {"in_reply_to": _ident, "subject": _text, "body": _text}, {}),
)}


def _invalid(detail: str) -> ProtocolError:
    return ProtocolError("invalid-message", detail)


def parse_message(value: Any) -> Envelope:
    """Validate one decoded JSON message. Raises ProtocolError (4xx) naming the problem."""
    if not isinstance(value, dict):
        raise _invalid("a message is a JSON object")
    version = value.get("mas_modes_version")
    if version != VERSION:
        raise ProtocolError("unsupported-version",
                            f"mas_modes_version must be {VERSION!r}, got {version!r}")
    type_name = value.get("type")
    if not isinstance(type_name, str) or type_name not in MESSAGE_TYPES:
        raise ProtocolError("unknown-type", f"type {type_name!r} is not one of {', '.join(MESSAGE_TYPES)}")
    problem = _ident(value.get("id"))
    if problem:
        raise _invalid(f"id {problem}")
    spec = MESSAGE_TYPES[type_name]
    case = None
    if spec.has_case:
        if "case" not in value:
            raise ProtocolError("invalid-case", f"{type_name} must carry case {{address, key}}")
        case = CaseRef.from_json(value["case"])
    elif value.get("case") is not None:
        raise _invalid(f"{type_name} carries no case (the case does not exist yet)")
    for name, check in spec.required.items():
        if name not in value:
            raise _invalid(f"{type_name} needs {name}")
        problem = check(value[name])
        if problem:
            raise _invalid(f"{name} {problem}")
    for name, check in spec.optional.items():
        if name in value:
            problem = check(value[name])
            if problem:
                raise _invalid(f"{name} {problem}")
    if type_name == "handoff.status":
        _check_status_fields(value)
    return Envelope(type_name, value["id"], case, value)


def _check_status_fields(value: dict[str, Any]) -> None:
    status = value["status"]
    if status == "negotiating" and "needs" not in value:
        raise _invalid("a negotiating status needs needs (the missing field names)")
    if status == "refused":
        if "reason" not in value:
            raise _invalid("a refused status needs reason")
        problem = _refusal_reason(value["reason"])
        if problem:
            raise _invalid(f"reason {problem}")
    # needs and at are optional on every status (§5 lists them beside the status, and
    # real modes send "running" with "at"): checked for shape above, never refused by status.
