"""``ImapMailbox``: the full personal-account mailbox adapter over IMAP.

It is the one way the application reaches an IMAP server: the personal account's panes,
the IMAP mail source, the feedback sweep and the modes gateway's mailbox all read and
write through it (one connection class, :class:`ImapConnection`; one APPEND, :meth:`append`).

One instance holds one account's connection. It is not thread-safe: callers (TUI
workers, CLI) use one instance per worker, acquire it for an operation and ``close()``
it in ``finally``.
"""

from __future__ import annotations

import re
import ssl
from typing import TYPE_CHECKING, Sequence
from urllib.parse import quote

from mailtriage.backends.errors import BackendFailure, NotSupported
from mailtriage.backends.imap import message_reads, mutations, protocol
from mailtriage.backends.imap import order as order_module
from mailtriage.backends.imap import query as query_module
from mailtriage.backends.imap.account import ImapAccount
from mailtriage.backends.imap.connection import FolderState, ImapConnection, PasswordProvider, TokenProvider
from mailtriage.backends.imap.folders import Folders
from mailtriage.backends.imap.ids import MessageRef, decode_message_id
from mailtriage.backends.imap.labels import Labels
from mailtriage.backends.imap.sending import SendRun
from mailtriage.backends.mailbox_contract import MailboxAdapter, StaleMessageId

if TYPE_CHECKING:
    import threading

    from mailtriage.backends.imap.poll import NewMail
    from mailtriage.backends.mailbox_contract import (Compose, FolderOrder, LabelList, MailHeader, MailFolder, MailLabel, MailMessage, MailPage,
                                                      MailQuery, MailThread, PollResult)
    from mailtriage.backends.search import SearchPage, SearchRequest
    from mailtriage.backends.send_ledger import SendLedger

# Sending (imap/smtp.py: aiosmtplib, the send policy, the stdlib's MIME writer), server search
# and polling load when first used: opening a project and listing threads use none of them
# (about 17 ms of an IMAP project's open, python -X importtime).

_APPENDUID = re.compile(r"APPENDUID (\d+) (\d+)")


class ImapMailbox(MailboxAdapter):
    server_search = True

    def __init__(self, account: ImapAccount, *, token_provider: TokenProvider | None = None,
                 password_provider: PasswordProvider | None = None,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.account = account
        self.account_id = account.id
        self.conn = ImapConnection(account, token_provider=token_provider, password_provider=password_provider,
                                   ssl_context=ssl_context)
        self.folders = Folders(self)
        self.labels = Labels(self)
        self.send_run = SendRun()  # the SMTP send in progress, for abort()

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
        return query_module.list_messages(self, query)

    def get(self, message_id: str) -> MailMessage:
        return message_reads.get_message(self, message_id)

    def search(self, request: SearchRequest) -> SearchPage:
        """Server search (``SEARCH CHARSET UTF-8`` / ``SORT``) in ``request.folder`` (INBOX
        when None) or, with ``all_folders``, every selectable folder; MailHeader items."""
        from mailtriage.backends.imap import search as search_module  # with the first search (see the top)

        if request.all_folders:
            folders = search_module.account_folders(self)
        else:
            folder = request.folder or "INBOX"
            self.folders.info(folder)  # a clear error for an unknown folder
            folders = [folder]
        return search_module.search_folders(self, folders, request, self.account_id)

    def thread(self, message_id: str) -> MailThread:
        return message_reads.thread(self, message_id)

    # Whole-folder orders (issue 35): the server's SORT / THREAD / UID SEARCH UNSEEN, IDs only.
    def order(self, folder_id: str, sort: str | None = None, reverse: bool = False,
              threads: bool = False) -> FolderOrder:
        self.folders.info(folder_id)  # a clear error for an unknown folder
        return order_module.folder_order(self, folder_id, sort, reverse, threads)

    def unread_ids(self, folder_id: str) -> FolderOrder:
        self.folders.info(folder_id)
        return order_module.unread_ids(self, folder_id)

    def headers(self, message_ids: Sequence[str]) -> Sequence[MailHeader]:
        return order_module.headers(self, message_ids)

    def attachment(self, message_id: str, index: int) -> bytes:
        return message_reads.attachment_bytes(self, message_id, index)

    def raw(self, message_id: str) -> bytes:
        return message_reads.raw_bytes(self, message_id)

    def get_many(self, message_ids: Sequence[str]) -> dict[str, MailMessage]:
        """Whole messages by ID, a few FETCHes per folder (never one per message).

        A message that is gone, or whose folder was reset since the ID was made, is left out
        rather than failing the rest. Raises ForeignMessageId for another account's ID.
        """
        by_folder: dict[str, list[MessageRef]] = {}
        for message_id in message_ids:
            ref = self.ref(message_id)
            by_folder.setdefault(ref.folder, []).append(ref)
        found: dict[str, MailMessage] = {}
        for folder, refs in by_folder.items():
            state = self.conn.select(folder)
            uids = [r.uid for r in refs if r.uidvalidity == state.uidvalidity]
            for item in message_reads.fetch_full(self, folder, state.uidvalidity, uids):
                found[item.header.id] = item.parsed()
        return found

    def message_url(self, message_id: str) -> str:
        """The message's ``imap://`` URL (RFC 5092): server, folder, UIDVALIDITY and UID."""
        ref = self.ref(message_id)
        account = self.account
        return (f"imap://{quote(account.username, safe='')}@{account.host}:{account.port}/"
                f"{quote(ref.folder, safe='')};UIDVALIDITY={ref.uidvalidity}/;UID={ref.uid}")

    def keyword_support(self, folder: str, keyword: str) -> tuple[bool, str]:
        """Whether ``folder`` keeps ``keyword`` on its messages, and why (one SELECT).

        It does when the folder is selected read-write and the server keeps new keywords
        there (``\\*`` in PERMANENTFLAGS) or lists this one. Raises MailError when the folder
        cannot be opened.
        """
        state = self.conn.select(folder)
        permanent = {f.lower() for f in state.permanent_flags}
        kept = state.writable and ("\\*" in permanent or keyword.lower() in permanent)
        why = ("the server keeps keywords in this folder" if kept else
               "the folder is read-only" if not state.writable else
               "the server keeps no new keywords (no \\* in PERMANENTFLAGS)")
        return kept, why

    def poll(self, cursor: str | None) -> PollResult:
        from mailtriage.backends.imap import poll as poll_module  # with the first poll (see the top)

        return poll_module.poll(self, cursor)

    def read_new(self, folder: str, after: tuple[int, int] | None, *, limit: int) -> NewMail:
        """Whole messages of ``folder`` after ``after`` (UIDVALIDITY, last UID), read-only;
        a silent baseline when there is no cursor or the folder was reset."""
        from mailtriage.backends.imap import poll as poll_module  # with the first poll (see the top)

        return poll_module.read_new(self, folder, after, limit)

    def wait_for_mail(self, timeout: float, folder: str | None = None, *, seen: FolderState | None = None,
                      cancel: threading.Event | None = None) -> bool:
        """Block up to ``timeout`` s for new mail in ``folder`` (default: the inbox; IDLE when
        advertised). See :func:`mailtriage.backends.imap.poll.wait_for_mail`."""
        from mailtriage.backends.imap import poll as poll_module  # with the first poll (see the top)

        return poll_module.wait_for_mail(self, timeout, folder, seen=seen, cancel=cancel)

    # -- labels -----------------------------------------------------------------------
    def list_labels(self) -> LabelList:
        return self.labels.list()

    def create_label(self, name: str) -> MailLabel:
        return self.labels.create(name)

    def rename_label(self, label_id: str, name: str) -> MailLabel:
        return self.labels.rename(label_id, name)

    def recolor_label(self, label_id: str, color: str) -> MailLabel:
        raise NotSupported(self.account_id, "recolorLabel", "IMAP keywords and Gmail labels over IMAP have no colour")

    def delete_label(self, label_id: str) -> None:
        self.labels.delete(label_id)

    # -- bulk writes --------------------------------------------------------------------
    def set_flags(self, ids: Sequence[str], *, read: bool | None = None, flagged: bool | None = None) -> None:
        mutations.set_flags(self, ids, read=read, flagged=flagged)

    def set_labels(self, ids: Sequence[str], add: Sequence[str], remove: Sequence[str]) -> None:
        mutations.set_labels(self, ids, add, remove)

    def move(self, ids: Sequence[str], folder_id: str) -> None:
        mutations.move(self, ids, folder_id)

    def archive(self, ids: Sequence[str]) -> None:
        mutations.archive(self, ids)

    def trash(self, ids: Sequence[str]) -> None:
        mutations.trash(self, ids)

    def delete_permanently(self, ids: Sequence[str]) -> None:
        mutations.delete_permanently(self, ids)

    # -- compose --------------------------------------------------------------------------
    def send(self, compose: Compose, *, confirmed: bool, ledger: SendLedger | None = None) -> str:
        """Send through SMTP after Principle 10; see :func:`mailtriage.backends.imap.smtp.send`."""
        from mailtriage.backends.imap import smtp  # sending only (see the top)

        return smtp.send(self, compose, confirmed=confirmed, ledger=ledger)

    def save_draft(self, compose: Compose) -> str:
        """Save a personal compose (new, reply, reply-all, forward) to Drafts with ``\\Draft``.

        Needs ``access = "draft"`` or ``"send"`` and a Drafts folder (else NotSupported).
        Returns the draft's message ID. Nothing is sent.
        """
        if not self.account.can_draft:
            raise NotSupported(self.account_id, "createDraft", f"account access is {self.account.access!r}; "
                                                               "drafts need \"draft\" or \"send\"")
        folder = self.folders.role_folder("drafts")
        if folder is None:
            raise NotSupported(self.account_id, "createDraft", f"{self.account.host} has no Drafts folder")
        source = source_raw = None
        if compose.kind != "new":
            ref, state = self.open_ref(compose.source_id)
            found = message_reads.fetch_full(self, ref.folder, state.uidvalidity, [ref.uid])
            if not found:
                raise StaleMessageId(self.account_id, compose.source_id, "the source message is gone")
            source, source_raw = found[0].parsed(), found[0].raw
        from mailtriage.backends.imap import smtp  # composing only (see the top)
        from mailtriage.backends.outgoing import as_bytes  # with it

        outgoing = smtp.compose_message(self.account, compose, source, source_raw)
        return self.append_draft(folder, as_bytes(outgoing.message), outgoing.message["Message-ID"])

    # -- APPEND ----------------------------------------------------------------------------
    def append(self, folder: str, raw: bytes, flags: Sequence[bytes]) -> str:
        """APPEND ``raw`` to ``folder`` with ``flags``: the only APPEND of the IMAP backend.
        Returns the server's answer as text (``[APPENDUID v uid]`` with UIDPLUS)."""
        response = self.conn.call(f"APPEND {folder}", lambda c: c.append(folder, raw, flags=tuple(flags)))
        return response.decode("utf-8", "replace") if isinstance(response, bytes) else str(response)

    def append_draft(self, folder: str, raw: bytes, message_id: str) -> str:
        """Store a composed draft in ``folder`` with ``\\Draft`` and ``\\Seen``; nothing is sent.
        Returns the draft's message ID, from APPENDUID or, without UIDPLUS, by its Message-ID.
        Raises BackendFailure when the server answered but the draft cannot be found."""
        text = self.append(folder, raw, (b"\\Draft", b"\\Seen"))
        match = _APPENDUID.search(text)
        if match:
            return str(self.make_ref(folder, int(match.group(1)), int(match.group(2))))
        state = self.conn.select(folder)  # no UIDPLUS: find it by its Message-ID
        uids, _count = self.conn.call("UID SEARCH draft", lambda c: protocol.search(
            c, [b"HEADER", b"Message-ID", protocol.quote(message_id)], esearch=self.conn.has("ESEARCH")))
        if not uids:
            raise BackendFailure(self.account_id, f"APPEND to {folder!r} answered {text!r} but the draft is not there")
        return str(self.make_ref(folder, state.uidvalidity, uids[-1]))

    def verify(self) -> dict:
        """The connection verifier: a real IMAP login (and, for a send account, SMTP EHLO +
        AUTH); always closes. Raises SignInNeeded only for rejected credentials."""
        try:
            caps = sorted(self.conn.capabilities)
            folders = len(self.folders.infos())
        finally:
            self.close()
        if self.account.access == "send" and self.account.smtp is not None:
            from mailtriage.backends.imap import smtp  # a send account's check only (see the top)

            smtp.verify_smtp(self.account)
        return {"account": self.account_id, "capabilities": caps, "folders": folders,
                "smtp": self.account.access == "send" and self.account.smtp is not None}

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

    def sending_text(self) -> bool:
        return self.send_run.text_going_out

    def abort(self, opening_only: bool = False) -> None:
        self.conn.abort(opening_only)
        self.send_run.abort()  # either stage: a send is ended only before its text goes out
