"""The contract envelope (§2) and the response shapes.

Every message is one flat JSON object: the envelope fields ``mas_modes_version``,
``type``, ``id`` and ``case`` beside the payload fields of its type (§5).

Responses: 2xx ``{"ok": true, ...}`` accepted; 4xx ``{"ok": false, "error": CODE,
"detail": ...}`` refused, never to be retried unchanged; 5xx (or no answer) may be
retried with the same ``id``.
"""

from __future__ import annotations

import uuid
from dataclasses import field
from typing import Any

from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.modes.addresses import AddressError, MasAddress
from mailtriage.modes.errors import ModesError

VERSION = "0.1"
MAX_ID_LENGTH = 200

#: Error codes we answer with, and their HTTP statuses. docs/modes.md lists them.
ERROR_STATUS: dict[str, int] = {
    "invalid-json": 400,
    "invalid-message": 400,
    "unsupported-version": 400,
    "unknown-type": 400,
    "invalid-case": 400,
    "unexpected-type": 400,
    "unauthorized": 401,
    "not-timeout-owner": 403,
    "forbidden": 403,
    "refused": 403,
    "unknown-case": 404,
    "unknown-handoff": 404,
    "unknown-intake": 404,
    "invalid-transition": 409,
    "already-assigned": 409,
    "payload-too-large": 413,
    "unsupported-media-type": 415,
    "internal-error": 500,
    "mail-unavailable": 503,
}


class ProtocolError(ModesError):
    """A message refused with a contract error. ``status`` is the HTTP status."""

    def __init__(self, code: str, detail: str, status: int | None = None, **extra: Any) -> None:
        self.code = code
        self.detail = detail
        self.status = status or ERROR_STATUS.get(code, 400)
        self.extra = extra
        super().__init__(f"{code}: {detail}")

    def body(self) -> dict[str, Any]:
        return {"ok": False, "error": self.code, "detail": self.detail, **self.extra}


@frozen_dataclass
class CaseRef:
    """``case {address, key}``: the canonical resource address and its equivalence key."""

    address: str
    key: str

    @classmethod
    def of(cls, address: MasAddress) -> "CaseRef":
        resource = address.without_mode()
        return cls(resource.canonical, resource.key)

    def to_json(self) -> dict[str, str]:
        return {"address": self.address, "key": self.key}

    @classmethod
    def from_json(cls, value: Any) -> "CaseRef":
        """Validate an incoming ``case`` object. Raises ProtocolError(invalid-case)."""
        if not isinstance(value, dict):
            raise ProtocolError("invalid-case", "case must be an object {address, key}")
        address, key = value.get("address"), value.get("key")
        if not isinstance(address, str) or not isinstance(key, str):
            raise ProtocolError("invalid-case", "case.address and case.key must both be strings")
        try:
            parsed = MasAddress.parse(address)
        except AddressError as exc:
            raise ProtocolError("invalid-case", f"case.address: {exc}") from exc
        if parsed.is_intake or parsed.mode:
            raise ProtocolError("invalid-case", f"case.address {address!r} is not a resource address TYPE=ID@D")
        if parsed.key != key:
            raise ProtocolError("invalid-case",
                                f"case.key {key!r} is not the equivalence key of {address!r} (expected {parsed.key!r})")
        return cls(parsed.canonical, parsed.key)


@frozen_dataclass
class Envelope:
    """A validated incoming or outgoing message."""

    type: str
    id: str
    case: CaseRef | None
    body: dict[str, Any] = field(repr=False)

    def get(self, name: str, default: Any = None) -> Any:
        return self.body.get(name, default)


def new_id(prefix: str = "msg") -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def build(type_: str, *, case: CaseRef | None = None, id: str | None = None, **payload: Any) -> dict[str, Any]:
    """An outgoing message as a JSON-ready dict, with a fresh id unless one is given."""
    message: dict[str, Any] = {"mas_modes_version": VERSION, "type": type_, "id": id or new_id()}
    if case is not None:
        message["case"] = case.to_json()
    message.update(payload)
    return message


def ok(**fields: Any) -> dict[str, Any]:
    return {"ok": True, **fields}
