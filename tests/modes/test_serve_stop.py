"""Stopping the server (Ctrl-C / SIGTERM on `mailtriage modes serve`: its task cancelled under
``asyncio.run``) while the mailbox poll waits on a server that never greets: the poll's
connection is ended, so the process does not wait for the mailbox's timeout (asyncio.run
waits for the poll's worker thread before it returns)."""

from __future__ import annotations

import asyncio
import threading

from mailtriage.modes.config import parse_config
from mailtriage.modes.server import ModesServer, serve_forever
from tests.modes.harness import DOMAIN
from tests.servers.fixtures import memory_keyring  # noqa: F401
from tests.servers.silent_imap import SilentServer


def test_a_stop_while_the_mailbox_poll_connects_ends_the_poll(tmp_path, monkeypatch, memory_keyring):  # noqa: F811
    silent = SilentServer()  # accepts, never greets
    monkeypatch.setenv("MT_TEST_MODES_IMAP", "imap-pass-1234")
    config = parse_config({
        "domain": DOMAIN, "database": str(tmp_path / "r.sqlite3"),
        "server": {"poll_seconds": 0.1, "tick_seconds": None},
        "mailbox": {"host": "127.0.0.1", "port": silent.port, "security": "plain", "username": "modes",
                    "password_env": "MT_TEST_MODES_IMAP", "timeout": 60},
    }, tmp_path / "modes.toml")
    server = ModesServer(config, port=0)

    async def serve_then_stop() -> None:
        serving = asyncio.create_task(serve_forever(server))
        # The poll has connected; its greeting never comes (the mailbox waits 60 s).
        assert await asyncio.to_thread(silent.reached.wait, 10)
        serving.cancel()  # what the CLI's SIGINT/SIGTERM handler does
        try:
            await serving
        except asyncio.CancelledError:
            pass

    ran = threading.Thread(target=lambda: asyncio.run(serve_then_stop()), daemon=True)
    try:
        ran.start()
        ran.join(15)  # asyncio.run returns once the poll's thread is over
        assert not ran.is_alive(), "the stop waited for the mailbox poll's timeout"
    finally:
        silent.close()
