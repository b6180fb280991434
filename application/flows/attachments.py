"""Saving attachments: a proposal that names every file it would write (UI-free).

A thread's attachments are listed from what ``read_thread`` gave (``Message.attachments``);
their bytes are fetched only when a confirmed proposal writes them, or when a front end
shows one. Each write of :func:`propose_save` shows the sender's real name (untrusted; every
front end shows it inert), the safe name it will be saved under
(:func:`mailtriage.core.safe_names.safe_name`, numbered when the folder already holds it)
and the folder. Applying writes through :func:`mailtriage.core.safe_names.save_bytes`: only into a folder
of the user's that no one else can write, whole or not at all, never replacing a file or
writing through a symlink.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable, Iterable, Sequence

from mailtriage.core.errors import ConfigError
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.paths import check_private_dir
from mailtriage.core.safe_names import SavedFile, numbered, safe_name, save_bytes
from mailtriage.application.flows.proposals import BlockedBy, Field, Proposal, Write, WriteKind


#: How a backend marks a part a cap cut (backends/mbox.py: the archive's message size cap).
_TRUNCATED = re.compile(r"\btruncated at ([0-9][0-9,]*) bytes\b")


@frozen_dataclass
class AttachmentItem:
    """One attachment of a read thread: which message, which part, and what the sender says it is."""

    message_number: int  # 1-based position of the message in the thread
    index: int  # position among the message's attachments (the backend's numbering)
    message_id: str
    message_ref: str | None  # the message's backend_ref: what the backend fetches the bytes by
    filename: str  # the sender's name for it (untrusted)
    content_type: str
    size: int
    note: str | None = None
    # It was inside the message's whole-message encryption: its bytes are the decryption's, held in
    # memory (Message.crypto), never the backend's (which has only the ciphertext).
    from_encrypted_part: bool = False

    @property
    def safe_name(self) -> str:
        return safe_name(self.filename)

    @property
    def truncated_at(self) -> int | None:
        """Where a cap cut this part (its backend's note says "truncated at N bytes"), or None:
        such a part is never saved (its bytes may end early)."""
        found = _TRUNCATED.search(self.note or "")
        return int(found.group(1).replace(",", "")) if found else None

    @property
    def key(self) -> str:
        """``<message number>.<index>``: how a user names one attachment of a thread."""
        return f"{self.message_number}.{self.index + 1}"

    def to_json(self) -> dict:
        return {"key": self.key, "message_id": self.message_id, "index": self.index, "real_name": self.filename,
                "safe_name": self.safe_name, "content_type": self.content_type, "size": self.size,
                "truncated_at": self.truncated_at, "note": self.note,
                "from_encrypted_part": self.from_encrypted_part}


def thread_attachments(thread) -> list[AttachmentItem]:
    """Every attachment of ``thread`` (a contract ``Thread``), in message order."""
    items = []
    for number, message in enumerate(thread.messages, 1):
        crypto = getattr(message, "crypto", None)
        for index, info in enumerate(message.attachments):
            decrypted = crypto is not None and crypto.attachment_data(index) is not None
            items.append(AttachmentItem(number, index, message.message_id, message.backend_ref, info.filename,
                                        info.content_type, info.size, info.note, from_encrypted_part=decrypted))
    return items


def select(items: Sequence[AttachmentItem], name: str | None) -> list[AttachmentItem]:
    """The items ``name`` names: a real name, a safe name or a ``<message>.<n>`` key (all when None)."""
    if name is None:
        return list(items)
    return [i for i in items if name in (i.filename, i.safe_name, i.key)]


def refusal(item: AttachmentItem) -> dict:
    """Why a part a cap cut is not saved, as the proposal and the JSON show it."""
    return {"key": item.key, "real_name": item.filename, "safe_name": item.safe_name,
            "truncated_at": item.truncated_at,
            "reason": f"truncated at {item.truncated_at:,} bytes by a size cap; not saved (it may end early)"}


def folder_problem(folder: str | os.PathLike) -> str | None:
    """Why ``folder`` may not take saved attachments (another user owns it, or others can
    write it: core/private_files.py), or None."""
    try:
        check_private_dir(folder)
    except ConfigError as exc:
        return f"{folder} {exc.problem} (valid: {exc.valid})"
    return None


def planned_names(folder: str | os.PathLike, items: Iterable[AttachmentItem],
                  name: str | None = None) -> list[str]:
    """The name each item would get in ``folder`` now: its safe name, numbered past the
    files already there and past the names planned before it."""
    try:
        taken = set(os.listdir(folder))
    except OSError:
        taken = set()
    planned = []
    for item in items:
        base = safe_name(name if name is not None else item.filename)
        n = 0
        while numbered(base, n) in taken:
            n += 1
        chosen = numbered(base, n)
        taken.add(chosen)
        planned.append(chosen)
    return planned


@frozen_dataclass
class SavedAttachment:
    """What one confirmed write put on disk, with the attachment it came from."""

    item: AttachmentItem
    saved: SavedFile

    def to_json(self) -> dict:
        return {"key": self.item.key, "message_id": self.item.message_id, "real_name": self.item.filename,
                "content_type": self.item.content_type, "from_encrypted_part": self.item.from_encrypted_part,
                **{k: v for k, v in self.saved.to_json().items()
                                                              if k != "real_name"}}


def propose_save(items: Sequence[AttachmentItem], folder: str | os.PathLike,
                 fetch: Callable[[AttachmentItem], bytes], *, source: str,
                 name: str | None = None) -> Proposal:
    """A proposal that saves ``items`` into ``folder``: one write each, showing the real name,
    the safe name and the folder. ``name`` (one item only) replaces the real name as the
    name to make safe. Blocked when ``folder`` is not a folder; empty when there is nothing."""
    target = Path(folder).expanduser()
    proposal = Proposal(title=f"Save {len(items)} attachment{'s' if len(items) != 1 else ''} to {target}")
    if not items:
        proposal.notes.append("the thread has no attachments to save")
        return proposal
    if name is not None and len(items) != 1:
        return proposal.block(BlockedBy.SAVE_TARGET,
                              "a name for the saved file is given, but more than one attachment is selected")
    if not target.is_dir():
        return proposal.block(BlockedBy.SAVE_TARGET, f"{target} is not a folder")
    problem = folder_problem(target)
    if problem:
        return proposal.block(BlockedBy.SAVE_TARGET, problem)
    refused = [item for item in items if item.truncated_at is not None]
    if refused:
        proposal.facts["refused"] = [refusal(item) for item in refused]
        proposal.notes += [f"not saved: {r['key']} {r['safe_name']}: {r['reason']}" for r in proposal.facts["refused"]]
        items = [item for item in items if item.truncated_at is None]
        if not items:
            return proposal.block(BlockedBy.SAVE_TARGET,
                                  "every selected attachment was cut by a size cap: nothing would be saved whole")
    for item, planned in zip(items, planned_names(target, items, name)):
        fields = [Field("Real name", item.filename), Field("Saved as", planned),
                  Field("Folder", str(target)), Field("Type", item.content_type),
                  Field("Size", f"{item.size:,} bytes"),
                  Field("From message", f"{item.message_number}: {item.message_id}")]
        if planned != item.filename:
            fields[1] = Field("Saved as", planned, "safe name: differs from the real name")
        if item.from_encrypted_part:
            fields.append(Field("Source", "the encrypted part (decrypted, in memory): written only to this folder"))
        if item.note:
            fields.append(Field("Note", item.note))

        def apply(_write: Write, item: AttachmentItem = item) -> SavedAttachment:
            data = fetch(item)
            return SavedAttachment(item, save_bytes(target, item.filename, data, name=name))

        proposal.writes.append(Write(WriteKind.SAVE, source, f"save {planned} ({item.key})", fields, apply,
                                     label="Save file", where=f"into the folder {target}"))
    proposal.notes.append("files are created new (never replacing one, never through a symlink), readable "
                          "by you only; nothing is opened or run")
    return proposal
