"""Everything a conformance flow runs against, all real and on loopback.

* :class:`Party`: a mode endpoint or an outside master — a small HTTP server that speaks
  the contract (records what it receives, checks it with the contract validator, and
  answers ok, 4xx, 5xx or never, as the flow says).
* :class:`Harness`: the email side under test — ``ModesServer`` on a free port with a
  manual clock, reading a real Dovecot mailbox and sending through a real aiosmtpd,
  its record in a SQLite file in the test's temp dir; plus the helpers a flow needs
  (deliver mail, POST a message, tick the clock, restart, read the record).
"""

from __future__ import annotations

import email.utils
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from mailtriage.core.http import verifying_context
from mailtriage.modes.clock import ManualClock
from mailtriage.modes.config import parse_config
from mailtriage.modes.envelope import ProtocolError
from mailtriage.modes.protocol_messages import parse_message
from mailtriage.modes.server import ModesServer, ServerThread
from mailtriage.modes.store import Store

DOMAIN = "mas.test"
TRUSTED = "mx.mas.test"
HANG_SECONDS = 2.0  # longer than the email side's HTTP timeout in tests (0.75 s)


@dataclass
class Received:
    path: str
    body: Any
    problem: str | None  # what the contract validator says about it (None: valid)
    answered: int | None  # the status we answered, None when we never answered


@dataclass
class Party:
    """A mode endpoint or an outside master on loopback."""

    name: str
    behaviour: str = "ok"  # ok | refuse (400) | error (500) | hang (no answer)
    once: list[str] = field(default_factory=list)  # behaviours to use first, one per request
    received: list[Received] = field(default_factory=list)
    consumed: int = 0

    def __post_init__(self) -> None:
        party = self
        self._lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                    problem = None
                    parse_message(body)
                except json.JSONDecodeError as exc:
                    body, problem = raw.decode(errors="replace"), f"not JSON: {exc}"
                except ProtocolError as exc:
                    problem = str(exc)
                if self.headers.get("Content-Type") != "application/json":
                    problem = f"Content-Type {self.headers.get('Content-Type')!r}"
                with party._lock:
                    behaviour = party.once.pop(0) if party.once else party.behaviour
                    record = Received(self.path, body, problem, None)
                    party.received.append(record)
                if behaviour == "hang":
                    time.sleep(HANG_SECONDS)
                    return  # the client gave up long ago; close without an answer
                status, answer = {
                    "ok": (200, {"ok": True}),
                    "refuse": (400, {"ok": False, "error": "declined-by-test", "detail": "the flow says no"}),
                    "error": (500, {"ok": False, "error": "internal", "detail": "the flow says 500"}),
                }[behaviour]
                record.answered = status
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/{self.name}"

    def messages(self) -> list[dict]:
        with self._lock:
            return [r.body for r in self.received]

    def unconsumed(self) -> list[Received]:
        with self._lock:
            return self.received[self.consumed:]

    def take(self) -> Received:
        with self._lock:
            if self.consumed >= len(self.received):
                raise AssertionError(f"{self.name} received nothing more (all {self.consumed}: "
                                     f"{[r.body.get('type') for r in self.received]})")
            record = self.received[self.consumed]
            self.consumed += 1
            return record

    def take_type(self, type_: str) -> Received:
        """The next received message of this type; earlier ones of other types are passed over."""
        while True:
            record = self.take()
            if isinstance(record.body, dict) and record.body.get("type") == type_:
                return record

    def problems(self) -> list[str]:
        with self._lock:
            return [f"{r.body}: {r.problem}" for r in self.received if r.problem]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def build_mail(*, sender: str = "alice@example.com", to: str = f"ticket@{DOMAIN}", subject: str = "Help",
               body: str = "Hello.\n", message_id: str | None = None, in_reply_to: str | None = None,
               dmarc: str | None = "pass", authserv: str = TRUSTED, return_path: str | None = None,
               headers: dict[str, str] | None = None, name: str = "Alice") -> tuple[bytes, str]:
    """A received mail as our MX would store it: Return-Path and Authentication-Results on top."""
    message = EmailMessage()
    message["Return-Path"] = return_path if return_path is not None else f"<{sender}>"
    if dmarc is not None:
        message["Authentication-Results"] = (f"{authserv}; spf={'pass' if dmarc == 'pass' else 'fail'} "
                                             f"smtp.mailfrom={sender.split('@')[-1]}; dmarc={dmarc} "
                                             f"header.from={sender.split('@')[-1]}")
    message["Delivered-To"] = to
    message["From"] = email.utils.formataddr((name, sender)) if sender else "undisclosed"
    message["To"] = to
    message["Subject"] = subject
    message["Date"] = email.utils.format_datetime(email.utils.localtime())
    message_id = message_id or f"<{uuid.uuid4().hex}@example.com>"
    message["Message-ID"] = message_id
    if in_reply_to:
        message["In-Reply-To"] = in_reply_to
        message["References"] = in_reply_to
    for key, value in (headers or {}).items():
        message[key] = value
    message.set_content(body)
    return bytes(message), message_id


class Harness:
    """The email side under test, and the parties and servers around it."""

    def __init__(self, *, role: str, tmp_path: Path, dovecot, user, smtp, keyring, types: dict | None = None,
                 send: dict | None = None, http: dict | None = None) -> None:
        self.role = role
        self.tmp_path = tmp_path
        self.dovecot, self.user, self.smtp = dovecot, user, smtp
        self.mode = Party("mode")
        self.master = Party("master")
        self.clock = ManualClock()
        self.database = tmp_path / "modes.sqlite3"
        keyring.set_password("mailtriage", "modes:imap", user.password)
        smtp.add_user("mas", "smtp-secret")
        keyring.set_password("mailtriage", "modes:smtp", "smtp-secret")
        ticket = {"id_prefix": "gs", "deadline_seconds": 3600, "enabled_modes": ["callback"],
                  "modes": {"callback": {"endpoint": self.mode.url, "fields": ["phone", "time"]}}}
        ticket.update(self._substitute(types or {}))
        self.data = {
            "domain": DOMAIN,
            "role": role,
            "database": str(self.database),
            "server": {"host": "127.0.0.1", "port": 0},
            "mailbox": {"host": "127.0.0.1", "port": dovecot.port, "security": "starttls", "username": user.name,
                        "password_key": "modes:imap", "ca_file": str(dovecot.cert.cert), "timeout": 10},
            "smtp": {"host": "127.0.0.1", "port": smtp.port, "security": "starttls", "username": "mas",
                     "password_key": "modes:smtp", "ca_file": str(smtp.cert.cert), "timeout": 10},
            "send": {"authserv_id": TRUSTED, "cap": 50, "cap_window_hours": 24, **(send or {})},
            "http": {"timeout": 0.75, "attempts": 2, "backoff": 0.05, "retry_after": 60, "max_attempts": 20,
                     **(http or {})},
            "master": {"url": self.master.url},
            "types": {"ticket": ticket},
        }
        self.config = parse_config(self.data, tmp_path / "modes.toml")
        self.thread: ServerThread | None = None
        # The process's verifying context (core/http.py): httpx made one per client (~22 ms of CPU,
        # 82 in tests/modes, queue and trackers); the peers speak plain HTTP on loopback anyway.
        self.http = httpx.Client(timeout=30, verify=verifying_context())
        self.mails_consumed = 0
        self.start()
        # The first poll of a mailbox is a silent baseline: take it now, so the mail a
        # test appends from here on is what the email side sees as new.
        assert self.thread is not None
        self.thread.call(self.thread.engine.poll_mailbox())

    def _substitute(self, value: Any) -> Any:
        if isinstance(value, str):
            return {"$mode": self.mode.url, "$master": self.master.url}.get(value, value)
        if isinstance(value, dict):
            return {k: self._substitute(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._substitute(v) for v in value]
        return value

    # -- the server ----------------------------------------------------------------

    def start(self) -> None:
        server = ModesServer(self.config, clock=self.clock, port=0, background=False)
        self.thread = ServerThread(server).start()

    def stop(self) -> None:
        if self.thread is not None:
            self.thread.stop()
            self.thread = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        self.http.close()
        self.mode.stop()
        self.master.stop()

    @property
    def url(self) -> str:
        assert self.thread is not None
        return self.thread.url

    def settle(self) -> None:
        assert self.thread is not None
        self.thread.call(self.thread.engine.settle())

    # -- what a flow does ------------------------------------------------------------

    def deliver(self, **kwargs: Any) -> str:
        """A mail arrives in the MAS mailbox (IMAP APPEND); email polls. Returns its Message-ID."""
        raw, message_id = build_mail(**kwargs)
        self.dovecot.append(self.user, "INBOX", raw)
        self.poll()
        return message_id

    def poll(self) -> int:
        assert self.thread is not None
        count = self.thread.call(self.thread.engine.poll_mailbox())
        self.settle()
        return count

    def post(self, message: Any, *, content_type: str = "application/json") -> tuple[int, Any]:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        assert self.thread is not None
        response = self.http.post(self.url, content=data, headers={
            "Content-Type": content_type, "Authorization": f"Bearer {self.token_for(message)}"})
        self.settle()
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, response.text

    def token_for(self, message: Any) -> str:
        """The token of whoever sends ``message``: a status comes from the (one) mode, the
        rest from the master (each caller has its own token; tests/modes/test_endpoint_tokens.py)."""
        assert self.thread is not None
        server = self.thread.server
        if isinstance(message, dict) and message.get("type") == "handoff.status":
            return server.mode_tokens[("ticket", "callback")]
        return server.token  # type: ignore[return-value]

    def tick(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.settle()

    # -- what a flow observes ------------------------------------------------------------

    def store(self) -> Store:
        return Store(self.database)

    def thread_of(self, key: str) -> dict | None:
        store = self.store()
        try:
            return store.thread(key)
        finally:
            store.close()

    def sent_mail(self) -> list:
        with self.smtp.log.lock:
            return list(self.smtp.log.messages)

    def take_mail(self):
        mails = self.sent_mail()
        if self.mails_consumed >= len(mails):
            raise AssertionError(f"no further mail was sent (sent so far: {len(mails)})")
        mail = mails[self.mails_consumed]
        self.mails_consumed += 1
        return mail
