"""Attachments of a read thread: list them, read their bytes, view them, save them.

:class:`AttachmentSet` holds the attachments of one thread and the call that fetches a
part's bytes from the backend that read it: a mail source that declares
``features.attachment_bytes`` (mbox, IMAP, Gmail, Graph, Pony Mail, HyperKitty) or a
personal account's mailbox adapter (``MailboxAdapter.attachment``). Saving is a
:class:`~mailtriage.application.flows.proposals.Proposal` (a write to disk, confirmed first);
viewing is bounded (:data:`VIEW_LIMIT`) and gives inert text or a hex dump, never an
outside program, unless the user bound one (``attachment_command``, :func:`run_command`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Callable, Sequence

from mailtriage.application.errors import AttachmentError, UsageError
from mailtriage.backends.errors import NotSupported
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.safe_names import SaveError, save_bytes
from mailtriage.core.trace import OPLOG
# folder_problem: re-exported as application.attachment_folder_problem (for the command line's --to)
from mailtriage.application.flows.attachments import (AttachmentItem, folder_problem, propose_save, refusal, select,
                                              thread_attachments)


#: Bytes of one attachment a viewer reads (a bigger part shows its first VIEW_LIMIT bytes).
VIEW_LIMIT = 1024 * 1024
#: Bytes per line of the hex view.
HEX_WIDTH = 16
#: Seconds a user's ``attachment_command`` may run.
COMMAND_TIMEOUT = 60.0

_TEXT_TYPES = ("text/", "message/")
_TEXT_SUBTYPES = ("json", "xml", "javascript", "x-sh", "x-python", "x-diff", "x-patch", "yaml", "sql", "csv",
                  "x-shellscript", "ld+json", "pgp-signature", "pgp-keys", "x-pem-file")


@frozen_dataclass
class AttachmentView:
    """What a viewer shows of one attachment: its first bytes, and whether they read as text."""

    data: bytes
    total: int  # the attachment's whole size
    is_text: bool

    @property
    def truncated(self) -> bool:
        return self.total > len(self.data)

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")

    def hex_lines(self, start: int = 0, count: int | None = None, width: int = HEX_WIDTH) -> list[str]:
        """Lines of a hex dump (offset, ``width`` bytes in hex, the printable ASCII), from line ``start``."""
        return hex_lines(self.data, start, count, width)


def hex_lines(data: bytes, start: int = 0, count: int | None = None, width: int = HEX_WIDTH) -> list[str]:
    """``data`` as ``xxd``-like lines: ``00000010  41 42 … |AB..|``. Only ASCII 0x20-0x7e is shown
    as itself, so the dump is inert whatever the bytes are."""
    total = (len(data) + width - 1) // width
    stop = total if count is None else min(total, start + count)
    out = []
    for line in range(max(0, start), stop):
        chunk = data[line * width:(line + 1) * width]
        hexes = " ".join(f"{b:02x}" for b in chunk)
        shown = "".join(chr(b) if 0x20 <= b < 0x7f else "." for b in chunk)
        out.append(f"{line * width:08x}  {hexes:<{width * 3 - 1}}  |{shown}|")
    return out


def looks_like_text(data: bytes, content_type: str) -> bool:
    """Whether to show ``data`` as text: no NUL, valid UTF-8 (a cut last character allowed),
    and a text type or nothing but text in it."""
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(data) - 3:
            return False
    kind = content_type.lower()
    if kind.startswith(_TEXT_TYPES) or kind.split("/")[-1] in _TEXT_SUBTYPES:
        return True
    controls = sum(1 for b in data[:4096] if b < 0x20 and b not in (9, 10, 13))
    return controls == 0


class AttachmentSet:
    """The attachments of one read thread and where their bytes come from.

    ``fetch(message_ref, index)`` is the backend's own call; ``source`` names it (the
    backend, or ``account <id>``) in proposals and the operation log.
    """

    def __init__(self, thread, fetch: Callable[[str, int], bytes], source: str) -> None:
        self.thread = thread
        self.items: list[AttachmentItem] = thread_attachments(thread)
        self.source = source
        self._fetch = fetch
        #: Held around each backend call (a front end that shares backends between threads sets it).
        self.guard: AbstractContextManager = nullcontext()

    def __len__(self) -> int:
        return len(self.items)

    def data(self, item: AttachmentItem) -> bytes:
        """The attachment's decoded bytes (read from the backend, or for a part that was inside the
        whole-message encryption from the decryption held in memory; never written to disk).

        Raises:
            BackendFailure / Unavailable / NotSupported: as the backend's call.
        """
        if item.from_encrypted_part:
            data = self._decrypted(item)
            if data is not None:
                return data
        if not item.message_ref:
            raise NotSupported(self.source, "attachment", "the backend gave this message no reference to "
                                                          "fetch its parts by")
        with self.guard, OPLOG.record(self.source, "attachment", f"{item.key} {item.size} bytes"):
            return self._fetch(item.message_ref, item.index)

    def _decrypted(self, item: AttachmentItem) -> bytes | None:
        messages = self.thread.messages
        if not 0 < item.message_number <= len(messages):
            return None
        crypto = messages[item.message_number - 1].crypto
        return crypto.attachment_data(item.index) if crypto is not None else None

    def view(self, item: AttachmentItem, limit: int = VIEW_LIMIT) -> AttachmentView:
        """The first ``limit`` bytes of the attachment, and whether they read as text."""
        data = self.data(item)
        head = data[:limit]
        return AttachmentView(head, len(data), looks_like_text(head, item.content_type))

    def select(self, name: str | None) -> list[AttachmentItem]:
        """The attachments ``name`` names (real name, safe name or ``<message>.<n>``); all when None.

        Raises:
            UsageError: ``name`` names none of them (the message lists the keys there are).
        """
        chosen = select(self.items, name)
        if name is not None and not chosen:
            known = ", ".join(f"{i.key} {i.safe_name}" for i in self.items) or "none"
            raise UsageError(f"no attachment named {name!r} in this thread (there are: {known})")
        return chosen

    def propose_save(self, folder: str | os.PathLike, items: Sequence[AttachmentItem] | None = None, *,
                     name: str | None = None):
        """A proposal that saves ``items`` (all when None) into ``folder``; writes nothing."""
        chosen = list(self.items if items is None else items)
        return propose_save(chosen, folder, self.data, source=self.source, name=name)


def for_source(project, thread, backend: str | None) -> AttachmentSet:
    """The attachments of ``thread`` as the project's backend ``backend`` read it.

    Raises:
        NotSupported: the backend does not give attachment bytes (declared by its features).
    """
    source = project.sources.backends.get(backend) if backend else None
    if source is None:
        raise NotSupported(str(backend or "(none)"), "attachment", "no configured backend read this thread")
    if not source.features.attachment_bytes:
        raise NotSupported(source.name, "attachment", f"backend {source.name!r} cannot read message parts")
    return AttachmentSet(thread, source.attachment, source.name)


def for_mailbox(mailboxes, account_id: str, thread) -> AttachmentSet:
    """The attachments of a personal account's message (``thread`` holds that one message)."""
    mailbox = mailboxes.get(account_id)
    return AttachmentSet(thread, mailbox.attachment, f"account {account_id}")


def attachment_settings(settings) -> tuple[str | list | None, str]:
    """``attachment_command`` (None: nothing is ever opened outside the app) and the folder the
    save dialog offers first (``attachment_folder``, default ``~/Downloads`` when it exists, else
    the home folder), from the user settings."""
    command = settings.data.get("attachment_command")
    folder = settings.data.get("attachment_folder")
    if not isinstance(folder, str) or not folder.strip():
        downloads = Path.home() / "Downloads"
        folder = str(downloads) if downloads.is_dir() else str(Path.home())
    return (command if isinstance(command, (str, list)) and command else None), folder


# -- the user's own command -------------------------------------------------------------

def command_argv(command: str | Sequence[str]) -> list[str]:
    """The argument list of ``attachment_command`` (a string split like a shell would, or a list).

    Raises:
        UsageError: an empty command or one that cannot be split.
    """
    try:
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    except ValueError as exc:
        raise UsageError(f"attachment_command cannot be read: {exc}") from exc
    if not argv:
        raise UsageError("attachment_command is empty")
    return argv


def run_command(command: str | Sequence[str], item: AttachmentItem, data: bytes, *,
                timeout: float = COMMAND_TIMEOUT) -> int:
    """Hand the attachment to the user's own ``attachment_command``: the bytes are saved under
    their safe name in a new private folder (0700), and the command runs without a shell with
    that file's path as its last argument, stdin closed, output discarded, at most
    ``timeout`` seconds. Returns its exit status.

    Raises:
        UsageError: the command is empty or unreadable.
        AttachmentError: the part came from the encrypted part (never put in a temporary file),
            was cut by a size cap, the file cannot be written, the program
            is missing or timed out.
    """
    argv = command_argv(command)
    if item.from_encrypted_part:  # the command reads a file: the decrypted bytes would land in a temporary folder
        raise AttachmentError(f"{item.key} {item.safe_name}: from the encrypted part; not handed to "
                              "attachment_command (it would be written to a temporary file): save it instead")
    if item.truncated_at is not None:  # a part a size cap cut: the program would get a file that ends early
        raise AttachmentError(f"{item.key} {item.safe_name}: {refusal(item)['reason']}")
    folder = tempfile.mkdtemp(prefix="mailtriage-attachment-")
    try:
        saved = save_bytes(folder, item.filename, data)
    except SaveError as exc:
        raise AttachmentError(str(exc)) from exc
    try:
        done = subprocess.run([*argv, str(saved.path)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=timeout, shell=False, check=False)
    except FileNotFoundError as exc:
        raise AttachmentError(f"attachment_command: no program {argv[0]!r}") from exc
    except subprocess.TimeoutExpired as exc:
        raise AttachmentError(f"attachment_command {argv[0]!r} did not finish within {timeout:g} s") from exc
    except OSError as exc:
        raise AttachmentError(f"attachment_command {argv[0]!r} could not run: {exc.strerror}") from exc
    return done.returncode
