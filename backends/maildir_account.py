"""A personal account kept in a local Maildir (``kind = "maildir"``): browse, read, flag,
move and draft, with no server.

For people whose mail a sync tool (mbsync/isync, offlineimap) mirrors into a local Maildir:
mailtriage reads and organizes the files, the sync tool carries the changes to the server.
The demo's personal account is one (``docs/demo.md``). Configured in the user settings::

    [accounts.home]
    kind = "maildir"
    path = "~/Mail/home"          # the Maildir root: INBOX itself, sub-folders Maildir++ (.Sent)
                                  # or plain folders beside it (Sent/), each with cur/ new/ tmp/
    address = "me@example.org"    # From: of drafts
    access = "draft"              # read | draft ("send" is refused: a Maildir has no outgoing server)

Folder roles come from the names (Drafts, Sent, Trash, Junk/Spam, Archive). A message ID is
``maildir:<account>:<folder>:<key>`` (the file's unique name, without its ``:2,`` flags), so
an ID of another account is refused before any file is touched, and a message that moved
or vanished is reported stale. Flags are the Maildir ``info`` letters (S seen, F flagged,
R replied, D draft); a flag change renames the file, a move links it into the other
folder's ``cur/`` and then removes the old name (never over an existing file). Drafts are
written through ``tmp/`` and renamed into ``Drafts/cur`` with ``DS``, mode 0600, by the one
draft writer (``backends/maildir.add_draft``, shared with the project's Maildir drafts).
Nothing is ever sent: :meth:`MaildirMailbox.send` declines and says so.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from mailtriage.backends import mime
from mailtriage.backends.account_table import AccessLevels, AccountTable
from mailtriage.backends.errors import BackendFailure, NotSupported
from mailtriage.backends.maildir import add_draft
from mailtriage.backends.mailbox_contract import (Compose, ForeignMessageId, MailAttachment, MailFolder,
                                                  MailHeader, MailMessage, MailPage, MailQuery, MailboxAdapter,
                                                  PartialFailure, StaleMessageId, check_bulk, flags_and_date_match,
                                                  with_thread_counts)
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.settings import load_settings

INBOX = "INBOX"
_ROLES = {"inbox": "inbox", "drafts": "drafts", "draft": "drafts", "sent": "sent", "sent items": "sent",
          "sent messages": "sent", "trash": "trash", "deleted items": "trash", "junk": "junk", "spam": "junk",
          "archive": "archive", "archives": "archive"}
_ACCOUNT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_LETTERS = "DFPRST"
#: Bigger files are listed from their first bytes only and refused by ``get``.
MAX_MESSAGE_BYTES = 50 * 1024 * 1024
_HEAD_BYTES = 64 * 1024


@frozen_dataclass
class MaildirAccount(AccessLevels):
    id: str
    path: Path
    address: str
    access: str

    @classmethod
    def from_settings(cls, account_id: str, body: Mapping[str, Any], file: Path | str) -> "MaildirAccount":
        table = AccountTable(account_id, body, file)
        if not _ACCOUNT_ID.match(account_id):
            raise table.error("", f"account id {account_id!r} is not a plain name", "letters, digits, _ . -")
        access = table.choice("access", ("read", "draft", "send"), "read")
        if access == "send":
            raise table.error("access", "a Maildir account has no outgoing server: nothing can be sent from it",
                              "read | draft")
        path = Path(str(table.text("path", required=True))).expanduser()
        return cls(account_id, path, table.text("address", "") or "", access)


def load_account(account_id: str, settings=None) -> MaildirAccount:
    settings = settings or load_settings()
    return MaildirAccount.from_settings(account_id, settings.account(account_id), settings.path)


class MaildirMailbox(MailboxAdapter):
    """The mailbox of one Maildir account (see the module docstring)."""

    local_folders = True

    def __init__(self, account: MaildirAccount) -> None:
        self.account = account
        self.account_id = account.id

    # -- folders -------------------------------------------------------------------
    def _folders(self) -> dict[str, Path]:
        root = self.account.path
        if not (root / "cur").is_dir() and not root.is_dir():
            raise BackendFailure(self.account_id, f"the Maildir {root} does not exist")
        found: dict[str, Path] = {}
        if (root / "cur").is_dir():
            found[INBOX] = root
        for child in sorted(root.iterdir()):
            if child.name in ("cur", "new", "tmp") or child.is_symlink() or not (child / "cur").is_dir():
                continue
            name = child.name[1:] if child.name.startswith(".") else child.name
            if name and name not in found:
                found[name] = child
        return found

    def _folder(self, folder_id: str) -> Path:
        folders = self._folders()
        if folder_id not in folders:
            raise BackendFailure(self.account_id, f"no folder {folder_id!r} in {self.account.path}")
        return folders[folder_id]

    def _role_folder(self, role: str) -> str | None:
        return next((name for name in self._folders() if _role(name) == role), None)

    def list_folders(self) -> list[MailFolder]:
        out = []
        for name, path in self._folders().items():
            entries = list(_entries(path))
            unread = sum(1 for _key, _file, flags in entries if "S" not in flags)
            out.append(MailFolder(name, name, None, _role(name), unread, len(entries)))
        order = {r: i for i, r in enumerate(("inbox", "drafts", "sent", "archive", "junk", "trash"))}
        return sorted(out, key=lambda f: (order.get(f.role or "", len(order)), f.name.lower()))

    # -- reads ---------------------------------------------------------------------
    def list(self, query: MailQuery) -> MailPage:
        if query.label is not None:
            raise NotSupported(self.account_id, "list", "a Maildir account has folders, not labels")
        folder_id = str(query.folder)
        folder = self._folder(folder_id)
        if query.from_ or query.text or query.has_attachment is not None:  # filters on what the files say
            headers = [h for h in self._listed_headers(folder_id, folder) if _matches(h, query)]
            headers.sort(key=lambda h: (-(h.date or _EPOCH).timestamp(), h.id))
            window = headers[query.offset:query.offset + query.page_size]
            return MailPage(tuple(with_thread_counts(window)), len(headers), query.page, query.page_size)
        # Newest first by delivery time (the file's mtime) and filtered by the flags in the
        # names: only the page's files are read, so a page costs the page, not the folder.
        listed = [(when, key, file, flags) for key, file, flags, when in _delivered(folder)
                  if _flags_match(flags, when, query)]
        listed.sort(key=lambda e: (-e[0], self._id(folder_id, e[1])))
        shown = self._page_headers(folder_id, listed[query.offset:query.offset + query.page_size])
        return MailPage(tuple(with_thread_counts(shown)), len(listed), query.page, query.page_size)

    def get(self, message_id: str) -> MailMessage:
        return self._get(message_id)[0]

    def _get(self, message_id: str) -> tuple[MailMessage, bytes]:
        """The message and its file's bytes, read once."""
        folder, key, file, flags = self._find(message_id)
        raw = _read(file, MAX_MESSAGE_BYTES, self.account_id)
        content = mime.parse_message(raw, backend_ref=message_id, hash_body=True)
        attachments = tuple(MailAttachment(i, a.filename, a.content_type, a.size)
                            for i, a in enumerate(content.attachments))
        return MailMessage(self._header(folder, key, file, flags, raw), content, attachments), raw

    def raw(self, message_id: str) -> bytes:
        """The file as it is on disk (the raw view and ``|``)."""
        return _read(self._find(message_id)[2], MAX_MESSAGE_BYTES, self.account_id)

    def attachment(self, message_id: str, index: int) -> bytes:
        _folder, _key, file, _flags = self._find(message_id)
        try:
            return mime.attachment_bytes(_read(file, MAX_MESSAGE_BYTES, self.account_id), index)
        except mime.AttachmentNotFound as exc:
            raise BackendFailure(self.account_id, str(exc)) from exc

    def _listed_headers(self, folder_id: str, folder: Path) -> tuple[MailHeader, ...]:
        """Every message's header; one renamed away meanwhile (a sync tool changing its flags)
        is skipped, not fatal to the listing."""
        headers = []
        for key, file, flags in _entries(folder):
            try:
                headers.append(self._header(folder_id, key, file, flags))
            except BackendFailure:
                if file.exists():
                    raise
        return tuple(headers)

    def _page_headers(self, folder_id: str, page: Sequence[tuple[float, str, Path, str]]) -> Sequence[MailHeader]:
        """The headers of a page's files; one renamed away since it was listed is skipped."""
        headers = []
        for _when, key, file, flags in page:
            try:
                headers.append(self._header(folder_id, key, file, flags))
            except BackendFailure:
                if file.exists():
                    raise
        return headers

    def _header(self, folder: str, key: str, file: Path, flags: str, raw: bytes | None = None) -> MailHeader:
        head = _read(file, _HEAD_BYTES, self.account_id) if raw is None else raw[:_HEAD_BYTES]
        parsed = mime.parse_message_headers(head, hash_body=True)
        try:
            arrived = datetime.fromtimestamp(file.stat().st_mtime, tz=timezone.utc)
        except OSError:
            arrived = None
        root = (parsed.references[0] if parsed.references else parsed.in_reply_to) or parsed.message_id
        content_type = (parsed.header("Content-Type") or "").lower()
        return MailHeader(
            id=self._id(folder, key), account_id=self.account_id, folder_id=folder, subject=parsed.subject,
            sender=parsed.sender, to=parsed.to, cc=parsed.cc, date=arrived, sent_date=parsed.date,
            message_id=parsed.message_id, in_reply_to=parsed.in_reply_to, references=parsed.references,
            read="S" in flags, flagged="F" in flags, answered="R" in flags, draft="D" in flags, labels=(),
            has_attachments=content_type.startswith("multipart/mixed"), thread_key=root, thread_count=1,
            list_unsubscribe=None, size=_size(file))

    # -- message IDs -------------------------------------------------------------------
    def _id(self, folder: str, key: str) -> str:
        return f"maildir:{self.account_id}:{folder}:{key}"

    def _find(self, message_id: str) -> tuple[str, str, Path, str]:
        kind, _, rest = str(message_id).partition(":")
        account, _, rest = rest.partition(":")
        folder, _, key = rest.rpartition(":")
        if kind != "maildir" or account != self.account_id or not folder or not key:
            raise ForeignMessageId(self.account_id, message_id, f"not a message of Maildir account {self.account_id}")
        if "/" in key or "/" in folder or key.startswith("."):
            raise ForeignMessageId(self.account_id, message_id, "not a Maildir file name")
        folders = self._folders()
        if folder not in folders:
            raise StaleMessageId(self.account_id, message_id, f"the folder {folder!r} is gone")
        for found_key, file, flags in _entries(folders[folder]):
            if found_key == key:
                return folder, key, file, flags
        raise StaleMessageId(self.account_id, message_id, "the message is gone (moved or deleted)")

    # -- writes (each only after a confirmed proposal) -----------------------------------
    def set_flags(self, ids: Sequence[str], *, read: bool | None = None, flagged: bool | None = None) -> None:
        def one(message_id: str) -> None:
            _folder, key, file, flags = self._find(message_id)
            letters = set(flags)
            for letter, on in (("S", read), ("F", flagged)):
                if on is True:
                    letters.add(letter)
                elif on is False:
                    letters.discard(letter)
            target = file.parent.parent / "cur" / f"{key}:2,{''.join(sorted(letters & set(_LETTERS)))}"
            if target != file:
                os.rename(file, target)

        self._each("setFlags", ids, one)

    def move(self, ids: Sequence[str], folder_id: str) -> None:
        target = self._folder(folder_id)

        def one(message_id: str) -> None:
            folder, key, file, flags = self._find(message_id)
            if folder != folder_id:
                os.link(file, target / "cur" / f"{key}:2,{flags}")  # never over an existing file
                os.unlink(file)

        self._each("move", ids, one)

    def _each(self, op: str, ids: Sequence[str], one) -> None:
        """``one`` on each ID; a PartialFailure naming each failed ID (and the gone ones)."""
        done: list[str] = []
        failed: dict[str, str] = {}
        gone: list[str] = []
        for message_id in check_bulk(ids):
            try:
                one(message_id)
                done.append(message_id)
            except StaleMessageId as exc:
                failed[message_id] = str(exc)
                gone.append(message_id)
            except (ForeignMessageId, OSError) as exc:
                failed[message_id] = str(exc) if isinstance(exc, ForeignMessageId) else f"{exc.strerror}"
        if failed:
            raise PartialFailure(self.account_id, op, failed, done, gone)

    def archive(self, ids: Sequence[str]) -> None:
        self.move(ids, self._role_or_decline("archive", "archive"))

    def trash(self, ids: Sequence[str]) -> None:
        self.move(ids, self._role_or_decline("trash", "trash"))

    def _role_or_decline(self, role: str, op: str) -> str:
        folder = self._role_folder(role)
        if folder is None:
            raise NotSupported(self.account_id, op, f"the Maildir {self.account.path} has no {role.title()} folder")
        return folder

    def save_draft(self, compose: Compose) -> str:
        if not self.account.can_draft:
            raise NotSupported(self.account_id, "createDraft",
                               f"account access is {self.account.access!r}; drafts need \"draft\"")
        drafts = self._role_or_decline("drafts", "createDraft")
        source = source_raw = None
        if compose.kind != "new":
            source, source_raw = self._get(str(compose.source_id))
        from mailtriage.backends.outgoing import as_bytes, compose_message  # why: the email package loads only to compose

        outgoing = compose_message(self.account, compose, source, source_raw)
        try:
            path = add_draft(self._folder(drafts), as_bytes(outgoing.message))
        except OSError as exc:
            raise BackendFailure(self.account_id, f"writing the draft to {drafts} failed: {exc.strerror or exc}") from exc
        return self._id(drafts, path.name.partition(":")[0])

    def send(self, compose: Compose, *, confirmed: bool) -> None:
        raise NotSupported(self.account_id, "send", "a Maildir account has no outgoing server: mailtriage never "
                                                    "sends from it (save a draft instead)")


# -- files ---------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _role(name: str) -> str | None:
    return _ROLES.get(name.lower())


def _entries(folder: Path) -> Iterator[tuple[str, Path, str]]:
    """(key, file, flag letters) of each message of a Maildir folder (new/ and cur/)."""
    for sub in ("new", "cur"):
        try:
            names = sorted(os.listdir(folder / sub))
        except FileNotFoundError:
            continue
        for name in names:
            if name.startswith("."):
                continue
            key, _, info = name.partition(":")
            flags = info[2:] if info.startswith("2,") and sub == "cur" else ""
            yield key, folder / sub / name, flags


def _delivered(folder: Path) -> Iterator[tuple[str, Path, str, float]]:
    """(key, file, flag letters, delivery time) of each message, from the names and one
    ``stat`` each (no file is read); one renamed away meanwhile is left out."""
    for key, file, flags in _entries(folder):
        try:
            yield key, file, flags, file.stat().st_mtime
        except OSError:
            continue


def _flags_match(flags: str, when: float, query: MailQuery) -> bool:
    """The query's unread / flagged / since filters, on a file's name and delivery time."""
    if query.unread is not None and ("S" not in flags) != query.unread:
        return False
    if query.flagged is not None and ("F" in flags) != query.flagged:
        return False
    return query.since is None or datetime.fromtimestamp(when, tz=timezone.utc) >= query.since


def _read(file: Path, limit: int, account_id: str) -> bytes:
    try:
        with open(file, "rb") as handle:
            return handle.read(limit)
    except OSError as exc:
        raise BackendFailure(account_id, f"cannot read {file.name}: {exc.strerror}") from exc


def _size(file: Path) -> int | None:
    try:
        return file.stat().st_size
    except OSError:
        return None


def _matches(header: MailHeader, query: MailQuery) -> bool:
    if not flags_and_date_match(header, query):
        return False
    if query.from_ and query.from_.lower() not in f"{header.sender.name} {header.sender.email}".lower():
        return False
    if query.text and query.text.lower() not in header.subject.lower():
        return False
    return True

