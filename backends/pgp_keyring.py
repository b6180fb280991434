"""The keyring as gpg reads it: keys from ``--with-colons`` listings, user IDs' mailboxes as gpg
parses them, revoked and expired user IDs left out.

"Matches From" must mean what gpg means: the UID ``rita@example.net <mallory@evil.example>``
names mallory (gpg takes the mailbox between ``<`` and ``>``), and a revoked UID names nobody.
"""

from __future__ import annotations

import re

from mailtriage.core.lazy_re import lazy
from mailtriage.core.lean_dataclass import frozen_dataclass

__all__ = ["KeyringKey", "parse_colons", "uid_mailbox"]

_PLAIN_MAILBOX = lazy(r"[^@\s<>\"]+@[^@\s<>\"]+")
# gpg's validity letters (DETAILS, field 2), in words.
VALIDITY = {"o": "unknown", "-": "unknown", "q": "unknown", "n": "never", "m": "marginal", "f": "full",
            "u": "ultimate", "e": "expired", "r": "revoked", "i": "invalid", "d": "disabled"}
_UNUSABLE = frozenset("erid")


@frozen_dataclass
class KeyringKey:
    """One primary key: fingerprint, key validity (gpg's letter), usable UIDs, capabilities, the
    key IDs and fingerprints of the key and its subkeys."""

    fingerprint: str
    validity: str
    uids: tuple[str, ...]
    capabilities: str
    names: tuple[str, ...]

    @property
    def usable(self) -> bool:
        return self.validity not in _UNUSABLE

    def mailboxes(self) -> set[str]:
        return {m for m in (uid_mailbox(u) for u in self.uids) if m}

    def named_by(self, key_id: str) -> bool:
        """Whether ``key_id`` (a key ID or fingerprint, of the key or a subkey) names this key."""
        want = key_id.upper()
        return bool(want) and any(n == want or n.endswith(want) or want.endswith(n) for n in self.names if n)


def uid_mailbox(uid: str) -> str:
    """The mailbox gpg reads in a user ID (lower case), "" when it reads none.

    As GnuPG's ``mailbox_from_userid``: the text between the first ``<`` and the next ``>``, and
    no further angle bracket after it; without ``<``, the whole UID when it is a bare address.
    """
    start = uid.find("<")
    if start >= 0:
        end = uid.find(">", start + 1)
        if end <= start + 1 or "<" in uid[end + 1:] or ">" in uid[end + 1:]:
            return ""
        mailbox = uid[start + 1:end].strip()
    else:
        mailbox = uid.strip()
    return mailbox.lower() if _PLAIN_MAILBOX.fullmatch(mailbox) else ""


def _unescape(field: str) -> str:
    # gpg escapes ':' and control bytes in colon listings as \xNN.
    raw = re.sub(rb"\\x([0-9a-fA-F]{2})", lambda m: bytes([int(m.group(1), 16)]),
                 field.encode("utf-8", "surrogateescape"))
    return raw.decode("utf-8", "replace")


def parse_colons(text: str) -> list[KeyringKey]:
    """The primary keys of a ``gpg --with-colons --list-keys`` listing."""
    keys: list[KeyringKey] = []
    current: dict | None = None

    def close() -> None:
        if current is not None:
            keys.append(KeyringKey(current["fpr"], current["validity"], tuple(current["uids"]), current["cap"],
                                   tuple(n.upper() for n in current["names"])))

    for line in text.splitlines():
        fields = line.split(":")
        kind = fields[0]
        if kind == "pub":
            close()
            current = {"fpr": "", "validity": fields[1] if len(fields) > 1 else "",
                       "cap": fields[11] if len(fields) > 11 else "", "uids": [],
                       "names": [fields[4]] if len(fields) > 4 else []}
        elif current is None:
            continue
        elif kind == "fpr" and len(fields) > 9:
            if not current["fpr"]:
                current["fpr"] = fields[9]
            current["names"].append(fields[9])
        elif kind in ("sub", "ssb") and len(fields) > 4:
            current["names"].append(fields[4])
        elif kind == "uid" and len(fields) > 9 and fields[1] not in ("r", "e"):
            current["uids"].append(_unescape(fields[9]))
    close()
    return keys
