"""Organize a personal account's messages: mark read/unread, flag/unflag, archive, trash.

Each request becomes a :class:`~mailtriage.workflows.proposals.Proposal` whose one
write names the account that writes it, the messages it touches (subject and
sender, as data) and exactly what changes; nothing reaches the server before the
proposal is applied after a confirm. UI-free: the TUI and a CLI show the same object.

Writes need an account whose ``access`` is ``draft`` or ``send``: ``read`` means
list, read and search only (docs/imap.md), so the proposal is blocked and says why.
"""

from __future__ import annotations

from typing import Sequence

from mailtriage.backends.mailbox_contract import MailFolder, MailHeader
from mailtriage.workflows.proposals import Field, Proposal, Write, WriteKind

#: action -> (write kind, what the user reads, set_flags keywords or the target role)
ACTIONS: dict[str, tuple[WriteKind, str, dict | str]] = {
    "read": (WriteKind.FLAG, "mark read (add \\Seen)", {"read": True}),
    "unread": (WriteKind.FLAG, "mark unread (remove \\Seen)", {"read": False}),
    "flag": (WriteKind.FLAG, "flag (add \\Flagged)", {"flagged": True}),
    "unflag": (WriteKind.FLAG, "unflag (remove \\Flagged)", {"flagged": False}),
    "archive": (WriteKind.MOVE, "move to the Archive folder", "archive"),
    "trash": (WriteKind.MOVE, "move to the Trash folder", "trash"),
}

WRITING_ACCESS = ("draft", "send")


def propose_organize(mailbox, headers: Sequence[MailHeader], action: str, *, access: str,
                     folders: Sequence[MailFolder] = ()) -> Proposal:
    """The proposal to apply ``action`` to ``headers`` through ``mailbox`` (an adapter).

    ``folders`` (the account's folder list, when known) names the destination of a
    move and blocks a move to a role the account lacks.

    Raises:
        ValueError: ``action`` is not one of :data:`ACTIONS`, or no message is given.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; valid: {', '.join(ACTIONS)}")
    if not headers:
        raise ValueError("no message to organize")
    kind, change, how = ACTIONS[action]
    account_id = str(getattr(mailbox, "account_id", headers[0].account_id))
    ids = [h.id for h in headers]
    count = f"{len(ids)} message{'s' if len(ids) != 1 else ''}"
    proposal = Proposal(title=f"{change.split(' (')[0].capitalize()}: {count} in account {account_id}")
    fields = [Field("Account", account_id), Field("Change", change)]
    if isinstance(how, str):
        target = next((f for f in folders if f.role == how), None)
        if target is not None:
            fields.append(Field("To folder", target.name))
        elif folders:
            proposal.blocked = f"account {account_id} has no {how.capitalize()} folder"
    for header in headers:
        sender = header.sender.name or header.sender.email
        if header.sender.name and header.sender.email:
            sender = f"{header.sender.name} <{header.sender.email}>"
        fields.append(Field("Message", f"{header.subject or '(no subject)'} — from {sender} — in {header.folder_id}"))
        state = _state(header)
        fields.append(Field("  now", state))
    if access not in WRITING_ACCESS:
        proposal.blocked = (f"account {account_id} has access = {access!r}; flag and move writes need "
                            f"\"draft\" or \"send\" (set access in the [accounts.{account_id}] settings)")

    def apply(write: Write):
        if isinstance(how, dict):
            mailbox.set_flags(ids, **how)
        elif how == "archive":
            mailbox.archive(ids)
        else:
            mailbox.trash(ids)
        return ids

    proposal.writes.append(Write(kind, f"account {account_id}", f"{change}: {count}", fields, apply))
    if kind is WriteKind.MOVE:
        proposal.notes.append("a move gives the messages new IDs; the list is refreshed after the write")
    proposal.facts.update({"account": account_id, "action": action, "ids": ids})
    return proposal


def _state(header: MailHeader) -> str:
    parts = ["read" if header.read else "unread"]
    if header.flagged:
        parts.append("flagged")
    return ", ".join(parts)
