"""Reading one long conversation on Microsoft Graph beside Gmail, in the same run (issue 34).

Both emulators (tests/oauth) on loopback over TLS get the same ``--messages``-message
thread (each message a reply to the one before); each source signs in the usual way,
its tokens in a keyring stored in a file (benchmarks/file_keyring.py, so a keyring read
costs a file read as it would cost a D-Bus call), and ``read_thread`` is timed
``--repeat`` times, the two taking turns (median). For each: HTTP requests to the API and keyring reads per read.
The target: Graph within 1.5x of Gmail.

Run: .venv/bin/python benchmarks/bench_cloud_thread.py [--messages 500] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.file_keyring import FileKeyring  # noqa: E402
from tests.oauth.mail import BASE, make_mail  # noqa: E402


class CountingKeyring(FileKeyring):
    reads = 0

    def get_password(self, service: str, username: str) -> str | None:
        CountingKeyring.reads += 1
        return super().get_password(service, username)


def thread_mail(count: int):
    for n in range(1, count + 1):
        refs = "<m1@example.net>" + (f" <m{n - 1}@example.net>" if n > 2 else "")
        yield n, make_mail(n, subject="Heap overflow in the parser" if n == 1 else "Re: Heap overflow in the parser",
                           references=refs if n > 1 else None, in_reply_to=f"<m{n - 1}@example.net>" if n > 1 else None,
                           date=BASE + timedelta(minutes=n), body=f"Message {n} of the thread.\n" * 20)


class Side:
    """One source's reads: times, HTTP requests and keyring reads of each."""

    def __init__(self, label: str, source, requests, expected: int) -> None:
        self.label, self.source, self.requests, self.expected = label, source, requests, expected
        self.thread_id = source.thread_for_message_id("<m1@example.net>")
        assert self.thread_id is not None, label
        self.samples: list[float] = []
        self.sent: list[int] = []
        self.reads: list[int] = []

    def read(self) -> None:
        before, keyring_before = len(self.requests()), CountingKeyring.reads
        t0 = time.perf_counter()
        thread = self.source.read_thread(self.thread_id)
        self.samples.append(time.perf_counter() - t0)
        self.sent.append(len(self.requests()) - before)
        self.reads.append(CountingKeyring.reads - keyring_before)
        assert len(thread.messages) == self.expected, (self.label, len(thread.messages))

    def report(self) -> float:
        median = statistics.median(self.samples)
        print(f"{self.label:6s} read_thread median {median:6.2f} s  min {min(self.samples):6.2f} s  "
              f"({statistics.median(self.sent):.0f} HTTP requests, {statistics.median(self.reads):.0f} keyring reads "
              "a read)")
        return median


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-cloud-"))
    os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")  # never the user's cache
    os.environ["MAILTRIAGE_BENCH_KEYRING"] = str(tmp / "keyring.json")
    import keyring

    keyring.set_keyring(CountingKeyring())
    from mailtriage.backends.gmail.source import GmailSource
    from mailtriage.backends.microsoft.source import GraphSource
    from tests.oauth.fixtures import google_account, microsoft_account, save_google_sign_in, sign_in_microsoft
    from tests.oauth.google_server import GoogleEmulator
    from tests.oauth.microsoft_server import MicrosoftEmulator
    from tests.servers.certs import make_certificate

    google = GoogleEmulator().start()
    microsoft = MicrosoftEmulator(make_certificate(tmp / "tls")).start()
    try:
        for n, raw in thread_mail(args.messages):
            google.add_message(raw, labels=("INBOX",), date=(BASE + timedelta(minutes=n)).timestamp())
            microsoft.add_message(raw, read=True, received=(BASE + timedelta(minutes=n)).timestamp())
        gmail_account = google_account(google, "bench-gmail", access="read")
        save_google_sign_in(google, gmail_account)
        graph_account = microsoft_account(microsoft, "bench-graph", access="read")
        sign_in_microsoft(microsoft, graph_account)
        gmail = GmailSource("gmail", {}, account=gmail_account)
        graph = GraphSource("m365", {}, account=graph_account)
        print(f"one thread of {args.messages} messages; {args.repeat} reads each, the two taking turns "
              "(a machine whose load changes weighs on both alike)")
        sides = [Side("Gmail", gmail, lambda: google.server.requests, args.messages),
                 Side("Graph", graph, lambda: microsoft.graph_requests, args.messages)]
        for _ in range(args.repeat):
            for side in sides:
                side.read()
        gmail_time, graph_time = (side.report() for side in sides)
        print(f"Graph / Gmail: {graph_time / gmail_time:.2f}x (target: within 1.5x)")
        gmail.close()
        graph.close()
    finally:
        google.stop()
        microsoft.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
