"""Batch benchmark: tag 1,000 messages and flag them in one batch on Dovecot, beside a baseline.

Starts a real Dovecot on loopback (the test fixture's), appends ``--messages`` messages to
INBOX, lists them through ``ImapMailbox.list`` (the rows the thread list tags), then measures
on an open connection, alternating run by run so machine noise hits both alike:

  (a) ours: one proposal over every tagged message (``propose_organize(..., "flag")``), built
      and applied: the adapter's bulk ``set_flags`` in calls of MAX_BULK IDs, each checked by
      reading the flags back;
  (b) baseline: one ``UID STORE +FLAGS (\\Flagged)`` per message (imapclient), as a client
      without batches would do.

Between runs every message is unflagged again (not timed). Goal: (a) <= 1 s at 1,000.

Run: .venv/bin/python benchmarks/bench_batch.py [--messages 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import keyring  # noqa: E402
from imapclient import IMAPClient  # noqa: E402

from mailtriage.backends.imap.account import ImapAccount, password_key  # noqa: E402
from mailtriage.backends.imap.adapter import ImapMailbox  # noqa: E402
from mailtriage.backends.imap.ids import decode_message_id  # noqa: E402
from mailtriage.backends.mailbox_contract import MAX_PAGE_SIZE, MailQuery  # noqa: E402
from mailtriage.core.secrets import set_secret  # noqa: E402
from mailtriage.application.flows.organize import chunks, propose_organize  # noqa: E402
from tests.servers.dovecot import DovecotServer  # noqa: E402
from tests.servers.keyring_backend import MemoryKeyring  # noqa: E402


def message(n: int) -> bytes:
    return (f"From: Reporter {n % 40} <r{n % 40}@example.net>\r\nTo: security@example.org\r\n"
            f"Subject: Report {n}: overflow in component {n % 97}\r\n"
            f"Date: Thu, 01 Oct 2026 09:{n % 60:02d}:00 +0000\r\nMessage-ID: <b{n}@example.net>\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
            f"Details of report {n}.\r\n").encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    keyring.set_keyring(MemoryKeyring())
    server = DovecotServer().start()
    try:
        user = server.add_user("batch")
        t0 = time.perf_counter()
        with server.client(user) as client:
            for n in range(args.messages):
                client.append("INBOX", message(n))
        print(f"appended {args.messages:,} messages in {time.perf_counter() - t0:.1f} s")

        account = ImapAccount(id="bench-batch", host="127.0.0.1", port=server.port, security="plain",
                              username=user.name, access="draft", timeout=600)
        set_secret(password_key(account.id), user.password)
        mailbox = ImapMailbox(account)
        headers = []
        for page in range((args.messages + MAX_PAGE_SIZE - 1) // MAX_PAGE_SIZE):
            headers += mailbox.list(MailQuery(folder="INBOX", page=page, page_size=MAX_PAGE_SIZE)).messages
        assert len(headers) == args.messages
        ids = [h.id for h in headers]
        uids = [decode_message_id(i, account.id).uid for i in ids]

        baseline = IMAPClient("127.0.0.1", server.port, ssl=False, timeout=600)
        baseline.login(user.name, user.password)

        def reset() -> None:
            for batch in chunks(ids):
                mailbox.set_flags(batch, flagged=False)

        def ours() -> None:
            proposal = propose_organize(mailbox, headers, "flag", access="draft")
            report = proposal.apply(confirmed=True)
            assert report.ok, report.describe()

        def one_store_each() -> None:
            baseline.select_folder("INBOX")
            for uid in uids:
                baseline.add_flags([uid], [b"\\Flagged"])

        def flagged() -> int:
            baseline.select_folder("INBOX", readonly=True)
            return len(baseline.search(["FLAGGED"]))

        samples: dict[str, list[float]] = {"ours": [], "baseline": []}
        for _ in range(args.repeat):
            for name, fn in (("ours", ours), ("baseline", one_store_each)):
                reset()
                assert flagged() == 0
                t0 = time.perf_counter()
                fn()
                samples[name].append(time.perf_counter() - t0)
                assert flagged() == args.messages, f"{name} did not flag every message"
        baseline.logout()
        mailbox.close()
    finally:
        server.stop()

    ours_s, base_s = statistics.median(samples["ours"]), statistics.median(samples["baseline"])
    print()
    print(f"{'measure (median of ' + str(args.repeat) + ')':62} {'seconds':>9}")
    print(f"{f'(a) ours: one proposal, bulk set_flags, {args.messages:,} messages':62} {ours_s:9.3f}")
    print(f"{f'(b) baseline: one UID STORE per message, {args.messages:,}':62} {base_s:9.3f}")
    print(f"(a) is {base_s / ours_s:.1f}x faster than (b); "
          f"{'meets' if ours_s <= 1.0 else 'misses'} the 1 s goal "
          f"(runs of (a): {', '.join(f'{s:.3f}' for s in samples['ours'])})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
