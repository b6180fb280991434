"""The mail-source contract: operations, capability sets, typed thread IDs and data types.

Every mail backend (mbox, imap, gmail, graph, ponymail, mailman3) implements
:class:`MailSource`. A backend declares the operations it supports in a frozen
``capabilities`` set and declines every other operation with :class:`NotSupported`;
it never fakes one (a draft that goes nowhere is silent data loss).

This module imports nothing from Textual or ``mailtriage.tui``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Mapping, Sequence

from mailtriage.backends.errors import NotSupported


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


@dataclass(frozen=True, order=True)
class ThreadId:
    """A thread identifier tagged with its kind.

    Two IDs are equal only when both kind and value are equal, so an ``mbox``
    Message-ID and a ``hyperkitty`` hash for the same conversation never dedupe
    together. ``str()`` gives ``kind:value``, which :meth:`parse` reads back.
    """

    kind: str
    value: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.value}"

    @classmethod
    def parse(cls, text: str, default_kind: str | None = None) -> "ThreadId":
        kind, sep, value = text.partition(":")
        if sep and kind and not kind.startswith("<") and " " not in kind:
            return cls(kind, value)
        if default_kind is None:
            raise ValueError(f"thread id {text!r} has no kind; write it as KIND:VALUE")
        return cls(default_kind, text)

    def to_json(self) -> dict:
        return {"kind": self.kind, "value": self.value}


@dataclass(frozen=True)
class Address:
    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>" if self.name else self.email

    def to_json(self) -> dict:
        return {"name": self.name, "email": self.email}


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class AttachmentInfo:
    filename: str
    content_type: str
    size: int
    note: str | None = None

    def to_json(self) -> dict:
        return {"filename": self.filename, "content_type": self.content_type, "size": self.size, "note": self.note}


@dataclass(frozen=True)
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
        }


@dataclass(frozen=True)
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
    # True when the thread started before the listing's ``since`` (the rows are replies to an
    # older thread): an alert calls it an update, not a new report. False when unknown.
    continued: bool = False

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
            "continued": self.continued,
        }


@dataclass(frozen=True)
class Thread:
    thread_id: ThreadId
    subject: str
    messages: tuple[Message, ...]
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {
            "thread_id": str(self.thread_id),
            "kind": self.thread_id.kind,
            "subject": self.subject,
            "messages": [m.to_json() for m in self.messages],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class DraftRequest:
    """What ``create_draft`` is asked to write; built by a confirmed proposal."""

    thread_id: ThreadId
    body: str
    to: tuple[str, ...]
    cc: tuple[str, ...] = ()
    subject: str | None = None
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()
    allow_second_draft: bool = False


@dataclass(frozen=True)
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

    def __init__(self, name: str, settings: Mapping[str, object] | None = None) -> None:
        self.name = name
        self.settings = dict(settings or {})

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

    def read_thread(self, thread_id: ThreadId) -> Thread:
        raise self._decline(Op.READ_THREAD)

    def list_drafts(self, thread_id: ThreadId) -> Sequence[Draft]:
        raise self._decline(Op.LIST_DRAFTS)

    def list_sent_since(self, thread_id: ThreadId, since: datetime) -> Sequence[Message]:
        raise self._decline(Op.LIST_SENT_SINCE)

    def create_draft(self, request: DraftRequest) -> Draft:
        raise self._decline(Op.CREATE_DRAFT)

    def thread_url(self, thread_id: ThreadId) -> str:
        raise self._decline(Op.THREAD_URL)

    def close(self) -> None:
        """Release connections. Safe to call more than once."""

    # -- helpers ------------------------------------------------------
    def _check_kind(self, thread_id: ThreadId) -> None:
        """Refuse a thread ID of another kind: IDs never cross backends silently."""
        from mailtriage.backends.errors import BackendFailure

        if thread_id.kind != self.thread_id_kind:
            raise BackendFailure(
                self.name,
                f"thread id of kind {thread_id.kind!r} given to backend {self.name!r}, "
                f"which emits {self.thread_id_kind!r} ids",
            )


@dataclass
class OpResult:
    """The result of dispatching one op: the value plus which backend served it."""

    op: Op
    backend: str | None
    value: object = None
    resolution: object = None
    notes: list[str] = field(default_factory=list)


def reply_subject(subject: str | None) -> str:
    """Reply subject rule from DESIGN.md: strip leading re/fwd/aw/sv (with [n]), prefix ``Re: ``."""
    import re

    text = (subject or "").strip()
    prefix = re.compile(r"^\s*(?:re|fwd?|aw|sv)\s*(?:\[\d+\])?\s*:\s*", re.IGNORECASE)
    while True:
        stripped = prefix.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    text = text.strip()
    return f"Re: {text}" if text else "Re: (no subject)"
