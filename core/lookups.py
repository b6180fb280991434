"""Name lookups (``getaddrinfo``) a quit does not wait for.

A lookup cannot be interrupted: glibc's resolver waits for its servers (seconds each, times
the attempts) with nothing another thread can shut down, so a quit while a connect looked up
its host waited for it. Here the lookup runs on a daemon thread and the connect waits for it
or for :meth:`Lookups.abort`, whichever comes first; an abandoned lookup ends on its own and
its answer is dropped. A host that is an address is not looked up on a thread (nothing waits).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from typing import Any


class Lookups:
    """The lookups of one client's connects (HTTP sockets, an IMAP connection)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: set[threading.Event] = set()
        self.ended = False

    def getaddrinfo(self, host: str, port: int) -> list:
        """``socket.getaddrinfo(host, port, 0, SOCK_STREAM)``; OSError when abort() came first."""
        try:
            ipaddress.ip_address(host)
        except ValueError:
            pass
        else:
            return socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        done = threading.Event()
        answer: list[Any] = []  # getaddrinfo's list, or its OSError
        with self._lock:
            if self.ended:
                raise OSError("ended (the app quits)")
            self._waiting.add(done)

        def look_up() -> None:
            try:
                answer.append(socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM))
            except OSError as exc:
                answer.append(exc)
            done.set()

        threading.Thread(target=look_up, name=f"lookup {host}", daemon=True).start()
        done.wait()
        with self._lock:
            self._waiting.discard(done)
        if self.ended or not answer:
            raise OSError(f"the lookup of {host} was ended (the app quits)")
        if isinstance(answer[0], OSError):
            raise answer[0]
        return answer[0]

    def abort(self) -> None:
        """From another thread: the lookups waited for end now (as failures); none starts after."""
        with self._lock:
            self.ended = True
            for done in self._waiting:
                done.set()
