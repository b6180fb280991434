"""Message IDs of Microsoft accounts: ``<account>:graph:<immutable Graph id>``.

Graph IDs are requested as immutable (``Prefer: IdType="ImmutableId"``), so an ID stays
valid when the message moves between folders. Opaque to callers; ``decode_message_id``
refuses an ID of another account or provider before any request.
"""

from __future__ import annotations

import re

from mailtriage.backends.mailbox_contract import ForeignMessageId

PROVIDER = "graph"
_GRAPH_ID = re.compile(r"^[A-Za-z0-9_=+/-]{1,512}$")


def encode_message_id(account_id: str, graph_id: str) -> str:
    return f"{account_id}:{PROVIDER}:{graph_id}"


def decode_message_id(text: str, expected_account_id: str) -> str:
    if not isinstance(text, str):
        raise ForeignMessageId(expected_account_id, repr(text), "not a message id string")
    account, sep, rest = text.partition(":")
    provider, sep2, graph_id = rest.partition(":")
    if not (sep and sep2) or provider != PROVIDER or not account:
        raise ForeignMessageId(expected_account_id, text, "not a Graph message id (account:graph:id)")
    if account != expected_account_id:
        raise ForeignMessageId(expected_account_id, text,
                               f"it belongs to account {account!r}, not {expected_account_id!r}")
    if not _GRAPH_ID.match(graph_id):
        raise ForeignMessageId(expected_account_id, text, "the Graph id part is malformed")
    return graph_id
