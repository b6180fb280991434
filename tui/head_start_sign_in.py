"""Start-up's child signs in on a thread while it reads its head start (tui/head_start.py).

Nothing here imports Textual (the child runs it before the parent has imported it)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mailtriage.application import Service

#: Who the child's steps are recorded as (the console's "by" column; tui/head_start.py's too).
STARTUP_CALLER = "start-up"


class SignIn:
    """In the child: the sign-in a read (or a listing) starts with (connect, log in, select the
    list folder: ``Service.prepare_reading``), on a thread of its own while the head start loads
    the summary cache, so the read ahead starts the moment the first row is known (issue 33: at
    100k messages the sign-in and SELECT were the critical path, after the cache's load). Only
    where every backend signs in without tokens and the listing backend keeps a summary cache
(see :meth:`_may_read_early`). A failure
    is the read's (or the listing's) to report: it meets it again."""

    def __init__(self, session: Service) -> None:
        self.session = session
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        if not self._may_read_early():
            return
        self.thread = threading.Thread(target=self._run, name="start-up-sign-in", daemon=True)
        self.thread.start()
        from mailtriage.core.trace import TRACE  # loaded by the child's start by now (see _child)

        TRACE.log(STARTUP_CALLER, "!", "signing in ahead of the read, beside the head start")

    def _run(self) -> None:
        from mailtriage.core.trace import calling_as  # loaded by the child's start by now (see _child)

        try:
            with calling_as(STARTUP_CALLER):
                self.session.prepare_reading()
        except Exception:  # the read ahead (or the listing) meets it again and says why
            pass

    def _may_read_early(self) -> bool:
        """Where the listing backend keeps a summary cache (the head start reads that, no
        connection, no availability check, beside this thread) and no token is refreshed twice
        (``Service.listing_can_start_early``, which implies ``reading_can_start_early``)."""
        try:
            return self.session.listing_can_start_early()
        except Exception:  # the parent's own read finds out what is wrong
            return False

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()  # the connection's own timeout bounds it
            self.thread = None
