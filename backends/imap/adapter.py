"""``ImapMailbox``: the full personal-account adapter (email-adapter-contract.md) over IMAP.

One instance holds one account's connection. It is not thread-safe: callers (TUI
workers, CLI) use one instance per worker, acquire it for an operation and ``close()``
it in ``finally``.
"""

from __future__ import annotations

import ssl
from typing import Sequence

from mailtriage.backends.errors import NotSupported
from mailtriage.backends.imap import protocol
from mailtriage.backends.imap.account import ImapAccount
from mailtriage.backends.imap.connection import FolderState, ImapConnection, TokenProvider
from mailtriage.backends.imap.folders import Folders
from mailtriage.backends.imap.ids import MessageRef, decode_message_id
from mailtriage.backends.mailbox import MailboxAdapter, MailFolder, MailPage, MailQuery


class ImapMailbox(MailboxAdapter):
    def __init__(self, account: ImapAccount, *, token_provider: TokenProvider | None = None,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.account = account
        self.account_id = account.id
        self.conn = ImapConnection(account, token_provider=token_provider, ssl_context=ssl_context)
        self.folders = Folders(self)

    # -- ids ---------------------------------------------------------------------
    def ref(self, message_id: str) -> MessageRef:
        """Decode an ID of this account (refusing any other account's ID before any I/O)."""
        return decode_message_id(message_id, self.account_id)

    def open_ref(self, message_id: str | MessageRef) -> tuple[MessageRef, FolderState]:
        """Select the ID's folder and verify its UIDVALIDITY. Raises StaleMessageId on a reset."""
        ref = message_id if isinstance(message_id, MessageRef) else self.ref(message_id)
        if ref.account_id != self.account_id:
            self.ref(str(ref))
        state = self.conn.select(ref.folder)
        ref.verify(state.uidvalidity)
        return ref, state

    def make_ref(self, folder: str, uidvalidity: int, uid: int) -> MessageRef:
        return MessageRef(self.account_id, folder, uidvalidity, uid)

    # -- reads -------------------------------------------------------------------
    def list(self, query: MailQuery) -> MailPage:
        from mailtriage.backends.imap.query import list_messages

        return list_messages(self, query)

    # -- folders -------------------------------------------------------------------
    def list_folders(self) -> list[MailFolder]:
        return self.folders.list()

    def create_folder(self, name: str, parent_id: str | None = None) -> MailFolder:
        return self.folders.create(name, parent_id)

    def rename_folder(self, folder_id: str, name: str) -> MailFolder:
        return self.folders.rename(folder_id, name)

    def delete_folder(self, folder_id: str) -> None:
        self.folders.delete(folder_id)

    def mark_folder_read(self, folder_id: str) -> None:
        self.folders.mark_read(folder_id)

    def empty_folder(self, folder_id: str) -> None:
        self.folders.empty(folder_id)

    # -- helpers used by the modules ---------------------------------------------------
    def expunge_uids(self, folder: str, uids: Sequence[int]) -> None:
        """Mark exactly ``uids`` \\Deleted and remove them with ``UID EXPUNGE`` (UIDPLUS).

        Never a plain EXPUNGE: that would also remove mail some other client marked.
        Raises NotSupported without UIDPLUS.
        """
        if not self.conn.has("UIDPLUS"):
            raise NotSupported(self.account_id, "deletePermanently",
                               "the server lacks UIDPLUS; a plain EXPUNGE could remove other mail, so refused")
        if not uids:
            return
        self.conn.select(folder)
        for chunk in protocol.chunks(sorted(uids)):
            seqset = protocol.compress(chunk)
            self.conn.call("UID STORE +\\Deleted", lambda c: protocol.store(c, seqset, "+FLAGS.SILENT", [b"\\Deleted"]))
            self.conn.call("UID EXPUNGE", lambda c: protocol.uid_expunge(c, seqset))

    def close(self) -> None:
        self.conn.close()
