"""The personal-account mailbox adapter contract: what every mailbox adapter offers.

The mail-source contract (:mod:`mailtriage.backends.contract`) covers the six triage
operations. Personal accounts (IMAP, Google, Microsoft) also offer a full mailbox:
paged ``list(MailQuery)``, folders, labels, flags, bulk moves, threads, message reads,
attachment bytes, drafts, sending and polling. This module holds the types of that
surface and :class:`MailboxAdapter`, whose methods decline with ``NotSupported`` until
an adapter implements them. It imports nothing from Textual or ``mailtriage.tui``.

Paging: pages are zero-based (offset = page * page_size); pages hold ungrouped,
newest-first messages plus a message total; there is no list cursor. Headers carry
``labels``, ``flagged``, ``has_attachments``, ``thread_key`` and ``thread_count``
(page members with the same key) and a nullable ``list_unsubscribe``.
"""

from __future__ import annotations

from dataclasses import field, replace
from datetime import datetime, timezone
from typing import Sequence

from mailtriage.backends.contract import Address, Message, OutgoingAttachment
from mailtriage.backends.errors import BackendFailure, MailError, NotSupported
from mailtriage.core.lean_dataclass import frozen_dataclass  # @dataclass(frozen=True), one exec a class

# The canonical label colours (the spec's MAIL_LABEL_COLORS tuple).
MAIL_LABEL_COLORS: tuple[str, ...] = ("gray", "red", "orange", "yellow", "green", "teal", "blue", "purple", "pink")

FOLDER_ROLES: tuple[str, ...] = ("inbox", "drafts", "sent", "trash", "junk", "archive")
MAX_PAGE_SIZE = 500
MAX_BULK = 100


class InvalidQuery(MailError, ValueError):
    """A MailQuery or bulk request that breaks the contract (names the field)."""


class ForeignMessageId(BackendFailure):
    """A message ID of another account (or not a message ID at all): refused before any I/O."""

    def __init__(self, account_id: str, message_id: str, why: str) -> None:
        self.message_id = message_id
        super().__init__(account_id, f"refused message id {message_id!r}: {why}")


class StaleMessageId(BackendFailure):
    """The ID's folder was reset (UIDVALIDITY changed) or the message is gone: refresh the list."""

    def __init__(self, account_id: str, message_id: str, why: str) -> None:
        self.message_id = message_id
        super().__init__(account_id, f"stale message id {message_id!r}: {why}")


class PartialFailure(BackendFailure):
    """A bulk write failed for some IDs. Never reported as success for the batch;
    ``failed`` maps each failed ID to why, ``done`` lists the IDs that were changed,
    ``gone`` the failed IDs that name no message any more (expunged or moved by another
    client, their folder reset): a list drops them rather than offering them again."""

    def __init__(self, account_id: str, op: str, failed: dict[str, str], done: Sequence[str],
                 gone: Sequence[str] = ()) -> None:
        self.op = op
        self.failed = dict(failed)
        self.done = list(done)
        self.gone = [i for i in gone if i in self.failed]
        first = next(iter(self.failed.items()))
        super().__init__(account_id, f"{op} failed for {len(self.failed)} of {len(self.failed) + len(self.done)} "
                                     f"messages (first: {first[0]}: {first[1]}); refresh before retrying")


@frozen_dataclass
class MailQuery:
    """One ``list()`` request: exactly one source, zero-based paging, optional filters."""

    folder: str | None = None
    label: str | None = None
    page: int = 0
    page_size: int = 50
    text: str | None = None
    from_: str | None = None
    unread: bool | None = None
    flagged: bool | None = None
    has_attachment: bool | None = None
    since: datetime | None = None

    def __post_init__(self) -> None:
        if (self.folder is None) == (self.label is None):
            raise InvalidQuery("a query needs exactly one source: {folder} or {label}")
        if isinstance(self.page, bool) or not isinstance(self.page, int) or self.page < 0:
            raise InvalidQuery(f"page must be an integer >= 0, not {self.page!r}")
        if (isinstance(self.page_size, bool) or not isinstance(self.page_size, int)
                or not 1 <= self.page_size <= MAX_PAGE_SIZE):
            raise InvalidQuery(f"pageSize must be an integer from 1 to {MAX_PAGE_SIZE}, not {self.page_size!r}")

    @property
    def offset(self) -> int:
        return self.page * self.page_size

    @property
    def filtered(self) -> bool:
        return any(v is not None for v in (self.text, self.from_, self.unread, self.flagged,
                                           self.has_attachment, self.since))


@frozen_dataclass
class ListUnsubscribe:
    """Parsed List-Unsubscribe targets; shown to the user, never fetched."""

    https: str | None
    mailto: str | None

    def to_json(self) -> dict:
        return {"https": self.https, "mailto": self.mailto}


@frozen_dataclass
class MailHeader:
    """One message in a list, poll or thread, without its body."""

    id: str  # the account-bound message ID (see the adapter's ids module)
    account_id: str
    folder_id: str
    subject: str
    sender: Address
    to: tuple[Address, ...]
    cc: tuple[Address, ...]
    date: datetime | None  # when it arrived (IMAP INTERNALDATE); what "newest" means
    sent_date: datetime | None  # the Date header
    message_id: str  # RFC 5322 Message-ID with <>, or a synthetic one
    in_reply_to: str | None
    references: tuple[str, ...]
    read: bool
    flagged: bool
    answered: bool
    draft: bool
    labels: tuple[str, ...]
    has_attachments: bool
    thread_key: str
    thread_count: int
    list_unsubscribe: ListUnsubscribe | None
    size: int | None = None
    synthetic_id: bool = False
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "accountId": self.account_id,
            "folderId": self.folder_id,
            "subject": self.subject,
            "from": self.sender.to_json(),
            "to": [a.to_json() for a in self.to],
            "cc": [a.to_json() for a in self.cc],
            "date": _iso(self.date),
            "sentDate": _iso(self.sent_date),
            "messageId": self.message_id,
            "syntheticId": self.synthetic_id,
            "inReplyTo": self.in_reply_to,
            "references": list(self.references),
            "read": self.read,
            "flagged": self.flagged,
            "answered": self.answered,
            "draft": self.draft,
            "labels": list(self.labels),
            "hasAttachments": self.has_attachments,
            "threadKey": self.thread_key,
            "threadCount": self.thread_count,
            "listUnsubscribe": self.list_unsubscribe.to_json() if self.list_unsubscribe else None,
            "size": self.size,
            "notes": list(self.notes),
        }


@frozen_dataclass
class MailPage:
    messages: tuple[MailHeader, ...]
    total: int
    page: int
    page_size: int
    search_limit: int | None = None  # a provider's accessible result ceiling, when it has one
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {
            "messages": [m.to_json() for m in self.messages],
            "total": self.total,
            "page": self.page,
            "pageSize": self.page_size,
            "searchLimit": self.search_limit,
            "notes": list(self.notes),
        }


@frozen_dataclass
class MailAttachment:
    index: int  # position among the message's attachments, for attachment()
    filename: str
    content_type: str
    size: int

    def to_json(self) -> dict:
        return {"index": self.index, "filename": self.filename, "contentType": self.content_type, "size": self.size}


@frozen_dataclass
class MailMessage:
    """A full message: its header plus the parsed content (bodies are never persisted)."""

    header: MailHeader
    content: Message
    attachments: tuple[MailAttachment, ...] = ()

    def to_json(self) -> dict:
        return {"header": self.header.to_json(), "content": self.content.to_json(),
                "attachments": [a.to_json() for a in self.attachments]}


@frozen_dataclass
class MailThread:
    thread_key: str
    messages: tuple[MailMessage, ...]  # chronological, across the folder and Sent

    def to_json(self) -> dict:
        return {"threadKey": self.thread_key, "messages": [m.to_json() for m in self.messages]}


@frozen_dataclass
class FolderOrder:
    """Message IDs of a whole folder in an order the server computed (issue 35: sort, fold and
    ``u`` over the folder, not the page): the IDs only, never the headers (those are read a
    page at a time with ``headers``). ``depths``, when asked for threads, is each ID's depth
    in its thread (0: a thread's root; a new root starts the next thread). ``how`` says what
    the server was asked (``UID SORT (DISPLAYFROM)``), for the status line."""

    ids: tuple[str, ...]
    depths: tuple[int, ...] = ()
    how: str = ""

    def to_json(self) -> dict:
        return {"ids": list(self.ids), "depths": list(self.depths), "how": self.how}


@frozen_dataclass
class MailFolder:
    id: str
    name: str
    parent_id: str | None
    role: str | None  # one of FOLDER_ROLES or None
    unread: int
    total: int  # includes read mail
    selectable: bool = True

    def to_json(self) -> dict:
        return {"id": self.id, "name": self.name, "parentId": self.parent_id, "role": self.role,
                "unread": self.unread, "total": self.total, "selectable": self.selectable}


@frozen_dataclass
class MailLabel:
    id: str
    name: str
    color: str | None = None

    def to_json(self) -> dict:
        return {"id": self.id, "name": self.name, "color": self.color}


@frozen_dataclass
class LabelList:
    """``supported`` false: the account cannot keep labels (e.g. IMAP without ``\\*`` keywords)."""

    supported: bool
    folder_backed: bool
    labels: tuple[MailLabel, ...]

    def to_json(self) -> dict:
        return {"supported": self.supported, "folderBacked": self.folder_backed,
                "labels": [label.to_json() for label in self.labels]}


@frozen_dataclass
class PollResult:
    """``cursor`` is what the caller persists after delivering ``messages``."""

    cursor: str
    messages: tuple[MailHeader, ...]
    baseline: bool  # true when this poll set a (new) silent baseline

    def to_json(self) -> dict:
        return {"cursor": self.cursor, "messages": [m.to_json() for m in self.messages], "baseline": self.baseline}


@frozen_dataclass
class Compose:
    """A personal compose: ``kind`` new | reply | reply_all | forward.

    ``OutgoingAttachment`` (bytes, never host paths) lives in the mail-source contract
    and is importable from here too.

    Replies, reply-all and forwards name ``source_id`` (a message ID of this account);
    the adapter derives threading (In-Reply-To, References, subject) from that source.
    """

    kind: str
    to: tuple[str, ...] = ()
    cc: tuple[str, ...] = ()
    bcc: tuple[str, ...] = ()
    subject: str | None = None
    body: str = ""
    source_id: str | None = None
    attachments: tuple[OutgoingAttachment, ...] = field(default_factory=tuple)
    #: The sender's configured display name for ``From:`` (the user settings' ``name``).
    from_name: str | None = None
    #: A forward quoting the source in the body instead of attaching it whole.
    forward_inline: bool = False

    KINDS = ("new", "reply", "reply_all", "forward")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise InvalidQuery(f"compose kind must be one of {', '.join(self.KINDS)}, not {self.kind!r}")
        if self.kind != "new" and not self.source_id:
            raise InvalidQuery(f"a {self.kind} names its source message (source_id)")


def check_bulk(ids: Sequence[str]) -> list[str]:
    """The 1–100 ID rule of every bulk operation."""
    ids = list(ids)
    if not 1 <= len(ids) <= MAX_BULK:
        raise InvalidQuery(f"bulk operations take 1 to {MAX_BULK} message IDs, not {len(ids)}")
    return ids


def merge_pages(pages: Sequence[MailPage], page: int, page_size: int) -> MailPage:
    """The multi-source merge rule: each source fetched its first (page + 1) * page_size
    messages; merge them by date (newest first), slice once, and sum the totals."""
    merged = sorted((m for p in pages for m in p.messages), key=_newest_first)
    window = merged[page * page_size:(page + 1) * page_size]
    limits = [p.search_limit for p in pages if p.search_limit is not None]
    notes = tuple(n for p in pages for n in p.notes)
    return MailPage(tuple(with_thread_counts(window)), sum(p.total for p in pages), page, page_size,
                    sum(limits) if limits else None, notes)


def flags_and_date_match(header: MailHeader, query: MailQuery) -> bool:
    """The query's unread / flagged / has-attachment / since filters, checked on a header
    already read: for adapters that filter on our side what their server cannot."""
    if query.unread is not None and header.read == query.unread:
        return False
    if query.flagged is not None and header.flagged != query.flagged:
        return False
    if query.has_attachment is not None and header.has_attachments != query.has_attachment:
        return False
    return not (query.since is not None and header.date is not None and header.date < query.since)


def with_thread_counts(headers: Sequence[MailHeader]) -> list[MailHeader]:
    """Set ``thread_count`` to the number of page members sharing (account, thread_key)."""
    counts: dict[tuple[str, str], int] = {}
    for h in headers:
        counts[(h.account_id, h.thread_key)] = counts.get((h.account_id, h.thread_key), 0) + 1
    return [replace(h, thread_count=counts[(h.account_id, h.thread_key)]) for h in headers]


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _newest_first(header: MailHeader):
    when = header.date or _EPOCH
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return (-when.timestamp(), header.id)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


class MailboxAdapter:
    """The full mailbox of one personal account. Every method not overridden declines.

    Raises (every method):
        NotSupported: the adapter does not offer this operation.
        SignInNeeded: authentication failed; the user must sign in again.
        Unavailable: the server cannot be reached now (outage, timeout).
        BackendFailure: this call failed (and says what failed).
        InvalidQuery: the request breaks the contract (bad query, 0 or >100 IDs).
    """

    account_id: str
    #: ``search(SearchRequest)`` runs on the server (declared, never probed).
    server_search: bool = False
    #: The folders are local files (a Maildir), not a server's: what a proposal says its
    #: changes land in.
    local_folders: bool = False

    def _decline(self, op: str) -> NotSupported:
        return NotSupported(getattr(self, "account_id", "mailbox"), op)

    # reads
    def list(self, query: MailQuery) -> MailPage:
        raise self._decline("list")

    def get(self, message_id: str) -> MailMessage:
        raise self._decline("get")

    def thread(self, message_id: str) -> MailThread:
        raise self._decline("thread")

    def attachment(self, message_id: str, index: int) -> bytes:
        raise self._decline("attachment")

    def raw(self, message_id: str) -> bytes:
        """The message as the server holds it (headers and undecoded body), never written to disk."""
        raise self._decline("raw")

    def poll(self, cursor: str | None) -> PollResult:
        raise self._decline("poll")

    def order(self, folder_id: str, sort: str | None = None, reverse: bool = False,
              threads: bool = False) -> FolderOrder:
        """Every message ID of ``folder_id`` in the server's order: ``sort`` one of ``date``
        (arrival, newest first), ``sender``, ``subject``, ``size`` (largest first), or None
        (arrival, newest first); ``reverse`` flips it; ``threads`` groups it into threads
        (each thread where its first member falls in the order), with ``depths``. Declines
        (NotSupported) where the server cannot sort or thread."""
        raise self._decline("order")

    def unread_ids(self, folder_id: str) -> FolderOrder:
        """The IDs of the unread messages of ``folder_id`` (the server's search, not a listing)."""
        raise self._decline("unreadIds")

    def headers(self, message_ids: Sequence[str]) -> Sequence[MailHeader]:
        """The headers of ``message_ids`` (one page of an ``order``), in the order given; an ID
        that names no message any more is left out."""
        raise self._decline("headers")

    def search(self, request):
        """One ``SearchPage`` of ``MailHeader`` items matching a ``SearchRequest`` (see
        :mod:`mailtriage.backends.search`), newest first; adapters that implement it set
        ``server_search``."""
        raise self._decline("search")

    # folders
    def list_folders(self) -> list[MailFolder]:
        raise self._decline("listFolders")

    def create_folder(self, name: str, parent_id: str | None = None) -> MailFolder:
        raise self._decline("createFolder")

    def rename_folder(self, folder_id: str, name: str) -> MailFolder:
        raise self._decline("renameFolder")

    def delete_folder(self, folder_id: str) -> None:
        raise self._decline("deleteFolder")

    def mark_folder_read(self, folder_id: str) -> None:
        raise self._decline("markFolderRead")

    def empty_folder(self, folder_id: str) -> None:
        raise self._decline("emptyFolder")

    # labels
    def list_labels(self) -> LabelList:
        raise self._decline("listLabels")

    def create_label(self, name: str) -> MailLabel:
        raise self._decline("createLabel")

    def rename_label(self, label_id: str, name: str) -> MailLabel:
        raise self._decline("renameLabel")

    def recolor_label(self, label_id: str, color: str) -> MailLabel:
        raise self._decline("recolorLabel")

    def delete_label(self, label_id: str) -> None:
        raise self._decline("deleteLabel")

    # bulk writes (1–100 same-account IDs)
    def set_flags(self, ids: Sequence[str], *, read: bool | None = None, flagged: bool | None = None) -> None:
        raise self._decline("setFlags")

    def set_labels(self, ids: Sequence[str], add: Sequence[str], remove: Sequence[str]) -> None:
        raise self._decline("setLabels")

    def move(self, ids: Sequence[str], folder_id: str) -> None:
        raise self._decline("move")

    def archive(self, ids: Sequence[str]) -> None:
        raise self._decline("archive")

    def trash(self, ids: Sequence[str]) -> None:
        raise self._decline("trash")

    def delete_permanently(self, ids: Sequence[str]) -> None:
        raise self._decline("deletePermanently")

    # compose
    def save_draft(self, compose: Compose) -> str:
        raise self._decline("createDraft")

    def send(self, compose: Compose, *, confirmed: bool) -> None:
        raise self._decline("send")

    def close(self) -> None:
        """Release connections. Safe to call more than once."""

    def sending_text(self) -> bool:
        """A mail's text is going out now (a quit waits for it, and says so). From any thread."""
        return False

    def abort(self, opening_only: bool = False) -> None:
        """From another thread: end the connections (``opening_only``: one being opened) at
        once, so a call waiting on the server fails now (see ``MailSource.abort``). Never raises."""
