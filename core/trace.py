"""Observability shared by every backend and tracker: an operation log and a protocol trace.

The TUI's backend console subscribes to both; the CLI can print them with ``--trace``.
Secrets never enter the trace: every line passes through :func:`redact` first.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

from mailtriage.core.secrets import scrub

_MAX = 5000

# Who asked for an operation: "you" unless the calling thread says otherwise (the new-report
# poller, the overview of the rows on screen), so the console can tell them apart.
_who = threading.local()


@contextmanager
def calling_as(name: str) -> Iterator[None]:
    """Operations recorded on this thread inside the block are attributed to ``name``."""
    previous = getattr(_who, "name", None)
    _who.name = name
    try:
        yield
    finally:
        _who.name = previous


def current_caller() -> str:
    return getattr(_who, "name", None) or "you"


#: Protocol lines that only keep an idle connection alive (IMAP NOOP, IDLE/DONE and their
#: plain completions); the console folds a run of them into one line.
# Source text: compiled by ``re`` on the console's first use, not at import (see _REDACTION_SOURCES).
_KEEPALIVE = r"(?i)^(?:\S+ (?:NOOP|IDLE)(?: .*)?|DONE|\+ idling.*|\S+ OK (?:NOOP|IDLE)\b.*)$"


def is_keepalive(line: "TraceLine") -> bool:
    return bool(re.match(_KEEPALIVE, line.text.strip()))


@dataclass
class OpRecord:
    backend: str
    op: str
    started: float
    duration_ms: float = 0.0
    size: int | None = None
    error: str | None = None
    detail: str = ""
    caller: str = "you"  # who asked: "you", "poller", "overview" (see calling_as)

    def to_json(self) -> dict:
        return {
            "caller": self.caller,
            "backend": self.backend,
            "op": self.op,
            "duration_ms": round(self.duration_ms, 2),
            "size": self.size,
            "error": self.error,
            "detail": self.detail,
        }


@dataclass
class TraceLine:
    channel: str  # e.g. "imap:work", "http:hyperkitty"
    direction: str  # ">" sent, "<" received, "!" event
    text: str
    at: float = field(default_factory=time.time)


class _Feed:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: deque = deque(maxlen=_MAX)
        self._listeners: list[Callable] = []

    def subscribe(self, listener: Callable) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def _publish(self, item) -> None:
        with self._lock:
            self._items.append(item)
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(item)
            except Exception:  # a broken listener must never break a backend call
                pass

    def drop_listeners(self) -> None:
        """Forget every listener: in a forked child of the app, whose listeners are the parent's
        (a ``--trace`` writer would write the child's records, and then the parent again)."""
        with self._lock:
            self._listeners.clear()

    def adopt(self, items: list) -> None:
        """Publish what another process of the app recorded (start-up's helper, tui/head_start.py)
        as if recorded here, in its order."""
        for item in items:
            self._publish(item)

    def items(self) -> list:
        with self._lock:
            return list(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


class OpLog(_Feed):
    """Every backend operation: which backend, which op, how long, how big, which error."""

    @contextmanager
    def record(self, backend: str, op: str, detail: str = "") -> Iterator[OpRecord]:
        rec = OpRecord(backend, op, time.time(), detail=detail, caller=current_caller())
        t0 = time.perf_counter()
        try:
            yield rec
        except BaseException as exc:
            rec.error = scrub(f"{type(exc).__name__}: {exc}")
            raise
        finally:
            rec.duration_ms = (time.perf_counter() - t0) * 1000
            self._publish(rec)


class ProtocolTrace(_Feed):
    """Protocol lines (IMAP, SMTP, HTTP) with secrets redacted. Off until enabled."""

    def __init__(self) -> None:
        super().__init__()
        self.enabled = False

    @property
    def active(self) -> bool:
        """True when a line would be kept: lets a hot path skip formatting it."""
        return self.enabled or bool(self._listeners)

    def log(self, channel: str, direction: str, text: str) -> None:
        if not self.enabled and not self._listeners:
            return
        self._publish(TraceLine(channel, direction, redact(text)))


# The redaction patterns, as source text: compiled when the first line is redacted (a trace
# switched on, or the console open), not at import, where the dozen of them cost ~3 ms of
# every start (python -X importtime).
_REDACTION_SOURCES: list[tuple[str, str]] = [
    # IMAP: tag LOGIN user password  /  tag AUTHENTICATE mech initial-response
    (r"(?i)(\bLOGIN\s+(?:\"[^\"]*\"|\S+)\s+)(\"(?:[^\"\\]|\\.)*\"|\{\d+\+?\}|\S+)", r"\1[REDACTED]"),
    (r"(?i)(\bAUTHENTICATE\s+\S+)(\s+\S+)?", r"\1 [REDACTED]"),
    # SMTP AUTH PLAIN/LOGIN initial responses
    (r"(?i)(\bAUTH\s+(?:PLAIN|LOGIN|XOAUTH2|OAUTHBEARER)\b)(\s+\S+)?", r"\1 [REDACTED]"),
    # HTTP headers and query parameters carrying secrets
    (r"(?i)((?:authorization|proxy-authorization)\s*:\s*)(.+)", r"\1[REDACTED]"),
    (r"(?i)((?:cookie|set-cookie)\s*:\s*)(.+)", r"\1[REDACTED]"),
    (r"(?i)\b(access_token|refresh_token|id_token|client_secret|password|code|code_verifier|token)=([^&\s\"]+)",
     r"\1=[REDACTED]"),
    (r"(?i)(\"(?:access_token|refresh_token|id_token|client_secret|password|token)\"\s*:\s*)\"[^\"]*\"",
     r'\1"[REDACTED]"'),
    # OAuth device-code and client-assertion grants (Microsoft sign-in)
    (r"(?i)\b(device_code|client_assertion|assertion)=([^&\s\"]+)", r"\1=[REDACTED]"),
    (r"(?i)(\"(?:device_code|client_assertion)\"\s*:\s*)\"[^\"]*\"", r'\1"[REDACTED]"'),
    # Graph upload-session URLs (attachments from 3 MB) carry their own token
    (r"(?i)\b(authtoken)=([^&\s\"]+)", r"\1=[REDACTED]"),
    (r"(?i)\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+", r"\1 [REDACTED]"),
]


_REDACTIONS: tuple[tuple[re.Pattern, str], ...] | None = None


def _redactions() -> tuple[tuple[re.Pattern, str], ...]:
    global _REDACTIONS
    if _REDACTIONS is None:  # two threads may both compile: the same patterns, either kept
        _REDACTIONS = tuple((re.compile(source), repl) for source, repl in _REDACTION_SOURCES)
    return _REDACTIONS


def redact(text: str) -> str:
    for pattern, repl in _redactions():
        text = pattern.sub(repl, text)
    return scrub(text)  # and any secret the session holds, wherever it appears


def open_trace_file(target: str) -> int:
    """A descriptor appending to the ``--trace`` file. It can hold search terms, Message-IDs and
    folders, so it follows the rule of every file of ours (core/private_files.py): created
    ``0600``, never through a link or into a FIFO, only in a folder no one else can write.

    Raises:
        UnsafePath / UnsafeFile (ConfigErrors): another user could have planted it.
        OSError: it cannot be opened.
    """
    from mailtriage.core import private_files  # lazy: only a command run with --trace needs it

    return private_files.open_append(target)


OPLOG = OpLog()
TRACE = ProtocolTrace()
