"""A real SMTP server for tests: aiosmtpd on loopback with AUTH and STARTTLS (or implicit TLS).

It records every connection, every EHLO and every accepted message, so a test can
prove that an operation sent mail, or that it never even connected.

Note: a failing authenticator must return ``AuthResult(success=False, handled=False)``;
with ``handled=True`` aiosmtpd sends no reply and the client waits forever.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from dataclasses import dataclass, field
from email import message_from_bytes, policy

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

from tests.servers.certs import TestCertificate
from tests.servers.ports import free_port


@dataclass
class ReceivedMail:
    mail_from: str
    rcpt_tos: list[str]
    data: bytes
    login: str | None

    @property
    def message(self):
        return message_from_bytes(self.data, policy=policy.default)


@dataclass
class SmtpLog:
    connections: int = 0
    ehlos: list[str] = field(default_factory=list)
    auth_attempts: list[tuple[str, bool]] = field(default_factory=list)
    messages: list[ReceivedMail] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Set when a mail's text has come in; while ``held`` is not set, its answer waits for it.
    text_in: threading.Event = field(default_factory=threading.Event)
    held: threading.Event | None = None

    @property
    def contacted(self) -> bool:
        return self.connections > 0


class _Handler:
    def __init__(self, log: SmtpLog) -> None:
        self.log = log

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        with self.log.lock:
            self.log.ehlos.append(hostname)
        session.host_name = hostname
        return responses

    async def handle_DATA(self, server, session, envelope):
        login = session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None
        with self.log.lock:
            self.log.messages.append(ReceivedMail(envelope.mail_from, list(envelope.rcpt_tos),
                                                  bytes(envelope.original_content or envelope.content), login))
        self.log.text_in.set()
        held = self.log.held
        if held is not None:  # the client waits with its text gone out
            await asyncio.get_running_loop().run_in_executor(None, held.wait, 60)
        return "250 Message accepted for delivery"


class _CountingController(Controller):
    def __init__(self, *args, log: SmtpLog, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._log = log

    def factory(self):
        with self._log.lock:
            self._log.connections += 1
        with warnings.catch_warnings():
            # Implicit TLS: aiosmtpd warns that AUTH does not require (STARTTLS) TLS; the whole session is TLS.
            warnings.simplefilter("ignore", UserWarning)
            return super().factory()


class SmtpServer:
    """aiosmtpd with PLAIN/LOGIN auth. ``mode`` is ``"starttls"`` (default), ``"tls"``, or
    ``"plain"`` (no TLS: a loopback fault proxy can see and cut the SMTP exchange)."""

    host = "127.0.0.1"

    def __init__(self, cert: TestCertificate, *, mode: str = "starttls") -> None:
        self.cert = cert
        self.mode = mode
        self.users: dict[str, str] = {}
        self.log = SmtpLog()
        self.port = 0
        self._controller: Controller | None = None

    def add_user(self, login: str, password: str) -> None:
        self.users[login] = password

    def _authenticate(self, server: SMTP, session, envelope, mechanism, auth_data) -> AuthResult:
        ok = (isinstance(auth_data, LoginPassword)
              and self.users.get(auth_data.login.decode()) == auth_data.password.decode())
        with self.log.lock:
            login = auth_data.login.decode() if isinstance(auth_data, LoginPassword) else "?"
            self.log.auth_attempts.append((login, ok))
        if ok:
            return AuthResult(success=True, auth_data=auth_data)
        return AuthResult(success=False, handled=False)

    def start(self) -> "SmtpServer":
        self.port = free_port()
        kwargs = dict(hostname=self.host, port=self.port, authenticator=self._authenticate,
                      auth_required=True, log=self.log)
        if self.mode == "tls":
            kwargs["ssl_context"] = self.cert.server_context()
            kwargs["auth_require_tls"] = False  # the whole session is TLS already
        elif self.mode == "plain":
            kwargs["auth_require_tls"] = False
        else:
            kwargs["tls_context"] = self.cert.server_context()
            kwargs["require_starttls"] = True
            kwargs["auth_require_tls"] = True
        self._controller = _CountingController(_Handler(self.log), **kwargs)
        self._controller.start()
        # Controller.start() connects once to check the server is up: not a client of ours.
        self.reset()
        return self

    def hold_answers(self) -> None:
        """From now on a mail's text is taken and its answer held until :meth:`release_answers`."""
        self.log.held = threading.Event()

    def release_answers(self) -> None:
        if self.log.held is not None:
            self.log.held.set()

    def stop(self) -> None:
        self.release_answers()
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def reset(self) -> None:
        with self.log.lock:
            self.log.connections = 0
            self.log.ehlos.clear()
            self.log.auth_attempts.clear()
            self.log.messages.clear()

    def parsed(self, index: int = -1):
        return message_from_bytes(self.log.messages[index].data, policy=policy.default)
