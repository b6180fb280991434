"""The mail-source contract: operations, capability sets, typed thread IDs and data types.

Every mail backend (mbox, imap, gmail, graph, ponymail, mailman3) implements
:class:`MailSource`. A backend declares the operations it supports in a frozen
``capabilities`` set and declines every other operation with :class:`NotSupported`;
it never fakes one (a draft that goes nowhere is silent data loss).

This module imports nothing from Textual or ``mailtriage.tui``.
"""

from __future__ import annotations

import enum
import re
from dataclasses import field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

from mailtriage.backends.errors import BackendFailure, NotSupported, ThreadNotFound
from mailtriage.core.inert import header_text
from mailtriage.core.lean_dataclass import frozen_dataclass  # @dataclass(frozen=True), one exec a class

if TYPE_CHECKING:  # the field types only: OpenPGP's status types load when a message is decrypted
    from mailtriage.backends.pgp_status import CryptoStatus, PgpMaterial


class Op(str, enum.Enum):
    """The abstract operations of the mail-source contract, spelled as the spec does."""

    LIST_RECENT_THREADS = "list_recent_threads"
    READ_THREAD = "read_thread"
    LIST_DRAFTS = "list_drafts"
    LIST_SENT_SINCE = "list_sent_since"
    CREATE_DRAFT = "create_draft"
    THREAD_URL = "thread_url"

    @property
    def cli_name(self) -> str:
        return self.value.replace("_", "-")

    @classmethod
    def parse(cls, text: str) -> "Op":
        wanted = text.strip().replace("-", "_").lower()
        for op in cls:
            if op.value == wanted:
                return op
        raise ValueError(f"unknown operation {text!r}; valid: {', '.join(o.value for o in cls)}")


ALL_OPS: tuple[Op, ...] = tuple(Op)


#: The shape of an RFC 5322 Message-ID thread reference (the root Message-ID, <> kept).
MESSAGE_ID_KIND = "msgid"
#: A thread rooted at a message without a Message-ID (it gets a synthetic ID).
SYNTHETIC_MESSAGE_ID_KIND = f"{MESSAGE_ID_KIND}-synthetic"
#: Tags written by older versions, which named the emitting backend instead of the shape.
#: They are read back as the shape they always had (mbox and IMAP emitted root Message-IDs).
LEGACY_KINDS = {
    "mbox": MESSAGE_ID_KIND,
    "imap": MESSAGE_ID_KIND,
    "mbox-synthetic": SYNTHETIC_MESSAGE_ID_KIND,
    "imap-synthetic": SYNTHETIC_MESSAGE_ID_KIND,
}
_MESSAGE_ID_SHAPES = (MESSAGE_ID_KIND, SYNTHETIC_MESSAGE_ID_KIND)


@frozen_dataclass(order=True)
class ThreadId:
    """A thread reference: its *shape* (``kind``), the value in that shape, and the root
    Message-ID whenever it is known.

    ``kind`` is the contract's ``thread_id_kind``: ``msgid`` (an RFC 5322 root
    Message-ID), ``gmail`` (a Gmail thread ID), ``graph``, ``ponymail``, ``hyperkitty``
    (archive hashes)… Two references are equal only when kind and value are equal, so IDs
    of different shapes never dedupe together; ``root`` does not take part in equality.
    It is what lets a thread read through one backend be drafted through another: every
    backend resolves a root Message-ID to its own thread (``MailSource.own_thread_id``).

    ``str()`` gives ``kind:value``, followed by ``<root>`` for a backend-native value
    whose root is known (``gmail:18c2f3a<root@example.org>``); :meth:`parse` reads it back,
    and reads old backend tags (``mbox:<…>``, ``imap:<…>``) as ``msgid``.
    """

    kind: str
    value: str
    root: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        kind = LEGACY_KINDS.get(self.kind, self.kind)
        if kind != self.kind:
            object.__setattr__(self, "kind", kind)
        if kind in _MESSAGE_ID_SHAPES:
            # The value *is* the Message-ID; a root given beside it would only contradict it.
            object.__setattr__(self, "root", self.value)

    @property
    def is_message_id(self) -> bool:
        """True for the Message-ID shapes (the value is itself a Message-ID)."""
        return self.kind in _MESSAGE_ID_SHAPES

    def with_root(self, root: str | None) -> "ThreadId":
        """This reference with its root Message-ID recorded (unchanged when already known)."""
        if not root or self.root or self.is_message_id:
            return self
        return ThreadId(self.kind, self.value, root)

    def __str__(self) -> str:
        if self.root and not self.is_message_id:
            return f"{self.kind}:{self.value}{self.root}"
        return f"{self.kind}:{self.value}"

    @classmethod
    def parse(cls, text: str, default_kind: str | None = None) -> "ThreadId":
        """Read ``kind:value[<root>]``; a bare ``<Message-ID>`` is a ``msgid`` reference."""
        text = text.strip()
        kind, sep, value = text.partition(":")
        if sep and kind and not kind.startswith("<") and " " not in kind:
            kind = LEGACY_KINDS.get(kind, kind)
            if kind in _MESSAGE_ID_SHAPES:
                return cls(kind, value)
            native, lt, rest = value.partition("<")
            if lt and rest.endswith(">"):
                if not native:  # only a root Message-ID under a native tag: it is a msgid reference
                    return cls(MESSAGE_ID_KIND, "<" + rest)
                return cls(kind, native, "<" + rest)
            return cls(kind, value)
        if text.startswith("<") and text.endswith(">") and "@" in text:
            return cls(MESSAGE_ID_KIND, text)
        if default_kind is None:
            raise ValueError(f"thread id {text!r} has no kind; write it as KIND:VALUE or <root Message-ID>")
        return cls(default_kind, text)

    def to_json(self) -> dict:
        return {"kind": self.kind, "value": self.value, "root": self.root}


@frozen_dataclass
class Address:
    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>" if self.name else self.email

    def to_json(self) -> dict:
        return {"name": self.name, "email": self.email}


@frozen_dataclass
class TextPart:
    """A readable part of a message. ``note`` explains anything lost while decoding it."""

    content_type: str
    text: str
    note: str | None = None
    from_html: bool = False

    def to_json(self) -> dict:
        return {
            "content_type": self.content_type,
            "text": self.text,
            "note": self.note,
            "from_html": self.from_html,
        }


@frozen_dataclass
class AttachmentInfo:
    filename: str
    content_type: str
    size: int
    note: str | None = None

    def to_json(self) -> dict:
        return {"filename": self.filename, "content_type": self.content_type, "size": self.size, "note": self.note}


@frozen_dataclass
class Message:
    """One message of a thread, as every backend returns it.

    ``message_id`` is the RFC 5322 Message-ID with angle brackets (or a synthetic
    ``<synthetic-…@mailtriage.invalid>`` when the message had none; ``synthetic_id``
    is then true). ``headers`` keeps the raw decoded headers for display.
    """

    message_id: str
    subject: str
    sender: Address
    to: tuple[Address, ...] = ()
    cc: tuple[Address, ...] = ()
    date: datetime | None = None
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()
    text_parts: tuple[TextPart, ...] = ()
    attachments: tuple[AttachmentInfo, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    synthetic_id: bool = False
    backend_ref: str | None = None
    # What OpenPGP protected (None: the message carries no OpenPGP); filled on read_thread only.
    crypto: CryptoStatus | None = None
    # The OpenPGP pieces the MIME walk found, for the decryption step (ciphertext, signed bytes).
    pgp: tuple[PgpMaterial, ...] = field(default=(), compare=False, repr=False)

    @property
    def body_text(self) -> str:
        return "\n\n".join(part.text for part in self.text_parts)

    def header(self, name: str) -> str | None:
        lname = name.lower()
        for key, value in self.headers:
            if key.lower() == lname:
                return value
        return None

    def to_json(self) -> dict:
        return {
            "message_id": self.message_id,
            "synthetic_id": self.synthetic_id,
            "subject": self.subject,
            "from": self.sender.to_json(),
            "to": [a.to_json() for a in self.to],
            "cc": [a.to_json() for a in self.cc],
            "date": self.date.isoformat() if self.date else None,
            "in_reply_to": self.in_reply_to,
            "references": list(self.references),
            "text_parts": [p.to_json() for p in self.text_parts],
            "attachments": [a.to_json() for a in self.attachments],
            "notes": list(self.notes),
            "backend_ref": self.backend_ref,
            "crypto": self.crypto.to_json() if self.crypto else None,
        }


@frozen_dataclass
class ThreadSummary:
    """One row of ``list_recent_threads``: enough to show a thread list, no bodies."""

    thread_id: ThreadId
    subject: str
    root_message_id: str
    sender: Address
    last_activity: datetime | None
    message_count: int
    participants: tuple[str, ...] = ()
    unread: bool = False
    notes: tuple[str, ...] = ()
    # "" when last_activity is the Date header of a plausible date; "undated" when it
    # is the archive's own delivery time (no usable Date); "implausible" when the date
    # is before 1990 or more than a day ahead. Lists show a marker for the last two.
    date_marker: str = ""

    @property
    def date_mark(self) -> str:
        """One character after the date in list rows: "?" undated, "!" implausible, else a space."""
        return {"undated": "?", "implausible": "!"}.get(self.date_marker, " ")

    def __post_init__(self) -> None:
        # The reference carries the root Message-ID the summary names (cross-backend identity).
        if self.root_message_id and not self.root_message_id.endswith("@mailtriage.invalid>"):
            object.__setattr__(self, "thread_id", self.thread_id.with_root(self.root_message_id))
    # True when the thread started before the listing's ``since`` (the rows are replies to an
    # older thread): an alert calls it an update, not a new report. False when unknown.
    continued: bool = False
    # The sender's ``Date:`` of the message that gave ``last_activity``, where the backend
    # lists by arrival (IMAP INTERNALDATE): the thread list shows it by default
    # (``date_column = "sent"``). None: ``last_activity`` is already the sender's date.
    sent: datetime | None = None

    @classmethod
    def _of_message_id_root(cls, synthetic: bool, root_id: str, subject: str, sender: Address,
                            last_activity: datetime | None, message_count: int, participants: tuple[str, ...],
                            unread: bool, continued: bool, sent: datetime | None,
                            date_marker: str = "") -> "ThreadSummary":
        """``cls(ThreadId(kind, root_id), subject, root_id, sender, last_activity, message_count,
        participants, unread, date_marker=date_marker, continued=continued, sent=sent)`` where ``kind`` is ``msgid``
        (``msgid-synthetic`` with ``synthetic``), without the generated ``__init__`` and both
        ``__post_init__``: a listing of a dense IMAP window makes some 18,000 at once, and
        these calls were half of the time it took to sum its threads up (backends/imap/recent_threads.py).

        Nothing is checked by the constructors that this skips; every field is set to what they
        set: a reference of a Message-ID shape has its value as root, so ``with_root`` leaves
        it as it is. tests/contract/test_summary_fast_path.py compares the two field by field
        and fails when a field is added to either class without being added here."""
        # The summary's fields are stored into its attribute dict (``_of_fields``): one store
        # each instead of a call each (twice as fast; the dict made visible costs some 60
        # bytes a summary, so the small ThreadId keeps the calls).
        thread_id = object.__new__(ThreadId)
        set_field = object.__setattr__
        set_field(thread_id, "kind", SYNTHETIC_MESSAGE_ID_KIND if synthetic else MESSAGE_ID_KIND)
        set_field(thread_id, "value", root_id)
        set_field(thread_id, "root", root_id)
        return cls._of_fields(thread_id, subject, root_id, sender, last_activity, message_count, participants,
                              unread, (), date_marker, continued, sent)

    @classmethod
    def _of_fields(cls, thread_id: ThreadId, subject: str, root_message_id: str, sender: Address,
                   last_activity: datetime | None, message_count: int, participants: tuple[str, ...], unread: bool,
                   notes: tuple[str, ...], date_marker: str, continued: bool, sent: datetime | None) -> "ThreadSummary":
        """A summary of exactly these fields, without the generated ``__init__`` and
        ``__post_init__`` (the caller's ``thread_id`` already carries its root): for the fast
        paths above and in backends/summary_wire.py, which build thousands at once."""
        # The fields are written into the attribute dict, as object.__setattr__ would write
        # them (a frozen dataclass refuses setattr) and in the order __init__ sets them.
        self = object.__new__(cls)
        fields = self.__dict__
        fields["thread_id"] = thread_id
        fields["subject"] = subject
        fields["root_message_id"] = root_message_id
        fields["sender"] = sender
        fields["last_activity"] = last_activity
        fields["message_count"] = message_count
        fields["participants"] = participants
        fields["unread"] = unread
        fields["notes"] = notes
        fields["date_marker"] = date_marker
        fields["continued"] = continued
        fields["sent"] = sent
        return self

    def to_json(self) -> dict:
        return {
            "thread_id": str(self.thread_id),
            "kind": self.thread_id.kind,
            "subject": self.subject,
            "root_message_id": self.root_message_id,
            "from": self.sender.to_json(),
            "last_activity": self.last_activity.isoformat() if self.last_activity else None,
            "message_count": self.message_count,
            "participants": list(self.participants),
            "unread": self.unread,
            "notes": list(self.notes),
            "date_marker": self.date_marker,
            "continued": self.continued,
        }


@frozen_dataclass
class RecentChanges:
    """What a recent listing holds, or what changed in it since the caller's last one
    (:meth:`MailSource.list_recent_changes`; issue 39: a poll in a storm costs what changed).

    ``threads`` is the whole listing (most recent activity first) when the backend answers
    whole: the first call, a token it does not know (another listing ran meanwhile), the
    state unknown (IMAP: UIDVALIDITY changed, a reconnect, a fresh walk), or a backend that
    keeps no state (the default). Otherwise ``threads`` is None and the listing is the last
    one with ``changed`` (threads added, or whose summary changed: most recent activity
    first) put in and ``removed`` (thread references no longer listed) taken out. ``token``
    goes with the next call."""

    threads: Sequence[ThreadSummary] | None
    changed: Sequence[ThreadSummary] = ()
    removed: Sequence[ThreadId] = ()
    token: object = None

    @property
    def whole(self) -> bool:
        return self.threads is not None


@frozen_dataclass
class Thread:
    thread_id: ThreadId
    subject: str
    messages: tuple[Message, ...]
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # The reference carries the root Message-ID: the first message's first reference,
        # else its own ID (the thread-root rule every backend follows).
        if self.messages and not self.thread_id.root:
            first = self.messages[0]
            root = first.references[0] if first.references else first.in_reply_to or (
                None if first.synthetic_id else first.message_id)
            if root:
                object.__setattr__(self, "thread_id", self.thread_id.with_root(root))

    def to_json(self) -> dict:
        return {
            "thread_id": str(self.thread_id),
            "kind": self.thread_id.kind,
            "subject": self.subject,
            "messages": [m.to_json() for m in self.messages],
            "notes": list(self.notes),
        }


@frozen_dataclass
class OutgoingAttachment:
    """An attachment of outgoing mail: bytes, never host paths (files are read by the
    flow when the user confirms, size-limited)."""

    filename: str
    content_type: str
    data: bytes


@frozen_dataclass
class DraftRequest:
    """What ``create_draft`` is asked to write; built by a confirmed proposal.

    ``from_name`` is the configured display name of the sender (``name`` in the user
    settings), never the operating system's login name; the address is the backend's.
    """

    thread_id: ThreadId
    body: str
    to: tuple[str, ...]
    cc: tuple[str, ...] = ()
    subject: str | None = None
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()
    allow_second_draft: bool = False
    from_name: str | None = None
    attachments: tuple[OutgoingAttachment, ...] = ()


@frozen_dataclass
class Draft:
    """A draft reply that exists on the backend (listed or just created)."""

    thread_id: ThreadId
    draft_ref: str
    subject: str
    to: tuple[str, ...]
    cc: tuple[str, ...]
    in_reply_to: str | None
    body: str
    date: datetime | None = None
    message_id: str | None = None  # where the backend reads it (IMAP): finds a rerun's own draft

    def to_json(self) -> dict:
        return {
            "thread_id": str(self.thread_id),
            "draft_ref": self.draft_ref,
            "subject": self.subject,
            "to": list(self.to),
            "cc": list(self.cc),
            "in_reply_to": self.in_reply_to,
            "body": self.body,
            "date": self.date.isoformat() if self.date else None,
        }


@frozen_dataclass
class SourceFeatures:
    """What a mail source offers beyond its operations: declared by each backend class,
    never discovered by probing (a signature, a kind name). Front ends and flows branch
    on these, not on ``kind``."""

    #: ``search(SearchRequest)`` runs on the server (IMAP SEARCH, Gmail ``q``, Graph
    #: ``$search``, an archive's own search) or scans the local index (mbox): the app's
    #: ``/`` and ``mailtriage mail search`` use it. ``server_search_fields`` lists the
    #: fields (``text``, ``body``, ``from``, ``subject``) the backend can search.
    server_search: bool = False
    server_search_fields: tuple[str, ...] = ("text", "body", "from", "subject")
    #: The backend searches every folder of its account when asked (``all_folders``).
    search_all_folders: bool = False

    #: ``list_recent_threads(..., limit=N)`` is accepted: the listing stops once N threads
    #: are known (a first screen costs what it shows, not what the list holds).
    listing_limit: bool = False
    #: Threads are read from a local archive file or folder (mbox, Maildir); their links
    #: are ``file:`` URLs whose fragment is the root Message-ID.
    local_archive: bool = False
    #: It is the list's own archive (HyperKitty, Pony Mail): every thread it holds is the list's
    #: mail, though its messages carry no To or Cc. The outgoing rule (application/flows/security_thread.py)
    #: takes holding a thread there as the thread being the list's.
    list_archive: bool = False
    #: ``attachment(message.backend_ref, index)`` gives the decoded bytes of a read
    #: message's attachment (numbered as in ``Message.attachments``).
    attachment_bytes: bool = False
    #: ``cached_recent_threads(...)`` answers from a persisted summary cache without asking
    #: the server (stale rows to paint at once; ``list_recent_threads`` then reconciles).
    cached_listing: bool = False
    #: Drafts are written to a local mail folder (a Maildir a sync tool such as mbsync or
    #: offlineimap uploads); a draft's reference is the path of its file.
    local_drafts: bool = False
    #: ``create_draft`` writes ``DraftRequest.attachments`` into the draft (a backend
    #: without it refuses a request that carries files, and the proposal is blocked first).
    draft_attachments: bool = False


@frozen_dataclass
class SourceOrigin:
    """Where a mail source was configured, handed to its constructor beside its settings:
    the project directory (relative paths resolve against it, and configuration errors
    name its project.md), the entry's notes, and the user settings that hold the
    ``[accounts.<id>]`` tables an account-backed source reads."""

    project_dir: Path | None = None
    notes: str = ""
    user_settings: Any = None

    @property
    def project_file(self) -> str:
        return str(self.project_dir / "project.md") if self.project_dir is not None else "project.md"

    def resolve(self, path: Path) -> Path:
        """``path`` made absolute against the project directory (or the working directory)."""
        return path if path.is_absolute() else (self.project_dir or Path(".")) / path


def _each(thread_ids: Sequence[ThreadId], call) -> dict:
    """``call`` per thread; a thread whose own call fails (BackendFailure) is left out (unknown).
    NotSupported and Unavailable concern the backend, not the thread: they end the loop."""
    out = {}
    for thread_id in dict.fromkeys(thread_ids):
        try:
            out[thread_id] = call(thread_id)
        except BackendFailure:
            continue
    return out


class MailSource:
    """Base class of every mail-source backend.

    Subclasses set ``kind``, ``thread_id_kind`` and a frozen ``capabilities`` set,
    and override the methods of the operations they support. The base methods
    raise :class:`NotSupported`, so an op a backend does not declare is declined,
    never faked.

    Raises (every operation):
        NotSupported: the backend declines the operation.
        Unavailable: the backend cannot serve anything now (auth missing, archive
            not mounted, server unreachable); ``reason`` says why.
        BackendFailure: this one call failed (bad data, server error mid-call).
    """

    kind: ClassVar[str] = "abstract"
    thread_id_kind: ClassVar[str] = "abstract"
    capabilities: ClassVar[frozenset[Op]] = frozenset()
    #: True when :meth:`thread_for_message_id` is implemented, i.e. the backend finds its
    #: own thread from a root Message-ID, so references of other shapes that carry a root
    #: reach it too (cross-backend thread identity).
    resolves_message_ids: ClassVar[bool] = False
    features: ClassVar[SourceFeatures] = SourceFeatures()
    #: Signing in needs no token that a sign-in refreshes and stores (a password, a stored
    #: cookie, a local file; not OAuth): another process of the app may then use the backend
    #: on its own (see ``SourceSet.listing_can_start_early``) without two processes refreshing
    #: one token. Off unless a backend says so.
    signs_in_without_tokens: bool = False

    def __init__(self, name: str, settings: Mapping[str, object] | None = None, *,
                 origin: SourceOrigin | None = None) -> None:
        self.name = name
        self.settings = dict(settings or {})
        self.origin = origin or SourceOrigin()

    # -- availability -------------------------------------------------
    def check_available(self) -> None:
        """Raise :class:`Unavailable` with a reason when the backend cannot serve now.

        Cheap: used by the resolution rule before every dispatch.
        """

    def supports(self, op: Op) -> bool:
        return op in self.capabilities

    def _decline(self, op: Op) -> NotSupported:
        return NotSupported(self.name, op.value)

    # -- operations ---------------------------------------------------
    def list_recent_threads(self, list_name: str | None, since: datetime) -> Sequence[ThreadSummary]:
        raise self._decline(Op.LIST_RECENT_THREADS)

    def list_recent_changes(self, list_name: str | None, since: datetime, token: object = None) -> RecentChanges:
        """``list_recent_threads`` as a change feed (:class:`RecentChanges`): with the
        ``token`` of this backend's last answer, a backend that keeps its last listing may
        answer only what changed since. This default answers whole every time, so every
        backend serves a poller through it unchanged."""
        return RecentChanges(list(self.list_recent_threads(list_name, since)))

    def read_thread(self, thread_id: ThreadId) -> Thread:
        raise self._decline(Op.READ_THREAD)

    def list_drafts(self, thread_id: ThreadId) -> Sequence[Draft]:
        raise self._decline(Op.LIST_DRAFTS)

    def list_sent_since(self, thread_id: ThreadId, since: datetime) -> Sequence[Message]:
        raise self._decline(Op.LIST_SENT_SINCE)

    def list_drafts_of(self, thread_ids: Sequence[ThreadId]) -> dict[ThreadId, Sequence[Draft]]:
        """:meth:`list_drafts` for many threads at once (the row marks of a screen). This
        default asks thread by thread; a backend that can look once for all (IMAP: one
        SELECT and one SEARCH of Drafts) overrides it. A thread left out of the answer could
        not be told (its reference does not resolve here, or its read failed).

        Raises NotSupported and Unavailable as :meth:`list_drafts` does (for all threads)."""
        return _each(thread_ids, self.list_drafts)

    def list_sent_since_of(self, thread_ids: Sequence[ThreadId],
                           since: datetime) -> dict[ThreadId, Sequence[Message]]:
        """:meth:`list_sent_since` for many threads at once; as :meth:`list_drafts_of`."""
        return _each(thread_ids, lambda thread_id: self.list_sent_since(thread_id, since))

    def create_draft(self, request: DraftRequest) -> Draft:
        raise self._decline(Op.CREATE_DRAFT)

    def thread_url(self, thread_id: ThreadId) -> str:
        raise self._decline(Op.THREAD_URL)

    def search(self, request):
        """One ``SearchPage`` of messages matching the ``SearchRequest``, newest first, each as the
        ``ThreadSummary`` of the thread that holds it (see :mod:`mailtriage.backends.search`).
        Backends that implement it declare ``features.server_search``."""
        raise NotSupported(self.name, "search", "this backend declares no server search")

    def prepare_read(self, *, open_message: bool = False) -> None:
        """Do now what a ``read_thread`` would do first that needs no thread (sign in, open the
        folder it reads): start-up's child calls it on a thread while it loads its head start
        (tui/head_start.py); the app calls it with ``open_message`` while it is idle, so the
        next read finds the folder open and its first message read costs what any read costs
        (the server's first open of a large folder is paid before the key, not after it).
        Errors are the read's to report. Backends without a lasting connection have nothing to do."""

    def close(self) -> None:
        """Release connections. Safe to call more than once."""

    def abort(self, opening_only: bool = False) -> None:
        """From another thread, while a call may be waiting on the server (the app quits): end the
        connections at once (``opening_only``: one being opened, nothing of it to finish; none
        opens after), so that call fails now instead of at its timeout. Never raises; :meth:`close`
        still follows. Backends without a lasting connection have nothing to end."""

    # -- beyond the contract -------------------------------------------
    def attachment(self, message_ref: str, index: int) -> bytes:
        """The decoded bytes of attachment ``index`` of the message whose ``backend_ref`` is
        ``message_ref``, as ``read_thread`` numbered them in ``Message.attachments``. Offered
        when ``features.attachment_bytes`` is declared; never written to disk here.

        Raises:
            NotSupported: the backend cannot read parts.
            BackendFailure: the reference or the index is unknown.
        """
        raise NotSupported(self.name, "attachment")

    def raw_message(self, message_ref: str) -> bytes:
        """The message whose ``backend_ref`` is ``message_ref`` as its bytes came (full
        headers and the undecoded body: what ``|`` pipes and the raw view shows); never
        written to disk here.

        Raises:
            NotSupported: the backend does not keep or fetch the raw message.
            BackendFailure: the reference is unknown.
        """
        raise NotSupported(self.name, "raw_message")

    # -- thread identity across backends --------------------------------
    def own_kinds(self) -> tuple[str, str]:
        return (self.thread_id_kind, f"{self.thread_id_kind}-synthetic")

    def accepts(self, thread_id: ThreadId) -> bool:
        """Can this backend work on ``thread_id``: its own shape, or a root it can resolve."""
        if thread_id.kind in self.own_kinds():
            return True
        return bool(thread_id.root) and (self.resolves_message_ids or self.thread_id_kind == MESSAGE_ID_KIND)

    def own_thread_id(self, thread_id: ThreadId) -> ThreadId:
        """This backend's own reference for the thread ``thread_id`` names.

        A reference of the backend's own shape is returned as is. Another shape is
        resolved by its root Message-ID: a ``msgid`` backend takes the root itself; any
        other calls the :meth:`thread_for_message_id` hook.

        Raises:
            BackendFailure: another shape without a root Message-ID, a backend that
                cannot resolve Message-IDs, or no thread of this backend holds the root.
        """
        if thread_id.kind in self.own_kinds():
            return thread_id
        root = thread_id.root
        if root and self.thread_id_kind == MESSAGE_ID_KIND:
            return ThreadId(MESSAGE_ID_KIND, root)
        if root and self.resolves_message_ids:
            found = self.thread_for_message_id(root)
            if found is None:
                raise ThreadNotFound(self.name, f"no thread holding {root} on backend {self.name!r}")
            # A msgid reference may name a reply, not the root: the thread finds its own root.
            return found if thread_id.is_message_id else found.with_root(root)
        self._check_kind(thread_id)  # raises with the usual wording
        return thread_id

    def thread_for_message_id(self, message_id: str) -> ThreadId | None:
        """Hook: this backend's thread that holds the message ``message_id`` (its root or a
        reply), or None when it holds no such message. Backends that implement it set
        ``resolves_message_ids = True`` (IMAP: HEADER Message-ID search; Gmail:
        ``rfc822msgid:``; Graph: ``internetMessageId``; archives: their own lookup).
        """
        raise NotSupported(self.name, "thread_for_message_id")

    def threads_for_message_ids(self, message_ids: Sequence[str]) -> dict[str, ThreadId]:
        """:meth:`thread_for_message_id` for many Message-IDs (the roots one poll needs): those
        found, each with its thread. Here one call each; a backend that can ask its server for
        all at once (IMAP: ORed searches) overrides it."""
        found: dict[str, ThreadId] = {}
        for message_id in dict.fromkeys(message_ids):
            thread = self.thread_for_message_id(message_id)
            if thread is not None:
                found[message_id] = thread
        return found

    def message_ids_epoch(self) -> object:
        """Hook: a token that changes whenever an answer of :meth:`threads_for_message_ids` may
        no longer hold (IMAP: the list folder's UIDVALIDITY changed, or a message left it), so a
        caller that remembers answers forgets them; read after a listing. None: the backend
        cannot tell (a caller keeps an answer no longer than it needs it)."""
        return None

    def cached_recent_threads(self, list_name: str | None, since: datetime, *,
                              limit: int | None = None) -> Sequence[ThreadSummary] | None:
        """Hook: the threads as a persisted summary cache last saw them, read without a
        round trip (stale), or None when there is none. Backends that implement it declare
        ``SourceFeatures(cached_listing=True)``."""
        return None

    def hold_window_only(self) -> None:
        """Hook: this source serves a poller beside the front end (whose own source keeps any
        persisted summary cache): hold the rows of the windows it lists, not a copy of the
        whole cache (issue 39). Backends without such a cache ignore it."""

    # -- helpers ------------------------------------------------------
    def _check_kind(self, thread_id: ThreadId) -> None:
        """Refuse a thread ID of another kind: IDs never cross backends silently."""
        if thread_id.kind != self.thread_id_kind:
            raise BackendFailure(
                self.name,
                f"thread id of kind {thread_id.kind!r} given to backend {self.name!r}, "
                f"which emits {self.thread_id_kind!r} ids",
            )


def reply_subject(subject: str | None) -> str:
    """The reply's subject: leading re/fwd/aw/sv markers (with [n]) stripped, then ``Re: `` prefixed."""
    text = (subject or "").strip()
    prefix = re.compile(r"^\s*(?:re|fwd?|aw|sv)\s*(?:\[\d+\])?\s*:\s*", re.IGNORECASE)
    while True:
        stripped = prefix.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    # The subject came from mail: one clean line (a CR/LF decoded from an RFC 2047 word
    # would make the draft's header unserializable, or add a header).
    text = header_text(text)
    return f"Re: {text}" if text else "Re: (no subject)"
