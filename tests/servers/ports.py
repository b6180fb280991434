"""Free loopback ports for servers started by tests (xdist-safe: the OS picks)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path
from typing import Iterator


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float = 10.0, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on {host}:{port} after {timeout} s")
            time.sleep(0.02)


@contextlib.contextmanager
def unanswered_port() -> Iterator[int]:
    """A loopback port whose listener's queue is full, so a connect's SYN is dropped (Linux), as
    an unreachable host's is: the connect waits in SYN_SENT."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port))  # fills the queue: never accepted
    try:
        yield port
    finally:
        filler.close()
        listener.close()


def syn_sent_to(port: int) -> bool:
    """A socket of this host in SYN_SENT towards ``port`` on loopback (/proc/net/tcp)."""
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return any(row.split()[2] == f"0100007F:{port:04X}" and row.split()[3] == "02" for row in rows)


def await_syn_sent(port: int) -> None:
    """Return once a connect to ``port`` is under way: the kernel's table says so, not the clock."""
    done = threading.Event()
    for _ in range(2000):
        if syn_sent_to(port):
            return
        done.wait(0.005)
    raise AssertionError("the connect never reached SYN_SENT")
