"""Message IDs of IMAP accounts: account ID + folder + UIDVALIDITY + UID.

Text form (opaque to callers; never split outside this module)::

    <account>:imap:<folder as base64url, no padding>:<uidvalidity>:<uid>

``parse_message_id`` locates the account of any ID; ``decode_message_id`` refuses an ID
of another account before any mail is touched; ``MessageRef.verify`` checks the folder's
current UIDVALIDITY before a UID is used (a reset folder makes old IDs stale).
"""

from __future__ import annotations

import base64
import binascii
import re

from mailtriage.backends.mailbox_contract import ForeignMessageId, StaleMessageId
from mailtriage.core.lean_dataclass import frozen_dataclass

PROVIDER = "imap"
_DECIMAL = re.compile(r"^[1-9][0-9]{0,19}$")


@frozen_dataclass(order=True)
class MessageRef:
    account_id: str
    folder: str
    uidvalidity: int
    uid: int

    def __str__(self) -> str:
        return encode_message_id(self)

    def verify(self, current_uidvalidity: int) -> None:
        """Raise StaleMessageId when the folder's UIDVALIDITY is not the one this ID was made under."""
        if current_uidvalidity != self.uidvalidity:
            raise StaleMessageId(self.account_id, str(self),
                                 f"folder {self.folder!r} was reset (UIDVALIDITY {self.uidvalidity} -> "
                                 f"{current_uidvalidity}); its old message IDs no longer name the same mail")


def _folder_token(folder: str) -> str:
    return base64.urlsafe_b64encode(folder.encode("utf-8")).decode("ascii").rstrip("=")


def _folder_from(token: str) -> str:
    padded = token + "=" * (-len(token) % 4)
    return base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8")


def encode_message_id(ref: MessageRef) -> str:
    return f"{ref.account_id}:{PROVIDER}:{_folder_token(ref.folder)}:{ref.uidvalidity}:{ref.uid}"


def parse_message_id(text: str) -> MessageRef:
    """Read any IMAP message ID (to find its account). Raises ForeignMessageId when malformed."""
    if not isinstance(text, str):
        raise ForeignMessageId("?", repr(text), "not a message id string")
    parts = text.split(":")
    if len(parts) != 5 or parts[1] != PROVIDER:
        raise ForeignMessageId(parts[0] if parts else "?", text, "not an IMAP message id "
                               "(account:imap:folder:uidvalidity:uid)")
    account, _, token, validity, uid = parts
    if not account or not _DECIMAL.match(validity) or not _DECIMAL.match(uid):
        raise ForeignMessageId(account or "?", text, "UIDVALIDITY and UID must be positive decimals")
    try:
        folder = _folder_from(token)
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise ForeignMessageId(account, text, "folder part is not base64url UTF-8") from exc
    if not folder:
        raise ForeignMessageId(account, text, "empty folder")
    return MessageRef(account, folder, int(validity), int(uid))


def decode_message_id(text: str, expected_account_id: str) -> MessageRef:
    """Parse ``text`` and refuse it unless it belongs to ``expected_account_id``."""
    ref = parse_message_id(text)
    if ref.account_id != expected_account_id:
        raise ForeignMessageId(expected_account_id, text,
                               f"it belongs to account {ref.account_id!r}, not {expected_account_id!r}")
    return ref


def decode_many(ids, expected_account_id: str) -> list[MessageRef]:
    """Decode a bulk request's IDs, refusing the whole request if any is foreign or malformed."""
    return [decode_message_id(i, expected_account_id) for i in ids]
