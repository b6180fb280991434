"""The SMTP send a worker thread runs for a mailbox, within reach of ``abort()`` from another
thread (the app quits while the SMTP server is slow or silent).

A send runs on an event loop of its own in the worker thread (``smtp._run``); abort() ends
it on that loop, between two of its steps, while nothing of the mail has gone out (connect,
greeting, TLS, EHLO, AUTH, MAIL, RCPT, DATA before the server's 354). Once the message text
is going out the send is left to finish: a cut there could hide a delivery. A send that
starts after abort() is refused before it connects.
"""

from __future__ import annotations

import threading
from typing import Any, Awaitable, Callable


#: Seconds between two endings of a send abort() ended that has not stopped yet.
END_AGAIN = 0.05


class SendRun:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: tuple[Any, Any] | None = None  # the send's event loop and task
        self.client: Any = None  # the SMTP client of the send running (set by smtp.deliver)
        self.ended = False

    async def watch(self, send: Awaitable[Any], ended: Callable[[], Exception]) -> Any:
        """Run ``send`` on the running loop as the send abort() can end (raising ``ended()``)."""
        import asyncio  # why: only a send needs it (the mailbox opens without it)

        with self._lock:
            if self.ended:
                send.close()  # type: ignore[attr-defined]  # a coroutine, never started
                raise ended()
            self._running = (asyncio.get_running_loop(), asyncio.current_task())
        try:
            return await send
        except asyncio.CancelledError as exc:
            raise ended() from exc
        except Exception as exc:
            client = self.client
            if self.ended and not (client is not None and client.text_sent):
                raise ended() from exc  # the step abort() cut failed before the cancel came
            raise
        finally:
            with self._lock:
                self._running = None
                self.client = None

    @property
    def text_going_out(self) -> bool:
        """The send running has its text going out (the server said 354): a quit waits for it."""
        client = self.client
        return client is not None and client.text_sent

    def abort(self) -> None:
        with self._lock:
            self.ended = True
            running = self._running
        if running is not None:
            loop, task = running
            try:
                loop.call_soon_threadsafe(self._end, task)
            except RuntimeError:  # the send's loop has just closed: nothing is left to end
                pass

    def _end(self, task: Any) -> None:
        """On the send's loop, between two of its steps (no write can come in between)."""
        client = self.client
        if task.done() or (client is not None and client.text_sent):
            return
        if client is not None:
            client.close()  # a step waiting on the server (or the QUIT on the way out) fails at once
        task.cancel()
        # Before Python 3.12, asyncio.wait_for swallows a cancel that meets the end of what it
        # waits for (CPython gh-86296): a connect that completed as the quit came then waited
        # for the greeting (1 in ~25 runs of tests/imap/test_connect_abort.py). Again, until ended.
        task.get_loop().call_later(END_AGAIN, self._end, task)
