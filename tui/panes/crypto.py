"""The reading pane's OpenPGP lines: what was encrypted, to which key, which parts were not, who signed.

Plain words on every line (no green mark): a valid signature by a key whose user IDs do not
name From says so, and each part that was not encrypted is named. Every line may hold mail or
key user-ID text: it goes through the inert-text boundary like the rest of the pane.
"""

from __future__ import annotations

from rich.text import Text

from mailtriage.application import Message
from mailtriage.tui.sanitize import inert_text

_ALARM = ("NOT", "BAD", "EXPIRED", "REVOKED", "not in your keyring", "do not match From", "could not", "wrong key",
          "corrupt", "larger than the limit", "agent", "gnupg")


def crypto_text(message: Message) -> Text:
    """One ``OpenPGP:`` line per fact of ``message.crypto`` (empty when the message has no OpenPGP)."""
    out = Text()
    if message.crypto is None:
        return out
    for line in message.crypto.lines():
        out.append("OpenPGP: ", "bold")
        alarming = any(word in line for word in _ALARM)
        out.append_text(inert_text(line, style="bold" if alarming else ""))
        out.append("\n")
    return out


def part_label(message: Message, index: int) -> str:
    """`` · encrypted`` / `` · NOT encrypted`` / `` · signed`` after a part's kind, when it matters."""
    crypto = message.crypto
    if crypto is None or index >= len(crypto.parts):
        return ""
    part = crypto.parts[index]
    if crypto.encrypted:
        return " · encrypted" + (" and signed" if part.signed else "") if part.encrypted else " · NOT encrypted"
    if crypto.signatures:
        if part.bad_signature:
            return " · BAD signature"
        return " · signed" if part.signed else " · NOT signed"
    return ""
