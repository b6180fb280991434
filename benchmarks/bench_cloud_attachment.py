"""A 25 MB attachment sent through Gmail and through Microsoft Graph (issue 34).

Both emulators (tests/oauth) on loopback over TLS hold one trusted report; each mailbox
saves a reply draft with the attachment and then sends the reply (confirmed, a send
ledger in a temporary directory): Gmail through its ``/upload`` endpoint (a resumable
session above 5 MB, the raw RFC 822 message), Graph through ``createReply``, an upload
session (``createUploadSession``, PUTs of 3.125 MB) and ``send``. For each step: the time
and the bytes on the wire (request lines, headers and bodies the client sent, as the
server received them; answers not counted) beside the file's size, and the requests.
Each is run ``--repeat`` times, the two taking turns (median).

Run: .venv/bin/python benchmarks/bench_cloud_attachment.py [--mb 25] [--repeat 3]
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

MB = 1024 * 1024
TRUSTED = "Authentication-Results: mx.example.org; dmarc=pass header.from=example.net"


def wire_bytes(requests) -> int:
    """What the client sent for ``requests``: request line, headers and body of each."""
    total = 0
    for r in requests:
        query = "&".join(f"{k}={v}" for k, values in r.query.items() for v in values)
        total += len(f"{r.method} {r.path}{'?' + query if query else ''} HTTP/1.1\r\n")
        total += sum(len(k) + len(v) + 4 for k, v in r.headers.items()) + 2 + len(r.body)
    return total


class Side:
    def __init__(self, label: str, mailbox, root_gid: str, requests, ledger) -> None:
        self.label, self.mailbox, self.root, self.requests, self.ledger = label, mailbox, root_gid, requests, ledger
        self.rows: dict[str, list[tuple[float, int, int]]] = {"draft": [], "send": []}

    def run(self, data: bytes) -> None:
        from mailtriage.backends.contract import OutgoingAttachment
        from mailtriage.backends.mailbox_contract import Compose

        compose = Compose("reply", body="The capture is attached.", source_id=self.mailbox.mid(self.root),
                          attachments=(OutgoingAttachment("capture.pcap", "application/vnd.tcpdump.pcap", data),))
        for step, act in (("draft", lambda: self.mailbox.save_draft(compose)),
                          ("send", lambda: self.mailbox.send(compose, confirmed=True, ledger=self.ledger))):
            before = len(self.requests())
            t0 = time.perf_counter()
            act()
            elapsed = time.perf_counter() - t0
            sent = self.requests()[before:]
            self.rows[step].append((elapsed, wire_bytes(sent), len(sent)))

    def report(self, size: int) -> None:
        for step, rows in self.rows.items():
            seconds = statistics.median(r[0] for r in rows)
            wire = statistics.median(r[1] for r in rows)
            count = statistics.median(r[2] for r in rows)
            print(f"{self.label:6s} {step:5s} {seconds:6.2f} s  {wire / MB:7.2f} MB on the wire "
                  f"({wire / size:.2f}x the file)  {count:.0f} requests")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=25.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-cloud-attach-"))
    os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")  # never the user's cache
    os.environ["MAILTRIAGE_BENCH_KEYRING"] = str(tmp / "keyring.json")
    import keyring

    keyring.set_keyring(FileKeyring())
    from mailtriage.backends.gmail.adapter import GmailMailbox
    from mailtriage.backends.microsoft.adapter import GraphMailbox
    from mailtriage.backends.send_ledger import SendLedger
    from tests.oauth.fixtures import google_account, microsoft_account, save_google_sign_in, sign_in_microsoft
    from tests.oauth.google_server import GoogleEmulator
    from tests.oauth.microsoft_server import MicrosoftEmulator
    from tests.servers.certs import make_certificate

    size = int(args.mb * MB)
    data = (bytes(range(256)) * (size // 256 + 1))[:size]  # incompressible enough, and every byte value
    google = GoogleEmulator().start()
    microsoft = MicrosoftEmulator(make_certificate(tmp / "tls")).start()
    try:
        report = make_mail(1, subject="Heap overflow in the parser", extra=TRUSTED)
        when = (BASE + timedelta(minutes=1)).timestamp()
        gmail_root = google.add_message(report, labels=("INBOX",), date=when)
        graph_root = microsoft.add_message(report, received=when)
        gmail_account = google_account(google, "bench-gmail", access="send", authserv_id="mx.example.org",
                                       timeout=300)
        save_google_sign_in(google, gmail_account)
        graph_account = microsoft_account(microsoft, "bench-graph", access="send", authserv_id="mx.example.org",
                                          timeout=300)
        sign_in_microsoft(microsoft, graph_account)
        gmail, graph = GmailMailbox(gmail_account), GraphMailbox(graph_account)
        sides = [Side("Gmail", gmail, gmail_root, lambda: google.server.requests, SendLedger(tmp / "g.json")),
                 Side("Graph", graph, graph_root, lambda: microsoft.server.requests, SendLedger(tmp / "m.json"))]
        print(f"a {size / MB:.1f} MB attachment ({size} bytes), a reply draft then a send; {args.repeat} runs each, "
              "the two taking turns (median)")
        for _ in range(args.repeat):
            for side in sides:
                side.run(data)
        for side in sides:
            side.report(size)
        gmail.close()
        graph.close()
    finally:
        google.stop()
        microsoft.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
