"""Folders of an IMAP account: roles, counts, create / rename / delete, mark read, empty.

Roles (drafts, sent, trash, junk, archive) come from, in order: the account's
``[accounts.<id>.folders]`` overrides, the server's SPECIAL-USE flags (RFC 6154), then
well-known names. Role folders and INBOX cannot be renamed or deleted. Emptying is
only for a Trash or Junk folder marked so by the server (or the user's override) and
only with UIDPLUS, which lets us expunge exactly the UIDs we marked.
"""

from __future__ import annotations


from imapclient.util import to_unicode

from mailtriage.backends.errors import BackendFailure, NotSupported
from mailtriage.backends.mailbox_contract import InvalidQuery, MailFolder
from mailtriage.backends.imap import protocol
from mailtriage.core.lean_dataclass import frozen_dataclass

_SPECIAL_USE = {"\\drafts": "drafts", "\\sent": "sent", "\\trash": "trash", "\\junk": "junk", "\\archive": "archive"}
_WELL_KNOWN = {
    "drafts": ("drafts", "draft", "entwürfe", "brouillons"),
    "sent": ("sent", "sent items", "sent messages", "sent mail", "gesendet"),
    "trash": ("trash", "deleted items", "deleted messages", "bin", "papierkorb"),
    "junk": ("junk", "spam", "junk e-mail", "junk email"),
    "archive": ("archive", "archives"),
}


@frozen_dataclass
class FolderInfo:
    name: str
    delimiter: str | None
    flags: frozenset[str]  # lower-case
    role: str | None
    native_role: bool  # role from SPECIAL-USE or a user override, not guessed from the name

    @property
    def selectable(self) -> bool:
        return "\\noselect" not in self.flags and "\\nonexistent" not in self.flags

    @property
    def parent_id(self) -> str | None:
        if self.delimiter and self.delimiter in self.name:
            return self.name.rsplit(self.delimiter, 1)[0]
        return None

    @property
    def leaf(self) -> str:
        return self.name.rsplit(self.delimiter, 1)[-1] if self.delimiter else self.name


class Folders:
    """Folder operations of one :class:`ImapMailbox` (``mb``)."""

    def __init__(self, mb) -> None:
        self.mb = mb
        self._infos: list[FolderInfo] | None = None

    @property
    def conn(self):
        return self.mb.conn

    def forget(self) -> None:
        self._infos = None

    # -- listing ---------------------------------------------------------------
    def infos(self) -> list[FolderInfo]:
        if self._infos is None:
            self._infos = self._load()
        return self._infos

    def _load(self) -> list[FolderInfo]:
        raw = self.conn.call("LIST", lambda c: c.list_folders())
        entries = [(frozenset(to_unicode(f).lower() for f in flags),
                    to_unicode(delim) if delim else None, name) for flags, delim, name in raw]
        overrides = {folder: role for role, folder in self.mb.account.folder_roles.items()}
        # Priority: override, then SPECIAL-USE, then a well-known name. An override naming a
        # folder that does not exist means "this account has no such folder": never guessed.
        taken: dict[str, str] = dict(self.mb.account.folder_roles)
        for flags, _d, name in entries:
            for flag in flags:
                role = _SPECIAL_USE.get(flag)
                if role and role not in taken and name not in taken.values():
                    taken[role] = name
        for _flags, delim, name in entries:
            leaf = name.rsplit(delim, 1)[-1] if delim else name
            for role, names in _WELL_KNOWN.items():
                if role not in taken and leaf.lower() in names and name not in taken.values():
                    taken[role] = name
        by_name = {name: role for role, name in taken.items()}
        infos = []
        for flags, delim, name in entries:
            role = "inbox" if name.upper() == "INBOX" else by_name.get(name)
            native = role == "inbox" or overrides.get(name) == role or any(
                _SPECIAL_USE.get(f) == role for f in flags)
            infos.append(FolderInfo(name, delim, flags, role, bool(role and native)))
        return infos

    def info(self, folder_id: str) -> FolderInfo:
        for info in self.infos():
            if info.name == folder_id:
                return info
        self.forget()
        for info in self.infos():
            if info.name == folder_id:
                return info
        raise BackendFailure(self.mb.account_id, f"no folder {folder_id!r} on {self.conn.where}")

    def role_folder(self, role: str) -> str | None:
        for info in self.infos():
            if info.role == role:
                return info.name
        return None

    def list(self) -> list[MailFolder]:
        out = []
        for info in self.infos():
            out.append(self._folder(info))
        return out

    def _folder(self, info: FolderInfo) -> MailFolder:
        unread = total = 0
        if info.selectable:
            status = self.conn.call(f"STATUS {info.name}",
                                    lambda c: c.folder_status(info.name, [b"MESSAGES", b"UNSEEN"]))
            total, unread = int(status.get(b"MESSAGES", 0)), int(status.get(b"UNSEEN", 0))
        return MailFolder(info.name, info.leaf, info.parent_id, info.role, unread, total, info.selectable)

    def get(self, folder_id: str) -> MailFolder:
        return self._folder(self.info(folder_id))

    # -- writes ------------------------------------------------------------------
    def _delimiter(self) -> str | None:
        for info in self.infos():
            if info.delimiter:
                return info.delimiter
        return None

    def create(self, name: str, parent_id: str | None = None) -> MailFolder:
        delim = self._delimiter()
        name = _check_name(name, delim)
        if parent_id is not None:
            self.info(parent_id)
        full = f"{parent_id}{delim}{name}" if parent_id and delim else name
        self.conn.call(f"CREATE {full}", lambda c: c.create_folder(full))
        self.conn.call(f"SUBSCRIBE {full}", lambda c: c.subscribe_folder(full))
        self.forget()
        return self.get(full)

    def _refuse_role(self, info: FolderInfo, op: str) -> None:
        if info.role is not None:
            raise NotSupported(self.mb.account_id, op, f"{info.name!r} is the {info.role} folder; "
                                                       "role folders cannot be renamed or deleted")

    def rename(self, folder_id: str, name: str) -> MailFolder:
        info = self.info(folder_id)
        self._refuse_role(info, "renameFolder")
        name = _check_name(name, info.delimiter)
        parent = info.parent_id
        full = f"{parent}{info.delimiter}{name}" if parent else name
        if self.conn.state is not None and self.conn.state.name == folder_id:
            self.conn.state = None
        self.conn.call(f"RENAME {folder_id}", lambda c: c.rename_folder(folder_id, full))
        self.forget()
        return self.get(full)

    def delete(self, folder_id: str) -> None:
        info = self.info(folder_id)
        self._refuse_role(info, "deleteFolder")
        if self.conn.state is not None and self.conn.state.name == folder_id:
            self.conn.call("UNSELECT", lambda c: c.close_folder())
            self.conn.state = None
        self.conn.call(f"DELETE {folder_id}", lambda c: c.delete_folder(folder_id))
        self.forget()

    def mark_read(self, folder_id: str) -> None:
        """Mark the folder's unseen mail read. Raises BackendFailure when the server would
        drop the change (a read-only folder, \\Seen not kept) or did not keep it."""
        state = self.conn.select(folder_id)
        if state.exists == 0:
            return
        if not state.writable or not {"\\seen", "\\*"} & {f.lower() for f in state.permanent_flags}:
            why = "is read-only for this account" if not state.writable else "does not keep \\Seen"
            raise BackendFailure(self.mb.account_id, f"markFolderRead: folder {folder_id!r} {why}; nothing changed")
        esearch = self.conn.has("ESEARCH")
        unseen, _count = self.conn.call("UID SEARCH UNSEEN", lambda c: protocol.search(c, [b"UNSEEN"],
                                                                                       esearch=esearch))
        if not unseen:
            return
        for chunk in protocol.chunks(unseen):
            seqset = protocol.compress(chunk)
            self.conn.call(f"STORE \\Seen in {folder_id}",
                           lambda c: protocol.store(c, seqset, "+FLAGS.SILENT", [b"\\Seen"]))
        # Read back: those exact UIDs must be seen now (mail arriving meanwhile is not ours to judge).
        still, count = self.conn.call("UID SEARCH UNSEEN", lambda c: protocol.search(
            c, [b"UNSEEN", b"UID", protocol.compress(unseen).encode()], esearch=esearch))
        if count:
            raise BackendFailure(self.mb.account_id, f"markFolderRead: {count} message(s) of {folder_id!r} are "
                                                     "still unread; the server did not keep the change")

    def empty(self, folder_id: str) -> None:
        """Permanently remove every message of a native Trash/Junk folder (never child folders).

        Raises NotSupported for any other folder, or when the server lacks UIDPLUS.
        """
        info = self.info(folder_id)
        if info.role not in ("trash", "junk") or not info.native_role:
            raise NotSupported(self.mb.account_id, "emptyFolder",
                               f"{folder_id!r} is not a Trash or Junk folder marked so by the server")
        if not self.conn.has("UIDPLUS"):
            raise NotSupported(self.mb.account_id, "emptyFolder",
                               "the server lacks UIDPLUS, so only a plain EXPUNGE could remove mail; refused")
        self.conn.select(folder_id)
        uids, _count = self.conn.call("UID SEARCH ALL",
                                      lambda c: protocol.search(c, [b"ALL"], esearch=self.conn.has("ESEARCH")))
        self.mb.expunge_uids(folder_id, uids)


def _check_name(name: str, delimiter: str | None) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidQuery("a folder name must be a non-empty string")
    name = name.strip()
    if delimiter and delimiter in name:
        raise InvalidQuery(f"a folder name cannot contain the hierarchy delimiter {delimiter!r}; "
                           "give parentId instead")
    if any(ord(ch) < 32 for ch in name) or name.upper() == "INBOX":
        raise InvalidQuery(f"{name!r} is not a usable folder name")
    return name
