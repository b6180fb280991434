"""What a compose answers and what is built for it (split from tui/controllers/compose.py, which
holds the Compose component): the target, the forms the compose dialog shows, the toast of a
draft pending on the thread, and the reply built ahead for a message (issue 35)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mailtriage.tui.sanitize import inert

if TYPE_CHECKING:
    from mailtriage.application import ComposeForm, Message, Thread, ThreadId


@dataclass(frozen=True)
class ComposeTarget:
    """What a compose answers: a project thread (``thread`` or ``thread_id``), or a personal
    account's message (``account_id`` and ``message_id``; no message for new mail)."""

    kind: str
    thread: Thread | None = None
    thread_id: ThreadId | None = None
    account_id: str | None = None
    message_id: str | None = None
    #: A project draft's message answered when it was chosen in an account (the rule's route).
    answering: Message | None = None
    #: The personal message answered as the reader already holds it (issue 35: not read again).
    source: Message | None = None

    @property
    def personal(self) -> bool:
        return self.account_id is not None

    @property
    def key(self) -> tuple[str, str | None, str | None]:
        """What is composed (r: ""), on which account's message."""
        return self.kind, self.account_id, self.message_id


@dataclass(frozen=True)
class Built:
    """What the compose dialog shows: the forms (first one shown) and where the mail goes."""

    target: ComposeTarget
    forms: Mapping[str, ComposeForm]
    where: str
    #: Said as the dialog opens: the draft already pending on the thread (None: none).
    pending: str | None = None


def pending_words(found) -> str | None:
    """The toast of a compose on a thread that already has a draft pending (``PendingDrafts``):
    what is written now is blocked at its proposal (issue 35: said on r, not after the writing)."""
    if not found.drafts:
        return None
    drafts = "; ".join(f"{inert(d.subject)} → {inert(', '.join(d.to))}" for d in found.drafts)
    where = f", in {inert(found.where)}" if found.where else ""
    one = len(found.drafts) == 1
    return (f"{'A draft is' if one else f'{len(found.drafts)} drafts are'} already pending on this thread: "
            f"{drafts}{where} (✎ on its row). A new draft on it is blocked at the review until "
            f"{'that one is' if one else 'they are'} sent or deleted.")


@dataclass(eq=False)
class DraftAhead:
    """The reply built ahead for the message the reader shows: its target's key, the
    thread as the reader holds it (another read is another object), and, once ``done`` is
    set, what was built (None: refused or failed; r builds it again and says why)."""

    key: tuple[str, str | None, str | None]
    thread: Thread
    done: threading.Event = field(default_factory=threading.Event)
    built: Built | None = None
    #: An r showed what was built before its dialog was made ready: none is made for it then.
    taken: bool = False
