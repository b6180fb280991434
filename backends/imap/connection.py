"""One IMAP connection of one account: connect, authenticate, trace, translate errors.

* Transport: implicit TLS (``security = "tls"``), STARTTLS (refused when the server does
  not offer it), or plain only to a loopback host. Certificates are verified (plus an
  optional ``ca_file``). imapclient defaults to ``ssl=True``; we always pass it.
* Authentication: the password from keyring (``imap:<account>``), or XOAUTH2 /
  OAUTHBEARER with a token from a registered token provider (the Google/Microsoft
  sign-in plugs in with :func:`register_token_provider`) or from keyring.
* Every socket call has a timeout (``account.timeout``).
* Errors: only an authentication failure becomes :class:`SignInNeeded`. A server that
  cannot be reached, a TLS failure or a timeout is :class:`Unavailable`; a connection
  lost mid-command is a :class:`ConnectionLost` (a ``BackendFailure``) naming the
  command, and the next call reconnects.
* Protocol trace (wire.py): every line to and from the server goes to ``TRACE`` (channel
  ``imap:<account>``) with LOGIN and AUTHENTICATE secrets redacted and message
  literals reduced to their size. A bulk read (:func:`wire.stream_fetch`: the
  listing's FETCH of a whole window) shows its first responses and then their count.
"""

from __future__ import annotations

import re
import socket
import ssl
import threading
from dataclasses import dataclass, replace
from typing import Callable, TypeVar

from imapclient import IMAPClient
from imapclient import exceptions as imap_errors
from imapclient.util import to_unicode

from mailtriage.backends.errors import BackendFailure, MailError, SignInNeeded, Unavailable
from mailtriage.backends.errors import ConnectionLost as BaseConnectionLost
from mailtriage.backends.imap import imaplib_private as private
from mailtriage.backends.imap.account import ImapAccount, imap_password, password_key, token_key
from mailtriage.backends.imap.wire import ProtocolHook, clip
from mailtriage.backends.oauth_imap import provider_for
from mailtriage.core.lookups import Lookups
from mailtriage.core.secrets import SecretUnavailable, get_secret
from mailtriage.core.tls import trusting
from mailtriage.core.trace import TRACE

T = TypeVar("T")
TokenProvider = Callable[[ImapAccount], str]
# Where a password login finds the password when it is not the keyring's ``imap:<account>``
# (the modes mailbox keeps its own, in keyring or an environment variable).
PasswordProvider = Callable[[ImapAccount], str]

_TOKEN_PROVIDERS: dict[str, TokenProvider] = {}
_LOCK = threading.Lock()


def register_token_provider(account_id: str, provider: TokenProvider) -> None:
    """Plug an OAuth access-token source in for one account (XOAUTH2 / OAUTHBEARER).

    The provider is called at every login and returns a fresh access token, or raises
    :class:`SignInNeeded` when the user must sign in again.
    """
    with _LOCK:
        _TOKEN_PROVIDERS[account_id] = provider


def unregister_token_provider(account_id: str) -> None:
    with _LOCK:
        _TOKEN_PROVIDERS.pop(account_id, None)


class ConnectionLost(BaseConnectionLost):
    """The connection dropped during a command. The next call opens a new one."""


@dataclass
class FolderState:
    """What the session knows about the selected folder (EXISTS is kept live)."""

    name: str
    uidvalidity: int
    exists: int
    uidnext: int | None
    highestmodseq: int | None
    writable: bool
    flags: tuple[str, ...] = ()  # FLAGS: the flags and keywords defined in the folder
    permanent_flags: tuple[str, ...] = ()  # PERMANENTFLAGS; "\\*" means new keywords can be kept
    examined: bool = False  # opened read-only on request (EXAMINE), so nothing, not even \Recent, changes
    news: int = 0  # EXISTS / EXPUNGE responses since the SELECT (a listing may reuse the state only without)


class ImapConnection:
    """A lazily opened, self-healing IMAP session for one account (not thread-safe)."""

    def __init__(self, account: ImapAccount, *, token_provider: TokenProvider | None = None,
                 password_provider: PasswordProvider | None = None,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.account = account
        self.name = account.id
        self.channel = f"imap:{account.id}"
        self._token_provider = token_provider
        self._password_provider = password_provider
        self._ssl_context = ssl_context
        self._client: IMAPClient | None = None
        self._caps: frozenset[str] = frozenset()
        self.state: FolderState | None = None
        self.connects = 0  # how many sessions were opened (tests and the console show it)
        self._aborted = False  # abort() was called: the app quits, nothing connects again
        self._opening: socket.socket | None = None  # a copy of the socket _open() connects, for abort()
        self._opening_lock = threading.Lock()
        self._lookups = Lookups()  # the host's name lookup, which abort() does not wait for
        self.calls = 0  # how many calls ran (a reader can tell that nothing else used the connection since)

    # -- connecting -------------------------------------------------------
    @property
    def where(self) -> str:
        return f"{self.account.host}:{self.account.port}"

    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            try:
                ctx = trusting(self.account.ca_file, use="mail")  # the process's context of these CAs
            except (OSError, ssl.SSLError) as exc:
                raise Unavailable(self.name, f"cannot read ca_file {self.account.ca_file}: {exc}") from exc
            self._ssl_context = ctx
        return self._ssl_context

    @property
    def client(self) -> IMAPClient:
        if self._client is None:
            if self._aborted:  # a retry of the call abort() ended: it must not wait on a new connection
                raise self._ended()
            client = self._open()
            if self._aborted:  # abort() came while it connected: nothing runs on it
                _shutdown(client)
                raise self._ended()
            self._client = client
        return self._client

    @property
    def is_open(self) -> bool:
        return self._client is not None

    def _open(self) -> IMAPClient:
        account = self.account
        secure = account.security == "tls"
        TRACE.log(self.channel, "!", f"connect {self.where} ({account.security})")
        context = self.ssl_context() if secure else None
        try:
            client = private.AbortableClient(account.host, account.port, ssl=secure, ssl_context=context,
                                             timeout=account.timeout, on_socket=self._on_socket,
                                             lookup=self._lookups.getaddrinfo)
        except Exception as exc:  # noqa: BLE001 - every connect failure is an outage, said clearly
            self._opened()
            raise self._outage("connect", exc) from exc
        hook = ProtocolHook(self, private.imap_of(client))
        TRACE.log(self.channel, "<", clip(private.imap_of(client).welcome or b""))
        try:
            if account.security == "starttls":
                if not client.has_capability("STARTTLS"):
                    raise Unavailable(self.name, f"{self.where} does not offer STARTTLS; refusing to log in "
                                                 "without encryption (use security = \"tls\")")
                client.starttls(self.ssl_context())
            self._authenticate(client)
            hook.auth_tag = None
            self._caps = frozenset(to_unicode(c).upper() for c in client.capabilities())
            if "CONDSTORE" in self._caps and "ENABLE" in self._caps:
                # Every SELECT then reports HIGHESTMODSEQ (the summary cache's key). Not
                # QRESYNC: that would turn EXPUNGE responses, which the session counts, into VANISHED.
                try:
                    client.enable("CONDSTORE")
                except imap_errors.IMAPClientError:
                    pass  # no HIGHESTMODSEQ then: listings go without the summary cache
        except MailError:
            _shutdown(client)
            raise
        except Exception as exc:  # noqa: BLE001
            _shutdown(client)
            raise self._outage("login", exc) from None
        finally:
            self._opened()
        self.connects += 1
        self.state = None
        return client

    def _on_socket(self, sock: socket.socket) -> None:
        """The socket _open() is about to connect: abort() can end it from now on. A copy of
        its descriptor, as TLS (implicit or STARTTLS) takes the socket's own over."""
        with self._opening_lock:
            if self._aborted:
                raise self._ended()
            if self._opening is not None:
                self._opening.close()  # an address that failed: the next one is tried
            self._opening = sock.dup()

    def _opened(self) -> None:
        with self._opening_lock:
            opening, self._opening = self._opening, None
        if opening is not None:
            opening.close()

    def _authenticate(self, client: IMAPClient) -> None:
        account = self.account
        if account.auth == "password":
            if self._password_provider is not None:
                password = self._password_provider(account)
            else:
                try:
                    password = imap_password(account)
                except SecretUnavailable as exc:  # no keyring service, or password_command failed
                    raise SignInNeeded(self.name, str(exc)) from None
            if password is None:
                raise SignInNeeded(self.name, f"no password in keyring (service 'mailtriage', key "
                                              f"'{password_key(account.id)}'; or set password_command)")
            try:
                password_login(client, account.username, password)
            except imap_errors.LoginError as exc:
                raise self._login_failure(exc) from None
            except UnicodeError:
                # Never let the encode error through: its args quote the whole LOGIN line.
                raise SignInNeeded(self.name, f"{self.where} offers no AUTHENTICATE PLAIN, and LOGIN cannot carry "
                                              f"the non-ASCII user name or password of {account.username}") from None
            return
        token = self._token()
        mech = "XOAUTH2" if account.auth == "xoauth2" else "OAUTHBEARER"
        if not client.has_capability(f"AUTH={mech}"):
            raise Unavailable(self.name, f"{self.where} does not offer AUTH={mech}")
        try:
            if mech == "XOAUTH2":
                client.oauth2_login(account.username, token, mech=mech)
            else:
                client.oauthbearer_login(account.username, token)
        except imap_errors.IMAPClientAbortError:
            raise
        except imap_errors.IMAPClientError as exc:
            raise self._login_failure(exc) from None

    def _token(self) -> str:
        provider = self._token_provider or _TOKEN_PROVIDERS.get(self.account.id)
        if provider is None:
            # An account whose settings name an OAuth provider (oauth = "google" | "microsoft")
            # signs in through it (mailtriage.backends.oauth_imap).
            provider = provider_for(self.account.id)
        if provider is not None:
            return provider(self.account)
        token = get_secret(token_key(self.account.id))
        if token is None:
            raise SignInNeeded(self.name, f"no token provider registered and no access token in keyring "
                                          f"(key '{token_key(self.account.id)}')")
        return token

    def _login_failure(self, exc: Exception) -> MailError:
        text = _text(exc)
        # Only an authentication failure asks for a new sign-in; a server that is busy or broken is an outage.
        if re.search(r"\[(UNAVAILABLE|SERVERBUG|LIMIT|INUSE|CONTACTADMIN)\]", text, re.IGNORECASE):
            return Unavailable(self.name, f"{self.where} refused the login for now: {text}")
        return SignInNeeded(self.name, f"{self.where} rejected the credentials of {self.account.username}: {text}")

    def _ended(self) -> Unavailable:
        return Unavailable(self.name, f"the connection to {self.where} was ended (the app quits)")

    def _outage(self, what: str, exc: BaseException) -> Unavailable:
        if self._aborted:  # abort() ended the connect or the login (the socket shut under it)
            return self._ended()
        if isinstance(exc, ssl.SSLCertVerificationError):
            return Unavailable(self.name, f"TLS certificate of {self.where} not trusted: {exc.verify_message}")
        if isinstance(exc, (socket.timeout, TimeoutError)):
            return Unavailable(self.name, f"{what} to {self.where} timed out after {self.account.timeout:g} s")
        if isinstance(exc, ssl.SSLError):
            return Unavailable(self.name, f"TLS failure with {self.where}: {exc}")
        if isinstance(exc, ConnectionRefusedError):
            return Unavailable(self.name, f"{self.where} refused the connection")
        if isinstance(exc, socket.gaierror):
            return Unavailable(self.name, f"cannot resolve {self.account.host}: {exc.strerror}")
        return Unavailable(self.name, f"{what} to {self.where} failed: {_text(exc) or type(exc).__name__}")

    # -- capabilities -------------------------------------------------------
    @property
    def capabilities(self) -> frozenset[str]:
        self.client  # noqa: B018 - connect to learn them
        return self._caps

    def has(self, capability: str) -> bool:
        return capability.upper() in self.capabilities

    # -- calling ------------------------------------------------------------
    def call(self, what: str, fn: Callable[[IMAPClient], T]) -> T:
        """Run ``fn(client)`` and translate failures. ``what`` names the command for errors.

        Raises:
            SignInNeeded: credentials rejected while (re)connecting.
            Unavailable: the server cannot be reached, or timed out.
            ConnectionLost: the connection dropped during ``what``; the next call reconnects.
            BackendFailure: the server answered NO or BAD.
        """
        client = self.client
        self.calls += 1
        try:
            return fn(client)
        except MailError:
            raise
        except (socket.timeout, TimeoutError) as exc:
            self._drop()
            raise Unavailable(self.name, f"{what} on {self.where} timed out after {self.account.timeout:g} s; "
                                         "the connection was closed") from exc
        except (imap_errors.IMAPClientAbortError, OSError, EOFError) as exc:
            self._drop()
            after = "ended as the app quits" if self._aborted else "the next call reconnects"
            raise ConnectionLost(self.name, f"connection to {self.where} lost during {what} "
                                            f"({_text(exc) or type(exc).__name__}); {after}") from exc
        except imap_errors.IMAPClientError as exc:
            raise BackendFailure(self.name, f"{what} failed on {self.where}: {_text(exc)}") from exc

    def _drop(self) -> None:
        client, self._client, self.state = self._client, None, None
        if client is not None:
            TRACE.log(self.channel, "!", "connection dropped")
            _shutdown(client)

    def abort(self, opening_only: bool = False) -> None:
        """From another thread: shut the socket down under a call waiting on the server, which
        then fails at once as a lost connection (and drops the client itself). Only the
        socket: closing the client's buffered file here would wait for that call's read.
        ``opening_only``: only a socket being opened (its connect, TLS handshake, greeting or
        login); an open connection's call goes on. Either way nothing connects after."""
        self._lookups.abort()  # a connect still looking the host up fails now
        with self._opening_lock:  # one being opened: its connect, TLS handshake or greeting fails now
            self._aborted = True
            opening = self._opening
            if opening is not None:
                _end(opening)
        client = None if opening_only else self._client
        if client is not None:
            # The plain socket's shutdown, also for TLS: SSLSocket.shutdown would drop its TLS
            # state under the reading thread.
            _end(client.socket())
        if opening is not None or client is not None:
            TRACE.log(self.channel, "!", "connection ended (the app quits)")

    def close(self) -> None:
        """Log out and close. Safe to call more than once; never raises."""
        client, self._client, self.state = self._client, None, None
        if client is None:
            return
        try:
            client.logout()
        except Exception:  # noqa: BLE001 - closing a dead connection is not an error
            _shutdown(client)

    # -- selected folder -------------------------------------------------------
    def _on_count(self, kind: bytes, number: int) -> None:
        state = self.state
        if state is None:
            return
        state.news += 1
        if kind == b"EXISTS":
            state.exists = number
        elif kind == b"EXPUNGE":
            state.exists = max(0, state.exists - 1)

    def caught_up(self, state: FolderState, *, uidnext: int, highestmodseq: int, news: int = 0) -> FolderState | None:
        """The selected folder's ``state`` with the UIDNEXT and HIGHESTMODSEQ a caller learnt
        without a SELECT (``ImapSource._folder_state``: a MODSEQ search after a NOOP), as the
        connection's state from now on, with ``news`` counted (what came after that search:
        its answer announced it without naming it); None when ``state`` is no longer the
        selection (another folder selected, a reconnect). EXISTS stays the live count."""
        if self.state is not state or not self.is_open:
            return None
        self.state = replace(state, uidnext=max(uidnext, state.uidnext or 0),
                             highestmodseq=max(highestmodseq, state.highestmodseq or 0), news=news)
        return self.state

    def reselect(self, folder: str) -> FolderState:
        """SELECT ``folder`` again even when it is selected: a fresh UIDVALIDITY, UIDNEXT and
        HIGHESTMODSEQ (a NOOP updates EXISTS only)."""
        self.state = None
        return self.select(folder)

    def select(self, folder: str, *, readonly: bool = False) -> FolderState:
        """Select ``folder`` (read-write, or read-only when that is all the server grants),
        or, when it already is, sync it with one NOOP. ``readonly`` opens it with EXAMINE:
        a reader that must leave no trace, not even on ``\\Recent``.

        Raises BackendFailure when the folder does not exist.
        """
        state = self.state
        if state is not None and state.name == folder and state.examined == readonly and self.is_open:
            try:
                _text, untagged = self.call(f"NOOP ({folder})", lambda c: c.noop())
            except ConnectionLost:
                if self._aborted:
                    raise  # the app is quitting: no new connection
                untagged = None  # a server restart: SELECT below reconnects (a read, safe to redo)
            # An untagged NO/BYE (Dovecot: the selected folder was deleted by another session)
            # means the selection no longer holds: SELECT again for the folder's UIDVALIDITY now.
            sound = untagged is not None and not any(r and r[0] in (b"NO", b"BYE") for r in untagged)
            if sound and self.state is not None:
                return self.state
        self.state = None

        def do_select(client: IMAPClient) -> FolderState:
            try:
                info = client.select_folder(folder, readonly=readonly)
            except imap_errors.IMAPClientReadOnlyError:
                # The server granted the folder read-only (e.g. an ACL without write
                # rights): reading still works, so open it with EXAMINE instead of failing.
                info = client.select_folder(folder, readonly=True)
                info.pop(b"READ-WRITE", None)
            return FolderState(
                name=folder,
                uidvalidity=int(info[b"UIDVALIDITY"]),
                exists=int(info.get(b"EXISTS", 0)),
                uidnext=int(info[b"UIDNEXT"]) if b"UIDNEXT" in info else None,
                highestmodseq=int(info[b"HIGHESTMODSEQ"]) if b"HIGHESTMODSEQ" in info else None,
                writable=b"READ-WRITE" in info,
                flags=tuple(to_unicode(f) for f in info.get(b"FLAGS", ())),
                permanent_flags=tuple(to_unicode(f) for f in info.get(b"PERMANENTFLAGS", ())),
                examined=readonly,
            )

        self.state = self.call(f"SELECT {folder}", do_select)
        return self.state


def password_login(client: IMAPClient, username: str, password: str) -> None:
    """Log in with a password, non-ASCII included.

    LOGIN takes ASCII only as imaplib sends it (an encode error would quote the whole
    command line, password and all). For a non-ASCII user name or password, use
    AUTHENTICATE PLAIN (RFC 4616: UTF-8, then base64) when the server offers it.
    Raises imapclient's LoginError when the server rejects the credentials, and
    UnicodeError when neither way can carry them.
    """
    if (username + password).isascii():
        client.login(username, password)
    elif client.has_capability("AUTH=PLAIN"):
        client.plain_login(username, password)
    else:
        raise UnicodeError("non-ASCII credentials need AUTH=PLAIN")


def _end(sock: socket.socket) -> None:
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except (OSError, AttributeError):  # already closed, or not connected yet
        pass


def _shutdown(client: IMAPClient) -> None:
    try:
        client.shutdown()
    except Exception:  # noqa: BLE001
        pass


def _text(exc: BaseException) -> str:
    parts = []
    for arg in exc.args:
        parts.append(arg.decode("utf-8", errors="replace") if isinstance(arg, bytes) else str(arg))
    text = " ".join(parts).strip()
    # imapclient wraps the server's bytes repr: b'[AUTHENTICATIONFAILED] ...' -> plain text
    match = re.fullmatch(r"b(['\"])(.*)\1", text)
    return match.group(2) if match else text
