"""The endpoint: JSON over HTTP POST (aiohttp), loopback by default.

``POST /mas-modes`` takes every contract message (the ``status_url`` we give modes
points here too); ``GET /mas-modes/health`` says the server is up, to a caller with a token.
The outside master and each mode endpoint have a token of their own, and each may send
only what its route in the contract allows (:mod:`mailtriage.modes.callers`). Beside the HTTP
server, two loops run: the mailbox poll (``server.poll_seconds``) and the tick that
checks deadlines and retries the outbox and queued mails (``server.tick_seconds``),
both on the injectable clock's terms.

:class:`ServerThread` runs a :class:`ModesServer` on its own event loop in a thread,
for embedding (tests, a UI) without giving up the caller's thread.

What reaches a server, and why no backend lock (the application service's) is taken here:
the server builds no Service and shares no connection with one. The mailbox poll opens an
IMAP connection of its own per poll and closes it in the same worker thread, one poll at
a time (the engine's poll lock); each SMTP send makes its own client on the event loop;
the outbox's HTTP client is used by one delivery pass at a time (the engine's work lock).
On stop, the poll's connection is ended (:meth:`Inbox.abort`), as the app's quit ends its own.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import threading
from concurrent.futures import Future
from typing import Any, Awaitable, Callable, TypeVar
from urllib.parse import urlsplit

from aiohttp import web

from mailtriage.core.origins import is_loopback
from mailtriage.modes.callers import MASTER, Caller
from mailtriage.modes.clock import Clock
from mailtriage.modes.config import ModesConfig, endpoint_token, mode_tokens
from mailtriage.modes.engine import MAX_BODY, ModesEngine
from mailtriage.modes.envelope import ProtocolError
from mailtriage.modes.inbox import MailboxError

log = logging.getLogger("mailtriage.modes")
PATH = "/mas-modes"
T = TypeVar("T")


class ModesServer:
    def __init__(self, config: ModesConfig, *, clock: Clock | None = None, host: str | None = None,
                 port: int | None = None, background: bool = True) -> None:
        self.config = config
        self.host = host or config.host
        self.port = config.port if port is None else port
        self.engine = ModesEngine(config, clock=clock)
        self.background = background  # the poll and tick loops (tests drive them by hand)
        self._runner: web.AppRunner | None = None
        self._loops: list[asyncio.Task] = []
        self.token: str | None = None  # the outside master's, set by start()
        self.mode_tokens: dict[tuple[str, str], str] = {}  # (type, mode) -> that mode endpoint's token
        self.token_generated = False  # True when start() made and stored a new token

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{PATH}"

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY, middlewares=[self._check_host])
        app.router.add_post(PATH, self._post)
        app.router.add_get(PATH + "/health", self._health)
        return app

    async def start(self) -> None:
        """Bind and serve. Raises OSError when the address is taken, ConfigError when no
        endpoint token can be had (see :func:`endpoint_token`)."""
        self.token, self.token_generated = endpoint_token(self.config)
        self.mode_tokens = mode_tokens(self.config, self.token)
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]  # the bound port when 0 was asked for
        self.engine.status_url = self.config.public_url or self.url
        if self.background:
            if self.config.mailbox is not None and self.config.poll_seconds:
                self._loops.append(asyncio.create_task(self._every(self.config.poll_seconds, self._poll)))
            if self.config.tick_seconds:
                self._loops.append(asyncio.create_task(self._every(self.config.tick_seconds, self.engine.run_due)))
        self.engine.kick()  # what a previous run left queued

    async def stop(self) -> None:
        if self.engine.inbox is not None:
            # A poll waiting on the mailbox's server runs in a worker thread that cancelling its
            # task does not end, and asyncio.run waits for it: end its connection first.
            self.engine.inbox.abort()
        for task in self._loops:
            task.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        self._loops.clear()
        if self.engine._kicked is not None:
            await asyncio.gather(self.engine._kicked, return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.engine.close()

    async def _every(self, seconds: float, job: Callable[[], Awaitable[Any]]) -> None:
        while True:
            try:
                await job()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a failing pass is logged and tried again next time
                log.exception("modes: background pass failed")
            await asyncio.sleep(seconds)

    async def _poll(self) -> None:
        try:
            await self.engine.poll_mailbox()
        except MailboxError as exc:
            log.warning("modes: %s", exc)

    def allowed_hosts(self) -> set[str]:
        """Host header names we answer to: localhost, the bound address, the public URL's host."""
        names = {"localhost", _host_name(self.host)}
        if is_loopback(self.host):
            names |= {"127.0.0.1", "::1"}
        if self.config.public_url:
            names.add(_host_name(urlsplit(self.config.public_url).hostname or ""))
        return names

    @web.middleware
    async def _check_host(self, request: web.Request, handler):
        # DNS rebinding: a web page whose name now resolves to 127.0.0.1 reaches us with
        # its own name in Host. Only our own names are answered.
        host = _host_name(request.headers.get("Host", ""))
        wildcard = self.host in ("0.0.0.0", "::", "")
        if not host or (host not in self.allowed_hosts() and not (wildcard and _is_ip(host))):
            error = ProtocolError("misdirected-request", "the Host header does not name this endpoint "
                                                         "(use localhost or the address it listens on)", status=421)
            return web.json_response(error.body(), status=error.status)
        return await handler(request)

    def caller(self, request: web.Request) -> Caller | None:
        """Who sent the request, by its bearer token: the master, one mode endpoint, or None."""
        presented = request.headers.get("Authorization", "").encode()
        found: Caller | None = None
        # every token is compared (constant time each), so the answer's timing names no caller
        if self.token is not None and hmac.compare_digest(presented, f"Bearer {self.token}".encode()):
            found = MASTER
        for (type_name, mode), token in self.mode_tokens.items():
            if hmac.compare_digest(presented, f"Bearer {token}".encode()):
                found = Caller(type_name, mode)
        return found

    @staticmethod
    def _unauthorized() -> web.Response:
        error = ProtocolError("unauthorized", "this endpoint needs Authorization: Bearer <token>")
        return web.json_response(error.body(), status=error.status)

    async def _post(self, request: web.Request) -> web.Response:
        caller = self.caller(request)
        if caller is None:
            return self._unauthorized()
        if request.content_type != "application/json":
            error = ProtocolError("unsupported-media-type", f"Content-Type must be application/json, "
                                                            f"not {request.content_type or 'none'}")
            return web.json_response(error.body(), status=error.status)
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            error = ProtocolError("payload-too-large", f"a message is at most {MAX_BODY} bytes")
            return web.json_response(error.body(), status=error.status)
        status, body = await self.engine.handle(raw, caller=caller)
        return web.json_response(body, status=status)

    async def _health(self, request: web.Request) -> web.Response:
        if self.caller(request) is None:  # domain and role are for our callers only
            return self._unauthorized()
        return web.json_response({"ok": True, "mas_modes_version": "0.1", "domain": self.config.domain,
                                  "role": self.config.role})


def _host_name(value: str) -> str:
    """The host of a Host header value or address, lower-cased, without port or final dot."""
    value = value.strip().lower()
    if value.startswith("["):
        value = value[1:].partition("]")[0]
    elif value.count(":") == 1:
        value = value.partition(":")[0]
    return value.rstrip(".")


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return False


class ServerThread:
    """A ModesServer on its own event loop in a daemon thread."""

    def __init__(self, server: ModesServer) -> None:
        self.server = server
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="mailtriage-modes", daemon=True)

    def start(self, timeout: float = 10) -> "ServerThread":
        self._thread.start()
        self.call(self.server.start(), timeout)
        return self

    def call(self, coro: Awaitable[T], timeout: float = 60) -> T:
        """Run a coroutine on the server's loop and wait for its result."""
        future: Future = asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]
        return future.result(timeout)

    @property
    def engine(self) -> ModesEngine:
        return self.server.engine

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self, timeout: float = 10) -> None:
        if self._thread.is_alive():
            try:
                self.call(self.server.stop(), timeout)
            finally:
                self.loop.call_soon_threadsafe(self.loop.stop)
                self._thread.join(timeout)
        self.loop.close()


async def serve_forever(server: ModesServer, ready: Callable[[ModesServer], None] | None = None) -> None:
    """Serve until cancelled (Ctrl-C / SIGTERM in the CLI)."""
    await server.start()
    if ready:
        ready(server)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()
