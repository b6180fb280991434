"""The reply to a personal account's message built with its read ahead (issue 35).

The read ahead of the message under the cursor (tui/controllers/reading.py) hands the message
over, then builds on the same worker the reply ``r`` would show on it, when the outgoing rule
decides it from the message alone (it answers nothing and was not written to a project address:
no project source is asked, ``Service.route_asks_no_source``). Enter on the message finds it
built, or on its way, and compose fills its dialog right after the body's frame: a build started
there, on a worker, landed 10-40 ms later, often after an ``r`` typed with Enter, which then
waited for it and for the dialog's first layout. Kept in memory only, for that read of the
message (another read is another object), in the session it was built in; the last
:data:`KEPT` of them.

A part of compose (tui/controllers/compose.py) that owns this state, as the thread read ahead
is the reading controller's (tui/controllers/thread_ahead.py); compose passes in how a reply is
built (it imports no controller).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from mailtriage.application import Message, Thread
    from mailtriage.application.service import Service
    from mailtriage.tui.controllers.compose import Built

#: Replies kept (as many as the reader keeps messages read).
KEPT = 8


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


class RepliesWithRead:
    """Replies built with read aheads: ``build(account_id, message_id, source)`` is compose's build
    of the account's own reply (None: refused, or the project's draft: not kept; worker side),
    ``built`` is told of each reply built (it posts it when the reader shows its message)."""

    def __init__(self, session: Callable[[], Service], build: Callable[[str, str, Message], Built | None],
                 built: Callable[[DraftAhead], None]) -> None:
        self._session = session
        self._build = build
        self._built = built
        self._kept: dict[tuple[str, str], tuple[DraftAhead, object]] = {}
        self._lock = threading.Lock()  # the read ahead's worker adds, the UI thread looks

    def register(self, account_id: str, message_id: str, thread: Thread) -> DraftAhead | None:
        """The read ahead's worker, its message handed over: the reply to build (``build_on``),
        or None when the rule asks the project's sources (built once the reader shows it)."""
        source = thread.messages[0] if len(thread.messages) == 1 else None
        session = self._session()
        try:
            if source is None or not session.is_open or not session.route_asks_no_source(source):
                return None
        except Exception:  # noqa: BLE001 - not asked for: built once shown, or by r, which says why
            return None
        ahead = DraftAhead(("", account_id, message_id), thread)  # the key of r's ComposeTarget on it
        with self._lock:
            self._kept.pop((account_id, message_id), None)
            self._kept[(account_id, message_id)] = (ahead, session)
            while len(self._kept) > KEPT:
                del self._kept[next(iter(self._kept))]
        return ahead

    def build_on(self, ahead: DraftAhead) -> None:
        """Build ``ahead`` on the read ahead's worker (a lock the build waits for never delays
        the body: the message is handed over already); a refusal or a project draft is not kept."""
        _kind, account_id, message_id = ahead.key
        try:
            ahead.built = self._build(str(account_id), str(message_id), ahead.thread.messages[0])
        except Exception:  # noqa: BLE001 - not asked for: r builds it again and says why
            ahead.built = None
        finally:
            ahead.done.set()  # before ``built`` looks whether the UI thread took it on (it looks at done after)
        if ahead.built is not None:
            self._built(ahead)

    def find(self, key: tuple[str, str | None, str | None], shown: Thread | None) -> DraftAhead | None:
        """The reply built (or being built) for r's target ``key`` (kind, account, message), when
        the reader shows that very read of its message (``shown``) in the same session."""
        _kind, account_id, message_id = key
        if account_id is None or message_id is None:
            return None
        with self._lock:
            kept = self._kept.get((account_id, message_id))
        if kept is None:
            return None
        ahead, session = kept
        if ahead.thread is not shown or ahead.key != key or session is not self._session() \
                or (ahead.done.is_set() and ahead.built is None):
            return None
        return ahead
