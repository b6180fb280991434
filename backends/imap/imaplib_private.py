"""Every private member of imapclient and imaplib the IMAP backend uses, in this one module
(issue 36 §4).

imapclient has no public call for a raw command with our own arguments (UID MOVE, SEARCH
RETURN, STORE of a whole sequence set, UID EXPUNGE), nor for pipelining (two commands in
flight, recent.py) or reading a FETCH as it arrives (wire.stream_fetch); imaplib's
protocol steps are all underscore names. Each use is a small function here, ``MEMBERS`` lists
them, and tests/imap/test_imaplib_private.py checks each one against the installed
imapclient and the standard library's imaplib, naming the member that is gone or changed.
The upper bound on ``imapclient`` in pyproject.toml is the next major version for the same
reason. No other module of backends/imap/ reads a private member of either (the test scans).
"""

from __future__ import annotations

import imaplib
import socket
import ssl
from typing import Any, Callable, Optional

from imapclient import IMAPClient
from imapclient.imapclient import _literal
from imapclient.tls import wrap_socket

#: (module, class, member, how it is used): "method" is called with the parameters named
#: after it; "attribute" is an instance attribute (set in the class's own code).
MEMBERS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("imapclient.imapclient", "", "_literal", ("class", "bytes")),
    ("imapclient", "IMAPClient", "_imap", ("attribute",)),
    ("imapclient", "IMAPClient", "_raw_command_untagged", ("method", "command", "args", "response_name", "unpack",
                                                           "uid")),
    ("imapclient", "IMAPClient", "_normalise_folder", ("method", "folder_name")),
    ("imapclient", "IMAPClient", "_checkok", ("method", "command", "typ", "data")),
    ("imaplib", "IMAP4", "_command", ("method", "name")),
    ("imaplib", "IMAP4", "_command_complete", ("method", "name", "tag")),
    ("imaplib", "IMAP4", "_untagged_response", ("method", "typ", "dat", "name")),
    ("imaplib", "IMAP4", "_check_bye", ("method",)),
    ("imaplib", "IMAP4", "_get_response", ("method",)),
    ("imaplib", "IMAP4", "_get_line", ("method",)),
    ("imapclient", "IMAPClient", "_create_IMAP4", ("method",)),
    ("imaplib", "IMAP4", "_create_socket", ("method", "timeout")),
)


# -- imapclient ----------------------------------------------------------------------------

def literal(raw: bytes) -> bytes:
    """``raw`` marked for imapclient to send as a literal, whatever its bytes."""
    return _literal(raw)


def imap_of(client: IMAPClient) -> imaplib.IMAP4:
    """The imaplib object under ``client``."""
    return client._imap


def raw_command(client: IMAPClient, command: bytes, args: list, *, response_name: str | None = None,
                uid: bool = True) -> Any:
    """``command`` with ``args`` as given (UID-prefixed when ``uid``); the untagged responses
    named ``response_name`` (the command's own name when None)."""
    return client._raw_command_untagged(command, args, response_name=response_name, uid=uid)


def folder_name(client: IMAPClient, folder: str) -> bytes:
    """``folder`` as imapclient sends it (modified UTF-7, quoted)."""
    return client._normalise_folder(folder)


def check_ok(client: IMAPClient, command: str, typ: str, data: list) -> None:
    """Raise imapclient's error unless the completion ``typ`` is OK."""
    client._checkok(command, typ, data)


#: How a connect looks its host up (host, port) -> getaddrinfo's list; None: socket.getaddrinfo.
Lookup = Optional[Callable[[str, int], list]]


class AbortableClient(IMAPClient):
    """An IMAPClient whose socket is handed to ``on_socket`` as soon as it exists, before its
    TCP connect, TLS handshake and greeting: the constructor does all three, and until it
    returns nothing else can reach the socket to end it (a quit while a silent server holds
    the greeting waited for the account's timeout). imapclient makes its imaplib object in
    ``_create_IMAP4`` and imaplib its socket in ``_create_socket`` (imapclient's own
    subclasses override both); no public hook gets the socket earlier."""

    def __init__(self, host: str, port: int, *, ssl: bool, ssl_context: "ssl.SSLContext | None",
                 timeout: float, on_socket: Callable[[socket.socket], None], lookup: Lookup = None) -> None:
        self.mailtriage_connect = (timeout, on_socket, lookup)
        super().__init__(host, port, ssl=ssl, ssl_context=ssl_context, timeout=timeout)

    def _create_IMAP4(self) -> imaplib.IMAP4:
        timeout, on_socket, lookup = self.mailtriage_connect
        return _Imap4(self.host, self.port, timeout, self.ssl_context if self.ssl else None, on_socket, lookup)


class _Imap4(imaplib.IMAP4):
    """imaplib's IMAP4 on a socket made by :func:`connect_socket` (implicit TLS when ``tls``)."""

    def __init__(self, host: str, port: int, timeout: float, tls: "ssl.SSLContext | None",
                 on_socket: Callable[[socket.socket], None], lookup: Lookup = None) -> None:
        self.mailtriage_tls, self.mailtriage_on_socket, self.mailtriage_lookup = tls, on_socket, lookup
        super().__init__(host, port, timeout)

    def _create_socket(self, timeout: float | None) -> socket.socket:
        sock = connect_socket(self.host, self.port, timeout, self.mailtriage_on_socket, self.mailtriage_lookup)
        if self.mailtriage_tls is None:
            return sock
        try:
            return wrap_socket(sock, self.mailtriage_tls, self.host)
        except BaseException:
            sock.close()
            raise


def connect_socket(host: str, port: int, timeout: float | None,
                   on_socket: Callable[[socket.socket], None], lookup: Lookup = None) -> socket.socket:
    """``socket.create_connection((host, port), timeout)``, handing each socket it tries to
    ``on_socket`` before its connect (which may raise to stop there); the host looked up by
    ``lookup`` (core/lookups.py: one a quit does not wait for), else by getaddrinfo."""
    failure: OSError | None = None
    found = lookup(host, port) if lookup is not None else socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    for family, kind, proto, _name, address in found:
        sock = socket.socket(family, kind, proto)
        try:
            on_socket(sock)
            sock.settimeout(timeout)
            sock.connect(address)
            return sock
        except OSError as exc:
            sock.close()
            failure = exc
        except BaseException:
            sock.close()
            raise
    raise failure or OSError(f"no address found for {host}")


# -- imaplib -------------------------------------------------------------------------------

def send_command(imap: imaplib.IMAP4, *args: str) -> bytes:
    """Send a command without waiting for its completion; its tag."""
    return imap._command(*args)


def wait_completion(imap: imaplib.IMAP4, name: str, tag: bytes) -> tuple[str, list]:
    """Read until the command ``tag`` completes; its ``(typ, data)``."""
    return imap._command_complete(name, tag)


def untagged(imap: imaplib.IMAP4, typ: str, data: list, name: str) -> tuple[str, list]:
    """The untagged responses named ``name`` collected so far (taken off imaplib's table)."""
    return imap._untagged_response(typ, data, name)


def check_bye(imap: imaplib.IMAP4) -> None:
    """Raise imaplib's abort if the server said BYE."""
    imap._check_bye()


def line_reader(imap: imaplib.IMAP4) -> Callable[[], bytes]:
    """imaplib's own read of one response line (CRLF off), to wrap."""
    return imap._get_line


def set_line_reader(imap: imaplib.IMAP4, reader: Callable[[], bytes]) -> None:
    """Make ``reader`` the read of one response line on this object (a tracing wrapper)."""
    imap._get_line = reader  # type: ignore[attr-defined]  # typeshed leaves out imaplib's private members


def handle_line(imap: imaplib.IMAP4, line: Callable[[], bytes]) -> None:
    """Let imaplib's ``_get_response`` handle one line already read: ``line`` gives it, once,
    in place of the socket read; the reader in place before (a wrapper, or none) is put back
    before ``line`` runs, so whatever imaplib reads next comes from the socket again."""
    hooked = imap.__dict__.get("_get_line")

    def restore() -> None:
        if hooked is None:
            imap.__dict__.pop("_get_line", None)
        else:
            imap._get_line = hooked  # type: ignore[attr-defined]  # typeshed leaves out imaplib's private members

    def once() -> bytes:
        restore()
        return line()

    imap._get_line = once  # type: ignore[attr-defined]  # typeshed leaves out imaplib's private members
    try:
        imap._get_response()
    finally:
        restore()
