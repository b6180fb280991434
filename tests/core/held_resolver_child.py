"""Run by tests/core/test_lookup_abort.py inside a namespace of its own (``unshare -mn``): a DNS
server on 127.0.0.1:53 that takes the query and never answers (/etc/resolv.conf bind-mounted to
name it, RES_OPTIONS timeout 30 s), a connect whose lookup it holds, then abort(). Prints what
happened as JSON: the query reached, the call over after abort(), its error."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time

HOST = "held.invalid"


def held_dns() -> threading.Event:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 53))
    reached = threading.Event()

    def serve() -> None:
        while True:
            udp.recvfrom(4096)
            reached.set()

    threading.Thread(target=serve, daemon=True).start()
    return reached


def call_and_abort(call, abort) -> dict:
    reached, outcome = held_dns(), []

    def run() -> None:
        try:
            outcome.append(repr(call()))
        except Exception as exc:  # noqa: BLE001 - reported to the test
            outcome.append(str(exc))

    calling = threading.Thread(target=run, daemon=True)
    calling.start()
    looked_up = reached.wait(10)
    started = time.monotonic()
    abort()
    calling.join(10)  # the held lookup lasts 30 s: only abort() ends the call within this
    return {"reached": looked_up, "over": not calling.is_alive(), "after": time.monotonic() - started,
            "outcome": outcome}


def main(kind: str) -> None:
    if kind == "http":
        from mailtriage.core.http import HttpClient

        client = HttpClient("test", f"http://{HOST}:8080")
        result = call_and_abort(lambda: client.get("/"), client.abort)
    else:
        import keyring

        from mailtriage.backends.imap.account import ImapAccount, password_key
        from mailtriage.backends.imap.connection import ImapConnection
        from mailtriage.core.secrets import set_secret
        from tests.servers.keyring_backend import MemoryKeyring

        keyring.set_keyring(MemoryKeyring())
        account = ImapAccount(id="held", host=HOST, port=1143, security="plain", username="sam", timeout=60.0)
        set_secret(password_key(account.id), "pw")
        conn = ImapConnection(account)
        result = call_and_abort(lambda: conn.capabilities, conn.abort)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
