"""Organize a personal account's messages: mark read/unread, flag/unflag, move, archive, trash.

Each request becomes a :class:`~mailtriage.application.flows.proposals.Proposal` whose one
write names the account that writes it, the messages it touches (subject and
sender, as data) and exactly what changes; nothing reaches the server before the
proposal is applied after a confirm. UI-free: the TUI and a CLI show the same object.

A request may name one message or a batch of any size (the tagged messages of a list):
the write goes through the adapter's bulk operations in calls of 1 to ``MAX_BULK`` IDs,
and what it did is recorded item by item in ``proposal.facts["outcome"]``
(``{"done": [ids], "failed": {id: why}, "lines": [...]}``). When any message failed the
write raises :class:`~mailtriage.backends.mailbox_contract.PartialFailure` over the whole
batch, so the report is never a success; a call that fails as a whole (the server went
away) stops the batch and the messages after it are reported as not attempted.

What an adapter's bulk call reports, and how it is shown (the shape every adapter
shares; Graph's bulk writes and Gmail's trash report per message this way):

* ``PartialFailure.done`` — the IDs changed on the server; ``PartialFailure.failed`` —
  every other ID of the call with why, a reason that starts with "not changed", "perhaps
  changed" (no clear answer: refresh to see) or "not attempted" when the adapter says so.
* An optional ``PartialFailure.stopped_by`` (the outage, e.g. throttling past the
  backoff): the adapter stopped part-way, so the batches after it are not sent either and
  are reported "not attempted". Without it the next batch goes on. An adapter that sets
  neither reason prefix nor ``stopped_by`` is read as before.
* ``outcome["lines"]``: "done: N of M messages", a "FAILED: …" line per failed message with
  why, then a "changed: …" line per message that did change, so a partial outage says
  exactly which messages moved.

Writes need an account whose ``access`` is ``draft`` or ``send``: ``read`` means
list, read and search only (docs/imap.md), so the proposal is blocked and says why.
"""

from __future__ import annotations

from typing import Sequence

from mailtriage.backends.errors import MailError
from mailtriage.backends.mailbox_contract import MAX_BULK, MailFolder, MailHeader, PartialFailure
from mailtriage.core.inert import terminal_line
from mailtriage.application.flows.proposals import Blocked, BlockedBy, Field, Proposal, Write, WriteKind
from typing import Any, Sequence
from mailtriage.backends.mailbox_contract import MailHeader

#: action -> (write kind, what the user reads, set_flags keywords or the target role / "folder")
ACTIONS: dict[str, tuple[WriteKind, str, dict | str]] = {
    "read": (WriteKind.FLAG, "mark read (add \\Seen)", {"read": True}),
    "unread": (WriteKind.FLAG, "mark unread (remove \\Seen)", {"read": False}),
    "flag": (WriteKind.FLAG, "flag (add \\Flagged)", {"flagged": True}),
    "unflag": (WriteKind.FLAG, "unflag (remove \\Flagged)", {"flagged": False}),
    "archive": (WriteKind.MOVE, "move to the Archive folder", "archive"),
    "trash": (WriteKind.MOVE, "move to the Trash folder", "trash"),
    "move": (WriteKind.MOVE, "move to another folder", "folder"),
}

#: The toggles a key asks for, and how each picks its direction for a set of messages.
TOGGLES = ("toggle_read", "toggle_flag")

WRITING_ACCESS = ("draft", "send")


def resolve_toggle(action: str, headers: Sequence[MailHeader]) -> str:
    """The action a toggle means for ``headers``: mark read unless every one is read already
    (then unread); flag unless every one is flagged (then unflag). A mixed set is brought to
    one state, the way mutt and aerc do. Other actions are returned as they are."""
    if action == "toggle_read":
        return "unread" if headers and all(h.read for h in headers) else "read"
    if action == "toggle_flag":
        return "unflag" if headers and all(h.flagged for h in headers) else "flag"
    return action


def chunks(ids: Sequence[str], size: int = MAX_BULK) -> list[list[str]]:
    """``ids`` in bulk calls of 1 to ``size`` (the contract's 1–100 rule)."""
    return [list(ids[i:i + size]) for i in range(0, len(ids), size)]


def _blocked(account_id: str, how, headers: Sequence[MailHeader], *, access: str, folders: Sequence[MailFolder],
             folder_id: str | None, target_name: str | None) -> Blocked | None:
    """Why nothing of an organize proposal may be written (the account's access first), or None."""
    if access not in WRITING_ACCESS:
        return Blocked(BlockedBy.ACCESS, f"account {account_id} has access = {access!r}; flag and move writes need "
                                         f"\"draft\" or \"send\" (set access in the [accounts.{account_id}] settings)")
    if how in ("archive", "trash") and folders and not any(f.role == how for f in folders):
        return Blocked(BlockedBy.FOLDER, f"account {account_id} has no {how.capitalize()} folder")
    if how == "folder" and folders and not any(f.id == folder_id for f in folders):
        return Blocked(BlockedBy.FOLDER, f"account {account_id} has no folder {folder_id!r}")
    if how == "folder" and all(h.folder_id == folder_id for h in headers):
        return Blocked(BlockedBy.FOLDER, f"every message is in {target_name} already")
    return None


def propose_organize(mailbox, headers: Sequence[MailHeader], action: str, *, access: str,
                     folders: Sequence[MailFolder] = (), folder_id: str | None = None) -> Proposal:
    """The proposal to apply ``action`` to ``headers`` through ``mailbox`` (an adapter).

    ``folders`` (the account's folder list, when known) names the destination of a
    move and blocks a move to a role the account lacks; ``folder_id`` is the target of
    ``move``. ``action`` may be a toggle (:data:`TOGGLES`), resolved by :func:`resolve_toggle`.

    Raises:
        ValueError: ``action`` is not one of :data:`ACTIONS`, no message is given, or a
            move names no folder.
    """
    action = resolve_toggle(action, headers)
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; valid: {', '.join([*ACTIONS, *TOGGLES])}")
    if not headers:
        raise ValueError("no message to organize")
    kind, change, how = ACTIONS[action]
    account_id = str(getattr(mailbox, "account_id", headers[0].account_id))
    # A message tagged twice (two rows of one message) is written once.
    headers = list({h.id: h for h in headers}.values())
    ids = [h.id for h in headers]
    count = f"{len(ids)} message{'s' if len(ids) != 1 else ''}"
    fields = [Field("Account", account_id)]
    target_name = None
    if how == "folder":
        if not folder_id:
            raise ValueError("a move names the folder to move to")
        target = next((f for f in folders if f.id == folder_id), None)
        target_name = target.name if target is not None else folder_id
        change = f"move to the folder {target_name}"
    proposal = Proposal(title=f"{change.split(' (')[0].capitalize()}: {count} in account {account_id}")
    fields.append(Field("Change", change))
    if how in ("archive", "trash"):
        target = next((f for f in folders if f.role == how), None)
        if target is not None:
            fields.append(Field("To folder", target.name))
    elif how == "folder":
        fields.append(Field("To folder", target_name))
    if len(headers) == 1:
        header = headers[0]
        fields.append(Field("Message", f"{header.subject or '(no subject)'} — from {_sender(header)} — "
                                       f"in {header.folder_id}"))
        fields.append(Field("  now", _state(header)))
    else:
        batches = len(chunks(ids))
        fields.append(Field("Batches", f"{batches} call{'s' if batches != 1 else ''} of at most {MAX_BULK} "
                                       "messages"))
        # One line per message, each made one terminal line (a subject's CR/LF cannot forge
        # another item); the dialog scrolls the list.
        fields.append(Field("Messages", "\n".join(
            f"{n:>4}. {terminal_line(h.subject or '(no subject)')} — from {terminal_line(_sender(h))} — "
            f"in {terminal_line(h.folder_id)} — now {_state(h)}" for n, h in enumerate(headers, 1)),
            multiline=True))
    proposal.blocked = _blocked(account_id, how, headers, access=access, folders=folders, folder_id=folder_id,
                                target_name=target_name)

    def call(batch: list[str]) -> None:
        if isinstance(how, dict):
            mailbox.set_flags(batch, **how)
        elif how == "archive":
            mailbox.archive(batch)
        elif how == "trash":
            mailbox.trash(batch)
        else:
            mailbox.move(batch, folder_id)

    def apply(write: Write):
        done: list[str] = []
        failed: dict[str, str] = {}
        gone: list[str] = []  # failed ones that name no message any more (the list drops them)
        outcome: dict = {"done": done, "failed": failed, "gone": gone, "lines": []}
        proposal.facts["outcome"] = outcome
        batches = chunks(ids)
        for index, batch in enumerate(batches):
            try:
                call(batch)
                done.extend(batch)
            except PartialFailure as exc:  # some of this batch: go on with the next one
                done.extend(exc.done)
                failed.update(exc.failed)
                gone.extend(exc.gone)
                stopped = getattr(exc, "stopped_by", None)
                if stopped is not None:  # the adapter stopped on an outage: so do we
                    rest = [i for b in batches[index + 1:] for i in b]
                    failed.update({i: f"not attempted: an earlier batch failed ({stopped})" for i in rest})
                    break
            except MailError as exc:  # the whole call failed (server gone, refused): stop here
                if not done and not failed:  # nothing happened at all: the error as it is
                    failed.update({i: str(exc) for i in ids})
                    raise
                failed.update({i: str(exc) for i in batch})
                rest = [i for b in batches[index + 1:] for i in b]
                failed.update({i: f"not attempted: an earlier batch failed ({exc})" for i in rest})
                break
        if failed:
            by_id = {h.id: h for h in headers}
            outcome["lines"] = [f"done: {len(done)} of {len(ids)} messages"] + [
                f"FAILED: {terminal_line(by_id[i].subject or '(no subject)')} — from "
                f"{terminal_line(_sender(by_id[i]))}: {terminal_line(why)}" for i, why in failed.items() if i in by_id] + [
                f"changed: {terminal_line(by_id[i].subject or '(no subject)')} — from {terminal_line(_sender(by_id[i]))}"
                for i in done if i in by_id]
            raise PartialFailure(account_id, action, failed, done, gone)
        return ids

    proposal.writes.append(Write(kind, f"account {account_id}", f"{change}: {count}", fields, apply,
                                 label=change.split(" (")[0].capitalize(),
                                 where=(f"in the local Maildir of account {account_id}"
                                        if mailbox.local_folders
                                        else f"on the server of account {account_id}")))
    if kind is WriteKind.MOVE:
        proposal.notes.append("a move gives the messages new IDs; the list is refreshed after the write")
    if len(ids) > MAX_BULK:
        proposal.notes.append(f"written in batches of {MAX_BULK}; a failure is reported message by message")
    proposal.facts.update({"account": account_id, "action": action, "ids": ids,
                           # a flag change the same key undoes (a setting may skip its dialog)
                           "reversible": kind is WriteKind.FLAG})
    if folder_id is not None:
        proposal.facts["folder"] = folder_id
    return proposal


def outcome_lines(proposal: Proposal) -> list[str]:
    """What a batch write did, message by message (the failed ones with why); empty for a
    proposal that is not a batch or was not applied, or a batch that fully succeeded."""
    outcome = proposal.facts.get("outcome")
    return list(outcome.get("lines", ())) if isinstance(outcome, dict) else []


def _sender(header: MailHeader) -> str:
    sender = header.sender.name or header.sender.email
    if header.sender.name and header.sender.email:
        sender = f"{header.sender.name} <{header.sender.email}>"
    return sender


def _state(header: MailHeader) -> str:
    parts = ["read" if header.read else "unread"]
    if header.flagged:
        parts.append("flagged")
    return ", ".join(parts)


class OrganizeFlow:
    """Flag or move messages of a personal mailbox: one message or a batch (tagged rows) of
    any size, written in bulk calls of at most ``MAX_BULK``; a toggle action
    (``toggle_read``, ``toggle_flag``) picks its direction from the whole set."""

    def __init__(self, mailbox: Any) -> None:
        self.mailbox = mailbox

    def propose(self, headers: Sequence[MailHeader], action: str, *, folder_id: str | None = None) -> Proposal:
        box = self.mailbox
        folders = box.list_folders() if action in ("archive", "trash", "move") else ()
        access = str(getattr(getattr(box, "account", None), "access", "read"))
        return propose_organize(box, headers, action, access=access, folders=folders, folder_id=folder_id)
