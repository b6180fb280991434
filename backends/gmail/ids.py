"""Message IDs of Gmail accounts: ``<account>:gmail:<Gmail message id>``.

Opaque to callers (never split outside this module). ``decode_message_id`` refuses an
ID of another account, or of another provider, before any request is made.
"""

from __future__ import annotations

import re

from mailtriage.backends.mailbox_contract import ForeignMessageId

PROVIDER = "gmail"
_GMAIL_ID = re.compile(r"^[0-9A-Za-z_-]{1,64}$")


def encode_message_id(account_id: str, gmail_id: str) -> str:
    return f"{account_id}:{PROVIDER}:{gmail_id}"


def parse_message_id(text: str) -> tuple[str, str]:
    """``(account, gmail id)`` of any Gmail message ID. Raises ForeignMessageId when malformed."""
    if not isinstance(text, str):
        raise ForeignMessageId("?", repr(text), "not a message id string")
    parts = text.split(":")
    if len(parts) != 3 or parts[1] != PROVIDER or not parts[0]:
        raise ForeignMessageId(parts[0] if parts else "?", text, "not a Gmail message id (account:gmail:id)")
    if not _GMAIL_ID.match(parts[2]):
        raise ForeignMessageId(parts[0], text, "the Gmail id part is malformed")
    return parts[0], parts[2]


def decode_message_id(text: str, expected_account_id: str) -> str:
    """The Gmail id of ``text``, refusing an ID that is not of ``expected_account_id``."""
    account, gmail_id = parse_message_id(text)
    if account != expected_account_id:
        raise ForeignMessageId(expected_account_id, text,
                               f"it belongs to account {account!r}, not {expected_account_id!r}")
    return gmail_id
