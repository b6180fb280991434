"""MAS address forms used by the modes contract, and the equivalence key we chose.

The contract cites the MAS address specification (§7 handoff requests, §8 equivalence
keys), which is not available to us. We implement the forms the contract shows and
document our own equivalence key (docs/modes.md):

==================  ======================  =============================================
form                example                 meaning
==================  ======================  =============================================
intake              ``ticket@D``            a new case of resource type ``ticket``
resource            ``ticket=gs-1@D``       the case ``gs-1`` of type ``ticket``
handoff on intake   ``ticket!callback@D``   a new case, continued in mode ``callback``
handoff on resource ``ticket=gs-1!callback@D``  case ``gs-1``, continued in ``callback``
==================  ======================  =============================================

Grammar of the local part: ``TYPE`` and ``MODE`` are ``[A-Za-z][A-Za-z0-9-]*`` and
compared case-insensitively; ``ID`` is ``[A-Za-z0-9][A-Za-z0-9._-]*`` and compared
case-sensitively (it is the master's identifier, and two IDs that differ only in case
may be two cases). The domain is compared case-insensitively, in its IDNA ASCII form.

Equivalence key: ``type=ID@domain`` with the type lower-cased, the ID as written and
the domain lower-cased in IDNA ASCII form (A-labels, no trailing dot). The canonical
address is the same string with the domain in its Unicode form, so for ASCII domains
address and key are the same text.
"""

from __future__ import annotations

import email.utils
import re

from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.modes.errors import ModesError

_TOKEN = r"[A-Za-z][A-Za-z0-9-]*"
_ID = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_LOCAL = re.compile(rf"^(?P<type>{_TOKEN})(?:=(?P<id>{_ID}))?(?:!(?P<mode>{_TOKEN}))?$")
_TOKEN_RE = re.compile(rf"^{_TOKEN}$")
_ID_RE = re.compile(rf"^{_ID}$")
_MAX_ID = 128


class AddressError(ModesError, ValueError):
    """A text that is not one of the MAS address forms; the message says why."""


def normalize_domain(domain: str) -> tuple[str, str]:
    """Return ``(ascii_form, unicode_form)`` of a domain, both lower-case, no trailing dot.

    Raises AddressError for an empty or non-IDNA-encodable domain.
    """
    text = domain.strip().rstrip(".")
    if not text or any(ch.isspace() for ch in text):
        raise AddressError(f"domain {domain!r} is empty or has spaces")
    try:
        ascii_form = text.encode("idna").decode("ascii").lower()
        unicode_form = ascii_form.encode("ascii").decode("idna").lower()
    except UnicodeError as exc:
        raise AddressError(f"domain {domain!r} is not a valid internationalized domain name ({exc})") from exc
    return ascii_form, unicode_form


def valid_token(text: str) -> bool:
    """True for a valid TYPE or MODE token."""
    return bool(_TOKEN_RE.match(text))


def valid_resource_id(text: str) -> bool:
    return bool(_ID_RE.match(text)) and len(text) <= _MAX_ID


@frozen_dataclass
class MasAddress:
    """One parsed MAS address. ``resource_id`` is None for intake forms, ``mode`` for plain ones."""

    resource_type: str  # lower-cased
    resource_id: str | None  # as written
    mode: str | None  # lower-cased
    domain: str  # IDNA ASCII, lower-cased
    domain_display: str  # Unicode, lower-cased

    @classmethod
    def parse(cls, text: str) -> "MasAddress":
        """Parse ``[Name] <local@domain>`` or ``local@domain``.

        Raises AddressError naming what is wrong.
        """
        _, addr = email.utils.parseaddr(text or "")
        addr = addr or (text or "").strip()
        local, sep, domain = addr.rpartition("@")
        if not sep or not local:
            raise AddressError(f"{text!r} is not an address (LOCAL@DOMAIN)")
        match = _LOCAL.match(local)
        if not match:
            raise AddressError(
                f"{local!r} is not a MAS local part (TYPE, TYPE=ID, TYPE!MODE or TYPE=ID!MODE; "
                "TYPE/MODE letters, digits and '-', ID letters, digits, '.', '_' and '-')")
        if match["id"] and len(match["id"]) > _MAX_ID:
            raise AddressError(f"resource id longer than {_MAX_ID} characters")
        ascii_domain, display = normalize_domain(domain)
        return cls(match["type"].lower(), match["id"], match["mode"].lower() if match["mode"] else None,
                   ascii_domain, display)

    @classmethod
    def resource(cls, resource_type: str, resource_id: str, domain: str) -> "MasAddress":
        """The resource address ``TYPE=ID@D``. Raises AddressError for invalid parts."""
        if not valid_token(resource_type):
            raise AddressError(f"resource type {resource_type!r} is not a MAS token")
        if not valid_resource_id(resource_id):
            raise AddressError(f"resource id {resource_id!r} is not a MAS id (letters, digits, '.', '_', '-')")
        ascii_domain, display = normalize_domain(domain)
        return cls(resource_type.lower(), resource_id, None, ascii_domain, display)

    @property
    def is_intake(self) -> bool:
        return self.resource_id is None

    def without_mode(self) -> "MasAddress":
        return MasAddress(self.resource_type, self.resource_id, None, self.domain, self.domain_display)

    def _local(self) -> str:
        local = self.resource_type
        if self.resource_id is not None:
            local += f"={self.resource_id}"
        if self.mode:
            local += f"!{self.mode}"
        return local

    @property
    def canonical(self) -> str:
        """Display form, domain in Unicode (e.g. ``ticket=gs-1!callback@example.org``)."""
        return f"{self._local()}@{self.domain_display}"

    @property
    def ascii(self) -> str:
        """The form to put on the wire in SMTP (domain in A-labels)."""
        return f"{self._local()}@{self.domain}"

    @property
    def key(self) -> str:
        """The equivalence key of the resource (mode dropped). Raises AddressError on intake forms."""
        if self.resource_id is None:
            raise AddressError(f"{self.canonical} is an intake address; only a resource address has a key")
        return f"{self.resource_type}={self.resource_id}@{self.domain}"

    def __str__(self) -> str:
        return self.canonical


def same_domain(address: MasAddress, domain: str) -> bool:
    try:
        return address.domain == normalize_domain(domain)[0]
    except AddressError:
        return False
