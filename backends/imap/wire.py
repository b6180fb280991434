"""The protocol trace of an IMAP connection and the listing's bulk FETCH reader.

* :class:`ProtocolHook` wraps the imaplib object's send/readline/read: every line to and
  from the server goes to ``TRACE`` with LOGIN and AUTHENTICATE secrets redacted and
  message literals reduced to their size, and EXISTS/EXPUNGE are followed for the session.
* :func:`stream_fetch` reads a whole window's FETCH as it arrives; with the trace on, it
  shows its first responses and then their count.

(Split from connection.py, which keeps the connecting, signing in and error translation.)
"""

from __future__ import annotations

import imaplib
import re
from typing import TYPE_CHECKING, Callable

from imapclient import IMAPClient

from mailtriage.backends.imap import imaplib_private as private
from mailtriage.core.trace import TRACE

if TYPE_CHECKING:
    from mailtriage.backends.imap.connection import ImapConnection

_UNTAGGED_COUNT = re.compile(rb"^\* (\d+) (EXISTS|EXPUNGE)\s*$", re.IGNORECASE)
_AUTH_COMMAND = re.compile(rb"^(\S+) (?:UID )?(LOGIN|AUTHENTICATE)\b", re.IGNORECASE)
_TAGGED = re.compile(rb"^(\S+) (OK|NO|BAD)\b", re.IGNORECASE)
_MAX_TRACE = 300
_SHOWN = 3  # responses of a bulk read traced one by one before the rest are counted
_FETCH_LINE = re.compile(rb"\* (\d+) FETCH (.*)\r\n")  # imaplib's Untagged_status, for FETCH


class ProtocolHook:
    """Wraps the imaplib object's send/readline/read to trace and to follow EXISTS/EXPUNGE."""

    def __init__(self, connection: "ImapConnection", imap: imaplib.IMAP4) -> None:
        self.connection = connection
        self.channel = connection.channel
        self.auth_tag: bytes | None = None
        self.literal_next = False
        self._send, self._next_line, self._read = imap.send, private.line_reader(imap), imap.read
        imap.send, imap.read = self.send, self.read  # type: ignore[method-assign]
        private.set_line_reader(imap, self.get_line)
        imap.debug = 0  # imapclient turns imaplib's own debug logging on; we trace here instead
        imap.mailtriage_hook = self  # found by stream_fetch()
        # While a bulk read runs (stream_fetch): its untagged responses of one shape
        # are counted, not traced one by one (tens of thousands of FETCH lines would cost
        # seconds of redaction and flush everything else out of the console's ring buffer).
        self.summarised: re.Pattern | None = None
        self.summary = [0, 0]  # responses, literal bytes
        self.showing = True  # the current response is traced
        self.continued = False  # the next line ends a response that is not

    def send(self, data: bytes) -> None:
        if TRACE.active:
            self._trace_sent(bytes(data))
        self._send(data)

    def _trace_sent(self, data: bytes) -> None:
        line = data.split(b"\r\n", 1)[0]
        if self.literal_next:
            # The literal announced by the previous line ({n}): message or argument bytes, not protocol.
            self.literal_next = False
            if self.auth_tag is not None:
                TRACE.log(self.channel, ">", f"[REDACTED {len(data)} bytes]")
            elif data.strip():
                TRACE.log(self.channel, ">", f"[literal {len(data)} bytes]")
            return
        auth = _AUTH_COMMAND.match(line)
        if auth:
            self.auth_tag = auth.group(1)
            TRACE.log(self.channel, ">", f"{auth.group(1).decode()} {auth.group(2).decode().upper()} [REDACTED]")
        elif self.auth_tag is not None:
            if data.strip():
                TRACE.log(self.channel, ">", f"[REDACTED {len(data)} bytes]")
        elif re.match(rb"^[A-Za-z0-9]+ [A-Za-z]", line):
            extra = len(data) - len(line) - 2
            text = clip(line)
            TRACE.log(self.channel, ">", text + (f" (+{extra} bytes literal)" if extra > 0 else ""))
        elif data.strip():
            TRACE.log(self.channel, ">", f"[literal {len(data)} bytes]")
        # A line that ends by announcing a synchronising literal: its bytes come in the next send.
        self.literal_next = bool(re.search(rb"\{\d+\}$", line)) and len(data) <= len(line) + 2

    def get_line(self) -> bytes:
        return self.seen(self._next_line())

    def seen(self, line: bytes) -> bytes:
        """Follow and trace one line read from the server."""
        if line.startswith(b"* "):
            match = _UNTAGGED_COUNT.match(line)
            if match:
                self.connection._on_count(match.group(2).upper(), int(match.group(1)))
        if self.auth_tag is not None and line.startswith(self.auth_tag + b" "):
            self.auth_tag = None
        if TRACE.active:
            if self.summarised is not None:
                if self.continued:  # the rest of a response after its literal
                    self.continued = False
                    return line
                if self.summarised.match(line):
                    self.summary[0] += 1
                    self.showing = self.summary[0] <= _SHOWN
                    if not self.showing:
                        return line
            TRACE.log(self.channel, "<", "+ [REDACTED]" if self.auth_tag is not None and line.startswith(b"+")
                      else clip(line))
        return line

    def read(self, size: int) -> bytes:
        data = self._read(size)
        if TRACE.active:
            if self.summarised is not None:
                self.summary[1] += size
                if not self.showing:
                    self.continued = True
                    return data
            TRACE.log(self.channel, "<", f"[literal {size} bytes]")
        return data

    def summarise(self, kind: bytes) -> None:
        self.summarised = re.compile(rb"\* \d+ " + re.escape(kind) + rb" ", re.IGNORECASE)
        self.summary = [0, 0]
        self.showing = True
        self.continued = False

    def end_summary(self, kind: bytes) -> None:
        responses, size = self.summary
        self.summarised = None
        self.continued = False
        if TRACE.active and responses > _SHOWN:
            TRACE.log(self.channel, "<", f"[{responses - _SHOWN:,} more {kind.decode()} responses, not shown one by "
                                         f"one ({responses:,} in all, literals {size:,} bytes)]")


def stream_fetch(client: IMAPClient, tag: bytes, consume: Callable[[list], None], batch: int) -> tuple[str, list]:
    """Read the responses to the FETCH command ``tag`` up to its completion, as imaplib's
    ``_command_complete`` does (same errors), handing the untagged FETCH responses to
    ``consume`` in batches of about ``batch`` (imaplib's shape: a ``(line, literal)``
    tuple before each literal, then the line that ends the response) while the server
    still sends the rest. Returns the completion's ``(typ, data)``.

    An untagged FETCH line is read here, literals and all, exactly as imaplib's
    ``_get_response`` reads it, minus its per-line bookkeeping; every other line (the
    completion, EXISTS, BYE, anything unexpected) is handed to imaplib itself. With the
    trace on, the first FETCH responses are traced one by one and the rest counted.
    An exception from ``consume`` is raised once the command is over (the connection
    stays in step)."""
    imap = private.imap_of(client)
    hook = getattr(imap, "mailtriage_hook", None)
    tracing = hook is not None and TRACE.active
    pending = imap.tagged_commands
    untagged = imap.untagged_responses
    readline = imap.readline
    read = hook._read if hook is not None else imap.read
    fetch_line = _FETCH_LINE.fullmatch
    out: list = []
    failed: list[BaseException] = []

    def hand_over(data: list) -> None:
        if not failed:
            try:
                consume(data)
            except Exception as exc:  # noqa: BLE001 - raised below, once the command is over
                failed.append(exc)

    if hook is not None:
        hook.summarise(b"FETCH")
    try:
        private.check_bye(imap)
        try:
            while pending[tag] is None:
                raw = readline()
                match = fetch_line(raw)
                if match is None or (tracing and hook.summary[0] < _SHOWN):
                    _replay(imap, hook, raw)  # imaplib reads it (and the hook traces it)
                    got = untagged.pop("FETCH", None)
                    if got:
                        out.extend(got)
                else:
                    number, rest = match.groups()
                    line = number + b" " + rest if rest else number
                    length = _literal_size(rest)
                    while length is not None:
                        out.append((line, read(length)))
                        if tracing:
                            hook.summary[1] += length
                        line = _checked(imap, readline())
                        # The usual end of a response, ")", announces no literal.
                        length = None if line == b")" else _literal_size(line)
                    out.append(line)
                    if tracing:
                        hook.summary[0] += 1
                if len(out) >= batch:
                    hand_over(out)
                    out = []
        except imap.abort as exc:
            raise imap.abort(f"command: FETCH => {exc}") from None
        except imap.error as exc:
            raise imap.error(f"command: FETCH => {exc}") from None
        typ, data = pending.pop(tag)
        private.check_bye(imap)
        if typ == "BAD":
            raise imap.error(f"FETCH command error: {typ} {data}")
        out.extend(untagged.pop("FETCH", None) or ())
        if out:
            hand_over(out)
    finally:
        if hook is not None:
            hook.end_summary(b"FETCH")
    if failed:
        raise failed[0]
    return typ, data


def _literal_size(line: bytes) -> int | None:
    """The size of the literal a line announces at its end (``{123}``), as imaplib's
    ``Literal`` pattern reads it (the last ``{digits}`` that ends the line), else None.
    The line holds no LF (it was read up to one and the CRLF taken off)."""
    if not line.endswith(b"}"):
        return None
    brace = line.rfind(b"{")
    digits = line[brace + 1:-1]
    return int(digits) if brace >= 0 and digits.isdigit() else None  # bytes.isdigit: ASCII digits only


def _checked(imap: imaplib.IMAP4, raw: bytes) -> bytes:
    """A line as imaplib's ``_get_line`` returns it (CRLF off; EOF and a cut line refused)."""
    if not raw:
        raise imap.abort("socket error: EOF")
    if not raw.endswith(b"\r\n"):
        raise imap.abort(f"socket error: unterminated line: {raw!r}")
    return raw[:-2]


def _replay(imap: imaplib.IMAP4, hook: ProtocolHook | None, raw: bytes) -> None:
    """Let imaplib's ``_get_response`` handle a line already read (the hook sees it as read)."""
    def line() -> bytes:
        checked = _checked(imap, raw)
        return hook.seen(checked) if hook is not None else checked

    private.handle_line(imap, line)


def clip(line: bytes) -> str:
    text = line.decode("utf-8", errors="replace")
    return text if len(text) <= _MAX_TRACE else text[:_MAX_TRACE] + f"… ({len(text)} chars)"
